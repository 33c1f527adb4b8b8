"""Figures of limit-mapping sweeps: one sweep (commanded against measured pulses over time, the stall call,
the stop and the limit set inside it) and a summary of every servo's mapped limits."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from matplotlib.figure import Figure

from servotool.analysis.sweep import STOP_STALL, FoundLimit, SweepResult
from servotool.plots import save_png


def _headline(res: SweepResult) -> str:
    """What the sweep found, in one line: where it stopped, why, and the limit set."""
    what = res.reason or "no stop"
    if res.stop is None:
        return f"servo {res.joint} {res.direction}: {what}"
    limit = f", limit {res.limit}" if res.limit is not None else ""
    return f"servo {res.joint} {res.direction}: {what} at {res.stop} pulses{limit}"


def sweep_figure(res: SweepResult) -> Figure:
    """One sweep: command and read-back (pulses) against time (s), the stored limit the command never passes,
    the moment the stop was called, the stop read back after the hold and the limit set inside it."""
    fig = Figure(figsize=(8.0, 4.5), layout="constrained")
    ax = fig.add_subplot()
    t0 = res.t[0] if res.t else 0.0
    ts = [t - t0 for t in res.t]
    ax.plot(ts, res.cmd, label="commanded (pulses)", color="tab:blue", drawstyle="steps-post")
    read_t = [t for t, r in zip(ts, res.read, strict=True) if r is not None]
    read_v = [r for r in res.read if r is not None]
    ax.plot(
        read_t, read_v, label="measured (pulses)", color="tab:orange", marker=".", markersize=3, linewidth=1
    )
    # frame the motion, not the whole 0-1000 range; the stored limit is drawn only when it is close by
    seen = [*res.cmd, *read_v, *(v for v in (res.stop, res.limit, res.start) if v is not None)]
    lo, hi = (min(seen), max(seen)) if seen else (res.bound, res.bound)
    pad = max(10.0, 0.08 * (hi - lo))
    if lo - 3 * pad <= res.bound <= hi + 3 * pad:
        lo, hi = min(lo, res.bound), max(hi, res.bound)
        ax.axhline(res.bound, color="grey", linestyle="--", linewidth=1, label=f"stored limit {res.bound}")
    ax.set_ylim(lo - pad, hi + pad)
    if res.stop is not None:
        ax.axhline(res.stop, color="tab:red", linestyle=":", linewidth=1, label=f"stop read back {res.stop}")
    if res.limit is not None and res.stop is not None:
        ax.axhspan(
            min(res.stop, res.limit),
            max(res.stop, res.limit),
            color="tab:green",
            alpha=0.12,
            label=f"margin: {res.inside} pulses inside the stop",
        )
        ax.axhline(res.limit, color="tab:green", linewidth=1.5, label=f"limit set {res.limit}")
    if res.stop_t is not None:
        call = "stall called" if res.reason == STOP_STALL else f"stop ({res.reason})"
        ax.axvline(
            res.stop_t - t0,
            color="tab:red",
            linewidth=0.8,
            alpha=0.6,
            label=f"{call} at {res.stop_t - t0:.2f} s",
        )
    ax.set_xlabel("time since sweep start (s)")
    ax.set_ylabel("servo position (pulses)")
    ax.set_title(
        f"{_headline(res)}\n{res.speed:g} pulses/s from {res.start} toward stored limit {res.bound}",
        fontsize="medium",
    )
    ax.grid(True, alpha=0.3)
    ax.legend(loc="best", fontsize="small")
    return fig


def save_sweep_plot(res: SweepResult, path: str | Path) -> Path:
    """Write the sweep's figure as a PNG; returns the path."""
    return save_png(sweep_figure(res), path)


def limits_summary_figure(
    results: Sequence[SweepResult],
    found: Mapping[int, FoundLimit],
    stored: Mapping[int, tuple[int, int]],
    configured: Mapping[int, tuple[int, int]],
) -> Figure:
    """Every swept servo on one row: its stored limit (grey band), the limit before the run (thin bar), the
    mapped limit (green bar, labelled lo-hi with where each bound came from) and each sweep's stop (red x)."""
    joints = sorted({r.joint for r in results} | set(found))
    fig = Figure(figsize=(8.0, 1.6 + 0.7 * max(1, len(joints))), layout="constrained")
    ax = fig.add_subplot()
    for row, joint in enumerate(joints):
        if joint in stored:
            lo, hi = stored[joint]
            ax.barh(
                row,
                hi - lo,
                left=lo,
                height=0.8,
                color="lightgrey",
                label="stored limit (in the servo)" if row == 0 else None,
            )
        if joint in configured:
            lo, hi = configured[joint]
            ax.barh(
                row + 0.3,
                hi - lo,
                left=lo,
                height=0.12,
                color="tab:blue",
                label="limit before the run" if row == 0 else None,
            )
        f = found.get(joint)
        if f is not None:
            ax.barh(
                row,
                f.hi - f.lo,
                left=f.lo,
                height=0.35,
                color="tab:green",
                alpha=0.8,
                label="mapped limit" if row == 0 else None,
            )
            ax.text(
                (f.lo + f.hi) / 2,
                row - 0.32,
                f"{f.lo}-{f.hi} (lo {f.lo_source}, hi {f.hi_source})",
                ha="center",
                va="top",
                fontsize="x-small",
            )
        stops = [r.stop for r in results if r.joint == joint and r.stop is not None]
        ax.plot(
            stops,
            [row] * len(stops),
            "x",
            color="tab:red",
            markersize=8,
            label="stop read back" if row == 0 and stops else None,
        )
    ax.set_yticks(range(len(joints)), [f"servo {j}" for j in joints])
    ax.set_xlim(-20, 1020)
    ax.set_xlabel("servo position (pulses, 0-1000)")
    ax.invert_yaxis()
    mapped = ", ".join(f"{j}: {found[j].lo}-{found[j].hi}" for j in joints if j in found)
    ax.set_title(f"mapped limits of {len(joints)} servo(s): {mapped or 'none found'}", fontsize="medium")
    ax.grid(True, axis="x", alpha=0.3)
    handles, labels = ax.get_legend_handles_labels()
    ax.legend(
        handles,
        labels,
        loc="lower center",
        bbox_to_anchor=(0.5, 1.12),
        ncol=4,
        fontsize="small",
        frameon=False,
    )
    return fig


def save_limits_summary(
    results: Sequence[SweepResult],
    found: Mapping[int, FoundLimit],
    stored: Mapping[int, tuple[int, int]],
    configured: Mapping[int, tuple[int, int]],
    path: str | Path,
) -> Path:
    """Write the summary of every mapped limit as a PNG; returns the path."""
    return save_png(limits_summary_figure(results, found, stored, configured), path)
