"""Figures of a campaign report: the lag fit over every ramp pass, step responses, runaway travel and shaped
arrival against step size, and the a_max ceiling of shaped steps. Each builder returns a Figure (Agg
backend), or None when there is nothing to draw.

Each shows its headline: the title says SIMULATED when a simulator made the data (`mark`), legends that
name numbers sort as numbers (a_max 600 before a_max 10000) and sit outside the axes, away from the data,
and the axes are fitted to the data drawn."""

from __future__ import annotations

import io
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from servotool.analysis.uncertainty import ci95_text


@dataclass
class LagSeries:
    """One ramp recording: per pass cruise speed (deg/s) and mean delta (deg), and its fitted L (ms)."""

    label: str
    speeds: Sequence[float]
    deltas: Sequence[float]
    lag_ms: float
    ci95_ms: tuple[float, float] = (math.nan, math.nan)


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


def number_order(label: str) -> list[tuple[int, float, str]]:
    """A sort key that orders the numbers inside labels as numbers: `a_max 600` before `a_max 10000`."""
    parts = re.split(r"(\d+(?:\.\d+)?)", label)
    return [(0, float(x), "") if i % 2 else (1, 0.0, x) for i, x in enumerate(parts) if x]


def _legend_outside(ax: Axes) -> None:
    """The legend beside the axes, never over the data; its entries in number order."""
    handles, labels = ax.get_legend_handles_labels()
    if not handles:
        return
    order = sorted(range(len(labels)), key=lambda i: number_order(labels[i]))
    ax.legend(
        [handles[i] for i in order],
        [labels[i] for i in order],
        fontsize=7,
        loc="upper left",
        bbox_to_anchor=(1.02, 1.0),
        borderaxespad=0.0,
    )


def _title(ax: Axes, title: str, mark: str) -> None:
    ax.set_title(f"{mark}: {title}" if mark else title)


def lag_fit_figure(series: Sequence[LagSeries], mark: str = "") -> Figure | None:
    """delta against v for every pass, with each recording's line delta = v * L through the origin and its
    L and 95 % confidence interval in the legend."""
    if not series:
        return None
    fig, ax = plt.subplots(figsize=(8.0, 4.0), constrained_layout=True)
    top_v, top_d = 0.0, 0.0
    for i, s in enumerate(series):
        v, d = np.asarray(s.speeds, float), np.asarray(s.deltas, float)
        ok = np.isfinite(v) & np.isfinite(d)
        ci = ci95_text(*s.ci95_ms, spec=".1f")
        ax.plot(v[ok], d[ok], "o", color=f"C{i % 10}", label=f"{s.label}: L = {s.lag_ms:.1f} ms ({ci})")
        if ok.any():
            top_v, top_d = max(top_v, float(v[ok].max())), max(top_d, float(d[ok].max()))
        if np.isfinite(s.lag_ms) and ok.any():
            xs = np.linspace(0, float(v[ok].max()) * 1.05, 20)
            ax.plot(xs, xs * s.lag_ms / 1e3, "-", color=f"C{i % 10}", lw=1)
    if top_v > 0 and top_d > 0:
        ax.set_xlim(0, top_v * 1.08)
        ax.set_ylim(0, top_d * 1.12)
    ax.set_xlabel("cruise speed v (deg/s)")
    ax.set_ylabel("cruise delta (deg)")
    _title(ax, "lag fit: delta = v * L", mark)
    ax.grid(True, alpha=0.3)
    _legend_outside(ax)
    return fig


def step_response_figure(traces: Sequence[StepTrace], mark: str = "") -> Figure | None:
    """Every step's measured progress toward its target (0 = start, 1 = target) against time from the step;
    the y axis spans the data (a runaway's overshoot included, up to 40x)."""
    if not traces:
        return None
    fig, ax = plt.subplots(figsize=(8.0, 4.0), constrained_layout=True)
    ordered = sorted(traces, key=lambda tr: number_order(tr.label))
    cmap = plt.get_cmap("viridis")
    for i, tr in enumerate(ordered):
        colour = cmap(i / max(1, len(ordered) - 1)) if len(ordered) > 10 else f"C{i}"
        ax.plot(tr.t_ms, tr.progress, "-", lw=1, color=colour, label=tr.label)
    ax.axhline(1.0, color="k", lw=0.6, ls="--")
    ax.axhspan(0.9, 1.1, color="g", alpha=0.08)
    lows = [float(np.nanmin(t.progress)) for t in traces if np.isfinite(t.progress).any()]
    highs = [float(np.nanmax(t.progress)) for t in traces if np.isfinite(t.progress).any()]
    low, high = min(lows, default=0.0), max(highs, default=1.0)
    ax.set_ylim(min(-0.05, low - 0.05 * abs(low)), max(1.15, min(40.0, high * 1.05)))
    ax.set_xlabel("time from the step (ms)")
    ax.set_ylabel("measured / step size")
    _title(ax, "step responses", mark)
    ax.grid(True, alpha=0.3)
    _legend_outside(ax)
    return fig


def _by_size(
    points: Sequence[SizePoint], title: str, ylabel: str, ratio_lines: Sequence[float] = (), mark: str = ""
) -> Figure:
    fig, ax = plt.subplots(figsize=(8.0, 4.0), constrained_layout=True)
    groups = sorted({p.group for p in points}, key=number_order)
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
    _title(ax, title, mark)
    ax.grid(True, alpha=0.3)
    _legend_outside(ax)
    return fig


def runaway_travel_figure(points: Sequence[SizePoint], mark: str = "") -> Figure | None:
    """Travel of the joint after each raw step against the step size, with the 14x and 35x lines."""
    if not points:
        return None
    return _by_size(
        points, "runaway travel against step size", "travel (deg)", ratio_lines=(14.0, 35.0), mark=mark
    )


def shaped_arrival_figure(points: Sequence[SizePoint], mark: str = "") -> Figure | None:
    """Arrival time (first frame within 10 % of the target) of each shaped step against its size; None
    unless the steps come in two sizes or more (one size is no curve: the a_max figure shows those)."""
    if len({p.size_deg for p in points}) < 2:
        return None
    return _by_size(points, "shaped arrival against step size", "arrival (ms)", mark=mark)


@dataclass
class AmaxRun:
    """One shaped step run: its a_max (deg/s²), the arrival times of its steps (ms) and whether it was clean
    (no fault, no reject, complete)."""

    a_max: float
    arrivals_ms: Sequence[float]
    clean: bool


def amax_ceiling_figure(runs: Sequence[AmaxRun], mark: str = "") -> Figure | None:
    """Arrival time against a_max for every shaped run, the runs that faulted marked where they faulted, and
    the answer drawn in: the highest clean a_max (the ceiling) and the first a_max that faulted. None with
    fewer than two a_max values (no ceiling to show)."""
    if len({r.a_max for r in runs}) < 2:
        return None
    fig, ax = plt.subplots(figsize=(8.0, 4.0), constrained_layout=True)
    clean = [r for r in runs if r.clean]
    bad = [r for r in runs if not r.clean]
    xs = [r.a_max for r in clean for a in r.arrivals_ms if math.isfinite(a)]
    ys = [a for r in clean for a in r.arrivals_ms if math.isfinite(a)]
    ax.plot(xs, ys, "o", color="C0", label="clean run: arrival of each step")
    top = max(ys, default=1.0)
    if bad:
        ax.plot([r.a_max for r in bad], [top * 1.1] * len(bad), "x", color="C3", ms=9, mew=2,
                label="faulted or rejected (no arrival)")  # fmt: skip
    ceiling = max((r.a_max for r in clean), default=math.nan)
    faulted = min((r.a_max for r in bad if r.a_max > ceiling), default=math.nan) if clean else math.nan
    if math.isfinite(ceiling):
        ax.axvline(ceiling, color="C2", lw=1.5, label=f"ceiling: clean up to {ceiling:g} deg/s²")
    if math.isfinite(faulted):
        ax.axvspan(faulted, max(r.a_max for r in runs) * 1.3, color="C3", alpha=0.08,
                   label=f"first fault at {faulted:g} deg/s²")  # fmt: skip
    ax.set_xscale("log")
    ax.set_xlim(min(r.a_max for r in runs) / 1.3, max(r.a_max for r in runs) * 1.3)
    ax.set_ylim(0, top * 1.25)
    ax.set_xlabel("shaper a_max (deg/s², log scale)")
    ax.set_ylabel("arrival (ms)")
    _title(ax, "a_max ceiling of shaped steps", mark)
    ax.grid(True, alpha=0.3, which="both")
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.02, 1.0), borderaxespad=0.0)
    return fig


def png_bytes(fig: Figure, dpi: int = 110) -> bytes:
    """The figure as PNG bytes; the figure is closed."""
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi)
    plt.close(fig)
    return buf.getvalue()
