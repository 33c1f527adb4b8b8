"""Figure of an offline replay: raw targets against what the shaper would have sent, with its velocity and
acceleration and the shaper's limits drawn."""

from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from servotool.analysis.shape import ReplayResult
from servotool.plots import save_png

# raw streams jump: their velocity and acceleration are drawn up to this multiple of the limit, then clipped
_CLIP = 1.5


def _limit_band(ax: Axes, limit: float, label: str) -> None:
    """Dashed +-limit lines and a y range clipped to _CLIP times the limit (raw spikes run off the panel)."""
    ax.axhline(limit, color="C3", ls="--", lw=0.9, label=label)
    ax.axhline(-limit, color="C3", ls="--", lw=0.9)
    lo, hi = ax.get_ylim()
    ax.set_ylim(max(lo, -_CLIP * limit), min(hi, _CLIP * limit))


def _headline(result: ReplayResult) -> str:
    """The shaper, its bounds and what it did to the stream: peak velocity and acceleration on the wire."""
    spec, shaped, raw = result.spec, result.shaped_figures, result.raw_figures
    bounds = f"v_max {spec.v_max:g} deg/s, a_max {spec.a_max:g} deg/s²"
    if spec.kind == "otg":
        bounds += f", j_max {spec.j_max:g} deg/s³"
    return (
        f"{spec.kind} shaper ({bounds}): peak |v| {max(shaped.peak_velocity, default=0):.0f} deg/s, "
        f"peak |a| {max(shaped.peak_acceleration, default=0):.0f} deg/s² "
        f"(raw {max(raw.peak_acceleration, default=0):.3g} deg/s²)"
    )


def replay_figure(result: ReplayResult, joints: list[int] | None = None, title: str = "") -> Figure:
    """Position, velocity and acceleration of the raw and the shaped stream for each moving joint, with the
    shaper's v_max and a_max drawn; raw spikes beyond 1.5x a limit are clipped (said in the panel)."""
    raw, shaped, t = result.raw, result.shaped, result.t
    if joints is None:
        joints = [j for j in range(raw.shape[1]) if np.ptp(raw[:, j]) > 0] or [0]
    fig, (ax_q, ax_v, ax_a) = plt.subplots(3, 1, figsize=(10, 8), sharex=True, constrained_layout=True)
    dt = result.spec.dt
    for j in joints:
        raw_v, shaped_v = np.diff(raw[:, j]) / dt, np.diff(shaped[:, j]) / dt
        ax_q.step(t, raw[:, j], where="post", color="C7", lw=1, label=f"raw target J{j + 1}")
        ax_q.plot(t, shaped[:, j], lw=1.4, label=f"shaped J{j + 1}")
        ax_v.plot(t[1:], raw_v, color="C7", lw=0.8, label=f"raw J{j + 1}")
        ax_v.plot(t[1:], shaped_v, lw=1.2, label=f"shaped J{j + 1}")
        ax_a.plot(t[2:], np.diff(raw_v) / dt, color="C7", lw=0.8, label=f"raw J{j + 1}")
        ax_a.plot(t[2:], np.diff(shaped_v) / dt, lw=1.2, label=f"shaped J{j + 1}")
    _limit_band(ax_v, result.spec.v_max, f"±v_max {result.spec.v_max:g} deg/s")
    _limit_band(ax_a, result.spec.a_max, f"±a_max {result.spec.a_max:g} deg/s²")
    ax_q.set_ylabel("position (deg)")
    ax_v.set_ylabel("velocity (deg/s)")
    ax_a.set_ylabel("acceleration (deg/s²)")
    ax_a.set_xlabel("t (s)")
    ax_a.text(
        0.01,
        0.02,
        f"raw spikes beyond {_CLIP:g}x the limit are clipped",
        transform=ax_a.transAxes,
        fontsize=7,
        color="0.4",
    )
    for ax in (ax_q, ax_v, ax_a):
        ax.grid(alpha=0.3)
        ax.legend(loc="upper right", fontsize=7)
    fig.suptitle((title + "\n" if title else "") + _headline(result), fontsize=10)
    return fig


def save_replay_plot(result: ReplayResult, path: Path, title: str = "") -> Path:
    """Write replay_figure as a PNG at `path`; returns the path."""
    return save_png(replay_figure(result, title=title), path)
