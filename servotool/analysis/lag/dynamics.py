"""The dynamic model: measured(t) = F_tau[c(. - L)](t) + k * sign(v) + b, fitted on the measured frames.

F_tau is a first-order filter (time constant tau) and k an offset against the direction of motion (friction,
backlash). A pure delay, a filter and friction all give the same cruise delta at one speed; the ramp corners
separate L from tau, and several speeds separate k from L.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import optimize, signal, special

from servotool.analysis.lag.results import Dynamics, finite
from servotool.analysis.recording import RecordingError

FIT_GRID_S = 0.001  # simulation step of the dynamic model
FRICTION_V_EPS = 1.0  # deg/s: speed over which the friction term reaches its full value (tanh)
TAU_FLOOR_S = 0.003  # shortest first-order lag the dynamic fit reports (see _filter_is_real)
MIN_FIT_SAMPLES = 10  # measured frames the dynamic fit needs at the least
DEFAULT_LAG_GUESS_S = 0.05  # starting lag when no first estimate exists
TAU_STARTS = (0.0, 0.15, 0.5)  # starting tau as fractions of the lag guess (several starts, best kept)
MAD_TO_SIGMA = 1.4826  # median absolute deviation to standard deviation of a normal distribution
SOFT_L1_SIGMAS = 3.0  # residuals beyond this many robust sigmas lose their pull on the fit
INLIER_SIGMAS = 4.0  # residuals within this many robust sigmas take part in the filter test
MAX_NEIGHBOUR_CORRELATION = 0.95
MIN_EFFECTIVE_SAMPLES = 5.0
FILTER_TEST_LEVEL = 0.999  # F-test confidence before a first-order lag is believed
FRICTION_SIGMAS = 3.0  # an offset counts when it exceeds this many standard errors ...
FRICTION_MIN_EFFECT_S = 0.5e-3  # ... and is worth this much apparent lag at the slowest speed
TINY_TAU_S = 1e-9  # below this the filter is the identity

Residual = Callable[[np.ndarray], np.ndarray]


def first_order_response(u: np.ndarray, h: float, tau: float) -> np.ndarray:
    """Exact response of y' = (u - y) / tau to an input linear between samples h apart, from rest at u[0]."""
    if tau <= TINY_TAU_S:
        return u.copy()
    a = math.exp(-h / tau)
    g = (1.0 - a) * tau / h
    b = [1.0 - g, g - a]
    # the filter state of a system at rest at u[0] (what scipy.signal.lfiltic gives for y = x = u[0])
    zi = np.array([b[1] * u[0] + a * u[0]])
    y, _ = signal.lfilter(b, [1.0, -a], u, zi=zi)
    return np.asarray(y)


def simulate(
    t_cmd: np.ndarray,
    q_cmd: np.ndarray,
    t_eval: np.ndarray,
    lag_s: float,
    tau_s: float,
    h: float = FIT_GRID_S,
    t_from: float | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """The commanded stream through dead time lag_s and a first-order lag tau_s, at t_eval (sorted).

    Returns (position, velocity) of the model at t_eval. Before the first setpoint the command is taken as
    held at its first value (the warm-up held that pose), after the last one as held at the last value.
    With t_from, the model starts at rest at t_from (a moment the command was still, such as the start of
    a pass) and runs only to the last t_eval: a window of a long recording costs only its own length.
    """
    settle = max(5 * tau_s, 2 * h)
    if t_from is None:
        t0 = min(t_cmd[0], t_eval[0]) - settle
        t1 = max(t_cmd[-1], t_eval[-1]) + 2 * h
    else:
        t0 = min(t_from, t_eval[0]) - settle
        t1 = t_eval[-1] + 2 * h
    grid = np.arange(t0, t1 + h, h)
    u = np.interp(grid - lag_s, t_cmd, q_cmd)
    y = first_order_response(u, h, tau_s)
    return _on_grid(y, t0, h, t_eval)


def _on_grid(y: np.ndarray, t0: float, h: float, t_eval: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """y (sampled every h from t0) and its central-difference slope, linearly interpolated at t_eval.

    The same values as np.interp over np.gradient(y, h), but the grid is uniform, so the cell of each
    t_eval is found by arithmetic and the slope is taken only in the cells used, not over the whole grid."""
    n = len(y)
    pos = np.clip((np.asarray(t_eval, float) - t0) / h, 0.0, n - 1.0)
    j = np.minimum(pos.astype(np.intp), n - 2)
    f = pos - j
    # one sample extrapolated at each end: the central difference there equals np.gradient's one-sided one
    yp = np.concatenate(([2.0 * y[0] - y[1]], y, [2.0 * y[-1] - y[-2]]))
    ym, y0, y1, y2 = yp[j], yp[j + 1], yp[j + 2], yp[j + 3]
    s0, s1 = (y1 - ym) / (2.0 * h), (y2 - y0) / (2.0 * h)
    return y0 + f * (y1 - y0), s0 + f * (s1 - s0)


def _least_squares(
    fun: Residual, x0: np.ndarray, bounds: Any, f_scale: float | None = None
) -> optimize.OptimizeResult | None:
    """Bounded least squares; with f_scale, a soft-L1 loss so that a few samples thrown far off by a late
    setpoint (a stalled link) do not drag the fit. None when scipy gives up."""
    robust: dict[str, Any] = {} if f_scale is None else {"loss": "soft_l1", "f_scale": f_scale}
    try:
        return optimize.least_squares(
            fun,
            x0,
            bounds=bounds,
            x_scale=0.01,
            diff_step=1e-4,
            method="trf",
            xtol=1e-7,
            ftol=1e-10,
            gtol=1e-10,
            max_nfev=200,
            **robust,
        )
    except (ValueError, np.linalg.LinAlgError):
        return None


def _param_se(res: optimize.OptimizeResult, dof: float) -> list[float]:
    s2 = float(res.fun @ res.fun) / max(dof, 1)
    cov = s2 * np.linalg.pinv(res.jac.T @ res.jac)
    return [math.sqrt(max(float(cov[i, i]), 0.0)) for i in range(len(res.x))]


def _linear_terms(a: np.ndarray, r: np.ndarray) -> np.ndarray:
    """Least-squares coefficients of the two linear terms (friction, bias): the 2x2 normal equations, which
    are well conditioned here (a tanh column and a constant); a general solver when they are singular."""
    c0, c1 = a[:, 0], a[:, 1]
    s00, s01, s11 = float(c0 @ c0), float(c0 @ c1), float(c1 @ c1)
    det = s00 * s11 - s01 * s01
    if abs(det) > 1e-12 * (s00 + s11) ** 2:
        r0, r1 = float(c0 @ r), float(c1 @ r)
        return np.array([(s11 * r0 - s01 * r1) / det, (s00 * r1 - s01 * r0) / det])
    coef, *_ = np.linalg.lstsq(a, r, rcond=None)
    return np.asarray(coef)


@dataclass
class _Model:
    """The model on one set of frames: simulated response plus the linear terms (k, b) solved exactly.

    windows: (start time, first frame index, end frame index) of each stretch simulated on its own; None
    simulates the whole recording in one go."""

    t_cmd: np.ndarray
    q_cmd: np.ndarray
    t_meas: np.ndarray
    q_meas: np.ndarray
    windows: list[tuple[float, int, int]] | None = None

    def response(self, lag: float, tau: float) -> tuple[np.ndarray, np.ndarray]:
        if self.windows is None:
            return simulate(self.t_cmd, self.q_cmd, self.t_meas, lag, tau)
        y, dy = np.empty(len(self.t_meas)), np.empty(len(self.t_meas))
        for t_from, i0, i1 in self.windows:
            y[i0:i1], dy[i0:i1] = simulate(
                self.t_cmd, self.q_cmd, self.t_meas[i0:i1], lag, tau, t_from=t_from
            )
        return y, dy

    def design(self, lag: float, tau: float) -> tuple[np.ndarray, np.ndarray]:
        y, dy = self.response(lag, tau)
        a = np.column_stack([-np.tanh(dy / FRICTION_V_EPS), np.ones(len(self.t_meas))])
        return y, a

    def residual(self, p: np.ndarray) -> np.ndarray:
        y, a = self.design(float(p[0]), float(p[1]))
        r0 = self.q_meas - y
        return np.asarray(r0 - a @ _linear_terms(a, r0))

    def pure_residual(self, p: np.ndarray) -> np.ndarray:
        return self.residual(np.array([p[0], 0.0]))


def _windowed(model: _Model, windows: Sequence[tuple[float, float]]) -> _Model:
    """The model restricted to the frames inside the windows (frames sorted by time)."""
    order = np.argsort(model.t_meas, kind="stable")
    t, q = model.t_meas[order], model.q_meas[order]
    keep_t: list[np.ndarray] = []
    keep_q: list[np.ndarray] = []
    spans: list[tuple[float, int, int]] = []
    n = 0
    for t0, t1 in windows:
        i0, i1 = int(np.searchsorted(t, t0)), int(np.searchsorted(t, t1))
        if i1 > i0:
            keep_t.append(t[i0:i1])
            keep_q.append(q[i0:i1])
            spans.append((t0, n, n + i1 - i0))
            n += i1 - i0
    if not spans:
        return _Model(model.t_cmd, model.q_cmd, t[:0], q[:0], [])
    return _Model(model.t_cmd, model.q_cmd, np.concatenate(keep_t), np.concatenate(keep_q), spans)


@dataclass
class _Fits:
    pure: optimize.OptimizeResult  # dead time alone
    best: optimize.OptimizeResult  # dead time and first-order lag
    scale: float  # robust sigma of the residuals (deg)


def _run_fits(model: _Model, guess: float) -> _Fits:
    """A dead-time-only fit, then dead time + filter from several starts; robust once the scale is known."""
    upper = (max(1.0, 3 * guess), max(0.5, 2 * guess))
    first = _least_squares(model.pure_residual, np.array([guess]), ([0.0], [upper[0]]))
    if first is None:
        raise RecordingError("the dynamic fit did not converge")
    scale = MAD_TO_SIGMA * float(np.median(np.abs(first.fun - np.median(first.fun))))
    f_scale = SOFT_L1_SIGMAS * scale if scale > 0 else None
    pure = _least_squares(model.pure_residual, first.x, ([0.0], [upper[0]]), f_scale)
    best = None
    for frac in TAU_STARTS:
        tau0 = frac * guess
        # no filter: start where the dead-time fit ended (a pure delay then converges in a few steps)
        lag0 = float(pure.x[0]) if frac == 0.0 and pure is not None else guess - tau0
        x0 = np.array([min(max(lag0, 0.0), upper[0]), min(tau0, upper[1])])
        res = _least_squares(model.residual, x0, ([0.0, 0.0], upper), f_scale)
        if res is not None and (best is None or res.cost < best.cost):
            best = res
    if best is None or pure is None:
        raise RecordingError("the dynamic fit did not converge")
    return _Fits(pure, best, scale)


def _filter_is_real(fits: _Fits, n: int) -> tuple[bool, float]:
    """(is the fitted tau believed, effective number of independent samples).

    Near tau = 0 the data hardly depend on tau (the corner rounding grows as tau^2), so a fitted tau is only
    believed when it lowers the residual significantly (F test on the samples both fits call inliers).
    Residuals of neighbouring frames are correlated (timing jitter of one setpoint moves several frames):
    count independent samples only, or the test and the standard errors would be far too confident.
    """
    r_best, r_pure, scale = fits.best.fun, fits.pure.fun, fits.scale
    if scale > 0:
        inl = (np.abs(r_best) <= INLIER_SIGMAS * scale) & (np.abs(r_pure) <= INLIER_SIGMAS * scale)
    else:
        inl = np.ones(n, bool)
    rb = r_best[inl]
    rho = float(np.corrcoef(rb[:-1], rb[1:])[0, 1]) if len(rb) > 3 and np.std(rb) > 0 else 0.0
    rho = min(max(rho, 0.0), MAX_NEIGHBOUR_CORRELATION)
    n_in = int(inl.sum())
    n_eff = max(n_in * (1 - rho) / (1 + rho), MIN_EFFECTIVE_SAMPLES)
    dof = max(n_eff - 4, 1.0)
    ssr1, ssr0 = float(rb @ rb), float(r_pure[inl] @ r_pure[inl])
    f_stat = (ssr0 - ssr1) / (ssr1 / dof) if ssr1 > 0 else math.inf
    # and only above TAU_FLOOR_S: shorter filters cannot be told apart from the sub-millisecond jitter of when
    # the controller takes each setpoint (on the simulator, a pure delay fits "tau ~ 2 ms" now and then)
    real = bool(f_stat > special.fdtri(1, dof, FILTER_TEST_LEVEL) and fits.best.x[1] >= TAU_FLOOR_S)
    return real, n_eff


def _verdict(lag: float, tau: float, k: float, has_filter: bool, has_friction: bool) -> str:
    if not has_filter and not has_friction:
        return f"pure dead time: L = {lag * 1e3:.1f} ms, no measurable filtering or friction"
    parts = [f"dead time L = {lag * 1e3:.1f} ms"]
    if has_filter:
        parts.append(
            f"first-order lag tau = {tau * 1e3:.1f} ms (a cruise sees L + tau = "
            f"{(lag + tau) * 1e3:.1f} ms; a step sees L, then an exponential)"
        )
    if has_friction:
        parts.append(
            f"a direction-dependent offset of {k:+.4f} deg (friction or backlash: its "
            "apparent lag shrinks as 1/v)"
        )
    return "; ".join(parts)


def fit_dynamics(
    t_cmd: np.ndarray,
    q_cmd: np.ndarray,
    t_meas: np.ndarray,
    q_meas: np.ndarray,
    lag_guess_s: float,
    *,
    slowest_speed: float = math.nan,
    windows: Sequence[tuple[float, float]] | None = None,
) -> Dynamics:
    """Fit measured = F_tau[c(. - L)] + k * sign(v) + b by least squares on the measured samples.

    L and tau are found by scipy.optimize.least_squares (bounded, several starts); k and b are linear and
    solved exactly for each (L, tau) (variable projection). Standard errors from the Jacobian at the optimum.
    With windows ((start, end) times, each starting while the command is still, in time order) only the
    frames inside them are fitted, each window simulated on its own; without, every frame over the whole
    recording. Raises RecordingError with fewer than MIN_FIT_SAMPLES finite frames or when no start
    converges.
    """
    t_meas = np.asarray(t_meas, float)
    q_meas = np.asarray(q_meas, float)
    ok = np.isfinite(t_meas) & np.isfinite(q_meas)
    model = _Model(
        np.ascontiguousarray(t_cmd, float), np.ascontiguousarray(q_cmd, float), t_meas[ok], q_meas[ok]
    )
    if windows is not None:
        model = _windowed(model, windows)
    n = len(model.t_meas)
    if n < MIN_FIT_SAMPLES:
        raise RecordingError("too few measured samples for the dynamic fit")
    guess = max(float(lag_guess_s), 0.0) if finite(lag_guess_s) else DEFAULT_LAG_GUESS_S
    fits = _run_fits(model, guess)
    has_filter, n_eff = _filter_is_real(fits, n)
    se_scale = math.sqrt(n / n_eff)
    tau_se = _param_se(fits.best, n - 4)[1] * se_scale
    if has_filter:
        lag, tau = (float(x) for x in fits.best.x)
        lag_se = _param_se(fits.best, n - 4)[0] * se_scale
        r = fits.best.fun
    else:
        lag, tau = float(fits.pure.x[0]), 0.0
        lag_se = _param_se(fits.pure, n - 3)[0] * se_scale
        r = fits.pure.fun
    s2 = float(r @ r) / max(n - 4, 1) * (n / n_eff)
    y, a = model.design(lag, tau)
    coef, *_ = np.linalg.lstsq(a, model.q_meas - y, rcond=None)
    cov_lin = s2 * np.linalg.pinv(a.T @ a)
    k, b = float(coef[0]), float(coef[1])
    k_se = math.sqrt(max(float(cov_lin[0, 0]), 0.0))
    k_effect_s = abs(k) / slowest_speed if finite(slowest_speed) and slowest_speed > 0 else math.inf
    has_friction = abs(k) > FRICTION_SIGMAS * k_se and k_effect_s > FRICTION_MIN_EFFECT_S
    return Dynamics(
        lag_ms=lag * 1e3,
        lag_se_ms=lag_se * 1e3,
        tau_ms=tau * 1e3,
        tau_se_ms=tau_se * 1e3,
        offset_deg=k,
        offset_se_deg=k_se,
        bias_deg=b,
        rms_deg=math.sqrt(float(r @ r) / n),
        n_samples=n,
        effective_lag_ms=(lag + tau) * 1e3,
        has_filter=bool(has_filter),
        has_friction=bool(has_friction),
        verdict=_verdict(lag, tau, k, has_filter, bool(has_friction)),
    )
