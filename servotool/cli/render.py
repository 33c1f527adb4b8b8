"""What the lag and step commands (and `analyze`) print: result tables, verdicts, fit lines, plots on disk.

Shared by the live commands and by `analyze`, so a live run and its file read back render the same way.
Only cli/ talks to the terminal; these functions print on the shared consoles of cli/common.py.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from rich.table import Table

from servotool.analysis.lag import CombinedLag, LagResult, OriginFit
from servotool.analysis.step import StepResult
from servotool.cli.common import console, err_console
from servotool.runs.analyze import FileAnalysis
from servotool.runs.step import GuardSetup


def fmt(x: Any, spec: str = ".2f", unit: str = "") -> str:
    """x formatted by spec with its unit, or a dim dash for a missing or non-finite value."""
    if x is None or (isinstance(x, float) and not math.isfinite(x)):
        return "[dim]-[/]"
    return f"{x:{spec}}{unit}"




def _fit_line(name: str, fit: OriginFit | None) -> str:
    if fit is None:
        return f"{name}: [dim]not measurable[/]"
    lo, hi = fit.ci95_ms
    text = f"{name}: [bold]{fit.lag_ms:.2f} ms[/] ± {fmt(fit.se_ms)} ms (95 % CI {fmt(lo)}..{fmt(hi)} ms, "
    text += f"{fit.n_passes} passes)"
    if math.isfinite(fit.intercept_deg):
        text += f"; with an intercept: {fit.intercept_deg:+.4f} ± {fit.intercept_se_deg:.4f} deg"
    return text


def render_lag(result: LagResult, title: str = "", wide: bool = False) -> None:
    table = Table(title=title or None, show_header=True, header_style="bold", pad_edge=False)
    columns = ("#", "dir", "v°/s", "n", "Δ°", "L ms", "gΔ mean°", "gΔ peak°", "g L ms", "mid L ms", "over°")
    for col in columns:
        table.add_column(col, justify="left" if col == "dir" else "right", no_wrap=True)
    notes = []
    for p in result.passes:
        table.add_row(
            str(p.index),
            p.direction,
            fmt(p.speed_deg_s, ".1f"),
            str(p.n_frames),
            fmt(p.delta_mean_deg, ".4f"),
            fmt(p.lag_ms, ".2f"),
            fmt(p.guard_delta_mean_deg, ".3f"),
            fmt(p.guard_delta_peak_deg, ".3f"),
            fmt(p.guard_lag_ms, ".2f"),
            fmt(p.mid_lag_ms, ".2f"),
            fmt(p.overshoot_deg, ".4f"),
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
            f"period {fmt(result.state_period_s * 1e3, '.1f')} ms)"
        )
    mid = result.midpoint
    if mid is not None:
        mark = "[green]agrees[/]" if mid.agrees else "[red]disagrees[/]"
        console.print(
            f"midpoint cross-check: {mid.mean_ms:.2f} ms (passes {mid.min_ms:.2f}..{mid.max_ms:.2f}), "
            f"{fmt(mid.diff_from_fit_ms, '+.2f')} ms from the fit: {mark} within {mid.tolerance_ms:g} ms"
        )
    if result.model is not None:
        color = "green" if result.model.constant else "yellow"
        console.print(f"model check: [{color}]{result.model.message}[/]")
    d = result.dynamics
    if d is not None:
        console.print(
            f"dynamics (whole sweep, ramp corners included): L = {d.lag_ms:.2f} ± {d.lag_se_ms:.2f} ms, "
            f"tau = {d.tau_ms:.2f} ± {fmt(d.tau_se_ms)} ms, offset = {d.offset_deg:+.4f} ± "
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


def render_step(result: StepResult, title: str = "", wide: bool = False) -> None:
    table = Table(title=title or None, show_header=True, header_style="bold")
    for col in (
        "step",
        "size",
        "first move ms",
        "arrive ms",
        "peak Δ",
        "guard lag ms",
        "travel",
        "x step",
        "peak speed",
        "rejects",
        "faults",
        "guard trip ms",
        "verdict",
    ):
        table.add_column(col, justify="left" if col == "verdict" else "right")
    for m in result.steps:
        verdict = {"runaway": "[bold red]runaway[/]", "ok": "[green]ok[/]"}.get(
            m.verdict, f"[yellow]{m.verdict}[/]"
        )
        table.add_row(
            str(m.index),
            f"{m.size_deg:+g}",
            fmt(m.first_move_ms, ".0f"),
            fmt(m.arrive_ms, ".0f"),
            fmt(m.peak_delta_deg, ".3f"),
            fmt(m.guard_lag_ms, ".0f"),
            fmt(m.travel_deg, ".2f"),
            fmt(m.travel_ratio, ".1f"),
            fmt(m.peak_speed_deg_s, ".0f"),
            str(m.rejects),
            f"{m.faults}" + (f" ({m.fault_codes})" if m.fault_codes else ""),
            fmt(m.guard_trip_ms, ".0f"),
            verdict,
        )
    console.print(table)
    kind = "shaped" if result.shaped else "raw"
    console.print(
        f"{kind} steps on joint {result.joint}: {result.runaways} runaway(s), "
        f"{result.total_rejects} rejected command(s) in the whole run, "
        f"{result.total_faults} fault latch(es); "
        f"noise {fmt(result.noise_std_deg, '.4f')} deg std, threshold {result.threshold_deg:.3f} deg"
    )
    for m in result.steps:
        if m.faults or m.runaway:
            console.print(
                f"step {m.index}: fault {fmt(m.fault_ms, '.0f')} ms after the step, travel "
                f"{m.travel_deg:.2f} deg ({fmt(m.travel_ratio, '.1f')}x the step) at up to "
                f"{fmt(m.peak_speed_deg_s, '.0f')} deg/s"
            )
        if math.isfinite(m.guard_trip_ms):
            ticks = m.guard_after_crossing_ms / (result.cmd_period_s * 1e3)
            console.print(
                f"step {m.index}: divergence guard tripped {m.guard_trip_ms:.0f} ms after the step, "
                f"{fmt(m.guard_after_fault_ms, '+.0f')} ms from the fault, "
                f"{fmt(m.guard_after_overshoot_ms, '+.0f')} ms after the arm passed its target, "
                f"{fmt(m.guard_after_crossing_ms, '+.0f')} ms ({fmt(ticks, '.1f')} ticks) after the first "
                "frame beyond its allowance"
            )
    for trip in result.guard_trips:
        console.print(f"[yellow]guard:[/] t = {trip['t_s']:.3f} s: {trip['reason']}", highlight=False)
    for w in result.warnings:
        err_console.print(f"[yellow]warning:[/] {w}", highlight=False)


def render_guard_setup(g: GuardSetup) -> None:
    """How a step run's guard was tuned, one line on stderr."""
    err_console.print(
        f"guard: lag_s {g.lag_s:.2f} s, margin {g.margin_deg:.1f} deg (from L = "
        f"{g.basis_lag_ms:g} ms, {g.basis}; frame age {g.frame_age_ms:.1f} ms)",
        highlight=False,
    )
