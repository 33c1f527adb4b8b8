"""Figure of an offline replay: raw targets against what the shaper would have sent, with its velocity."""

from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.figure import Figure

from servotool.analysis.shape import ReplayResult


def replay_figure(result: ReplayResult, joints: list[int] | None = None, title: str = "") -> Figure:
    """Position (top) and velocity (bottom) of the raw and the shaped stream for each moving joint."""
    raw, shaped, t = result.raw, result.shaped, result.t
    if joints is None:
        joints = [j for j in range(raw.shape[1]) if np.ptp(raw[:, j]) > 0] or [0]
    fig, (ax_q, ax_v) = plt.subplots(2, 1, figsize=(10, 6), sharex=True, constrained_layout=True)
    dt = result.spec.dt
    for j in joints:
        ax_q.step(t, raw[:, j], where="post", color="C7", lw=1, label=f"raw J{j + 1}")
        ax_q.plot(t, shaped[:, j], lw=1.4, label=f"{result.spec.kind} J{j + 1}")
        ax_v.plot(t[1:], np.diff(raw[:, j]) / dt, color="C7", lw=0.8, label=f"raw J{j + 1}")
        ax_v.plot(t[1:], np.diff(shaped[:, j]) / dt, lw=1.2, label=f"{result.spec.kind} J{j + 1}")
    ax_q.set_ylabel("position (deg)")
    ax_v.set_ylabel("velocity (deg/s)")
    ax_v.set_xlabel("t (s)")
    v_lim = 1.5 * result.spec.v_max
    lo, hi = ax_v.get_ylim()
    ax_v.set_ylim(max(lo, -v_lim), min(hi, v_lim))
    ax_q.legend(loc="best", fontsize=8)
    ax_q.set_title(title or f"replay through the {result.spec.kind} shaper")
    ax_q.grid(alpha=0.3)
    ax_v.grid(alpha=0.3)
    return fig


def save_replay_plot(result: ReplayResult, path: Path, title: str = "") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    fig = replay_figure(result, title=title)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
