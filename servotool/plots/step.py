"""Figure of a step run: each step's raw target, setpoint on the wire and measured joint, with events."""

from __future__ import annotations

import math
from pathlib import Path

import matplotlib.pyplot as plt
from matplotlib.figure import Figure

from servotool.analysis.recording import Recording
from servotool.analysis.step import StepResult


def step_figure(result: StepResult, rec: Recording, title: str = "") -> Figure:
    """One panel per step, time relative to the step instant (ms): raw target, setpoint, measured, the
    10 % arrival band, fault latches (red) and guard trips (orange)."""
    n = max(1, len(result.steps))
    cols = 2 if n > 1 else 1
    rows = math.ceil(n / cols)
    fig, axes = plt.subplots(
        rows, cols, figsize=(6 * cols, 3.2 * rows), squeeze=False, constrained_layout=True
    )
    j = result.joint
    for ax, m in zip(axes.flat, result.steps, strict=False):
        t0, t1 = m.t_step_s, m.t_step_s + m.window_s
        pre = 0.1
        cw = (rec.cmd_t >= t0 - pre) & (rec.cmd_t <= t1)
        sw = (rec.state_t >= t0 - pre) & (rec.state_t <= t1)
        if rec.cmd_r is not None:
            ax.step(
                (rec.cmd_t[cw] - t0) * 1e3,
                rec.cmd_r[cw, j],
                where="post",
                color="C7",
                lw=1,
                label="raw target",
            )
        ax.plot((rec.cmd_t[cw] - t0) * 1e3, rec.cmd_q[cw, j], "-", color="C0", lw=1.2, label="setpoint")
        ax.plot(
            (rec.state_t[sw] - t0) * 1e3, rec.state_q[sw, j], ".-", color="C3", ms=2, lw=0.6, label="measured"
        )
        band = 0.1 * abs(m.size_deg)
        ax.axhspan(m.target_deg - band, m.target_deg + band, color="C2", alpha=0.12)
        for t in rec.fault_t[(rec.fault_t >= t0) & (rec.fault_t <= t1)]:
            ax.axvline((t - t0) * 1e3, color="red", lw=1, label="fault")
        for t in rec.guard_t[(rec.guard_t >= t0) & (rec.guard_t <= t1)]:
            ax.axvline((t - t0) * 1e3, color="orange", lw=1, ls="--", label="guard trip")
        arrive = f"{m.arrive_ms:.0f} ms" if math.isfinite(m.arrive_ms) else "-"
        ax.set_title(
            f"step {m.index}: {m.size_deg:+g} deg, arrive {arrive}, travel {m.travel_deg:.2f} deg, "
            f"{m.verdict}",
            fontsize=9,
            color="red" if m.runaway else "black",
        )
        ax.set_xlabel("ms since the step")
        ax.set_ylabel(f"joint {j} (deg)")
        ax.grid(alpha=0.3)
        handles, labels = ax.get_legend_handles_labels()
        uniq = dict(zip(labels, handles, strict=True))
        ax.legend(uniq.values(), uniq.keys(), fontsize=7)
    for ax in list(axes.flat)[len(result.steps) :]:
        ax.set_visible(False)
    if title:
        fig.suptitle(title)
    return fig


def save_step_plot(result: StepResult, rec: Recording, path: str | Path, title: str = "") -> Path:
    path = Path(path)
    fig = step_figure(result, rec, title)
    try:
        fig.savefig(path, dpi=110)
    finally:
        plt.close(fig)
    return path
