"""`servotool ports`: the serial ports of this computer, and which answer as a servo bus.

Each port is probed with harmless reads only, by every bus family of the registry that has a `probe` hook,
in registry order, at each of its `probe_bauds`; once one family answered the port is not probed further
(a device that answered one is no other). Nothing is ever written to a servo but read and ping requests.

JSON keys per port: one per probing family, its name: a family probed at one baud gives its answering ids
([] when none answered or it was not probed); one probed at several gives {baud: ids} of the bauds that
answered (None when it was not probed). Then "busy" and "error".
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Annotated, Any

import typer
from rich.markup import escape
from serial.tools import list_ports

from servotool.cli.common import console, err_console, fail, given, print_json
from servotool.cli.render import compact_table
from servotool.devices import registry
from servotool.devices.bus import port_problem
from servotool.devices.family import BUS, Family
from servotool.devices.locks import serial_keys
from servotool.errors import ServotoolError, exit_code_of, signal_label
from servotool.io.devlock import DeviceBusy, DeviceLock, LockUnavailable
from servotool.runs.signals import StopSignals

PROBE_TIMEOUT_MS = 50  # per servo: a board relays a read in a few ms, a USB adapter's latency timer adds 16


def probing_families() -> list[Family]:
    """The registry's bus families that have a probe, in registry order."""
    return [f for f in registry.FAMILIES if f.kind == BUS and f.probe is not None]


def _by_baud(fam: Family) -> bool:
    return len(fam.probe_bauds) > 1


def _unprobed(families: list[Family]) -> dict[str, Any]:
    return {f.name: (None if _by_baud(f) else []) for f in families}


@contextlib.contextmanager
def _port_claimed(device: str) -> Iterator[None]:
    """Every lock key of the port (its path and its device number), as any serial family's run holds it."""
    with contextlib.ExitStack() as stack:
        for key in serial_keys(device):
            stack.enter_context(DeviceLock(key))
        yield


def probe_port(
    device: str,
    families: list[Family],
    timeout_ms: int = PROBE_TIMEOUT_MS,
    unavailable: dict[str, str] | None = None,
) -> dict[str, Any]:
    """What answers on one port (see the module docstring), "busy": None or who holds it, "error": None
    or why the port could not be opened. A port another servotool process holds is not probed (a probe
    would interleave with its traffic); a port that cannot be opened (a mistyped --port path, no
    permission) says so rather than "nothing answered". A family whose probe cannot be imported (its
    optional client library missing) is named in `unavailable` with the reason."""
    try:
        with _port_claimed(device):
            missing = unavailable if unavailable is not None else {}
            return _probe_free_port(device, families, timeout_ms, missing)
    except (DeviceBusy, LockUnavailable) as exc:  # held, or its lock cannot be taken: not probed
        return {**_unprobed(families), "busy": str(exc), "error": None}


def _open_failure(exc: BaseException) -> OSError | None:
    cause = exc if isinstance(exc, OSError) else exc.__cause__
    return cause if isinstance(cause, OSError) else None


def _probe_free_port(
    device: str, families: list[Family], timeout_ms: int, unavailable: dict[str, str]
) -> dict[str, Any]:
    found: dict[str, Any] = {**_unprobed(families), "busy": None, "error": None}
    for fam in families:
        if fam.name in unavailable:
            continue
        assert fam.probe is not None
        answers: dict[int, list[int]] = {}
        for baud in fam.probe_bauds:
            try:
                ids = list(fam.probe(device, baud, timeout_ms))
            except ImportError as exc:
                unavailable[fam.name] = str(exc)
                break
            except (ServotoolError, OSError, ValueError) as exc:
                failure = _open_failure(exc)
                if failure is not None and not any(found[f.name] for f in families):
                    # the port itself cannot be opened: no other probe would fare better
                    found["error"] = port_problem(failure)
                    return found
                ids = []
            if ids:
                answers[baud] = ids
        if fam.name in unavailable:
            continue
        found[fam.name] = answers if _by_baud(fam) else next(iter(answers.values()), [])
        if answers:
            break
    return found


def _answers(found: dict[str, Any]) -> str:
    if found.get("busy"):
        return f"[yellow]not probed: {found['busy']}[/]"
    if found.get("error"):
        return f"[red]cannot open: {escape(found['error'])}[/]"
    parts = []
    for fam in probing_families():
        got = found.get(fam.name)
        if isinstance(got, dict):
            parts += [
                f"{fam.name} at {baud} baud (ids {', '.join(map(str, ids))})" for baud, ids in got.items()
            ]
        elif got:
            device = fam.title.split()[-1]  # what the family calls the device: "board", "bus"
            parts.append(f"{fam.name} {device} (servos {', '.join(map(str, got))})")
    return "; ".join(parts) or "[dim]nothing answered[/]"


def _answered(found: dict[str, Any] | None) -> bool:
    if not found:
        return False
    return any(
        isinstance(v, list) and v or isinstance(v, dict) and any(v.values())
        for k, v in found.items()
        if k not in ("busy", "error")
    )


def _probe_all(
    listed: list[dict[str, Any]], families: list[Family], timeout_ms: int | None, unavailable: dict[str, str]
) -> None:
    """Fill each entry's "answers" (None: not probed, timeout_ms None). Ctrl-C, SIGTERM or SIGHUP while
    probing: the port being probed is closed and its lock released, then one line and exit 130, 143 or 129
    (without handlers a signal ended the process with no word)."""
    device = None
    with StopSignals():
        try:
            for entry in listed:
                device = entry["device"]
                entry["answers"] = (
                    None if timeout_ms is None else probe_port(device, families, timeout_ms, unavailable)
                )
        except KeyboardInterrupt as exc:
            where = f" while probing {device}" if timeout_ms is not None and device else ""
            fail(
                f"interrupted by {signal_label(exc)}{where}; only read and ping requests were sent, "
                "and the port is closed",
                exit_code_of(exc),
            )


def ports(
    ctx: typer.Context,
    probe: bool = typer.Option(
        True, "--probe/--no-probe", help="Ask each port whether a servo board answers (harmless reads only)."
    ),
    extra: Annotated[
        list[str] | None,
        typer.Option(
            "--port", metavar="PATH", help="Also probe this device path (e.g. a simulator's pty); repeatable."
        ),
    ] = None,
    json_out: bool = typer.Option(False, "--json", help="Print JSON instead of a table."),
    timeout_ms: int = typer.Option(
        PROBE_TIMEOUT_MS,
        "--timeout-ms",
        min=1,
        max=2000,
        help="How long each "
        "servo is given to answer the board probe's read, ms (probing only: "
        "refused with --no-probe).",
    ),
) -> None:
    """List serial ports and say which servo bus family answers on each.

    Harmless reads only; a port another servotool process holds is not probed, and a port that cannot be
    opened says so. Exit 0 whatever answered, 2 for bad usage, 130/143/129/131 for Ctrl-C, SIGTERM,
    SIGHUP or SIGQUIT while probing (the port being probed is closed first).
    """
    if not probe and given(ctx, "timeout_ms"):
        fail("--timeout-ms applies only when probing; leave it out with --no-probe")
    if any(not d.strip() for d in extra or []):  # --port "$PORT" with PORT unset: no port to probe
        fail("--port is empty: give a device path (e.g. /dev/ttyUSB0)")
    listed = [
        {"device": p.device, "description": p.description or "", "hwid": p.hwid or ""}
        for p in sorted(list_ports.comports(), key=lambda p: p.device)
    ]
    known = {x["device"] for x in listed}
    for d in extra or []:  # a port listed or given before is probed once
        if d not in known:
            known.add(d)
            listed.append({"device": d, "description": "(given)", "hwid": ""})
    families = probing_families()
    unavailable: dict[str, str] = {}
    _probe_all(listed, families, timeout_ms if probe else None, unavailable)
    if json_out:
        # "<family>_probe": whether that family's probe could run (its client library is installed)
        print_json(
            {"ports": listed, **{f"{f.name}_probe": probe and f.name not in unavailable for f in families}}
        )
        return
    if not listed:
        err_console.print("no serial ports found")
        return
    answered = sum(1 for e in listed if _answered(e["answers"]))
    console.print(
        f"{len(listed)} serial port(s)" + (f", {answered} answered the probe" if probe else ", not probed"),
        highlight=False,
    )
    table = compact_table()
    for col in ("port", "description", "answers"):
        table.add_column(col, overflow="fold", no_wrap=col == "port")
    for entry in listed:
        answers = _answers(entry["answers"]) if entry["answers"] is not None else "[dim]not probed[/]"
        table.add_row(entry["device"], entry["description"], answers)
    console.print(table)
    for name, why in unavailable.items():
        err_console.print(f"[dim]{name} probe not available ({escape(why)})[/]")
