"""`servotool record`: the servo flight recorder as a monitoring loop, with a live view of the axes.

Exit codes: 0 the duration passed; 1 a capture could not be published; 2 bad usage or a device the recorder
cannot use; 3 the device could not be reached or was lost; 130 / 143 / 129 Ctrl-C / SIGTERM / SIGHUP (any
open capture is published first).
"""

from __future__ import annotations

import contextlib
import math
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Group
from rich.live import Live
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from servotool.cli.common import announce_device, console, err_console, fail, print_json, renamed
from servotool.clock import MonotonicClock
from servotool.devices.arm import DeviceError as ArmDeviceError
from servotool.devices.registry import (
    ARM,
    BUS,
    FAMILIES,
    DeviceURLError,
    check_url,
    default_url,
    sim_names,
    status_names,
)
from servotool.errors import ExitCode, ServotoolError, exit_code_of, signal_label
from servotool.io.captures import default_dest, dest_problem
from servotool.recorder import AxisSample, RecorderEvent, Sweep
from servotool.runs.ownership import claim
from servotool.runs.recorder.loop import RecordOutcome, RecordProgress, RecordSettings, run_record
from servotool.runs.recorder.sources import open_source
from servotool.runs.signals import StopSignals

# the recordable bus families (those with a telemetry hook): the first one's simulator is the default
_RECORDABLE_BUSES = [f for f in FAMILIES if f.kind == BUS and f.telemetry is not None]
DEFAULT_BUS = next((f"sim:{n}" for f in _RECORDABLE_BUSES for n in sim_names(f)), "")
_BUS_EXAMPLES = ", ".join(e for f in _RECORDABLE_BUSES for e in f.examples)
# the recordable arm families: the default arm when it is one of them
_RECORDABLE_ARMS = [f for f in FAMILIES if f.kind == ARM and f.telemetry is not None]
DEFAULT_ROBOT = default_url(ARM)
_ARM_EXAMPLES = ", ".join(e for f in _RECORDABLE_ARMS for e in f.examples)
VIEW_PERIOD_S = 0.2
SHOWN_EVENTS = (
    "baseline-latch",
    "still-latched",
    "latch",
    "join",
    "more-bits",
    "changed",
    "recovered",
    "capture-limit",
    "disabled",
)


def _f(x: Any, fmt: str = ".0f") -> str:
    return "-" if x is None or (isinstance(x, float) and not math.isfinite(x)) else format(x, fmt)


def _axis_name(axis: Any) -> str:
    """An arm's joint as J1..Jn (the recorder names them j1..jn); a bus servo by its id."""
    text = str(axis)
    return text.upper() if text[:1] == "j" and text[1:].isdigit() else text


def _cells(s: AxisSample, style: str = "") -> list[str]:
    cells = [_f(s.position, ".1f"), _f(s.gap, ".1f"), _f(s.current), _f(s.temperature), _f(s.voltage, ".2f")]
    return [f"[{style}]{c}[/]" for c in cells] if style else cells


def _rows(
    sweep: Sweep | None, latched: dict[Any, int], answers: dict[Any, tuple[float, Any]] | None = None
) -> list[list[str]]:
    """One row per axis of the sweep. An axis silent in it keeps its row: its last answer, dimmed, and
    how long ago that was (`stale 2.1 s`; `silent` when it never answered); the other axes are unaffected."""
    if sweep is None:
        return []
    rows = []
    for axis, s in sweep.axes.items():
        bits = latched.get(axis)
        latch = f"[bold red]0x{bits:02x}[/]" if bits else "[green]ok[/]"
        if s is not None:
            rows.append([_axis_name(axis), sweep.group, *_cells(s), latch, ""])
            continue
        last = (answers or {}).get(axis)
        if last is None:
            rows.append([_axis_name(axis), sweep.group, "", "", "", "", "", latch, "[yellow]silent[/]"])
        else:
            age = max(0.0, sweep.t - last[0])
            stale = f"[yellow]stale {age:.1f} s[/]"
            rows.append([_axis_name(axis), sweep.group, *_cells(last[1], "dim"), latch, stale])
    return rows


def latch_line(latched: dict[Any, int], family: str | None) -> str:
    """Every latched axis with its bits and their names by the device's family: 'latched: 12 0x20
    (overload)'; "" when none is latched."""
    parts = []
    for axis, bits in latched.items():
        names = status_names(bits, family=family)
        parts.append(f"{_axis_name(axis)} 0x{bits:02x}" + (f" ({names})" if names else ""))
    return f"[bold red]latched:[/] {escape(', '.join(parts))}" if parts else ""


def render_view(
    p: RecordProgress, unit: str = "", current_unit: str = "mA", family: str | None = None
) -> Group:
    """The live view at 80 columns: one row per axis (fast and context groups) with positions in `unit` (the
    device's: deg on an arm, pulse on a bus) and currents in `current_unit` (an arm may report its joint
    torque there, in Nm), then the recorder's state on two short lines."""
    table = Table(show_header=True, header_style="bold", box=None)
    for col in (
        "axis",
        "group",
        f"position\n{unit}",
        f"gap\n{unit}",
        f"current\n{current_unit}",
        "temp\nC",
        "volts\nV",
        "latch",
        "answer",
    ):
        left = col in ("group", "latch", "answer")
        table.add_column(col, justify="left" if left else "right", no_wrap=True)
    for row in _rows(p.fast, p.latched, p.last_answers) + _rows(p.context, p.latched, p.last_answers):
        table.add_row(*row)
    others = {
        k: v
        for k, v in p.latched.items()
        if not any(s is not None and k in s.axes for s in (p.fast, p.context))
    }
    for axis, bits in others.items():
        table.add_row(str(axis), "", "", "", "", "", "", f"[bold red]0x{bits:02x}[/]", "")
    window = "[bold yellow]capture window open[/]" if p.window_open else "watching"
    codes = p.fast.codes if p.fast is not None and p.fast.codes else None
    if codes:
        window += "  codes " + " ".join(f"{k} {v}" for k, v in codes.items())
    counts = Text.from_markup(
        f"{p.t:.1f} s  {p.frames} frames  rings: fast {p.fast_count}, context {p.context_count}  "
        f"{len(p.captures)} capture(s)  {p.overruns} overrun(s)"
    )
    latched = latch_line(p.latched, family)
    if latched:
        return Group(table, counts, Text.from_markup(window), Text.from_markup(latched))
    return Group(table, counts, Text.from_markup(window))


def position_unit(describe: dict[str, Any], field: str = "position") -> str:
    """The unit of a source's positions (or another field) for a column header: deg (an arm), pulse (a
    bus), "" unknown."""
    units = describe.get("units")
    text = str(units.get(field, "")) if isinstance(units, dict) else ""
    return text.split(" ")[0]


def _event_line(e: RecorderEvent) -> str:
    colour = "red" if e.kind in ("latch", "join", "capture-limit") else "yellow"
    return f"[{colour}]{e.kind}[/] {e.text}"


def _outcome_dict(out: RecordOutcome, dest: Path) -> dict[str, Any]:
    return {
        "status": out.status,
        "reason": out.reason,
        "exit_code": int(out.exit_code),
        "dest": str(dest),
        "frames": out.frames,
        "duration_s": out.duration_s,
        "overruns": out.overruns,
        "captures": [
            {
                "path": str(c.path),
                "trigger_axes": c.header["trigger_axes"],
                "write_ms": c.write_ms,
                "tail_observed_s": c.header["tail_observed_s"],
                "end": c.header["end"],
            }
            for c in out.captures
        ],
        "latched": {str(k): v for k, v in out.latched.items()},
        "events": [
            {"t": round(e.t - out.t0, 6), "kind": e.kind, "axis": e.axis, "bits": e.bits, "text": e.text}
            for e in out.events
        ],
        "warnings": out.warnings,
        "publish_errors": out.publish_errors,
        "bad_frames_left_out": out.bad_frames,
    }


def _run_live(source: Any, clock: MonotonicClock, settings: RecordSettings) -> RecordOutcome:
    shown_captures = 0
    view_t = -math.inf
    unit = position_unit(source.describe())
    current_unit = position_unit(source.describe(), "current") or "mA"
    family = str(source.describe().get("family") or "") or None
    from servotool.runs.plan import duration_text

    d = settings.duration_s
    how_long = f"recording for {duration_text(d)} (Ctrl-C stops sooner)" if d else "recording until Ctrl-C"
    console.print(f"captures go to {settings.dest}; {how_long}", highlight=False, soft_wrap=True)
    with Live(console=console, refresh_per_second=5, transient=False) as live:

        def progress(p: RecordProgress) -> None:
            nonlocal shown_captures, view_t
            for e in p.events:
                if e.kind in SHOWN_EVENTS:
                    live.console.print(_event_line(e), highlight=False)
            for c in p.captures[shown_captures:]:
                live.console.print(
                    f"[bold]capture published[/] {c.path} (axes {c.header['trigger_axes']}, "
                    f"written in {c.write_ms:.0f} ms)",
                    highlight=False,
                )
            shown_captures = len(p.captures)
            if p.t - view_t >= VIEW_PERIOD_S:
                live.update(render_view(p, unit, current_unit, family))
                view_t = p.t

        return run_record(
            source,
            clock,
            settings,
            on_progress=progress,
            on_warning=lambda w: err_console.print(f"[yellow]warning:[/] {w}", highlight=False),
        )


def record(
    ctx: typer.Context,
    bus: Annotated[
        str,
        typer.Option(
            "--bus",
            envvar="SERVOTOOL_BUS",
            help=f"Servo bus URL (default {DEFAULT_BUS}; {_BUS_EXAMPLES}).",
        ),
    ] = DEFAULT_BUS,
    robot: Annotated[
        str | None,
        typer.Option(
            "--robot", help=f"Arm URL instead of a bus ({DEFAULT_ROBOT}, the simulator; {_ARM_EXAMPLES})."
        ),
    ] = None,
    duration: Annotated[
        float | None, typer.Option("--duration", help="Seconds to record (default: until Ctrl-C).")
    ] = None,
    out: Annotated[
        Path | None,
        typer.Option(
            "--out",
            help="Capture folder (default: "
            "$SERVOTOOL_STATE_DIR/captures, else the XDG state dir's "
            "servotool/captures).",
        ),
    ] = None,
    json_out: Annotated[bool, typer.Option("--json", help="No live view; a JSON summary on stdout.")] = False,
    dest: Annotated[Path | None, typer.Option("--dest", hidden=True)] = None,  # the former spelling of --out
) -> None:
    """Watch a servo bus (or an arm) at ~30 Hz and keep the lead-up of every hardware-error latch.

    Memory rings only while all is well: 240 fast sweeps (~8 s at 30 Hz) and 36 context entries (~36 s).
    When an axis latches a hardware error (an arm: a new fault code), one capture (JSONL) is
    published with the lead-up and a 2 s tail. Read only: nothing is commanded, no REBOOT is ever sent.
    Ctrl-C, SIGTERM, SIGHUP or SIGQUIT ends it, publishing any open capture first.
    A capture that cannot be written (a full disk) stops the recording; those already published are kept.
    Exit 0 done, 1 a capture could not be published, 2 bad usage, 3 device unreachable or lost,
    130 / 143 / 129 / 131 Ctrl-C / SIGTERM / SIGHUP / SIGQUIT.
    """
    # the bus from the environment or the config file is a default: --robot alone records the arm
    typed = ctx.get_parameter_source("bus")
    if robot is not None and typed is not None and typed.name == "COMMANDLINE":
        fail("give --bus or --robot, not both")
    kind, url = ("arm", robot) if robot is not None else ("bus", bus)
    if dest is not None:
        renamed("--dest", "--out")
    try:
        settings = RecordSettings(dest=default_dest(out if out is not None else dest), duration_s=duration)
    except ServotoolError as exc:
        fail(str(exc))
    problem = dest_problem(settings.dest)
    if problem:
        fail(f"captures cannot be published: {problem} (choose another --out)")
    outcome = _record(url, kind, settings, json_out)
    _report(outcome, settings.dest, json_out)


def _record(url: str, kind: str, settings: RecordSettings, json_out: bool) -> RecordOutcome:
    """Open the device and record; a signal before the loop takes over (the device still opening) is one
    line and its exit code (130/143/129), with nothing written."""
    clock = MonotonicClock()
    out: RecordOutcome | None = None
    try:
        check_url(url, BUS if kind == "bus" else ARM)  # one line naming the URLs of the kind meant
    except DeviceURLError as exc:
        fail(str(exc))
    try:
        # handlers from the start: SIGTERM or SIGHUP while the device opens would kill us without a word
        with StopSignals() as signals, claim(url) if kind == "bus" else _no_claim():
            source = open_source(url, kind, clock)
            with contextlib.closing(source):  # run_record closes it too; a signal before it starts does not
                announce_device(url, source.simulated, source.model)
                out = (
                    run_record(
                        source,
                        clock,
                        settings,
                        on_warning=lambda w: err_console.print(f"[yellow]warning:[/] {w}"),
                    )
                    if json_out
                    else _run_live(source, clock, settings)
                )
                signals.ending()  # recorded and published: the lock is released whole
            return out
    except DeviceURLError as exc:
        fail(str(exc))
    except (ServotoolError, ArmDeviceError, OSError) as exc:
        code = getattr(exc, "exit_code", ExitCode.DEVICE)
        fail(f"cannot record from {url}: {exc}", int(code))
    except KeyboardInterrupt as exc:
        if out is not None:  # in the instant between the recording's own ending and ours: it stands
            return out
        fail(
            f"interrupted by {signal_label(exc)} before recording started; nothing was recorded",
            exit_code_of(exc),
        )


def _no_claim() -> contextlib.nullcontext[None]:
    # an arm is only read (its state stream): a run that streams to it may own it meanwhile
    return contextlib.nullcontext()


def _report(out: RecordOutcome, dest: Path, json_out: bool) -> None:
    code = int(out.exit_code)
    if json_out:
        print_json(_outcome_dict(out, dest))
    else:
        if not console.is_terminal:
            console.print()  # the live view's last render ends without a newline off a terminal
        said = out.reason and out.reason not in out.publish_errors  # those get their error line below
        console.print(
            f"{out.status}"
            + (f" ({out.reason})" if said else "")
            + f": recorded {out.duration_s:.1f} s ({out.frames} frames, {out.overruns} overruns), "
            f"{len(out.captures)} capture(s) in {dest}",
            highlight=False,
        )
        for c in out.captures:
            console.print(
                f"  capture {c.path} (axes {c.header['trigger_axes']}, {c.header['end']}, "
                f"tail {c.header['tail_observed_s']:.2f} s, written in {c.write_ms:.0f} ms)",
                highlight=False,
            )
    if out.bad_note:
        err_console.print(f"[yellow]{escape(out.bad_note)}[/]", highlight=False, soft_wrap=True)
    for e in out.publish_errors:
        err_console.print(f"[bold red]error:[/] {escape(e)}", highlight=False, soft_wrap=True)
    if code:
        raise typer.Exit(code)
