"""`servotool sweep`: map a bus-servo arm's joint limits by slow sweeps, with any key as the stop button."""

from __future__ import annotations

import contextlib
import json
import os
import select
import sys
import threading
from datetime import datetime, timezone
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table

from servotool.analysis.sweep import SweepResult
from servotool.cli.common import console, err_console, fail, print_json
from servotool.cli.servo import DEFAULT_BUS, load_limits_option, open_arm_bus
from servotool.clock import MonotonicClock
from servotool.errors import DeviceError, Refused
from servotool.io.csvlog import CsvLogWriter, command_line, run_file_name, unique_path
from servotool.io.limits_yaml import LimitsFileError, merge_limits_text, write_atomic
from servotool.io.paths import out_dir
from servotool.runs.sweep import (
    CSV_COLUMNS,
    CSV_UNITS,
    SweepConfig,
    SweepEvent,
    SweepRun,
    directions_for,
    run_sweeps,
    sweep_config_dict,
)


class KeyWatcher:
    """Sets `pressed` when any key is typed on a terminal stdin (cbreak mode, restored on exit).

    On a non-terminal stdin it watches nothing (`active` is False); Ctrl-C still works as a signal."""

    def __init__(self) -> None:
        self.pressed = threading.Event()
        self.active = False
        self._stop = threading.Event()
        self._saved: Any = None
        self._thread: threading.Thread | None = None
        self._fd = -1

    def __enter__(self) -> KeyWatcher:
        try:
            fd = sys.stdin.fileno()
        except (AttributeError, OSError, ValueError):
            return self
        if not os.isatty(fd):
            return self
        import termios
        import tty

        self._fd = fd
        self._saved = termios.tcgetattr(fd)
        tty.setcbreak(fd)  # keys arrive one by one, unechoed; Ctrl-C still interrupts
        self.active = True
        self._thread = threading.Thread(target=self._watch, name="sweep key watcher", daemon=True)
        self._thread.start()
        return self

    def _watch(self) -> None:
        while not self._stop.is_set():
            ready, _, _ = select.select([self._fd], [], [], 0.05)
            if ready:
                with contextlib.suppress(OSError):
                    os.read(self._fd, 64)
                self.pressed.set()
                return

    def __exit__(self, *exc: Any) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=1.0)
        if self._saved is not None:
            import termios

            termios.tcsetattr(self._fd, termios.TCSADRAIN, self._saved)


def _progress(event: SweepEvent) -> None:
    if event.kind == "tick":
        return
    style = {"stop": "bold", "refused": "bold red", "done": "green"}.get(event.kind, "")
    text = f"[{style}]{event.message}[/]" if style else event.message
    err_console.print(f"{event.t:7.2f} s  {text}", highlight=False)


def _yaml_notes(run: SweepRun, found: dict, when: str) -> dict[int, str]:
    notes = {}
    for joint, f in found.items():
        parts = []
        for side, src, det in (("lo", f.lo_source, f.lo_detail), ("hi", f.hi_source, f.hi_detail)):
            parts.append(f"{side} {det}" if src == "sweep" else f"{side} from {src} limit")
        notes[joint] = f"servotool sweep {when}: " + "; ".join(parts)
    return notes


def _table(run: SweepRun) -> Table:
    table = Table(title="limit sweeps")
    for col in ("servo", "dir", "start", "stored", "stop", "how", "limit", "back at"):
        table.add_column(col, justify="left" if col in ("dir", "how") else "right")
    for r in run.results:
        table.add_row(str(r.joint), r.direction, str(r.start), str(r.bound),
                      "-" if r.stop is None else str(r.stop), r.reason,
                      "-" if r.limit is None else str(r.limit),
                      "-" if r.returned_to is None else str(r.returned_to))
    return table


def sweep(
    bus: str = typer.Option(DEFAULT_BUS, "--bus", help="Servo bus URL (sim:rosorin-arm[?k=v] or "
                            "hiwonder:///dev/ttyX?baud=1000000)."),
    joint: Annotated[list[int] | None, typer.Option(
        "--joint", help="Servo id to sweep (repeat for several; default: every joint of the arm, not the "
        "claw).",
    )] = None,
    direction: str = typer.Option("both", "--direction", help="up, down or both (down first)."),
    speed: float = typer.Option(25.0, "--speed", min=1.0, max=300.0, help="Command speed, pulses/s. A stall "
                                "is called about 0.5 s after contact: the command is then about half a "
                                "second's travel past the stop."),
    inside: int = typer.Option(20, "--inside", min=0, max=200, help="Limit set this many pulses inside each "
                               "stop."),
    limits: Annotated[Path | None, typer.Option(
        "--limits", help="ROS 2 parameter YAML with the current arm_limit_N; the found limits are merged "
        "into a copy of it.",
    )] = None,
    update_limits: bool = typer.Option(False, "--update-limits", help="Write the merged limits back into the "
                                       "--limits file itself (its old text is kept as FILE.bak)."),
    out: Annotated[Path | None, typer.Option(
        "--out", help="Output folder (default $SERVOTOOL_OUT or ./servotool-runs).",
    )] = None,
    json_out: bool = typer.Option(False, "--json", help="Print the result as JSON instead of a table."),
    plot: bool = typer.Option(False, "--plot", help="Write a PNG per sweep: commanded against measured."),
) -> None:
    """Map joint limits by slow sweeps toward each servo's stored limit; any key stops and holds the arm.

    Per joint and direction: one sweep from the current pose at --speed pulses/s.

    It stops when the joint stalls, reaches the stored limit, or when you press any key.

    The limit is set --inside pulses inside each stop; the joint returns to its start before the next sweep.

    Never commands past a stored limit; never writes servo EEPROM.
    """
    try:
        directions = directions_for(direction)
    except ValueError as exc:
        fail(str(exc))
    if update_limits and limits is None:
        fail("--update-limits needs --limits FILE")
    lf = load_limits_option(limits)
    dev = open_arm_bus(bus)
    joints = tuple(joint) if joint else dev.profile.joint_ids
    try:
        config = SweepConfig(joints=joints, directions=directions, speed=speed, inside=inside,
                             return_speed=max(100.0, speed))
    except ValueError as exc:
        dev.close()
        fail(str(exc))
    when = datetime.now(timezone.utc)
    folder = out_dir(out)
    stem = Path(run_file_name("sweep", bus, when)).stem
    csv_paths: dict[int, Path] = {}
    command = command_line()

    def writer_factory(res: SweepResult) -> CsvLogWriter:
        path = unique_path(folder, run_file_name(f"sweep-j{res.joint}-{res.direction}", bus, when))
        csv_paths[id(res)] = path
        cfg = {**sweep_config_dict(config), "joint": res.joint, "direction": res.direction,
               "start": res.start, "stored_limit": list(res.stored), "bound": res.bound}
        return CsvLogWriter(path, device=bus, simulated=dev.simulated, config=cfg, units=CSV_UNITS,
                            columns=CSV_COLUMNS, command=command, created=when)

    err_console.print(f"sweeping servo(s) {', '.join(map(str, joints))} {'/'.join(directions)} at {speed:g} "
                      f"pulses/s, limits {inside} pulses inside each stop", highlight=False)
    try:
        with KeyWatcher() as keys:
            if keys.active:
                err_console.print("[bold yellow]press any key to stop: the arm holds at once[/]")
            else:
                err_console.print("[dim]stdin is not a terminal: no stop key, Ctrl-C holds the arm[/]")
            run = run_sweeps(dev, MonotonicClock(), config, configured=lf.limits if lf else None,
                             abort_requested=keys.pressed, writer_factory=writer_factory, on_event=_progress)
    except Refused as exc:
        fail(str(exc))
    except DeviceError as exc:
        fail(f"{exc} (a hold was sent if the link allowed it)")
    finally:
        dev.close()

    folder.mkdir(parents=True, exist_ok=True)
    outputs: dict[str, Any] = {"csv": [str(csv_paths[id(r)]) for r in run.results if id(r) in csv_paths]}
    raw = {"device": bus, "simulated": dev.simulated, "created": when.isoformat(), "command": command,
           "config": sweep_config_dict(config), **run.as_dict()}
    json_path = unique_path(folder, f"{stem}.json")
    json_path.write_text(json.dumps(raw, indent=1) + "\n", encoding="utf-8")
    outputs["json"] = str(json_path)

    found = {j: f for j, f in run.found.items() if "sweep" in (f.lo_source, f.hi_source)}
    if found:
        stamp = when.strftime("%Y-%m-%dT%H:%M:%SZ")
        header = (f"arm_limit for servo(s) {', '.join(map(str, sorted(found)))} mapped {stamp} by servotool "
                  "sweep "
                  f"on {bus}{' (SIMULATED)' if dev.simulated else ''}: {speed:g} pulses/s toward the stored "
                  f"limits, each limit {inside} pulses inside the stop read back")
        new = {j: (f.lo, f.hi) for j, f in found.items()}
        try:
            text = merge_limits_text(lf.text if lf else None, new, _yaml_notes(run, found, stamp), header,
                                     str(limits) if limits else "<new>")
        except LimitsFileError as exc:
            fail(str(exc))
        if update_limits and limits is not None:
            write_atomic(limits.with_name(limits.name + ".bak"), lf.text if lf else "")
            outputs["yaml"] = str(write_atomic(limits, text))
        else:
            outputs["yaml"] = str(write_atomic(unique_path(folder, f"{stem}_limits.yaml"), text))

    if plot and run.results:
        from servotool.plots.sweep import save_sweep_plot

        outputs["png"] = [str(save_sweep_plot(r, csv_paths[id(r)].with_suffix(".png")))
                          for r in run.results if id(r) in csv_paths and r.t]

    if json_out:
        print_json({**raw, "outputs": outputs})
    else:
        console.print(_table(run))
        for j, f in found.items():
            console.print(f"servo {j}: arm_limit_{j}: [{f.lo}, {f.hi}]  (lo {f.lo_source}, hi {f.hi_source})")
        for kind, path in outputs.items():
            for p in path if isinstance(path, list) else [path]:
                err_console.print(f"[dim]{kind}:[/] {p}", highlight=False)
    if run.error:
        fail(f"{run.error}")
    if run.aborted:
        err_console.print("[bold yellow]aborted by key: the arm is holding where it stopped[/]")
        raise typer.Exit(1)
