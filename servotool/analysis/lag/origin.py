"""The fit delta = v * L through the origin over per-pass means, and the checks made on it."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from scipy import special

from servotool.analysis.lag.results import (
    GuardAdvice,
    MidpointCheck,
    ModelCheck,
    OriginFit,
    PassLag,
    finite,
)
from servotool.motion.guard import MARGIN_STEP_DEG, tuning_from_measurement

CI_QUANTILE = 0.975  # two-sided 95 % interval
MIDPOINT_TOLERANCE_MS = 2.0  # midpoint lags and the fit agree within this
CONSTANT_LAG_FLOOR_MS = 1.5  # per-pass lags within max(this, CONSTANT_LAG_FRACTION * L) count as one lag
CONSTANT_LAG_FRACTION = 0.03


def _intercept_fit(v: np.ndarray, d: np.ndarray) -> tuple[float, float]:
    """delta = b + v * L by least squares: (b, its standard error), NaN with fewer than 3 distinct speeds."""
    n = len(v)
    if n < 3 or np.ptp(v) <= 0:
        return math.nan, math.nan
    a = np.column_stack([np.ones(n), v])
    coef, *_ = np.linalg.lstsq(a, d, rcond=None)
    r = d - a @ coef
    s2 = float(np.sum(r**2) / (n - 2))
    cov = s2 * np.linalg.inv(a.T @ a)
    return float(coef[0]), math.sqrt(max(float(cov[0, 0]), 0.0))


def fit_through_origin(v: Sequence[float], delta: Sequence[float]) -> OriginFit | None:
    """Least-squares delta = v * L over the given points (v in deg/s, delta in deg). None with no points.

    The standard error comes from the scatter of the points about the line (n - 1 degrees of freedom), so a
    lag that changes with speed shows up as a wide interval, not a falsely precise one.
    """
    va = np.abs(np.asarray(v, dtype=float))
    d = np.asarray(delta, dtype=float)
    ok = np.isfinite(va) & np.isfinite(d) & (va > 0)
    va, d = va[ok], d[ok]
    n = len(va)
    if n == 0:
        return None
    sxx = float(np.sum(va * va))
    lag = float(np.sum(va * d) / sxx)
    if n >= 2:
        resid = d - lag * va
        s2 = float(np.sum(resid**2) / (n - 1))
        se = math.sqrt(s2 / sxx)
        tq = float(
            special.stdtrit(n - 1, CI_QUANTILE)
        )  # Student's t quantile (stats.t.ppf, without its overhead)
        ci = (lag - tq * se, lag + tq * se)
    else:
        se = math.nan
        ci = (math.nan, math.nan)
    icpt, icpt_se = _intercept_fit(va, d)
    return OriginFit(
        lag_ms=lag * 1e3,
        se_ms=se * 1e3,
        ci95_ms=(ci[0] * 1e3, ci[1] * 1e3),
        n_passes=n,
        intercept_deg=icpt,
        intercept_se_deg=icpt_se,
    )


def midpoint_check(
    passes: Sequence[PassLag], fit: OriginFit | None, tolerance_ms: float = MIDPOINT_TOLERANCE_MS
) -> MidpointCheck | None:
    """Compare the midpoint-crossing lags with the fit; None when no pass has a midpoint lag."""
    vals = np.array([p.mid_lag_ms for p in passes if finite(p.mid_lag_ms)])
    if vals.size == 0:
        return None
    mean = float(vals.mean())
    diff = mean - fit.lag_ms if fit is not None else math.nan
    return MidpointCheck(
        mean_ms=mean,
        min_ms=float(vals.min()),
        max_ms=float(vals.max()),
        diff_from_fit_ms=diff,
        tolerance_ms=tolerance_ms,
        agrees=bool(finite(diff) and abs(diff) <= tolerance_ms),
    )


def _friction_trend(v: np.ndarray, lags_ms: np.ndarray) -> float:
    """k (deg) in L_pass = L_inf + k / v: an offset looks like extra lag that shrinks at speed."""
    if np.ptp(v) <= 0:
        return math.nan
    a = np.column_stack([np.ones(len(v)), 1.0 / v])
    coef, *_ = np.linalg.lstsq(a, lags_ms * 1e-3, rcond=None)
    return float(coef[1])


def _varying_message(good: Sequence[PassLag], tol: float, friction: float, omb: float) -> str:
    lags = np.array([p.lag_ms for p in good])
    lo, hi = good[int(np.argmin(lags))], good[int(np.argmax(lags))]
    msg = (
        f"L varies from {lo.lag_ms:.1f} ms ({lo.speed_deg_s:.0f} deg/s {lo.direction}) to "
        f"{hi.lag_ms:.1f} ms ({hi.speed_deg_s:.0f} deg/s {hi.direction}), more than {tol:.2f} ms: "
        "the lag holds real dynamics, and compensating it as v * L is only approximate"
    )
    if finite(friction) and abs(friction) > 0:
        msg += f" (a 1/v trend fits an offset of {friction:+.4f} deg)"
    if finite(omb) and abs(omb) > tol:
        msg += f"; out and back differ by {omb:+.1f} ms"
    return msg


def model_check(passes: Sequence[PassLag], fit: OriginFit | None) -> ModelCheck | None:
    """L constant across speeds and directions within max(1.5 ms, 3 % of L)? None with under two lags or
    under two distinct speeds: one speed says nothing of how L varies with speed (out and back do not)."""
    good = [p for p in passes if finite(p.lag_ms)]
    if fit is None or len(good) < 2 or len({round(p.speed_deg_s, 6) for p in good}) < 2:
        return None
    lags = np.array([p.lag_ms for p in good])
    v = np.array([p.speed_deg_s for p in good])
    tol = max(CONSTANT_LAG_FLOOR_MS, CONSTANT_LAG_FRACTION * abs(fit.lag_ms))
    spread = float(np.ptp(lags))
    outs = [p.lag_ms for p in good if p.direction == "out"]
    backs = [p.lag_ms for p in good if p.direction == "back"]
    omb = float(np.mean(outs) - np.mean(backs)) if outs and backs else math.nan
    friction = _friction_trend(v, lags)
    constant = spread <= tol
    if constant:
        msg = (
            f"L is constant across speeds and directions (spread {spread:.2f} ms <= {tol:.2f} ms): "
            "the guard delta is v * L at every speed, a lag a guard can allow for"
        )
    else:
        msg = _varying_message(good, tol, friction, omb)
    return ModelCheck(
        constant=bool(constant),
        spread_ms=spread,
        tolerance_ms=tol,
        out_minus_back_ms=omb,
        friction_deg=friction,
        message=msg,
    )


def guard_advice(
    lag_s: float, *, a_max: float, v_max: float, noise_deg: float, dt: float, frame_age_s: float = 0.0
) -> GuardAdvice:
    """Guard settings for a measured lag lag_s (s); see GuardAdvice for the rules."""
    lag = max(float(lag_s), 0.0)
    age = float(frame_age_s) if finite(frame_age_s) and frame_age_s > 0 else 0.0
    base = tuning_from_measurement(lag, a_max, v_max, noise_deg, dt)
    seen = lag + age
    braking = a_max * seen**2 / 2.0
    age_deg = v_max * max(0.0, seen - base.lag_s)
    floor = braking + base.noise_deg + age_deg
    margin = max(base.margin_deg, math.ceil(round(floor / MARGIN_STEP_DEG, 9)) * MARGIN_STEP_DEG)
    return GuardAdvice(
        measured_lag_ms=lag * 1e3,
        frame_age_ms=age * 1e3,
        lag_s=base.lag_s,
        margin_deg=round(margin, 10),
        braking_deg=braking,
        noise_deg=base.noise_deg,
        frame_age_deg=age_deg,
        trail_deg=base.trail_deg,
        trail_s=base.trail_s,
        a_max=a_max,
        v_max=v_max,
        dt=dt,
    )
