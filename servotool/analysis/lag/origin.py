"""The fit delta = v * L through the origin over per-pass means, and the checks made on it."""

from __future__ import annotations

import functools
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


def _line_fit(x: Sequence[float], y: Sequence[float]) -> tuple[float, float, float]:
    """y = a + b * x by least squares over a few points (at least two distinct x): (a, b, the standard error
    of a from the scatter about the line, NaN with fewer than 3 points). Written out: a pass count of points
    costs less in floats than in numpy calls."""
    n = len(x)
    xm, ym = sum(x) / n, sum(y) / n
    sxx = sum((u - xm) ** 2 for u in x)
    b = sum((u - xm) * (w - ym) for u, w in zip(x, y, strict=True)) / sxx
    a = ym - b * xm
    if n < 3:
        return a, b, math.nan
    s2 = sum((w - a - b * u) ** 2 for u, w in zip(x, y, strict=True)) / (n - 2)
    # the intercept's variance: s2 times the [0, 0] element of the inverse normal matrix
    return a, b, math.sqrt(max(s2 * (1.0 / n + xm * xm / sxx), 0.0))


def _intercept_fit(v: Sequence[float], d: Sequence[float]) -> tuple[float, float]:
    """delta = b + v * L by least squares: (b, its standard error), NaN with fewer than 3 distinct speeds."""
    if len(v) < 3 or max(v) <= min(v):
        return math.nan, math.nan
    icpt, _, icpt_se = _line_fit(v, d)
    return icpt, icpt_se


@functools.lru_cache(maxsize=64)
def _t_quantile(dof: int) -> float:
    """Student's t quantile CI_QUANTILE at dof degrees of freedom (stats.t.ppf, without its overhead)."""
    return float(special.stdtrit(dof, CI_QUANTILE))


def fit_through_origin(v: Sequence[float], delta: Sequence[float]) -> OriginFit | None:
    """Least-squares delta = v * L over the given points (v in deg/s, delta in deg). None with no points.

    The standard error comes from the scatter of the points about the line (n - 1 degrees of freedom), so a
    lag that changes with speed shows up as a wide interval, not a falsely precise one.
    """
    pts = [(abs(float(a)), float(b)) for a, b in zip(v, delta, strict=True)]
    pts = [(a, b) for a, b in pts if math.isfinite(a) and math.isfinite(b) and a > 0]
    n = len(pts)
    if n == 0:
        return None
    va, d = [a for a, _ in pts], [b for _, b in pts]
    sxx = sum(a * a for a in va)
    lag = sum(a * b for a, b in pts) / sxx
    if n >= 2:
        s2 = sum((b - lag * a) ** 2 for a, b in pts) / (n - 1)
        se = math.sqrt(s2 / sxx)
        tq = _t_quantile(n - 1)
        ci = (lag - tq * se, lag + tq * se)
    else:
        se = math.nan
        ci = (math.nan, math.nan)
    icpt, icpt_se = _intercept_fit(va, d)
    return OriginFit(
        lag_ms=lag * 1e3,
        stderr_ms=se * 1e3,
        ci95_low_ms=ci[0] * 1e3,
        ci95_high_ms=ci[1] * 1e3,
        n_passes=n,
        intercept_deg=icpt,
        intercept_stderr_deg=icpt_se,
    )


def midpoint_check(
    passes: Sequence[PassLag], fit: OriginFit | None, tolerance_ms: float = MIDPOINT_TOLERANCE_MS
) -> MidpointCheck | None:
    """Compare the midpoint-crossing lags with the fit; None when no pass has a midpoint lag."""
    vals = [p.mid_lag_ms for p in passes if finite(p.mid_lag_ms)]
    if not vals:
        return None
    mean = sum(vals) / len(vals)
    diff = mean - fit.lag_ms if fit is not None else math.nan
    return MidpointCheck(
        mean_ms=mean,
        min_ms=float(min(vals)),
        max_ms=float(max(vals)),
        diff_from_fit_ms=diff,
        tolerance_ms=tolerance_ms,
        agrees=bool(finite(diff) and abs(diff) <= tolerance_ms),
    )


def _friction_trend(v: Sequence[float], lags_ms: Sequence[float]) -> float:
    """k (deg) in L_pass = L_inf + k / v: an offset looks like extra lag that shrinks at speed."""
    if max(v) <= min(v):
        return math.nan
    return _line_fit([1.0 / u for u in v], [lag * 1e-3 for lag in lags_ms])[1]


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
    if fit is None:
        return None
    tol = max(CONSTANT_LAG_FLOOR_MS, CONSTANT_LAG_FRACTION * abs(fit.lag_ms))
    good = [p for p in passes if finite(p.lag_ms)]
    # a dead time, a filter and an offset move a pass's midpoint crossing as they move its cruise delta: a
    # pass whose two disagree was disturbed (late frames, a stalled controller) and says nothing of dynamics
    odd = [p.index for p in good if finite(p.mid_lag_ms) and abs(p.lag_ms - p.mid_lag_ms) > tol]
    if odd:
        good = [p for p in good if p.index not in odd]
    if len(good) < 2 or len({round(p.speed_deg_s, 6) for p in good}) < 2:
        return None
    lags = [p.lag_ms for p in good]
    v = [p.speed_deg_s for p in good]
    spread = float(max(lags) - min(lags))
    outs = [p.lag_ms for p in good if p.direction == "out"]
    backs = [p.lag_ms for p in good if p.direction == "back"]
    omb = float(sum(outs) / len(outs) - sum(backs) / len(backs)) if outs and backs else math.nan
    friction = _friction_trend(v, lags)
    constant = spread <= tol
    if constant:
        msg = (
            f"L is constant across speeds and directions (spread {spread:.2f} ms <= {tol:.2f} ms): "
            "the guard delta is v * L at every speed, a lag a guard can allow for"
        )
    else:
        msg = _varying_message(good, tol, friction, omb)
    if odd:
        msg += (
            f" (pass {', '.join(str(i + 1) for i in odd)} left out: its cruise L and its own midpoint "
            f"crossing disagree by more than {tol:.2f} ms, a disturbed measurement rather than dynamics)"
        )
    return ModelCheck(
        constant=bool(constant),
        spread_ms=spread,
        tolerance_ms=tol,
        out_minus_back_ms=omb,
        friction_deg=friction,
        message=msg,
        disagreeing=odd,
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
