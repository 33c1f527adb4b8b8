"""`servotool lag --ramp`: measure the commanded-to-measured lag with smooth out-and-back passes."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.progress import BarColumn, Progress, TextColumn, TimeRemainingColumn
from rich.table import Table

from servotool.analysis.lag import CombinedLag, LagResult, OriginFit
from servotool.cli.common import announce_device, console, err_console, fail, print_json, run_errors
from servotool.clock import MonotonicClock
from servotool.devices.arm import DeviceError
from servotool.devices.registry import DeviceURLError, open_arm
from servotool.io.csvlog import command_line
from servotool.io.paths import out_dir
from servotool.runs.analyze import FileAnalysis
from servotool.runs.ramp import RampSettings, run_ramp
from servotool.runs.stream import COMPLETE, INTERRUPTED, StreamOutcome, TickInfo

DEFAULT_ROBOT = "sim:fr3"


def _f(x: Any, fmt: str = ".2f", unit: str = "") -> str:
    if x is None or (isinstance(x, float) and not math.isfinite(x)):
        return "[dim]-[/]"
    return f"{x:{fmt}}{unit}"


def parse_speeds(text: str) -> tuple[float, ...]:
    try:
        speeds = tuple(float(x) for x in text.replace(";", ",").split(",") if x.strip())
    except ValueError:
        fail(f"--speeds {text!r}: expected a comma list of speeds in deg/s, e.g. 5,10,20,40")
    if not speeds:
        fail("--speeds lists no speed")
    return speeds


class RunProgress:
    """A transient progress bar on stderr, fed by the run's callbacks (cheap: rich redraws in its thread)."""

    def __init__(self, enabled: bool, label: str) -> None:
        self.enabled = enabled and err_console.is_terminal
        self.label = label
        self._progress: Progress | None = None
        self._task: Any = None

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
        if self._progress is not None:
            self._progress.update(self._task, description=message)
        else:
            err_console.print(f"[dim]{message}[/]", highlight=False)

    def tick(self, info: TickInfo) -> None:
        if self._progress is not None:
            self._progress.update(self._task, total=info.n, completed=info.k + 1)

    def on_pass(self, label: str):
        def cb(index: int) -> None:
            if self._progress is not None and index >= 0:
                self._progress.update(self._task, description=f"{label} {index}")

        return cb


def exit_code(outcome: StreamOutcome) -> int:
    """0 complete, 130 Ctrl-C, 1 any other early end (fault, guard, lost connection, rejects)."""
    if outcome.status == COMPLETE:
        return 0
    return 130 if outcome.status == INTERRUPTED else 1


def outcome_dict(outcome: StreamOutcome) -> dict[str, Any]:
    return {
        "status": outcome.status,
        "reason": outcome.reason,
        "ticks_sent": outcome.ticks_sent,
        "stop_ticks": outcome.stop_ticks,
        "duration_s": outcome.t_end,
        "fault": outcome.fault,
        "fault_t_s": outcome.fault_t,
        "guard_reason": outcome.guard_reason,
        "guard_t_s": outcome.guard_t,
        "rejects": outcome.rejects,
        "late_ticks": outcome.late_ticks,
        "max_late_ms": outcome.max_late_ms,
        "at_rest": outcome.at_rest,
        "notes": outcome.notes,
    }


def exit_for(run: Any) -> None:
    """Exit non-zero when a live run (RampRun or StepRun) ended early or its recording could not be analysed;
    the CSV is kept either way."""
    if run.analysis is None:
        err_console.print(
            f"[bold red]error:[/] the recording could not be analysed: {run.analysis_error}", highlight=False
        )
        raise typer.Exit(1)
    code = exit_code(run.outcome)
    if code:
        raise typer.Exit(code)


def report_outcome(outcome: StreamOutcome, path: Path, notes: list[str]) -> None:
    for note in notes:
        err_console.print(f"[yellow]note:[/] {note}", highlight=False)
    if outcome.status != COMPLETE:
        err_console.print(f"[bold red]run ended early:[/] {outcome.reason}", highlight=False)
    if outcome.late_ticks:
        err_console.print(
            f"[yellow]{outcome.late_ticks} ticks were sent more than half a period late "
            f"(worst {outcome.max_late_ms:.1f} ms)[/]",
            highlight=False,
        )
    console.print(f"recording: {path}", highlight=False)


def open_device(robot: str, rpc: bool, clock: MonotonicClock):
    kwargs: dict[str, Any] = {"now": clock.now}
    if rpc:
        kwargs["transport"] = "rpc"
    try:
        arm = open_arm(robot, **kwargs)
    except (DeviceURLError, DeviceError, OSError) as exc:
        fail(f"cannot open {robot}: {exc}")
    announce_device(robot, arm.simulated, getattr(arm, "model", ""))
    return arm


# ---------------------------------------------------------------------------------------------------------
# rendering, shared with `analyze`


def _fit_line(name: str, fit: OriginFit | None) -> str:
    if fit is None:
        return f"{name}: [dim]not measurable[/]"
    lo, hi = fit.ci95_ms
    text = f"{name}: [bold]{fit.lag_ms:.2f} ms[/] ± {_f(fit.se_ms)} ms (95 % CI {_f(lo)}..{_f(hi)} ms, "
    text += f"{fit.n_passes} passes)"
    if math.isfinite(fit.intercept_deg):
        text += f"; with an intercept: {fit.intercept_deg:+.4f} ± {fit.intercept_se_deg:.4f} deg"
    return text


def render_lag(result: LagResult, title: str = "") -> None:
    table = Table(title=title or None, show_header=True, header_style="bold", pad_edge=False)
    columns = ("#", "dir", "v°/s", "n", "Δ°", "L ms", "gΔ mean°", "gΔ peak°", "g L ms", "mid L ms", "over°")
    for col in columns:
        table.add_column(col, justify="left" if col == "dir" else "right", no_wrap=True)
    notes = []
    for p in result.passes:
        table.add_row(
            str(p.index),
            p.direction,
            _f(p.speed_deg_s, ".1f"),
            str(p.n_frames),
            _f(p.delta_mean_deg, ".4f"),
            _f(p.lag_ms, ".2f"),
            _f(p.guard_delta_mean_deg, ".3f"),
            _f(p.guard_delta_peak_deg, ".3f"),
            _f(p.guard_lag_ms, ".2f"),
            _f(p.mid_lag_ms, ".2f"),
            _f(p.overshoot_deg, ".4f"),
        )
        if p.note:
            notes.append(f"pass {p.index}: {p.note}")
    table.caption = (
        "Δ: command at each frame's time - measured (cruise mean); g: guard view, setpoint just sent - "
        "newest frame; mid: midpoint crossing; over: past the end after the stop"
    )
    console.print(table)
    for note in notes:
        err_console.print(f"[yellow]{note}[/]", highlight=False)
    console.print(_fit_line("lag L (delta = v * L, true delta at each state frame)", result.fit))
    link, host = result.link, result.host_fit
    if host is not None and result.fit is not None:
        parts = []
        if math.isfinite(link.command_path_ms):
            parts.append(f"command path {link.command_path_ms:.2f} ms from {link.command_answers} answers")
        if link.state_mapped:
            parts.append(f"state path {link.state_path_ms:.2f} ms via the controller's timestamps")
        removed = ", ".join(parts) if parts else "nothing removed"
        console.print(f"host view (send time to receive time): {host.lag_ms:.2f} ms; link latency: {removed}")
        if link.note:
            console.print(f"  [dim]{link.note}[/]")
    if result.guard_fit is not None and result.fit is not None:
        base = host.lag_ms if host is not None else result.fit.lag_ms
        console.print(
            f"guard-view lag (setpoint just sent - newest frame): {result.guard_fit.lag_ms:.2f} ms "
            f"(host view {result.guard_fit.lag_ms - base:+.2f} ms: the age of the newest state frame, "
            f"period {_f(result.state_period_s * 1e3, '.1f')} ms)"
        )
    mid = result.midpoint
    if mid is not None:
        mark = "[green]agrees[/]" if mid.agrees else "[red]disagrees[/]"
        console.print(
            f"midpoint cross-check: {mid.mean_ms:.2f} ms (passes {mid.min_ms:.2f}..{mid.max_ms:.2f}), "
            f"{_f(mid.diff_from_fit_ms, '+.2f')} ms from the fit: {mark} within {mid.tolerance_ms:g} ms"
        )
    if result.model is not None:
        color = "green" if result.model.constant else "yellow"
        console.print(f"model check: [{color}]{result.model.message}[/]")
    d = result.dynamics
    if d is not None:
        console.print(
            f"dynamics (whole sweep, ramp corners included): L = {d.lag_ms:.2f} ± {d.lag_se_ms:.2f} ms, "
            f"tau = {d.tau_ms:.2f} ± {_f(d.tau_se_ms)} ms, offset = {d.offset_deg:+.4f} ± "
            f"{d.offset_se_deg:.4f} deg, rms {d.rms_deg:.4f} deg over {d.n_samples} frames"
        )
        console.print(f"  -> {d.verdict}")
    if result.noise is not None:
        n = result.noise
        console.print(
            f"noise at rest: {n.std_deg:.4f} deg std, {n.peak_deg:.4f} deg peak ({n.n_samples} frames, "
            f"{n.source})"
        )
    t = result.tuning
    if t is not None:
        console.print(
            f"guard tuning (a_max {t.a_max:g} deg/s², v_max {t.v_max:g} deg/s): "
            f"[bold]lag_s = {t.lag_s:.2f} s[/], [bold]margin_deg = {t.margin_deg:.1f}[/] "
            f"(braking {t.braking_deg:.3f} + noise {t.noise_deg:.3f} + frame age {t.frame_age_deg:.3f} deg); "
            f"shaper trail at v_max: {t.trail_deg:.2f} deg "
            f"({t.trail_s * 1e3:.0f} ms)"
        )
    for w in result.warnings:
        err_console.print(f"[yellow]warning:[/] {w}", highlight=False)


def render_combined(combined: CombinedLag) -> None:
    console.print(f"[bold]combined over {combined.n_files} ramp files[/]")
    console.print(_fit_line("lag L", combined.fit))
    if combined.guard_fit is not None:
        console.print(f"guard-view lag: {combined.guard_fit.lag_ms:.2f} ms")
    if combined.midpoint is not None:
        m = combined.midpoint
        console.print(f"midpoint cross-check: {m.mean_ms:.2f} ms ({m.min_ms:.2f}..{m.max_ms:.2f})")
    if combined.model is not None:
        console.print(f"model check: {combined.model.message}")


def save_plot(fa: FileAnalysis, folder: Path | None = None) -> Path:
    """The figure of an analysed run, as a PNG next to its CSV (or in `folder`)."""
    target = (folder or fa.path.parent) / (fa.path.stem + ".png")
    target.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(fa.result, LagResult):
        from servotool.plots.lag import save_lag_plot

        return save_lag_plot(fa.result, fa.recording, target, title=fa.path.name)
    from servotool.plots.step import save_step_plot

    return save_step_plot(fa.result, fa.recording, target, title=fa.path.name)


# ---------------------------------------------------------------------------------------------------------
# the command


def lag(
    ramp: bool = typer.Option(
        True,
        "--ramp/--no-ramp",
        help="Ramp mode: smooth passes, never a velocity jump "
        "(the only lag method; step responses come from `servotool step`).",
    ),
    robot: str = typer.Option(
        DEFAULT_ROBOT,
        "--robot",
        help="Device URL: sim:fr3, sim:fr20, sim:simmachine (built-in simulators) or fairino://HOST.",
    ),
    joint: int = typer.Option(0, "--joint", min=0, help="Joint index, 0 = J1 (the base)."),
    sweep: float = typer.Option(
        20.0, "--sweep", help="Degrees out from the current pose (sign = direction)."
    ),
    speeds: str = typer.Option("5,10,20,40", "--speeds", help="Cruise speeds, deg/s, comma-separated."),
    ramp_ms: float = typer.Option(200.0, "--ramp-ms", help="Time to reach each cruise speed (ms)."),
    settle_ms: float = typer.Option(500.0, "--settle-ms", help="Rest after each pass (ms)."),
    cmd_ms: float = typer.Option(10.0, "--cmd-ms", help="Command period (ms)."),
    a_max: float = typer.Option(500.0, "--a-max", help="Acceleration bound, deg/s² (stop, guard tuning)."),
    v_max: float = typer.Option(130.0, "--v-max", help="Speed bound, deg/s (refusal, guard tuning)."),
    rpc: bool = typer.Option(False, "--rpc", help="Send every setpoint as an XML-RPC ServoJ instead of UDP."),
    out: Annotated[
        Path | None, typer.Option("--out", help="Folder for the CSV (default ./servotool-runs).")
    ] = None,
    plot: bool = typer.Option(False, "--plot", help="Also write a PNG of the fit next to the CSV."),
    json_out: bool = typer.Option(False, "--json", help="Print everything as JSON on stdout."),
    keep: bool = typer.Option(False, "--keep", help="Leave the robot enabled at the end."),
    rt: bool = typer.Option(True, "--realtime/--no-realtime", help="Ask for SCHED_FIFO while streaming."),
) -> None:
    """Measure the commanded-to-measured lag L with smooth out-and-back passes at several speeds.

    Per pass: cruise delta and L = delta / v at every state frame, guard-view delta, midpoint lag, overshoot.
    Summary: delta = v * L through the origin with its 95 % CI, the midpoint cross-check, the model check.
    Then a dead time + first-order lag + friction fit over the whole sweep, the noise at rest, guard tuning.
    Everything is recorded in a CSV that `servotool analyze` reads back. Exit 0 complete, 1 fault, 130 Ctrl-C.
    """
    if not ramp:
        fail("only ramp mode measures the lag here: use --ramp (step responses: `servotool step`)")
    settings = RampSettings(
        joint=joint,
        sweep_deg=sweep,
        speeds_deg_s=parse_speeds(speeds),
        ramp_s=ramp_ms / 1e3,
        settle_s=settle_ms / 1e3,
        cmd_period_s=cmd_ms / 1e3,
        a_max=a_max,
        v_max=v_max,
        keep=keep,
        realtime=rt,
        transport="rpc" if rpc else "udp",
    )
    clock = MonotonicClock()
    arm = open_device(robot, rpc, clock)
    with run_errors(arm), RunProgress(not json_out, "ramp") as progress:
        run = run_ramp(
            arm,
            settings,
            clock=clock,
            out_dir=out_dir(out),
            command=command_line(),
            on_tick=progress.tick,
            on_pass=progress.on_pass("pass"),
            on_status=progress.status,
        )
    plot_path = None
    if plot and run.analysis is not None:
        plot_path = save_plot(run.analysis)
    if json_out:
        print_json(
            {
                "run": outcome_dict(run.outcome),
                "notes": run.notes,
                "analysis": run.analysis.to_dict() if run.analysis else None,
                "analysis_error": run.analysis_error,
                "plot": str(plot_path) if plot_path else None,
            }
        )
    else:
        if run.analysis is not None:
            assert isinstance(run.analysis.result, LagResult)
            render_lag(run.analysis.result, title=f"lag, joint {joint} ({robot})")
        report_outcome(run.outcome, run.path, run.notes)
        if plot_path:
            console.print(f"plot: {plot_path}", highlight=False)
    exit_for(run)
