"""What every live arm command shares: opening the arm, the progress line, the run's report and exit rule.

A live command (`lag`, `step`) parses its options, refuses bad settings before anything opens
(`preflight_or_refuse`), then under `live_arm` (the device lock, the open arm, the stop signals and the one
mapping of errors to exit codes) runs one runs/ function with `RunProgress`, renders the result
(cli/render.py), then `report_outcome` and `exit_for`. The exit status is the run status's
(runs/outcome.py): 0 complete, 1 fault / guard / rejects / our own error, 3 connection lost, 130 Ctrl-C;
a stop signal's own code (130/143/129) whenever one came; 1 also when the recording could not be analysed.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.markup import escape
from rich.progress import BarColumn, Progress, TaskID, TextColumn, TimeRemainingColumn

from servotool.cli.common import OUTPUT, announce_device, console, err_console, fail, print_json, refuse
from servotool.cli.render import draw_plot, plot_target, try_plot
from servotool.clock import MonotonicClock
from servotool.devices.arm import Arm, DeviceError
from servotool.devices.registry import (
    ARM,
    DeviceURLError,
    check_url,
    default_url,
    known_urls,
    open_arm,
    sim_urls,
)
from servotool.errors import ExitCode, Refused, ServotoolError, exit_code_of, signal_label
from servotool.runs.arm.preflight import before_open
from servotool.runs.outcome import RunStatus, StreamOutcome
from servotool.runs.ownership import claim
from servotool.runs.signals import StopSignals

if TYPE_CHECKING:  # the run's modules (numpy, pandas, scipy) load when a command runs, not for `-h`
    from servotool.runs.arm.run import RunResult
    from servotool.runs.arm.stream import TickInfo

DEFAULT_ROBOT = default_url(ARM)
# the real-device forms of every arm family, for the help (`scheme://HOST`)
_REAL_ARM_URLS = " or ".join(f"{url}HOST" for url in known_urls(ARM) if url.endswith("://"))

# the options every live arm command has, spelled once
RobotOpt = Annotated[
    str,
    typer.Option(
        "--robot",
        envvar="SERVOTOOL_ROBOT",
        help=f"Device URL: {', '.join(sim_urls(ARM))} (built-in simulators; add ?clock=sim for "
        f"simulated time, as fast as the CPU allows) or {_REAL_ARM_URLS}.",
    ),
]
JointOpt = Annotated[int, typer.Option("--joint", min=0, help="Joint index, 0 = J1 (the base).")]
CmdMsOpt = Annotated[
    float,
    typer.Option(
        "--cmd-ms",
        help="Command period (ms). Above 10 ms, --a-max is bounded by 2000 x (10 / cmd-ms)^2 deg/s²: "
        "the per-command step changes by up to a_max x period².",
    ),
]
OutOpt = Annotated[
    Path | None,
    typer.Option("--out", envvar="SERVOTOOL_OUT", help="Folder for the CSV (default ./servotool-runs)."),
]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print everything as JSON on stdout.")]
KeepOpt = Annotated[bool, typer.Option("--keep", help="Leave the robot enabled at the end.")]
RealtimeOpt = Annotated[
    bool, typer.Option("--realtime/--no-realtime", help="Ask for SCHED_FIFO while streaming.")
]
WideOpt = Annotated[
    bool, typer.Option("--wide", help="Print every column of the result table (wider than 80 columns).")
]


class RunProgress:
    """A transient progress bar on stderr, fed by the run's callbacks (cheap: rich redraws in its thread).
    Off a terminal, status messages are printed as dim lines and ticks are ignored."""

    def __init__(self, enabled: bool, label: str) -> None:
        self.enabled = enabled and err_console.is_terminal and not OUTPUT.quiet
        self.label = label
        self._progress: Progress | None = None
        self._task: TaskID | None = None

    def __enter__(self) -> RunProgress:
        if self.enabled:
            self._progress = Progress(
                TextColumn("{task.description}"),
                BarColumn(),
                TimeRemainingColumn(),
                console=err_console,
                transient=True,
                refresh_per_second=4,
            )
            self._progress.__enter__()
            self._task = self._progress.add_task(self.label, total=1)
        return self

    def __exit__(self, *exc: Any) -> None:
        if self._progress is not None:
            self._progress.__exit__(*exc)

    def status(self, message: str) -> None:
        if self._progress is not None and self._task is not None:
            self._progress.update(self._task, description=message)
        else:
            err_console.print(f"[dim]{message}[/]", highlight=False)

    def tick(self, info: TickInfo) -> None:
        if self._progress is not None and self._task is not None:
            self._progress.update(self._task, total=info.n, completed=info.k + 1)

    def callbacks(self, pass_label: str) -> dict[str, Any]:
        """on_tick, on_pass and on_status for a runs/ function, as keyword arguments."""
        return {"on_tick": self.tick, "on_pass": self.on_pass(pass_label), "on_status": self.status}

    def on_pass(self, label: str) -> Callable[[int], None]:
        """A pass callback that shows `label index` as the bar's description."""

        def cb(index: int) -> None:
            if self._progress is not None and self._task is not None and index >= 0:
                self._progress.update(self._task, description=f"{label} {index + 1}")

        return cb


def exit_code(outcome: StreamOutcome) -> int:
    """The exit status of a run that ended so: 0 complete, 130 Ctrl-C, 3 connection lost or device error,
    1 any other early end (fault, guard, rejects, our own error)."""
    return int(outcome.exit_code)


def exit_for(run: RunResult, signals: StopSignals | None = None, unmeasured: str | None = None) -> None:
    """Exit non-zero when a live run ended early, its recording could not be analysed or the measurement
    could not be made (`unmeasured`: why, said on stderr); the CSV is kept either way. A stop signal decides
    the code (130/143/129) however the stream ended, then how the stream ended (3 a lost link), then a
    recording that could not be analysed or a measurement that was not made (1)."""
    by_signal = signals.exit_code() if signals is not None else None
    if by_signal is not None:
        raise typer.Exit(int(by_signal))
    code = exit_code(run.outcome)
    if run.analysis is None:
        err_console.print(
            f"[bold red]error:[/] the recording could not be analysed: {run.analysis_error}", highlight=False
        )
        # how the stream ended decides first: a lost link stays 3 when the file it cut short holds nothing
        raise typer.Exit(code or ExitCode.FAULT)
    if code:
        raise typer.Exit(code)
    if unmeasured:
        err_console.print(f"[bold red]error:[/] {escape(unmeasured)}", highlight=False)
        raise typer.Exit(ExitCode.FAULT)


def report_outcome(outcome: StreamOutcome, path: Path, notes: list[str]) -> None:
    """Notes and an early end on stderr, the recording's path on stdout."""
    for note in notes:
        err_console.print(f"[yellow]note:[/] {note}", highlight=False)
    if outcome.status != RunStatus.COMPLETE:
        err_console.print(f"[bold red]run ended early:[/] {outcome.reason}", highlight=False)
    if outcome.late_ticks:
        err_console.print(
            f"[yellow]{outcome.late_ticks} ticks were sent more than half a period late "
            f"(worst {outcome.max_late_ms:.1f} ms)[/]",
            highlight=False,
        )
    if outcome.backstop_alteration_deg is not None:
        console.print(backstop_line(outcome), highlight=False)
    console.print(f"recording: {path}", highlight=False, soft_wrap=True)


def backstop_line(outcome: StreamOutcome) -> str:
    """What the backstop behind the generator did: nothing (the goal), or its largest change."""
    if not outcome.backstop_altered:
        return "backstop: never bound (no command altered)"
    return (
        f"[yellow]backstop: bound on {outcome.backstop_altered} command(s), largest alteration "
        f"{outcome.backstop_alteration_deg:.3g} deg[/]"
    )


def _cannot_open(robot: str, exc: BaseException) -> str:
    """One line; the URL once, where the reason already names it."""
    text = str(exc)
    return f"cannot open: {text}" if robot in text else f"cannot open {robot}: {text}"


def open_device(robot: str, rpc: bool, clock: MonotonicClock) -> Arm:
    """Open the arm at `robot` on `clock` (XML-RPC setpoints with rpc); one error line and exit 2 when the
    URL is wrong, exit 3 when the device cannot be reached. Says loudly when it is a simulator."""
    kwargs: dict[str, Any] = {"now": clock.now}
    if rpc:
        kwargs["transport"] = "rpc"
    try:
        arm = open_arm(robot, **kwargs)
    except DeviceURLError as exc:
        fail(_cannot_open(robot, exc))
    except (DeviceError, OSError) as exc:
        fail(_cannot_open(robot, exc), code=ExitCode.DEVICE)
    announce_device(robot, arm.simulated, arm.model)
    return arm


def preflight_or_refuse(problems: list[str], out: Path) -> None:
    """Exit 2 with one line per problem (the settings' and the output folder's) before anything opens."""
    problems = before_open(problems, out)
    if problems:
        refuse(problems)


@contextmanager
def live_arm(robot: str, rpc: bool, clock: MonotonicClock) -> Iterator[tuple[Arm, StopSignals]]:
    """Own the arm for one command and map every way out of it to its exit code, in one place.

    Yields (arm, signals): the device, opened only once the host-wide lock of its address is held (another
    servotool process on it: refused), and the StopSignals that make SIGTERM and SIGHUP end the run like
    Ctrl-C (pass them to the run). The device is closed whatever happens. Exits: a refusal 2 (one line per
    problem), a device that cannot be reached 3, a signal outside the stream 130/143/129.
    """
    try:
        check_url(robot, ARM)  # an arm URL, or one line naming the arm URLs meant
    except DeviceURLError as exc:
        fail(str(exc))
    with StopSignals() as signals:
        try:
            with claim(robot):
                arm = open_device(robot, rpc, clock)
                with contextlib.closing(arm):
                    yield arm, signals
        except Refused as exc:
            refuse([str(exc)])
        except (DeviceError, ServotoolError) as exc:
            fail(f"{exc} (nothing was recorded)", code=exit_code_of(exc))
        except KeyboardInterrupt as exc:
            fail(f"interrupted by {signal_label(exc)}", code=exit_code_of(exc))


def run_json(run: RunResult, plot_path: Path | None) -> dict[str, Any]:
    """The JSON document of a live run: the run's own `to_dict()` plus the plot's path."""
    return {**run.to_dict(), "plot": str(plot_path) if plot_path else None}


def finish_live(
    run: RunResult,
    signals: StopSignals | None,
    *,
    plot: bool,
    json_out: bool,
    render: Callable[[], None],
    unmeasured: str | None = None,
) -> None:
    """Write the plot when asked, print the JSON document or `render()` and the outcome, then exit by the
    run's exit rule (exit_for; `unmeasured` says why a run that streamed whole measured nothing)."""
    plot_path = None
    if plot and run.analysis is not None:  # a plot that cannot be written is said; the run keeps its exit
        fa = run.analysis
        plot_path, problem = try_plot(lambda target: draw_plot(fa, target), plot_target(fa))
        if problem:
            err_console.print(f"[bold red]error:[/] {escape(problem)}", highlight=False, soft_wrap=True)
    if json_out:
        print_json(run_json(run, plot_path))
    else:
        render()
        report_outcome(run.outcome, run.path, run.notes)
        if plot_path:
            console.print(f"plot: {plot_path}", highlight=False, soft_wrap=True)
    exit_for(run, signals, unmeasured)
