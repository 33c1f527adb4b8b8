"""Figure of a ramp lag measurement: the delta = v * L fit, the per-pass lags, the model over time and its
residual in a panel of its own.

The title carries the headline: the device (SIMULATED when it is a simulator), L with its 95 % confidence
interval (named as servotool.analysis.uncertainty names it), and whether L is constant across speeds.
Every line and band is labeled; every axis has its unit.
"""

from __future__ import annotations

import math
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from servotool.analysis.lag import FRICTION_V_EPS, LagResult, PassLag, link_latency, simulate
from servotool.analysis.recording import Recording
from servotool.analysis.uncertainty import ci95_text, with_stderr
from servotool.plots import save_png


def _ok(x: float | None) -> bool:
    return x is not None and math.isfinite(x)


def lag_headline(result: LagResult, device: str = "") -> str:
    """`<device>: L = 78.15 ms (95 % CI 78.08 to 78.22 ms), constant across speeds` (plain text, for
    titles)."""
    head = f"{device}: " if device else ""
    fit = result.fit
    if fit is None:
        return head + "L not measurable"
    text = f"{head}L = {fit.lag_ms:.2f} ms ({ci95_text(*fit.ci95_ms)})"
    speeds = {round(p.speed_deg_s, 1) for p in result.passes if _ok(p.lag_ms)}
    if len(speeds) < 2:
        return text + ", one speed: constancy not checked"
    if result.model is not None:
        text += ", constant across speeds" if result.model.constant else ", varies with speed"
    return text


def _fit_panel(ax: Axes, result: LagResult, passes: list[PassLag]) -> None:
    vmax = max([p.speed_deg_s for p in passes], default=1.0) * 1.1
    vv = np.linspace(0.0, vmax, 50)
    for direction, marker in (("out", "o"), ("back", "s")):
        sel = [p for p in passes if p.direction == direction]
        xs = [p.speed_deg_s for p in sel]
        ax.plot(
            xs,
            [p.delta_mean_deg for p in sel],
            marker,
            color="C0",
            label=f"delta at state frames ({direction})",
        )
        ax.plot(
            xs,
            [p.guard_delta_mean_deg for p in sel],
            marker,
            color="C1",
            mfc="none",
            label=f"guard view ({direction})",
        )
    if result.fit is not None:
        ax.plot(
            vv,
            vv * result.fit.lag_ms / 1e3,
            "-",
            color="C0",
            label="fit L = " + with_stderr(f"{result.fit.lag_ms:.2f}", result.fit.stderr_ms, "ms"),
        )
    if result.guard_fit is not None:
        ax.plot(
            vv,
            vv * result.guard_fit.lag_ms / 1e3,
            "--",
            color="C1",
            label=f"guard view {result.guard_fit.lag_ms:.2f} ms",
        )
    ax.set_xlabel("cruise speed v (deg/s)")
    ax.set_ylabel("cruise delta (deg)")
    ax.set_xlim(0, vmax)
    ax.set_ylim(bottom=0)
    ax.legend(fontsize=7)
    ax.grid(alpha=0.3)
    ax.set_title("delta = v * L through the origin")


def _lag_panel(ax: Axes, result: LagResult, passes: list[PassLag]) -> None:
    for key, color, label in (
        ("lag_ms", "C0", "delta / v"),
        ("guard_lag_ms", "C1", "guard view"),
        ("mid_lag_ms", "C2", "midpoint crossing"),
    ):
        xs = [p.speed_deg_s for p in passes if _ok(getattr(p, key))]
        ys = [getattr(p, key) for p in passes if _ok(getattr(p, key))]
        ax.plot(xs, ys, "o", color=color, label=label, mfc="none" if key != "lag_ms" else None)
    if result.fit is not None and _ok(result.fit.ci95_ms[0]):
        ax.axhspan(*result.fit.ci95_ms, color="C0", alpha=0.15, label="fit " + ci95_text(*result.fit.ci95_ms))
    d = result.dynamics
    if d is not None:
        ax.axhline(d.lag_ms, color="k", lw=0.8, ls=":", label=f"dead time {d.lag_ms:.1f} ms")
        if d.has_filter:
            ax.axhline(
                d.effective_lag_ms, color="k", lw=0.8, ls="--", label=f"L + tau = {d.effective_lag_ms:.1f} ms"
            )
    ax.set_xlabel("cruise speed v (deg/s)")
    ax.set_ylabel("lag (ms)")
    ax.set_xscale("log")
    speeds = sorted({round(p.speed_deg_s, 1) for p in passes})
    if speeds:
        ax.set_xticks(speeds, [f"{v:g}" for v in speeds])
        ax.minorticks_off()
    ax.legend(fontsize=7)
    ax.grid(alpha=0.3, which="both")
    one = len(speeds) < 2
    ax.set_title(
        "lag per pass"
        + (" (one speed: constancy not checked)" if one else " (constant across speeds: a plain lag)")
    )


def _time_panels(ax_time: Axes, ax_res: Axes, result: LagResult, rec: Recording) -> None:
    """Commanded, measured and modelled joint over the run; the measured - model residual below it."""
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
        ax_time.plot(ts, model, "-", color="k", lw=0.6, label="model (dead time + filter + offset)")
        ax_res.plot(ts, (qs - model) * 1e3, "-", color="C7", lw=0.6, label="measured - model")
        ax_res.axhline(0.0, color="k", lw=0.5)
        ax_res.legend(fontsize=7, loc="upper right")
    else:
        ax_res.text(
            0.5, 0.5, "no dynamic fit: no residual", ha="center", va="center", transform=ax_res.transAxes
        )
    ax_time.set_ylabel(f"J{j + 1} (deg)")
    ax_time.legend(fontsize=7, loc="upper left")
    ax_time.grid(alpha=0.3)
    ax_res.set_xlabel("t since run start (s), controller-side times where known")
    ax_res.set_ylabel("residual (mdeg)")
    ax_res.grid(alpha=0.3)


def lag_figure(result: LagResult, rec: Recording | None = None, title: str = "", device: str = "") -> Figure:
    """Four panels: cruise delta against speed with the fit through the origin (true and guard view), the
    lag of every pass against speed (delta / v, guard view, midpoint), the commanded, measured and modelled
    joint over the whole run, and the model residual. The title is the headline (lag_headline) over `title`
    (the file name)."""
    fig = plt.figure(figsize=(12, 10), constrained_layout=True)
    grid = fig.add_gridspec(3, 2, height_ratios=[1, 1.1, 0.45])
    passes = [p for p in result.passes if _ok(p.speed_deg_s)]
    _fit_panel(fig.add_subplot(grid[0, 0]), result, passes)
    _lag_panel(fig.add_subplot(grid[0, 1]), result, passes)
    ax_time = fig.add_subplot(grid[1, :])
    ax_res = fig.add_subplot(grid[2, :], sharex=ax_time)
    if rec is not None and len(rec.cmd_t) > 1 and len(rec.state_t) > 1:
        _time_panels(ax_time, ax_res, result, rec)
    else:
        ax_time.set_visible(False)
        ax_res.set_visible(False)
    headline = lag_headline(result, device)
    fig.suptitle(f"{headline}\n{title}" if title else headline)
    return fig


def save_lag_plot(
    result: LagResult, rec: Recording | None, path: str | Path, title: str = "", device: str = ""
) -> Path:
    """Write lag_figure as a PNG at `path`; returns the path."""
    return save_png(lag_figure(result, rec, title, device), path)
