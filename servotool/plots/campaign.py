"""Figures of a campaign report: the lag fit over every ramp pass, step responses, runaway travel and shaped
arrival against step size. Each builder returns a Figure (Agg backend), or None when there is nothing to
draw."""

from __future__ import annotations

import io
from collections.abc import Sequence
from dataclasses import dataclass

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.figure import Figure


@dataclass
class LagSeries:
    """One ramp recording: per pass cruise speed (deg/s) and mean delta (deg), and its fitted L (ms)."""

    label: str
    speeds: Sequence[float]
    deltas: Sequence[float]
    lag_ms: float


@dataclass
class StepTrace:
    """One step response: time from the step (ms) and the measured joint relative to the pre-step pose,
    divided by the step size (1 = arrived)."""

    label: str
    t_ms: np.ndarray
    progress: np.ndarray


@dataclass
class SizePoint:
    """A figure against step size: size (deg), value, and the group it is drawn in (transport, a_max...)."""

    size_deg: float
    value: float
    group: str


def lag_fit_figure(series: Sequence[LagSeries]) -> Figure | None:
    """delta against v for every pass, with each recording's line delta = v * L through the origin."""
    if not series:
        return None
    fig, ax = plt.subplots(figsize=(6.4, 4.0), constrained_layout=True)
    for i, s in enumerate(series):
        v, d = np.asarray(s.speeds, float), np.asarray(s.deltas, float)
        ok = np.isfinite(v) & np.isfinite(d)
        ax.plot(v[ok], d[ok], "o", color=f"C{i % 10}", label=f"{s.label}: L = {s.lag_ms:.1f} ms")
        if np.isfinite(s.lag_ms) and ok.any():
            xs = np.linspace(0, float(v[ok].max()) * 1.05, 20)
            ax.plot(xs, xs * s.lag_ms / 1e3, "-", color=f"C{i % 10}", lw=1)
    ax.set_xlabel("cruise speed v (deg/s)")
    ax.set_ylabel("cruise delta (deg)")
    ax.set_title("lag fit: delta = v * L")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=7)
    return fig


def step_response_figure(traces: Sequence[StepTrace]) -> Figure | None:
    """Every step's measured progress toward its target (0 = start, 1 = target) against time from the step."""
    if not traces:
        return None
    fig, ax = plt.subplots(figsize=(6.4, 4.0), constrained_layout=True)
    for i, tr in enumerate(traces):
        ax.plot(tr.t_ms, tr.progress, "-", lw=1, color=f"C{i % 10}", label=tr.label)
    ax.axhline(1.0, color="k", lw=0.6, ls="--")
    ax.axhspan(0.9, 1.1, color="g", alpha=0.08)
    ax.set_xlabel("time from the step (ms)")
    ax.set_ylabel("measured / step size")
    ax.set_ylim(-0.5, max(2.0, min(40.0, max(float(np.nanmax(t.progress)) for t in traces) * 1.05)))
    ax.set_title("step responses")
    ax.grid(True, alpha=0.3)
    if len(traces) <= 12:
        ax.legend(fontsize=6)
    return fig


def _by_size(
    points: Sequence[SizePoint], title: str, ylabel: str, ratio_lines: Sequence[float] = ()
) -> Figure:
    fig, ax = plt.subplots(figsize=(6.4, 4.0), constrained_layout=True)
    groups = sorted({p.group for p in points})
    for i, g in enumerate(groups):
        xs = [p.size_deg for p in points if p.group == g]
        ys = [p.value for p in points if p.group == g]
        ax.plot(xs, ys, "o", color=f"C{i % 10}", label=g)
    if ratio_lines:
        top = max(p.size_deg for p in points) * 1.1
        for r in ratio_lines:
            ax.plot([0, top], [0, top * r], ":", color="grey", lw=0.8)
            ax.annotate(f"{r:g}x", (top, top * r), fontsize=7, color="grey")
    ax.set_xlabel("step size (deg)")
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=7)
    return fig


def runaway_travel_figure(points: Sequence[SizePoint]) -> Figure | None:
    """Travel of the joint after each raw step against the step size, with the 14x and 35x lines."""
    if not points:
        return None
    return _by_size(points, "runaway travel against step size", "travel (deg)", ratio_lines=(14.0, 35.0))


def shaped_arrival_figure(points: Sequence[SizePoint]) -> Figure | None:
    """Arrival time (first frame within 10 % of the target) of each shaped step against its size."""
    if not points:
        return None
    return _by_size(points, "shaped arrival against step size", "arrival (ms)")


def png_bytes(fig: Figure, dpi: int = 110) -> bytes:
    """The figure as PNG bytes; the figure is closed."""
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi)
    plt.close(fig)
    return buf.getvalue()
