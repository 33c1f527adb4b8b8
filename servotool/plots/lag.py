"""Figure of a ramp lag measurement: the delta = v * L fit, the per-pass lags, and the model over time."""

from __future__ import annotations

import math
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.figure import Figure

from servotool.analysis.lag import FRICTION_V_EPS, LagResult, link_latency, simulate
from servotool.analysis.recording import Recording


def _ok(x: float) -> bool:
    return x is not None and math.isfinite(x)


def lag_figure(result: LagResult, rec: Recording | None = None, title: str = "") -> Figure:
    """Three panels: cruise delta against speed with the fit through the origin (true and guard view), the
    lag of every pass against speed (delta / v, guard view, midpoint), and the commanded, measured and
    modelled joint over the whole run with the model residual."""
    fig = plt.figure(figsize=(12, 8.5), constrained_layout=True)
    grid = fig.add_gridspec(2, 2, height_ratios=[1, 1.1])
    ax_fit = fig.add_subplot(grid[0, 0])
    ax_lag = fig.add_subplot(grid[0, 1])
    ax_time = fig.add_subplot(grid[1, :])
    passes = [p for p in result.passes if _ok(p.speed_deg_s)]
    vmax = max([p.speed_deg_s for p in passes], default=1.0) * 1.1
    vv = np.linspace(0.0, vmax, 50)
    for direction, marker in (("out", "o"), ("back", "s")):
        sel = [p for p in passes if p.direction == direction]
        ax_fit.plot(
            [p.speed_deg_s for p in sel],
            [p.delta_mean_deg for p in sel],
            marker,
            color="C0",
            label=f"delta at state frames ({direction})",
        )
        ax_fit.plot(
            [p.speed_deg_s for p in sel],
            [p.guard_delta_mean_deg for p in sel],
            marker,
            color="C1",
            mfc="none",
            label=f"guard view ({direction})",
        )
    if result.fit is not None:
        ax_fit.plot(
            vv,
            vv * result.fit.lag_ms / 1e3,
            "-",
            color="C0",
            label=f"fit L = {result.fit.lag_ms:.2f} ± {result.fit.se_ms:.2f} ms",
        )
    if result.guard_fit is not None:
        ax_fit.plot(
            vv,
            vv * result.guard_fit.lag_ms / 1e3,
            "--",
            color="C1",
            label=f"guard view {result.guard_fit.lag_ms:.2f} ms",
        )
    ax_fit.set_xlabel("cruise speed v (deg/s)")
    ax_fit.set_ylabel("cruise delta (deg)")
    ax_fit.set_xlim(0, vmax)
    ax_fit.set_ylim(bottom=0)
    ax_fit.legend(fontsize=7)
    ax_fit.grid(alpha=0.3)
    ax_fit.set_title("delta = v * L through the origin")

    for key, color, label in (
        ("lag_ms", "C0", "delta / v"),
        ("guard_lag_ms", "C1", "guard view"),
        ("mid_lag_ms", "C2", "midpoint crossing"),
    ):
        xs = [p.speed_deg_s for p in passes if _ok(getattr(p, key))]
        ys = [getattr(p, key) for p in passes if _ok(getattr(p, key))]
        ax_lag.plot(xs, ys, "o", color=color, label=label, mfc="none" if key != "lag_ms" else None)
    if result.fit is not None and _ok(result.fit.ci95_ms[0]):
        ax_lag.axhspan(*result.fit.ci95_ms, color="C0", alpha=0.15, label="fit 95 % CI")
    if result.dynamics is not None:
        d = result.dynamics
        ax_lag.axhline(d.lag_ms, color="k", lw=0.8, ls=":", label=f"dead time {d.lag_ms:.1f} ms")
        if d.has_filter:
            ax_lag.axhline(
                d.effective_lag_ms, color="k", lw=0.8, ls="--", label=f"L + tau = {d.effective_lag_ms:.1f} ms"
            )
    ax_lag.set_xlabel("cruise speed v (deg/s)")
    ax_lag.set_ylabel("lag (ms)")
    ax_lag.set_xscale("log")
    speeds = sorted({round(p.speed_deg_s, 1) for p in passes})
    if speeds:
        ax_lag.set_xticks(speeds, [f"{v:g}" for v in speeds])
        ax_lag.minorticks_off()
    ax_lag.legend(fontsize=7)
    ax_lag.grid(alpha=0.3, which="both")
    ax_lag.set_title("lag per pass (constant across speeds: a plain lag)")

    if rec is not None and len(rec.cmd_t) > 1 and len(rec.state_t) > 1:
        j = result.joint
        qc = rec.cmd_q[:, j]
        qs = rec.state_q[:, j]
        # the times the model was fitted on: as taken / sampled by the controller where the run allows it
        _, tc, ts, _ = link_latency(rec, result.cmd_period_s)
        ax_time.plot(tc, qc, "-", color="C0", lw=1, label="commanded")
        ax_time.plot(ts, qs, ".", color="C3", ms=1.5, label="measured")
        d = result.dynamics
        if d is not None:
            y, dy = simulate(tc, qc, ts, d.lag_ms / 1e3, d.tau_ms / 1e3)
            model = y - d.offset_deg * np.tanh(dy / FRICTION_V_EPS) + d.bias_deg
            ax_time.plot(ts, model, "-", color="k", lw=0.6, label="model")
            ax_res = ax_time.twinx()
            ax_res.plot(ts, qs - model, "-", color="C7", lw=0.5, alpha=0.7)
            ax_res.set_ylabel("measured - model (deg)", color="C7")
        ax_time.set_xlabel("t since run start (s), controller-side times where known")
        ax_time.set_ylabel(f"joint {j} (deg)")
        ax_time.legend(fontsize=7, loc="upper left")
        ax_time.grid(alpha=0.3)
    else:
        ax_time.set_visible(False)
    if title:
        fig.suptitle(title)
    return fig


def save_lag_plot(result: LagResult, rec: Recording | None, path: str | Path, title: str = "") -> Path:
    path = Path(path)
    fig = lag_figure(result, rec, title)
    try:
        fig.savefig(path, dpi=110)
    finally:
        plt.close(fig)
    return path
