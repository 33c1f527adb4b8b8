"""Figure of a step run: each step's raw target, setpoint on the wire and measured joint, with events.

The title carries the headline (device, SIMULATED when it is a simulator, the run's verdict). Each panel
marks the first move and the arrival, draws the 10 % arrival band and, when the run had a guard, the
guard's allowance around the setpoint (margin + speed * lag: the measured joint outside it trips the guard).
"""

from __future__ import annotations

import math
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from servotool.analysis.recording import Recording
from servotool.analysis.step import StepMetrics, StepResult, guard_allowance
from servotool.plots import save_png

PRE_S = 0.1  # shown before each step


def step_headline(result: StepResult, device: str = "") -> str:
    """`<device>: 2 shaped steps on J1: 0 runaway, 0 fault latches` (plain text, for titles)."""
    head = f"{device}: " if device else ""
    kind = "shaped" if result.shaped else "raw"
    n = len(result.steps)
    ok = sum(m.verdict == "ok" for m in result.steps)
    cut = f"{result.cut_short} cut short, " if result.cut_short else ""
    return (
        f"{head}{n} {kind} step{'s' if n != 1 else ''} on J{result.joint + 1}: {ok} ok, {cut}"
        f"{result.runaways} runaway, {result.total_faults} fault latch(es), "
        f"{len(result.guard_trips)} guard trip(s)"
    )


def _allowance(result: StepResult, rec: Recording, guard: tuple[float, float] | None) -> np.ndarray | None:
    if guard is None:
        return None
    margin, lag_s = guard
    return guard_allowance(
        rec.cmd_t,
        rec.cmd_q[:, result.joint],
        shaped=result.shaped,
        margin_deg=margin,
        lag_s=lag_s,
        period_s=result.cmd_period_s,
    )


def _panel(ax: Axes, result: StepResult, rec: Recording, m: StepMetrics, allow: np.ndarray | None) -> None:
    j = result.joint
    t0, t1 = m.t_step_s, m.t_step_s + m.window_s
    cw = (rec.cmd_t >= t0 - PRE_S) & (rec.cmd_t <= t1)
    sw = (rec.state_t >= t0 - PRE_S) & (rec.state_t <= t1)
    tcw = (rec.cmd_t[cw] - t0) * 1e3
    if rec.cmd_r is not None:
        ax.step(tcw, rec.cmd_r[cw, j], where="post", color="C7", lw=1, label="raw target")
    sp = rec.cmd_q[cw, j]
    ax.plot(tcw, sp, "-", color="C0", lw=1.2, label="setpoint")
    if allow is not None:
        ax.fill_between(
            tcw,
            sp - allow[cw],
            sp + allow[cw],
            step="post",
            color="orange",
            alpha=0.12,
            label="guard allowance",
        )
    tsw = (rec.state_t[sw] - t0) * 1e3
    ax.plot(tsw, rec.state_q[sw, j], ".-", color="C3", ms=2, lw=0.6, label="measured")
    band = 0.1 * abs(m.size_deg)
    ax.axhspan(m.target_deg - band, m.target_deg + band, color="C2", alpha=0.12, label="arrival band (10 %)")
    if math.isfinite(m.first_move_ms):
        ax.axvline(m.first_move_ms, color="C4", lw=1, ls=":", label=f"first move {m.first_move_ms:.0f} ms")
    if math.isfinite(m.arrive_ms):
        ax.axvline(m.arrive_ms, color="C2", lw=1, ls="-.", label=f"arrival {m.arrive_ms:.0f} ms")
    for t in rec.fault_t[(rec.fault_t >= t0) & (rec.fault_t <= t1)]:
        ax.axvline((t - t0) * 1e3, color="red", lw=1, label="fault")
    for t in rec.guard_t[(rec.guard_t >= t0) & (rec.guard_t <= t1)]:
        ax.axvline((t - t0) * 1e3, color="orange", lw=1, ls="--", label="guard trip")
    ax.set_title(
        f"step {m.index + 1}: {m.size_deg:+g} deg, travel {m.travel_deg:.2f} deg, {m.verdict}",
        fontsize=9,
        color="red" if m.runaway else "black",
    )
    ax.set_xlabel("time since the step (ms)")
    ax.set_ylabel(f"J{j + 1} (deg)")
    ax.grid(alpha=0.3)
    handles, labels = ax.get_legend_handles_labels()
    uniq = dict(zip(labels, handles, strict=True))
    ax.legend(uniq.values(), uniq.keys(), fontsize=7)


def step_figure(
    result: StepResult,
    rec: Recording,
    title: str = "",
    device: str = "",
    guard: tuple[float, float] | None = None,
) -> Figure:
    """One panel per step, time relative to the step instant (ms); guard = (margin deg, lag s) of the run's
    guard, to draw its allowance. The title is the headline (step_headline) over `title` (the file name)."""
    n = max(1, len(result.steps))
    cols = 2 if n > 1 else 1
    rows = math.ceil(n / cols)
    fig, axes = plt.subplots(
        rows, cols, figsize=(max(6 * cols, 9), 3.4 * rows), squeeze=False, constrained_layout=True
    )
    allow = _allowance(result, rec, guard)
    for ax, m in zip(axes.flat, result.steps, strict=False):
        _panel(ax, result, rec, m, allow)
    for ax in list(axes.flat)[len(result.steps) :]:
        ax.set_visible(False)
    headline = step_headline(result, device)
    fig.suptitle(f"{headline}\n{title}" if title else headline)
    return fig


def save_step_plot(
    result: StepResult,
    rec: Recording,
    path: str | Path,
    title: str = "",
    device: str = "",
    guard: tuple[float, float] | None = None,
) -> Path:
    """Write step_figure as a PNG at `path`; returns the path."""
    return save_png(step_figure(result, rec, title, device, guard), path)
