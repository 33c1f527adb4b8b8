"""Figures of limit-mapping sweeps: commanded against measured pulses over time, with the stop and the
limit."""

from __future__ import annotations

from pathlib import Path

from matplotlib.figure import Figure

from servotool.analysis.sweep import SweepResult


def sweep_figure(res: SweepResult) -> Figure:
    """One sweep: command and read-back (pulses) against time (s), the stored limit the command never passes,
    the stop read back after the hold and the limit set inside it."""
    fig = Figure(figsize=(8.0, 4.5), layout="constrained")
    ax = fig.add_subplot()
    t0 = res.t[0] if res.t else 0.0
    ts = [t - t0 for t in res.t]
    ax.plot(ts, res.cmd, label="commanded", color="tab:blue", drawstyle="steps-post")
    read_t = [t for t, r in zip(ts, res.read, strict=True) if r is not None]
    read_v = [r for r in res.read if r is not None]
    ax.plot(read_t, read_v, label="measured", color="tab:orange", marker=".", markersize=3, linewidth=1)
    # frame the motion, not the whole 0-1000 range; the stored limit is drawn only when it is close by
    seen = [*res.cmd, *read_v, *(v for v in (res.stop, res.limit, res.start) if v is not None)]
    lo, hi = (min(seen), max(seen)) if seen else (res.bound, res.bound)
    pad = max(10.0, 0.08 * (hi - lo))
    if lo - 3 * pad <= res.bound <= hi + 3 * pad:
        lo, hi = min(lo, res.bound), max(hi, res.bound)
        ax.axhline(res.bound, color="grey", linestyle="--", linewidth=1, label=f"stored limit {res.bound}")
    ax.set_ylim(lo - pad, hi + pad)
    if res.stop is not None:
        ax.axhline(res.stop, color="tab:red", linestyle=":", linewidth=1, label=f"stop {res.stop}")
    if res.limit is not None:
        ax.axhline(res.limit, color="tab:green", linewidth=1.5,
                   label=f"limit {res.limit} ({res.inside} inside)")
    if res.stop_t is not None:
        ax.axvline(res.stop_t - t0, color="tab:red", linewidth=0.8, alpha=0.6)
    ax.set_xlabel("time since sweep start (s)")
    ax.set_ylabel("servo position (pulses)")
    ax.set_title(f"servo {res.joint} {res.direction} at {res.speed:g} pulses/s toward stored limit "
                 f"{res.bound}: "
                 f"{res.reason or 'no stop'}", fontsize="medium")
    ax.grid(True, alpha=0.3)
    ax.legend(loc="best", fontsize="small")
    return fig


def save_sweep_plot(res: SweepResult, path: str | Path) -> Path:
    """Write the sweep's figure as a PNG; returns the path."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    sweep_figure(res).savefig(path, dpi=110)
    return path
