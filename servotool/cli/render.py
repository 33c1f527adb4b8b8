"""What the lag and step commands (and `analyze`) print: verdicts, result tables, fit lines, plots on disk.

Shared by the live commands and by `analyze`, so a live run and its file read back render the same way.
Every result reads at 80 columns: a one-line verdict first, then a short table whose headers carry their
units, then the detail lines (which wrap, never truncate). `wide=True` prints every column of the table.
Joints are named J1..Jn (J1 = joint index 0, the base). Only cli/ talks to the terminal.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich import box
from rich.console import Console
from rich.markup import escape
from rich.measure import Measurement
from rich.table import Table

from servotool.analysis.uncertainty import ci95_text, stderr_text, with_stderr
from servotool.cli import common

if TYPE_CHECKING:  # the analysis (scipy, pandas) is imported by whoever made the results, not by `-h`
    from servotool.analysis.lag import CombinedLag, LagResult, OriginFit, PassLag
    from servotool.analysis.step import StepMetrics, StepResult
    from servotool.runs.arm.step import GuardSetup
    from servotool.runs.offline.analyze import FileAnalysis


def fmt(x: Any, spec: str = ".2f", unit: str = "") -> str:
    """x formatted by spec with its unit, or a dim dash for a missing or non-finite value."""
    if x is None or (isinstance(x, float) and not math.isfinite(x)):
        return "[dim]-[/]"
    return f"{x:{spec}}{unit}"


def relative_s(seconds: Any, ref: str) -> str:
    """A time relative to an event, the way people say it: '51 ms before the fault', '0.250 s after
    detection', 'at detection'; '-' when unknown. Never a negative 'after'."""
    try:
        t = float(seconds)
    except (TypeError, ValueError):
        return "-"
    if not math.isfinite(t):
        return "-"
    size = abs(t)
    if size < 0.0005:
        return f"at {ref}"
    mag = f"{size * 1e3:.0f} ms" if size < 1.0 else f"{size:.3f} s"
    return f"{mag} {'before' if t < 0 else 'after'} {ref}"


def relative_ms(ms: Any, ref: str) -> str:
    """relative_s for a time in milliseconds."""
    try:
        return relative_s(float(ms) / 1e3, ref)
    except (TypeError, ValueError):
        return "-"


def joint_name(index: int) -> str:
    """J1 for joint index 0 (the base), J2 for 1, ..."""
    return f"J{index + 1}"


def _out(out: Console | None) -> Console:
    return out if out is not None else common.console


@dataclass(frozen=True)
class Col:
    """One table column: header (with its unit), cell formatter, shown in the short table or only wide."""

    header: str
    cell: Callable[[Any], str]
    short: bool = True
    left: bool = False


def compact_table(title: str = "") -> Table:
    """An empty table in the compact style every command uses: a rule under the header, no outer edge."""
    return Table(
        title=title or None,
        box=box.SIMPLE_HEAD,
        show_edge=False,
        pad_edge=False,
        header_style="bold",
        title_justify="left",
    )


def print_table(con: Console, table: Table, wide: bool) -> None:
    """Print a result table; a wide one at its own full width when the terminal is narrower, so no number
    is ever cut to an ellipsis (the terminal wraps the long lines instead)."""
    if not wide:
        con.print(table)
        return
    natural = Measurement.get(con, con.options.update(width=10_000), table).maximum
    saved = con.width
    con.width = max(saved, natural)  # print() never renders wider than the console's own width
    try:
        con.print(table, crop=False)
    finally:
        con.width = saved


def _table(title: str, cols: Sequence[Col], rows: Sequence[Any], wide: bool) -> Table:
    """A compact table (no outer edge): the short columns, or all of them when wide."""
    table = Table(
        title=title or None, box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False, header_style="bold"
    )
    shown = [c for c in cols if wide or c.short]
    for c in shown:
        table.add_column(c.header, justify="left" if c.left else "right", no_wrap=True)
    for r in rows:
        table.add_row(*(c.cell(r) for c in shown))
    return table


# ---------------------------------------------------------------------------------------------------------
# lag


def _speeds(result: LagResult) -> list[float]:
    """The distinct cruise speeds (deg/s, rounded to 0.1) of the passes that measured a lag."""
    return sorted({round(p.speed_deg_s, 1) for p in result.passes if math.isfinite(p.lag_ms)})


def lag_verdict(result: LagResult | CombinedLag) -> str:
    """One line: L with its 95 % confidence interval, whether it is constant across speeds (or that the
    check needs two speeds), and the kind of lag the dynamic fit found."""
    from servotool.analysis.lag import LagResult

    fit = result.fit
    if fit is None:
        return "[bold red]L not measurable[/]: no pass had a cruise long enough (see the notes)"
    parts = [f"[bold]L = {fit.lag_ms:.2f} ms[/] ({ci95_text(*fit.ci95_ms)})"]
    speeds = _speeds(result) if isinstance(result, LagResult) else None
    if speeds is not None and len(speeds) < 2:
        parts.append("[yellow]one speed: constancy needs two[/]")
    elif result.model is not None:
        parts.append("constant across speeds" if result.model.constant else "[yellow]varies with speed[/]")
    dyn = result.dynamics if isinstance(result, LagResult) else None
    if dyn is not None:
        kind = f"dead time + {dyn.tau_ms:.1f} ms filter" if dyn.has_filter else "pure dead time"
        parts.append(kind + (" + friction offset" if dyn.has_friction else ""))
    return ", ".join(parts)


LAG_COLUMNS = (
    Col("pass", lambda p: str(p.index + 1)),  # passes count from 1, as runs and steps do
    Col("dir", lambda p: p.direction, left=True),
    Col("v\ndeg/s", lambda p: fmt(p.speed_deg_s, ".1f")),
    Col("frames", lambda p: str(p.n_frames)),
    Col("Δ\ndeg", lambda p: fmt(p.delta_mean_deg, ".4f")),
    Col("L\nms", lambda p: fmt(p.lag_ms, ".2f")),
    Col("gΔ mean\ndeg", lambda p: fmt(p.guard_delta_mean_deg, ".3f"), short=False),
    Col("gΔ peak\ndeg", lambda p: fmt(p.guard_delta_peak_deg, ".3f"), short=False),
    Col("g L\nms", lambda p: fmt(p.guard_lag_ms, ".2f"), short=False),
    Col("mid L\nms", lambda p: fmt(p.mid_lag_ms, ".2f")),
    Col("over\ndeg", lambda p: fmt(p.overshoot_deg, ".4f")),
)
# the columns of a controller that echoes what it executes: the echo's lag, the lowest success rate, the
# state cycles the host missed
ECHO_COLUMNS = (
    Col("pass", lambda p: str(p.index + 1)),
    Col("dir", lambda p: p.direction, left=True),
    Col("echo L\nms", lambda p: fmt(p.echo_lag_ms, ".2f")),
    Col("success\nmin", lambda p: fmt(p.success_rate, ".2f")),
    Col("lost\ncycles", lambda p: "-" if p.lost_cycles is None else str(p.lost_cycles)),
)


def _echoed(passes: Sequence[PassLag]) -> bool:
    return any(math.isfinite(p.echo_lag_ms) or p.lost_cycles is not None for p in passes)


def _fit_line(name: str, fit: OriginFit | None) -> str:
    if fit is None:
        return f"{name}: [dim]not measurable[/]"
    parts = [f"[bold]{fit.lag_ms:.2f} ms[/]", stderr_text(fit.stderr_ms), ci95_text(*fit.ci95_ms)]
    text = f"{name}: " + ", ".join(p for p in parts if p) + f" ({fit.n_passes} passes)"
    if math.isfinite(fit.intercept_deg):
        se = stderr_text(fit.intercept_stderr_deg, "deg", ".4f")
        text += f"; with an intercept: {fit.intercept_deg:+.4f} deg" + (f" ({se})" if se else "")
    return text


def _views_lines(result: LagResult) -> list[str]:
    """The host view with the link latency removed, and the guard view."""
    lines: list[str] = []
    link, host = result.link, result.host_fit
    if host is not None and result.fit is not None:
        parts = []
        if math.isfinite(link.command_path_ms):
            parts.append(f"command path {link.command_path_ms:.2f} ms from {link.command_answers} answers")
        if link.state_mapped:
            parts.append(f"state path {link.state_path_ms:.2f} ms via the controller's timestamps")
        removed = ", ".join(parts) if parts else "nothing removed"
        lines.append(f"host view (send time to receive time): {host.lag_ms:.2f} ms; link latency: {removed}")
        if link.note:
            lines.append(f"  [dim]{link.note}[/]")
    if result.guard_fit is not None and result.fit is not None:
        base = host.lag_ms if host is not None else result.fit.lag_ms
        lines.append(
            f"guard-view lag (setpoint just sent - newest frame): {result.guard_fit.lag_ms:.2f} ms "
            f"(host view {result.guard_fit.lag_ms - base:+.2f} ms: the age of the newest state frame, "
            f"period {fmt(result.state_period_s * 1e3, '.1f')} ms)"
        )
    return lines


def _checks_lines(result: LagResult) -> list[str]:
    """The midpoint cross-check and the model check (or why there is none)."""
    lines: list[str] = []
    mid = result.midpoint
    if mid is not None:
        mark = "[green]agrees[/]" if mid.agrees else "[red]disagrees[/]"
        lines.append(
            f"midpoint cross-check: {mid.mean_ms:.2f} ms (passes {mid.min_ms:.2f}..{mid.max_ms:.2f}), "
            f"{fmt(mid.diff_from_fit_ms, '+.2f')} ms from the fit: {mark} within {mid.tolerance_ms:g} ms"
        )
    speeds = _speeds(result)
    if result.fit is not None and len(speeds) < 2:
        only = f"{speeds[0]:g} deg/s" if speeds else "no speed"
        lines.append(
            f"model check: [yellow]one speed only ({only}): whether L is the same at every speed needs two "
            "speeds or more[/] (list them in --speeds)"
        )
    elif result.model is not None:
        color = "green" if result.model.constant else "yellow"
        lines.append(f"model check: [{color}]{result.model.message}[/]")
    if result.late_sends:
        lines.append(
            f"late setpoints: [yellow]{result.late_sends} sent or answered over 1.5 command periods late; "
            f"{result.late_frames_left_out} cruise frames they disturbed left out of the cruise deltas[/]"
        )
    return lines


def _model_lines(result: LagResult) -> list[str]:
    """The dynamic fit, the noise at rest and the guard tuning."""
    lines: list[str] = []
    d = result.dynamics
    if d is not None:
        lines.append(
            "dynamics (whole sweep, ramp corners included): "
            f"L = {with_stderr(f'{d.lag_ms:.2f}', d.lag_stderr_ms, 'ms', '.2f')}, "
            f"tau = {with_stderr(f'{d.tau_ms:.2f}', d.tau_stderr_ms, 'ms', '.2f')}, "
            f"offset = {with_stderr(f'{d.offset_deg:+.4f}', d.offset_stderr_deg, 'deg', '.4f')}, "
            f"rms {d.rms_deg:.4f} deg over {d.n_samples} frames"
        )
        lines.append(f"  -> {d.verdict}")
    if result.noise is not None:
        n = result.noise
        lines.append(
            f"noise at rest: {n.std_deg:.4f} deg std, {n.peak_deg:.4f} deg peak ({n.n_samples} frames, "
            f"{n.source})"
        )
    t = result.tuning
    if t is not None:
        lines.append(
            f"guard tuning (a_max {t.a_max:.4g} deg/s², v_max {t.v_max:.4g} deg/s): "
            f"[bold]lag_s = {t.lag_s:.2f} s[/], [bold]margin_deg = {t.margin_deg:.1f}[/] "
            f"(braking {t.braking_deg:.3f} + noise {t.noise_deg:.3f} + frame age {t.frame_age_deg:.3f} deg); "
            f"shaper trail at v_max: {t.trail_deg:.2f} deg ({t.trail_s * 1e3:.0f} ms)"
        )
    return lines


def ended_early_line(result: LagResult | None, reason: str, planned: int, streamed: str = "") -> str:
    """The first line of a lag run that ended early: why, how far it got (passes measured of those planned,
    and `streamed`, e.g. `2.1 of 4.6 s streamed`, when known) and that nothing is tuned from it."""
    measured = sum(1 for p in result.passes if math.isfinite(p.lag_ms)) if result is not None else 0
    got = f"{measured} of {planned} passes measured" + (f", {streamed}" if streamed else "")
    return f"RUN ENDED EARLY ({reason}): {got}; the figures below are partial and tune no guard"


def render_lag(
    result: LagResult,
    title: str = "",
    wide: bool = False,
    out: Console | None = None,
    ended_early: str | None = None,
) -> None:
    """The verdict, the pass table (short, or every column with wide), then the fit, views, checks, dynamics,
    noise and guard tuning; notes and warnings on stderr. A run that ended early opens with `ended_early`
    (how it ended and how far it got) before anything it measured."""
    con = _out(out)
    if ended_early:
        con.print(f"[bold red]{escape(ended_early)}[/]", highlight=False, soft_wrap=True)
    con.print(lag_verdict(result), highlight=False)
    table = _table(title, LAG_COLUMNS, result.passes, wide)
    table.caption = (
        "Δ: command at each frame's time - measured (cruise mean); mid: midpoint crossing; over: past the "
        "end after the stop" + ("; g: guard view, setpoint just sent - newest frame" if wide else "")
    )
    print_table(con, table, wide)
    if _echoed(result.passes):
        print_table(con, _table("the controller's view", ECHO_COLUMNS, result.passes, wide), wide)
        # below the table, not as its caption: a narrow table would fold the key into a column of words
        con.print(
            "[dim]echo L: the setpoint the controller executes, behind the one sent; success: the pass's "
            "lowest share of setpoints received; lost: state cycles the host missed[/]",
            highlight=False,
        )
    passes: list[PassLag] = result.passes
    for p in passes:
        if p.note:
            common.err_console.print(f"[yellow]pass {p.index + 1}: {p.note}[/]", highlight=False)
    lines = [_fit_line("lag L (delta = v * L, true delta at each state frame)", result.fit)]
    lines += _views_lines(result) + _checks_lines(result) + _model_lines(result)
    for line in lines:
        con.print(line, highlight=False)
    for w in result.warnings:
        common.err_console.print(f"[yellow]warning:[/] {w}", highlight=False)


def render_combined(combined: CombinedLag, out: Console | None = None) -> None:
    """The lag fitted over several ramp files."""
    con = _out(out)
    con.print(lag_verdict(combined), highlight=False)
    con.print(f"[bold]combined over {combined.n_files} ramp files[/]")
    con.print(_fit_line("lag L", combined.fit), highlight=False)
    if combined.guard_fit is not None:
        con.print(f"guard-view lag: {combined.guard_fit.lag_ms:.2f} ms")
    if combined.midpoint is not None:
        m = combined.midpoint
        con.print(f"midpoint cross-check: {m.mean_ms:.2f} ms ({m.min_ms:.2f}..{m.max_ms:.2f})")
    if combined.model is not None:
        con.print(f"model check: {combined.model.message}")


def try_plot(save: Callable[[Path], Path], target: Path) -> tuple[Path | None, str | None]:
    """(`save(target)`, None), or (None, why) when the PNG cannot be written there (a folder of that name,
    a full disk, a read-only folder) or the target is a recording."""
    from servotool.io.csvlog import is_recording

    if target.is_file() and is_recording(target):  # a recording named like its figure: never written over
        return None, f"{target}: is a recording; a plot never writes over one (rename the recording)"
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        return save(target), None
    except OSError as exc:
        return None, f"{target}: cannot write the plot ({exc.strerror or exc})"


def write_plot(save: Callable[[Path], Path], target: Path) -> Path:
    """`save(target)`, or one error line and exit 2 when the PNG cannot be written: never a traceback."""
    path, problem = try_plot(save, target)
    if path is None:
        common.fail(problem or f"{target}: cannot write the plot")
    return path


def plot_target(fa: FileAnalysis, folder: Path | None = None) -> Path:
    """Where the figure of an analysed run goes: next to its CSV, or in `folder`."""
    return (folder or fa.path.parent) / (fa.path.stem + ".png")


def save_plot(fa: FileAnalysis, folder: Path | None = None) -> Path:
    """The figure of an analysed run, as a PNG at plot_target; one error line and exit 2 when it cannot
    be written."""
    return write_plot(lambda target: draw_plot(fa, target), plot_target(fa, folder))


def draw_plot(fa: FileAnalysis, target: Path) -> Path:
    """Write the figure of an analysed run (lag or step) as a PNG at `target`; OSError when it cannot."""
    meta = fa.meta
    device = f"{meta.device}{' SIMULATED' if meta.simulated else ''}"
    from servotool.analysis.lag import LagResult

    if isinstance(fa.result, LagResult):
        from servotool.plots.lag import save_lag_plot

        return save_lag_plot(fa.result, fa.recording, target, title=fa.path.name, device=device)
    from servotool.plots.step import save_step_plot

    margin, lag = meta.config.get("guard_margin_deg"), meta.config.get("guard_lag_s")
    guard = (float(margin), float(lag)) if margin is not None and lag is not None else None
    return save_step_plot(fa.result, fa.recording, target, title=fa.path.name, device=device, guard=guard)


# ---------------------------------------------------------------------------------------------------------
# step


def step_verdict(result: StepResult) -> str:
    """One line: how many steps, shaped or raw, on which joint, and what came of them. A step the run's early
    end cut short is named with why the run ended, and judged neither ok nor not ok."""
    kind = "shaped" if result.shaped else "raw"
    n = len(result.steps)
    head = f"{n} {kind} step{'s' if n != 1 else ''} on {joint_name(result.joint)}"
    cut = [m for m in result.steps if m.verdict == "cut short"]
    why = f"cut short by the run's end ({escape(cut[0].cut_reason)})" if cut else ""
    tail = f"; [yellow]{len(cut)} {why}[/]" if cut else ""
    bad = [m for m in result.steps if m.verdict not in ("ok", "cut short")]
    if result.runaways:
        faults = f"{result.total_faults} fault latch(es)"
        return f"{head}: [bold red]{result.runaways} runaway(s)[/], {faults}{tail}"
    if not bad and not result.total_faults and not result.guard_trips:
        if len(cut) == n:
            return f"{head}: [yellow]{why}, no step measured[/]"
        arrive = [m.arrive_ms for m in result.steps if math.isfinite(m.arrive_ms)]
        within = f", arrived within {max(arrive):.0f} ms" if arrive else ""
        every = "every measured step arrived" if cut else "all arrived"
        return f"{head}: [green]{every}, no runaway, no fault[/]{within}{tail}"
    parts = [f"{len(bad)} not ok ({', '.join(sorted({m.verdict for m in bad}))})"] if bad else []
    if result.total_faults:
        parts.append(f"{result.total_faults} fault latch(es)")
    if result.guard_trips:
        parts.append(f"guard tripped {len(result.guard_trips)}x")
    return f"{head}: [yellow]{', '.join(parts)}[/]{tail}"


def _step_verdict_cell(m: StepMetrics) -> str:
    return {"runaway": "[bold red]runaway[/]", "ok": "[green]ok[/]"}.get(m.verdict, f"[yellow]{m.verdict}[/]")


def _faults_cell(m: StepMetrics) -> str:
    return f"{m.faults}" + (f" ({m.fault_codes})" if m.fault_codes else "")


STEP_COLUMNS = (
    Col("step", lambda m: str(m.index + 1)),
    Col("size\ndeg", lambda m: f"{m.size_deg:+g}"),
    Col("first\nms", lambda m: fmt(m.first_move_ms, ".0f")),
    Col("arrive\nms", lambda m: fmt(m.arrive_ms, ".0f")),
    Col("peak Δ\ndeg", lambda m: fmt(m.peak_delta_deg, ".3f"), short=False),
    Col("guard\nlag ms", lambda m: fmt(m.guard_lag_ms, ".0f"), short=False),
    Col("travel\ndeg", lambda m: fmt(m.travel_deg, ".2f")),
    Col("x\nstep", lambda m: fmt(m.travel_ratio, ".1f"), short=False),
    Col("peak\ndeg/s", lambda m: fmt(m.peak_speed_deg_s, ".0f")),
    Col("rejects", lambda m: str(m.rejects), short=False),
    Col("faults", _faults_cell),
    Col("guard\ntrip ms", lambda m: fmt(m.guard_trip_ms, ".0f"), short=False),
    Col("verdict", _step_verdict_cell, left=True),
)


def _passed(ms: float) -> str:
    """When the guard tripped relative to the arm passing its target (which it may never have done)."""
    return (
        "the arm never passed its target"
        if not math.isfinite(ms)
        else relative_ms(ms, "the arm passed its target")
    )


def _step_event_lines(result: StepResult) -> list[str]:
    """Per step: the fault and its travel, the guard trip and how it lined up with the runaway."""
    lines: list[str] = []
    for m in result.steps:
        if m.faults or m.runaway:
            lines.append(
                f"step {m.index + 1}: fault {fmt(m.fault_ms, '.0f')} ms after the step, travel "
                f"{m.travel_deg:.2f} deg ({fmt(m.travel_ratio, '.1f')}x the step) at up to "
                f"{fmt(m.peak_speed_deg_s, '.0f')} deg/s"
            )
        if math.isfinite(m.guard_trip_ms):
            ticks = m.guard_after_crossing_ms / (result.cmd_period_s * 1e3)
            fault = relative_ms(m.guard_after_fault_ms, "the fault") if m.faults else "no fault"
            lines.append(
                f"step {m.index + 1}: divergence guard tripped {m.guard_trip_ms:.0f} ms after the step, "
                f"{fault}, {_passed(m.guard_after_overshoot_ms)}, "
                f"{relative_ms(m.guard_after_crossing_ms, 'the first frame beyond its allowance')} "
                f"({fmt(abs(ticks), '.1f')} ticks)"
            )
    for trip in result.guard_trips:
        lines.append(f"[yellow]guard:[/] t = {trip['t_s']:.3f} s: {trip['reason']}")
    return lines


def fault_legend(result: StepResult, device: str | None) -> str:
    """The fault codes the step table shows, each with its name by the device's family: 'faults: 1/32 TCP
    speed over the limit; 1/23 axis 1 command speed over the limit'; "" when no step latched one."""
    from servotool.devices.registry import fault_names

    seen: dict[str, str] = {}
    for m in result.steps:
        for code in (c.strip() for c in (m.fault_codes or "").split(",")):
            main, _, sub = code.partition("/")
            if code and code not in seen and main.isdigit() and sub.isdigit():
                seen[code] = fault_names((int(main), int(sub)), url=device) or "not in the family's table"
    return "faults: " + "; ".join(f"{code} {name}" for code, name in seen.items()) if seen else ""


def render_step(
    result: StepResult,
    title: str = "",
    wide: bool = False,
    out: Console | None = None,
    device: str | None = None,
) -> None:
    """The verdict, the step table (short, or every column with wide), the fault codes by name (from the
    device's family), the run's totals and each step's fault and guard events; warnings on stderr."""
    con = _out(out)
    con.print(step_verdict(result), highlight=False)
    table = _table(title, STEP_COLUMNS, result.steps, wide)
    table.caption = (
        "first: first move after the step; arrive: first frame within 10 % of the step of its target"
    )
    print_table(con, table, wide)
    legend = fault_legend(result, device)
    if legend:
        con.print(escape(legend), highlight=False)
    kind = "shaped" if result.shaped else "raw"
    con.print(
        f"{kind} steps on {joint_name(result.joint)}: {result.runaways} runaway(s), "
        f"{result.total_rejects} rejected command(s) in the whole run, "
        f"{result.total_faults} fault latch(es); "
        f"noise {fmt(result.noise_std_deg, '.4f')} deg std, threshold {result.threshold_deg:.3f} deg",
        highlight=False,
    )
    for line in _step_event_lines(result):
        con.print(line, highlight=False)
    for w in result.warnings:
        common.err_console.print(f"[yellow]warning:[/] {w}", highlight=False)


def render_guard_setup(g: GuardSetup) -> None:
    """How a step run's guard was tuned, one line on stderr."""
    age = f"; frame age {g.frame_age_ms:.1f} ms" if math.isfinite(g.frame_age_ms) else ""
    common.err_console.print(
        f"guard: lag_s {g.lag_s:.2f} s, margin {g.margin_deg:.1f} deg (from L = "
        f"{g.basis_lag_ms:.3g} ms, {g.basis}{age})",
        highlight=False,
    )


# ---------------------------------------------------------------------------------------------------------
# campaign report tables

# The columns each report table shows at 80 columns (by header); a table not listed shows every column.
REPORT_SHORT = {
    "step runs": (
        "run",
        "kind",
        "size deg",
        "first move ms",
        "arrive ms",
        "travel deg",
        "peak deg/s",
        "faults",
        "verdict",
    ),
    "how each step run ended": ("run", "end", "landing deg", "backstop deg", "altered"),
    "lag runs (ramps)": (
        "run",
        "joint",
        "speeds deg/s",
        "L ms",
        "95 % CI ms",
        "midpoint L ms",
        "L vs speed",
        "complete",
    ),
}
_UNITS = ("ms", "deg", "deg/s", "pulses", "(pulses)")
_TEXT_HEADERS = (
    "run",
    "kind",
    "verdict",
    "complete",
    "L vs speed",
    "transport",
    "direction",
    "shaper",
    "end",
    "late periods",
    "altered",
)


# Shorter names for the 80-column view (the same words the lag and step tables use).
_SHORT_HEADERS = {
    "first move ms": "first\nms",
    "midpoint L ms": "mid L\nms",
    "stop (pulses)": "stop\npulses",
    "gap at fault deg": "gap\ndeg",
}


def _two_line(header: str) -> str:
    """`travel deg` as `travel` over `deg`, so a unit never widens its column."""
    if header in _SHORT_HEADERS:
        return _SHORT_HEADERS[header]
    head, _, unit = header.rpartition(" ")
    return f"{head}\n{unit}" if head and unit in _UNITS else header


def report_table(title: str, headers: Sequence[str], rows: Sequence[Sequence[str]], wide: bool) -> Table:
    """One report table, compact: the short columns (REPORT_SHORT) or all with wide (joints come as J1..Jn).
    Number columns never wrap; text columns wrap at spaces rather than truncate."""
    keep = [i for i, h in enumerate(headers) if wide or h in REPORT_SHORT.get(title, headers)]
    if not wide and len(rows) > 1:  # a text column with one value for every row goes into the title
        same = [
            i
            for i in keep
            if headers[i] in (*_TEXT_HEADERS, "joint")
            and headers[i] != "run"
            and len({r[i] for r in rows}) == 1
        ]
        if same:
            title += ": " + ", ".join(f"{headers[i]} {escape(rows[0][i])}" for i in same)
            keep = [i for i in keep if i not in same]
    table = compact_table(title)
    for i in keep:
        text = headers[i] in _TEXT_HEADERS
        longest_word = max((len(w) for r in rows for w in str(r[i]).split()), default=1)
        header = headers[i] if wide else _two_line(headers[i])
        table.add_column(
            header,
            justify="left" if text else "right",
            no_wrap=not text,
            overflow="fold",
            min_width=longest_word,
        )
    for row in rows:
        cells = [row[i] for i in keep]
        table.add_row(*(escape(c) for c in cells))
    return table
