"""`servotool ports`: the serial ports of this computer, and which answer as a servo board.

Each port is probed with harmless reads only: a Hiwonder-style board is asked for servo positions; a port
where none answers is pinged as a Dynamixel bus through `servotool.devices.dynamixel.probe(port, baud) ->
list[int]` when that module is installed (a broadcast ping waits ~1 s per baud, and a board that answered is
no Dynamixel bus). Nothing is ever written to a servo but read and ping requests.
"""

from __future__ import annotations

import contextlib
import importlib
from collections.abc import Callable
from typing import Annotated, Any

import typer
from rich.markup import escape
from serial.tools import list_ports

from servotool.cli.common import console, err_console, fail, given, print_json
from servotool.cli.render import compact_table
from servotool.devices.bus import port_problem
from servotool.devices.registry import open_bus
from servotool.errors import ServotoolError, exit_code_of, signal_label
from servotool.io.devlock import DeviceBusy, LockUnavailable
from servotool.runs.ownership import claim
from servotool.runs.signals import StopSignals

DYNAMIXEL_BAUDS = (57600, 1_000_000)
PROBE_TIMEOUT_MS = 50  # per servo: a board relays a read in a few ms, a USB adapter's latency timer adds 16


def hiwonder_probe(device: str, baud: int = 1_000_000, timeout_ms: int = PROBE_TIMEOUT_MS) -> list[int]:
    """Ids of the servos that answer a position read through a Hiwonder-style board on `device` ([] when
    nothing answers or the port cannot be opened)."""
    try:
        return _hiwonder_ids(device, baud, timeout_ms)
    except (ServotoolError, OSError):
        return []


def _hiwonder_ids(device: str, baud: int, timeout_ms: int) -> list[int]:
    """As hiwonder_probe, but a port that cannot be opened raises (ServotoolError or OSError)."""
    bus = open_bus(f"hiwonder://{device}?baud={baud}&timeout_ms={timeout_ms}&retries=0", probe=False)
    try:
        return [sid for sid in bus.ids if bus.read_position(sid) is not None]
    except (ServotoolError, OSError):
        return []
    finally:
        bus.close()


def dynamixel_probe() -> Callable[[str, int], list[int]] | None:
    """The Dynamixel probe, `probe(port, baud) -> answering ids`, when the dynamixel backend provides it."""
    with contextlib.suppress(ImportError):
        module = importlib.import_module("servotool.devices.dynamixel")
        probe = getattr(module, "probe", None)
        if callable(probe):
            return probe
    return None


def probe_port(device: str, dxl: Callable[[str, int], list[int]] | None,
               timeout_ms: int = PROBE_TIMEOUT_MS) -> dict[str, Any]:
    """What answers on one port: {"hiwonder": [ids] or [], "dynamixel": {baud: [ids]} or None if no probe
    or a Hiwonder board answered, "busy": None or who holds it, "error": None or why the port could not be
    opened}. A port another servotool process holds is not probed (a probe would interleave with its
    traffic); a port that cannot be opened (a mistyped --port path, no permission) says so rather than
    "nothing answered"."""
    try:
        with claim(f"hiwonder://{device}"):  # every key of the port: its path and its device number
            return _probe_free_port(device, dxl, timeout_ms)
    except (DeviceBusy, LockUnavailable) as exc:  # held, or its lock cannot be taken: not probed
        return {"hiwonder": [], "dynamixel": None, "busy": str(exc), "error": None}


def _probe_free_port(device: str, dxl: Callable[[str, int], list[int]] | None,
                     timeout_ms: int) -> dict[str, Any]:
    found: dict[str, Any] = {"hiwonder": [], "dynamixel": None, "busy": None, "error": None}
    try:
        found["hiwonder"] = _hiwonder_ids(device, 1_000_000, timeout_ms)
    except (ServotoolError, OSError) as exc:
        cause = exc if isinstance(exc, OSError) else exc.__cause__
        if isinstance(cause, OSError):  # the port itself cannot be opened: no other probe would fare better
            found["error"] = port_problem(cause)
            return found
    if dxl is not None and not found["hiwonder"]:
        found["dynamixel"] = {}
        for baud in DYNAMIXEL_BAUDS:
            try:
                ids = list(dxl(device, baud))
            except (ServotoolError, OSError, ValueError):
                ids = []
            if ids:
                found["dynamixel"][baud] = ids
    return found


def _answers(found: dict[str, Any]) -> str:
    if found.get("busy"):
        return f"[yellow]not probed: {found['busy']}[/]"
    if found.get("error"):
        return f"[red]cannot open: {escape(found['error'])}[/]"
    parts = []
    if found["hiwonder"]:
        parts.append(f"hiwonder board (servos {', '.join(map(str, found['hiwonder']))})")
    for baud, ids in (found["dynamixel"] or {}).items():
        parts.append(f"dynamixel at {baud} baud (ids {', '.join(map(str, ids))})")
    return "; ".join(parts) or "[dim]nothing answered[/]"


def _probe_all(listed: list[dict[str, Any]], dxl: Callable[[str, int], list[int]] | None,
               timeout_ms: int | None) -> None:
    """Fill each entry's "answers" (None: not probed, timeout_ms None). Ctrl-C, SIGTERM or SIGHUP while
    probing: the port being probed is closed and its lock released, then one line and exit 130, 143 or 129
    (without handlers a signal ended the process with no word)."""
    device = None
    with StopSignals():
        try:
            for entry in listed:
                device = entry["device"]
                entry["answers"] = None if timeout_ms is None else probe_port(device, dxl, timeout_ms)
        except KeyboardInterrupt as exc:
            where = f" while probing {device}" if timeout_ms is not None and device else ""
            fail(f"interrupted by {signal_label(exc)}{where}; only read and ping requests were sent, "
                 "and the port is closed", exit_code_of(exc))


def ports(
    ctx: typer.Context,
    probe: bool = typer.Option(True, "--probe/--no-probe", help="Ask each port whether a servo board answers "
                               "(harmless reads only)."),
    extra: Annotated[list[str] | None, typer.Option(
        "--port", help="Also probe this device path (e.g. a simulator's pty); repeatable.")] = None,
    json_out: bool = typer.Option(False, "--json", help="Print JSON instead of a table."),
    timeout_ms: int = typer.Option(PROBE_TIMEOUT_MS, "--timeout-ms", min=1, max=2000, help="How long each "
                                   "servo is given to answer the board probe's read, ms (probing only: "
                                   "refused with --no-probe)."),
) -> None:
    """List serial ports and say which answer as a Hiwonder-style board or a Dynamixel bus.

    Harmless reads only; a port another servotool process holds is not probed, and a port that cannot be
    opened says so. Exit 0 whatever answered, 2 for bad usage, 130/143/129/131 for Ctrl-C, SIGTERM,
    SIGHUP or SIGQUIT while probing (the port being probed is closed first).
    """
    if not probe and given(ctx, "timeout_ms"):
        fail("--timeout-ms applies only when probing; leave it out with --no-probe")
    if any(not d.strip() for d in extra or []):  # --port "$PORT" with PORT unset: no port to probe
        fail("--port is empty: give a device path (e.g. /dev/ttyUSB0)")
    listed = [{"device": p.device, "description": p.description or "", "hwid": p.hwid or ""}
              for p in sorted(list_ports.comports(), key=lambda p: p.device)]
    known = {x["device"] for x in listed}
    for d in extra or []:  # a port listed or given before is probed once
        if d not in known:
            known.add(d)
            listed.append({"device": d, "description": "(given)", "hwid": ""})
    dxl = dynamixel_probe() if probe else None
    _probe_all(listed, dxl, timeout_ms if probe else None)
    if json_out:
        print_json({"ports": listed, "dynamixel_probe": dxl is not None})
        return
    if not listed:
        err_console.print("no serial ports found")
        return
    answered = sum(1 for e in listed if e["answers"] and (e["answers"]["hiwonder"] or any(
        (e["answers"]["dynamixel"] or {}).values())))
    console.print(f"{len(listed)} serial port(s)" + (f", {answered} answered the probe" if probe else
                  ", not probed"), highlight=False)
    table = compact_table()
    for col in ("port", "description", "answers"):
        table.add_column(col, overflow="fold", no_wrap=col == "port")
    for entry in listed:
        answers = _answers(entry["answers"]) if entry["answers"] is not None else "[dim]not probed[/]"
        table.add_row(entry["device"], entry["description"], answers)
    console.print(table)
    if probe and dxl is None:
        err_console.print("[dim]Dynamixel probe not available (servotool.devices.dynamixel.probe)[/]")
