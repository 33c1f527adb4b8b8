"""`servotool sweep`: map a bus-servo arm's joint limits by slow sweeps, with any key as the stop button.

Exit codes: 0 done, 1 stopped by the key (the arm holds where it stopped), by the guard or by a fault found
during the run, 2 a setting refused (nothing opened) or the sweep refused before moving (a relaxed arm
included), 3 no board answered, the link failed or a swept servo stopped answering mid-run (after the hold),
130 Ctrl-C, 143 SIGTERM, 129 SIGHUP (after the hold).
"""

from __future__ import annotations

import contextlib
import os
import select
import sys
import threading
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.progress import (
    BarColumn,
    Progress,
    TaskProgressColumn,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.table import Table

from servotool.cli.bus_common import (
    DEFAULT_BUS,
    bus_command,
    fail_all,
    limits_problem,
    stopped_by,
    url_simulated,
)
from servotool.cli.common import OUTPUT, DryRunOpt, console, err_console, fail, print_json, show_plan
from servotool.cli.options import derive_options, settings_from
from servotool.cli.render import compact_table
from servotool.devices.bus import Bus, bus_clock
from servotool.devices.family import DeviceFacts, Family
from servotool.devices.registry import (
    BUS,
    FAMILIES,
    DeviceURLError,
    check_url,
    family_of,
    parse_url,
    sim_names,
    url_facts,
)
from servotool.errors import ExitCode
from servotool.io.paths import out_dir
from servotool.runs.bus.sweep import NO_JOINTS, SweepConfig, SweepEvent, SweepRun, sweep_plan
from servotool.runs.bus.sweep_options import SweepOptions
from servotool.runs.signals import StopSignals

if TYPE_CHECKING:  # the recording side (numpy, pandas) loads when a sweep runs, not for `sweep -h`
    from servotool.runs.bus.sweep_files import SweepFiles, SweepRecord


class SweepDirection(str, Enum):
    """--direction: one way (a value of the runs' DIRECTIONS) or both, down first."""

    UP = "up"
    DOWN = "down"
    BOTH = "both"


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


class SweepProgress:
    """Renders the run's progress callbacks: one bar for the whole run with a status line (servo,
    direction, command and read-back), and a line per start, stop and return."""

    def __init__(self, progress: Progress) -> None:
        self.progress = progress
        self.task = progress.add_task("starting", total=1.0)

    def __call__(self, event: SweepEvent) -> None:
        count = max(1, event.count)
        done = (event.index + (1.0 if event.kind in ("stop", "return") else event.fraction)) / count
        if event.kind == "done":
            done = 1.0
        if event.kind == "tick":
            status = (
                f"servo {event.joint} {event.direction} ({event.index + 1}/{count}): "
                f"cmd {event.cmd} read {'-' if event.read is None else event.read}"
            )
            self.progress.update(self.task, completed=done, description=status)
            return
        style = {"stop": "bold", "done": "green"}.get(event.kind, "")
        text = f"[{style}]{event.message}[/]" if style else event.message
        self.progress.console.print(f"{event.t:7.2f} s  {text}", highlight=False)
        self.progress.update(self.task, completed=done)


def _table(run: SweepRun) -> Table:
    table = compact_table("limit sweeps")
    for col in ("servo", "dir", "start", "stored", "stop", "how", "limit", "back at"):
        header = col if col in ("servo", "dir", "how") else f"{col}\npulses"
        table.add_column(header, justify="left" if col in ("dir", "how") else "right", no_wrap=col != "how")
    for r in run.results:
        table.add_row(
            str(r.joint),
            r.direction,
            str(r.start),
            str(r.bound),
            "-" if r.stop is None else str(r.stop),
            r.reason,
            "-" if r.limit is None else str(r.limit),
            "-" if r.returned_to is None else str(r.returned_to),
        )
    return table


def _family(bus: str) -> Family | None:
    """The bus URL's family; None when the URL does not parse (opening it then says why)."""
    try:
        return family_of(parse_url(bus), BUS)
    except DeviceURLError:
        return None


def _sweepable() -> list[Family]:
    """The bus families whose mapped limits go into an arm limits file."""
    return [f for f in FAMILIES if f.kind == BUS and f.limits_node]


def _limits_files() -> str:
    """What an arm limits file holds, per family that has one: its position span and whose it is."""
    spans = []
    for fam in _sweepable():
        span = url_facts(fam.examples[0], BUS).position_range if fam.examples else None
        units = url_facts(fam.examples[0], BUS).units if fam.examples else ""
        spans.append(f"{units}s {span[0]}-{span[1]} of the {fam.title}" if span else f"the {fam.title}")
    return "; ".join(spans) or "no bus family has one"


def _span(bus: str) -> tuple[int, int] | None:
    """The bus's position span from its family's facts (no bus opened); None when the URL does not parse."""
    try:
        return url_facts(bus, BUS).position_range
    except DeviceURLError:
        return None


def _bus_help() -> str:
    urls = [f"sim:{name}[?k=v]" for fam in _sweepable() for name in sim_names(fam)]
    urls += [url for fam in _sweepable() for url in fam.examples]
    return f"Servo bus URL ({' or '.join(urls)})."


def _settings(bus: str, opts: SweepOptions, files: SweepFiles) -> SweepConfig:
    """Every setting checked before the bus is opened: one line per problem and exit 2."""
    try:
        check_url(bus, BUS)  # a bus URL, or one line naming the bus URLs meant
    except DeviceURLError as exc:
        fail(str(exc))
    problems: list[str] = []
    family = _family(bus)
    try:
        facts: DeviceFacts | None = url_facts(bus, BUS)
    except DeviceURLError:
        facts = None  # opening it says why
    unwritable = family is not None and not family.limits_node
    if family is not None and unwritable:  # its limits could not be written after all the motion
        problems.append(
            f"--bus {bus}: sweep maps limits into an arm limits file ({_limits_files()}); a "
            f"{family.name.capitalize()} bus's limits cannot be written there"
        )
    # a refused bus has no arm profile to take the joints from: no joints is no problem of its own then
    problems += [
        p for p in opts.problems(facts) if not (unwritable and not opts.swept(facts) and p == NO_JOINTS)
    ]
    from servotool.runs.bus.sweep_files import file_problems

    problems += file_problems(files, url_simulated(bus))
    if problems:
        fail_all(problems)
    return opts.config(facts)


def _render(record: SweepRecord, json_out: bool) -> None:
    run = record.run
    if json_out:
        print_json({**record.result, "outputs": record.outputs, "notes": record.notes})
    else:
        found = "; ".join(f"servo {j} {f.lo}..{f.hi}" for j, f in record.found.items())
        console.print(
            f"{len(run.results)} sweep(s), limits in pulses: {found or 'none found'}", highlight=False
        )
        console.print(_table(run))
        for j, f in record.found.items():
            console.print(f"servo {j}: arm_limit_{j}: [{f.lo}, {f.hi}]  (lo {f.lo_source}, hi {f.hi_source})")
        for kind, path in record.outputs.items():
            for p in path if isinstance(path, list) else [path]:
                err_console.print(f"[dim]{kind}:[/] {p}", highlight=False, soft_wrap=True)
    link = record.result.get("link") or {}
    if link.get("bad_frames") or link.get("skipped_bytes"):
        err_console.print(
            f"[yellow]serial link: {link.get('bad_frames', 0)} corrupted frame(s), "
            f"{link.get('skipped_bytes', 0)} byte(s) of noise skipped, "
            f"{link.get('retries', 0)} read(s) repeated[/]",
            highlight=False,
        )
    for note in record.notes:
        err_console.print(f"[yellow]{note}[/]", highlight=False)


@derive_options(SweepOptions, after="bus", choices={"direction": SweepDirection})
def sweep(
    ctx: typer.Context,
    bus: str = typer.Option(DEFAULT_BUS, "--bus", envvar="SERVOTOOL_BUS", help=_bus_help()),
    limits: Annotated[
        Path | None,
        typer.Option(
            "--limits",
            envvar="SERVOTOOL_LIMITS",
            help="ROS 2 parameter YAML with the current arm_limit_N; the found limits are merged "
            "into a copy of it (comments and layout kept).",
        ),
    ] = None,
    update_limits: bool = typer.Option(
        False,
        "--update-limits",
        help="Write the merged limits back into the "
        "--limits file itself (mode kept; the old text is kept as FILE.bak, "
        "FILE.bak.1, ... never overwriting an earlier backup). Refused on a "
        "simulated bus unless --force-sim.",
    ),
    force_sim: bool = typer.Option(
        False,
        "--force-sim",
        help="Allow --update-limits to write limits mapped on a simulated bus into the --limits file.",
    ),
    out: Annotated[
        Path | None,
        typer.Option(
            "--out",
            envvar="SERVOTOOL_OUT",
            help="Output folder (default ./servotool-runs).",
        ),
    ] = None,
    json_out: bool = typer.Option(False, "--json", help="Print the result as JSON instead of a table."),
    plot: bool = typer.Option(
        False,
        "--plot",
        help="Write a PNG per sweep (commanded against measured) and a summary of every mapped limit.",
    ),
    dry_run: DryRunOpt = False,
    **options: Any,
) -> None:
    """Map joint limits by slow sweeps toward each servo's stored limit; any key stops and holds the arm.

    Per joint and direction: one sweep from the current pose at --speed pulses/s.

    It stops when the joint stalls, reaches the stored limit, or when you press any key.

    The limit is set --inside pulses inside each stop; the joint returns to its start before the next sweep.

    Never commands past a stored limit; never writes servo EEPROM. Exit 0 done, 1 stopped by the key or a
    fault found, 2 refused before anything moved, 3 no board or link lost,
    130/143/129/131 Ctrl-C/SIGTERM/SIGHUP/SIGQUIT (the arm held).
    """
    from servotool.io.csvlog import command_line
    from servotool.runs.bus.sweep_files import SweepFiles

    files = SweepFiles(
        out_dir=out_dir(out),
        limits_path=limits,
        update_limits=update_limits,
        force_sim=force_sim,
        plot=plot,
        command=command_line(),
    )
    config = _settings(bus, settings_from(SweepOptions, ctx, options), files)
    lf, problems = limits_problem(limits)
    if problems:
        fail_all(problems)
    files = SweepFiles(**{**files.__dict__, "limits": lf})
    if dry_run:
        show_plan(sweep_plan(config, _span(bus)), bus, dry_run=True, json_out=json_out)
    with bus_command(
        bus, keep_sim_pose=True, on_signal=lambda: "the sweep was stopped: the arm holds where it was"
    ) as dev:
        record, signals = _run(dev, config, files)
    _render(record, json_out)
    _exit_if_stopped(record, signals)


def _exit_if_stopped(record: SweepRecord, signals: StopSignals) -> None:
    """Exits with the run's code when a fault, a signal or the key ended the sweeps; returns otherwise."""
    if record.run.error:
        fail(record.run.error, record.run.exit_code)
    if record.run.aborted and signals.requested is not None:
        stopped_by(signals, "the arm holds where it stopped")
    if record.run.aborted:
        err_console.print("[bold yellow]aborted by key: the arm is holding where it stopped[/]")
        raise typer.Exit(ExitCode.FAULT)


def _run(dev: Bus, config: SweepConfig, files: SweepFiles) -> tuple[SweepRecord, StopSignals]:
    """The sweeps with a progress bar; any key, Ctrl-C, SIGTERM or SIGHUP stops them with a hold."""
    from servotool.runs.bus.sweep_files import sweep_and_write

    err_console.print(
        f"sweeping servo(s) {', '.join(map(str, config.joints))} {'/'.join(config.directions)} "
        f"at {config.speed:g} pulses/s, limits {config.inside} pulses inside each stop",
        highlight=False,
    )
    columns = (
        TextColumn("{task.description}"),
        BarColumn(),
        TaskProgressColumn(),
        TimeElapsedColumn(),
        TextColumn("left"),
        TimeRemainingColumn(),
    )
    with (
        KeyWatcher() as keys,
        StopSignals() as signals,
        signals.latching(),
        Progress(*columns, console=err_console, transient=True, disable=OUTPUT.quiet) as progress,
    ):
        if keys.active:
            progress.console.print("[bold yellow]press any key to stop: the arm holds at once[/]")
        else:
            progress.console.print("[dim]stdin is not a terminal: no stop key, Ctrl-C holds the arm[/]")
        record = sweep_and_write(
            dev,
            bus_clock(dev),
            config,
            files,
            abort_requested=lambda: keys.pressed.is_set() or signals.requested is not None,
            on_event=SweepProgress(progress),
            stop_reason=signals.reason,
        )
    return record, signals
