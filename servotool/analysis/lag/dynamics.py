"""The dynamic model: measured(t) = F_tau[c(. - L)](t) + k * sign(v) + b, fitted on the measured frames.

F_tau is a first-order filter (time constant tau) and k an offset against the direction of motion (friction,
backlash). A pure delay, a filter and friction all give the same cruise delta at one speed; the ramp corners
separate L from tau, and several speeds separate k from L.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy import special

from servotool.analysis.lag.fitmodel import (
    FIT_GRID_S,
    FRICTION_V_EPS,
    FitModel,
    filtered,
    inverse_gram,
    read_grid,
)
from servotool.analysis.lag.orderstats import median
from servotool.analysis.lag.results import Dynamics, finite, ms
from servotool.analysis.lag.solver import LsqResult, Problem, Tolerances, cost_of, result_at, solve
from servotool.analysis.recording import RecordingError

__all__ = ["FIT_GRID_S", "FRICTION_V_EPS", "first_order_response", "fit_dynamics", "simulate"]

TAU_FLOOR_S = 0.003  # shortest first-order lag the dynamic fit reports (see _filter_is_real)
MIN_FIT_SAMPLES = 10  # measured frames the dynamic fit needs at the least
DEFAULT_LAG_GUESS_S = 0.05  # starting lag when no first estimate exists
TAU_SPLITS = (0.15, 0.5)  # tau as a fraction of the dead-time fit's lag, tried as starts of the filter fit
MAD_TO_SIGMA = 1.4826  # median absolute deviation to standard deviation of a normal distribution
SOFT_L1_SIGMAS = 3.0  # residuals beyond this many robust sigmas lose their pull on the fit
INLIER_SIGMAS = 4.0  # residuals within this many robust sigmas take part in the filter test
MAX_NEIGHBOUR_CORRELATION = 0.95
MIN_EFFECTIVE_SAMPLES = 5.0
FILTER_TEST_LEVEL = 0.999  # F-test confidence before a first-order lag is believed
PRETEST_F_SHARE = 0.5  # the filter fit runs when one step from the floor split predicts this share of it
FRICTION_SIGMAS = 3.0  # an offset counts when it exceeds this many standard errors ...
FRICTION_MIN_EFFECT_S = 0.5e-3  # ... and is worth this much apparent lag at the slowest speed
# When the fits stop. Near the optimum, moving a parameter by one standard error raises the cost by about
# 1/n of itself (n frames): a gain below STOP_GAIN_PER_SE / n of the cost, or a step below STOP_STEP_S (the
# smallest lag standard errors are a few us), leaves the parameters within a few % of a standard error of
# the optimum. The plain dead-time fit only gives the robust fit its noise scale and start: it stops sooner.
STOP_GAIN_PER_SE = 1e-3
STOP_STEP_S = 1e-7
SCALE_FIT_STEP_S = 1e-6


def _tolerances(n: int) -> tuple[Tolerances, Tolerances, Tolerances]:
    """(plain dead-time fit, robust dead-time fit, filter fit) tolerances for a fit on n frames."""
    gain = STOP_GAIN_PER_SE / max(n, 1)
    return (
        Tolerances(step=SCALE_FIT_STEP_S, cost=100 * gain, min_accepted=1, predicted=True),
        Tolerances(step=STOP_STEP_S, cost=gain / 100, min_accepted=1, predicted=True),
        # from a split of the lag the first steps along the valley L + tau = const gain little: three at least
        Tolerances(step=STOP_STEP_S, cost=gain, min_accepted=3, predicted=True),
    )


def first_order_response(u: np.ndarray, h: float, tau: float) -> np.ndarray:
    """Exact response of y' = (u - y) / tau to an input linear between samples h apart, from rest at u[0]."""
    y, _ = filtered(u, h, tau, jac=False)
    return np.array(y, dtype=float)


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
    return read_grid(y, t0, h, np.asarray(t_eval, float))


def _param_se(res: LsqResult, dof: float) -> list[float]:
    """Standard errors of the one or two parameters from the Jacobian (the pseudo-inverse of a singular
    normal matrix, as a rank-deficient fit has)."""
    s2 = float(res.fun @ res.fun) / max(dof, 1)
    g = res.jac.T @ res.jac
    if len(res.x) == 1:
        diag = [1.0 / float(g[0, 0]) if g[0, 0] > 0 else 0.0]
    else:
        inv = inverse_gram(float(g[0, 0]), float(g[0, 1]), float(g[1, 1]))
        diag = [float(inv[0, 0]), float(inv[1, 1])]
    return [math.sqrt(max(s2 * d, 0.0)) for d in diag]


def _windowed(
    t: np.ndarray, q: np.ndarray, windows: Sequence[tuple[float, float]]
) -> tuple[np.ndarray, np.ndarray, list[tuple[float, int, int]]]:
    """The frames inside the windows (frames sorted by time) and each window's (start, first, end frame)."""
    order = np.argsort(t, kind="stable")
    t, q = t[order], q[order]
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
        return t[:0], q[:0], []
    return np.concatenate(keep_t), np.concatenate(keep_q), spans


@dataclass
class _Fits:
    pure: LsqResult  # dead time alone
    best: LsqResult  # dead time and first-order lag
    scale: float  # robust sigma of the residuals (deg)
    fitted: bool = True  # False: best is where the filter fit would have started (no filter to look for)


def _filter_start(model: FitModel, pure: LsqResult, upper: np.ndarray, f_scale: float | None) -> np.ndarray:
    """Where the dead time + filter fit starts: of no filter (the dead-time fit's end) and a few splits of
    its lag s = L + tau (what a cruise pins down) into L and tau, the one of lowest cost.

    A start at tau = 0 alone is not enough: the cost is flat in tau there (the corner rounding grows as
    tau^2), so the fit cannot see a filter from it; a split at TAU_FLOOR_S tells whether the cost falls
    towards a filter at all, the larger ones reach a filter as long as the dead time or longer.

    Along the valley L + tau = s the cost falls from tau = 0 towards the filter the frames carry and rises
    beyond it, so the splits are tried in order of tau and the search stops at the first that costs no less
    than the one before: no later split would be the cheapest (each costs a filter pass over the grid)."""
    s = float(pure.x[0])
    best_x, best_cost = np.array([s, 0.0]), pure.cost
    # in order of tau (a split of a short lag can be shorter than the floor)
    for tau in sorted((TAU_FLOOR_S, *(frac * s for frac in TAU_SPLITS))):
        x = np.array([max(s - tau, 0.0), min(tau, float(upper[1]))])
        cost = cost_of(model.residual_only(x), f_scale)
        if not cost < best_cost:
            break
        best_x, best_cost = x, cost
    return best_x


def _no_filter_ahead(problem: Problem, x: np.ndarray, r_pure: np.ndarray, scale: float) -> bool:
    """The pre-test before the filter fit from x, the split at TAU_FLOOR_S (the cheapest start, so the
    cost rises from it to no filter and to the larger splits): is there no filter the fit could believe?

    One Gauss-Newton step from x (plain least squares, as the F test) predicts where the fit ends and the
    residual there. No filter is looked for when the step ends below TAU_FLOOR_S (never believed) or its
    F statistic is below PRETEST_F_SHARE of the critical value: from the floor split the fit's own F
    statistic stays within 20 % of that prediction. A step the model cannot take (no minimum along it) is
    no evidence: the fit runs."""
    r, jac = problem(x)
    (n00, n01), (n10, n11) = (jac.T @ jac).tolist()
    det = n00 * n11 - n01 * n10  # the 2x2 normal matrix solved in closed form (no LAPACK calls)
    if not (math.isfinite(det) and n00 > 0 and det > 0):
        return False
    g0, g1 = (jac.T @ r).tolist()
    d = np.array([n01 * g1 - n11 * g0, n10 * g0 - n00 * g1]) / det
    if x[1] + d[1] < TAU_FLOOR_S:
        return True
    f_stat, critical, _ = _f_test(r + jac @ d, r_pure, scale)
    return f_stat < PRETEST_F_SHARE * critical


def _run_fits(model: FitModel, guess: float) -> _Fits:
    """A dead-time-only fit, then dead time + filter from the best of a few starts (_filter_start); robust
    once the scale is known."""
    upper = np.array([max(1.0, 3 * guess), max(0.5, 2 * guess)])
    lower = np.zeros(2)

    last: list[tuple[float, tuple[np.ndarray, np.ndarray]]] = []

    def pure_problem(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        # the robust fit starts where the plain one ended: that point is not computed twice
        if last and last[0][0] == float(x[0]):
            return last[0][1]
        out = model.residual(x, fit_tau=False)
        last[:] = [(float(x[0]), out)]
        return out

    def full_problem(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        # the filter fit starts where the pre-test looked: that point is not computed twice
        if last_full and np.array_equal(last_full[0][0], x):
            return last_full[0][1]
        out = model.residual(x, fit_tau=True)
        last_full[:] = [(np.array(x, float), out)]
        return out

    last_full: list[tuple[np.ndarray, tuple[np.ndarray, np.ndarray]]] = []

    scale_tol, pure_tol, filter_tol = _tolerances(model.n)
    first = solve(pure_problem, np.array([guess]), lower[:1], upper[:1], tol=scale_tol)
    if first is None:
        raise RecordingError("the dynamic fit did not converge")
    scale = MAD_TO_SIGMA * median(np.abs(first.fun - median(first.fun)))
    f_scale = SOFT_L1_SIGMAS * scale if scale > 0 else None
    pure = solve(pure_problem, first.x, lower[:1], upper[:1], f_scale, pure_tol)
    if pure is None:
        raise RecordingError("the dynamic fit did not converge")
    start = _filter_start(model, pure, upper, f_scale)
    # no split lowered the cost (any filter the fit could find is shorter than TAU_FLOOR_S, never believed),
    # or the pre-test from the floor split finds no filter it could believe: the filter fit would only walk
    # a flat cost to confirm the dead time
    skip = start[1] == 0.0 or (
        start[1] == TAU_FLOOR_S and _no_filter_ahead(full_problem, start, pure.fun, scale)
    )
    if start[1] == 0.0:
        # the dead-time fit's own point: the same residual; the tau column (read only where tau > 0) is
        # the L column, as the two coincide at tau = 0
        best: LsqResult | None = LsqResult(start, pure.cost, pure.fun, np.repeat(pure.jac, 2, axis=1))
    elif skip:
        best = result_at(full_problem, start, f_scale)
    else:
        best = solve(full_problem, start, lower, upper, f_scale, filter_tol)
    if best is None:
        raise RecordingError("the dynamic fit did not converge")
    return _Fits(pure, best, scale, fitted=not skip)


def _lag_one_correlation(r: np.ndarray) -> float:
    """The correlation of each residual with the next (0 for fewer than four, or constant ones)."""
    if len(r) <= 3:
        return 0.0
    a, b = r[:-1] - r[:-1].mean(), r[1:] - r[1:].mean()
    saa, sbb = float(a @ a), float(b @ b)
    return float(a @ b) / math.sqrt(saa * sbb) if saa > 0 and sbb > 0 else 0.0


def _f_test(r_best: np.ndarray, r_pure: np.ndarray, scale: float) -> tuple[float, float, float]:
    """(F statistic of the filter, its critical value at FILTER_TEST_LEVEL, effective number of independent
    samples), on the samples both residuals call inliers.

    Residuals of neighbouring frames are correlated (timing jitter of one setpoint moves several frames):
    count independent samples only, or the test and the standard errors would be far too confident."""
    rb, rp = r_best, r_pure
    if scale > 0:
        inl = np.abs(r_best) <= INLIER_SIGMAS * scale
        if r_pure is not r_best:  # the dead-time fit's own point (no filter looked for): one residual
            inl &= np.abs(r_pure) <= INLIER_SIGMAS * scale
        if not inl.all():
            rb, rp = r_best[inl], r_pure[inl]
    rho = min(max(_lag_one_correlation(rb), 0.0), MAX_NEIGHBOUR_CORRELATION)
    n_eff = max(len(rb) * (1 - rho) / (1 + rho), MIN_EFFECTIVE_SAMPLES)
    dof = max(n_eff - 4, 1.0)
    ssr1, ssr0 = float(rb @ rb), float(rp @ rp)
    f_stat = (ssr0 - ssr1) / (ssr1 / dof) if ssr1 > 0 else math.inf
    return f_stat, float(special.fdtri(1, dof, FILTER_TEST_LEVEL)), n_eff


def _filter_is_real(fits: _Fits) -> tuple[bool, float]:
    """(is the fitted tau believed, effective number of independent samples).

    Near tau = 0 the data hardly depend on tau (the corner rounding grows as tau^2), so a fitted tau is only
    believed when the filter fit ran, and its tau lowers the residual significantly (F test, _f_test).
    """
    f_stat, critical, n_eff = _f_test(fits.best.fun, fits.pure.fun, fits.scale)
    # and only above TAU_FLOOR_S: shorter filters cannot be told apart from the sub-millisecond jitter of when
    # the controller takes each setpoint (on the simulator, a pure delay fits "tau ~ 2 ms" now and then)
    real = fits.fitted and f_stat > critical and fits.best.x[1] >= TAU_FLOOR_S
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

    L and tau are found by bounded least squares on the exact Jacobian (see solver): a dead-time fit, then
    dead time and filter from where it ended; k and b are linear and solved exactly for each (L, tau)
    (variable projection). Standard errors from the Jacobian at the optimum.
    With windows ((start, end) times, each starting while the command is still, in time order) only the
    frames inside them are fitted, each window simulated on its own; without, every frame over the whole
    recording. Raises RecordingError with fewer than MIN_FIT_SAMPLES finite frames or when no start
    converges.
    """
    t_meas = np.asarray(t_meas, float)
    q_meas = np.asarray(q_meas, float)
    ok = np.isfinite(t_meas)
    ok &= np.isfinite(q_meas)
    t_fit, q_fit = (t_meas, q_meas) if ok.all() else (t_meas[ok], q_meas[ok])
    spans = None
    if windows is not None:
        t_fit, q_fit, spans = _windowed(t_fit, q_fit, windows)
    t_cmd, q_cmd = np.ascontiguousarray(t_cmd, float), np.ascontiguousarray(q_cmd, float)
    model = FitModel(t_cmd, q_cmd, t_fit, q_fit, spans)
    n = model.n
    if n < MIN_FIT_SAMPLES:
        raise RecordingError("too few measured samples for the dynamic fit")
    guess = max(float(lag_guess_s), 0.0) if finite(lag_guess_s) else DEFAULT_LAG_GUESS_S
    fits = _run_fits(model, guess)
    has_filter, n_eff = _filter_is_real(fits)
    se_scale = math.sqrt(n / n_eff)
    # at tau = 0 (on its bound, no filter found) the two columns of the Jacobian coincide: no standard error
    best_se = _param_se(fits.best, n - 4) if fits.best.x[1] > 0 else [math.nan, math.nan]
    tau_se = best_se[1] * se_scale
    if has_filter:
        lag, tau = (float(x) for x in fits.best.x)
        lag_se = best_se[0] * se_scale
        r = fits.best.fun
    else:
        lag, tau = float(fits.pure.x[0]), 0.0
        lag_se = _param_se(fits.pure, n - 3)[0] * se_scale
        r = fits.pure.fun
    s2 = float(r @ r) / max(n - 4, 1) * (n / n_eff)
    coef, g_inv = model.linear_at(lag, tau)
    cov_lin = s2 * g_inv
    k, b = float(coef[0]), float(coef[1])
    k_se = math.sqrt(max(float(cov_lin[0, 0]), 0.0))
    k_effect_s = abs(k) / slowest_speed if finite(slowest_speed) and slowest_speed > 0 else math.inf
    has_friction = abs(k) > FRICTION_SIGMAS * k_se and k_effect_s > FRICTION_MIN_EFFECT_S
    return Dynamics(
        lag_ms=lag * 1e3,
        lag_stderr_ms=lag_se * 1e3,
        tau_ms=tau * 1e3,
        tau_stderr_ms=ms(tau_se),  # math.nan itself when there is none (comparisons by identity hold)
        offset_deg=k,
        offset_stderr_deg=k_se,
        bias_deg=b,
        rms_deg=math.sqrt(float(r @ r) / n),
        n_samples=n,
        effective_lag_ms=(lag + tau) * 1e3,
        has_filter=bool(has_filter),
        has_friction=bool(has_friction),
        verdict=_verdict(lag, tau, k, has_filter, bool(has_friction)),
    )
