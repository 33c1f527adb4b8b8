"""Commanded-to-measured lag from a ramp run: per-pass figures, the delta = v*L fit, and a dynamic model.

Definitions (all on the host clock the run stamped every send and every receive with):

* c(t): the commanded joint as a function of time, the setpoints on the wire joined linearly between their
  actual send times. m_i: the measured joint in state frame i, received at t_i.
* True delta at a state frame: d_i = (c(t_i) - m_i) * sign(v), i.e. how far behind the command the arm was at
  the instant the sample arrived. During a cruise at speed v an arm that executes the command L seconds late
  shows d_i = v * L exactly, so L = mean(d) / v.
* Guard-view delta at a send tick k: (s_k - m_latest) * sign(v), the setpoint just sent against the newest
  frame received before it. This is what a divergence guard sees; it exceeds the true delta by v times the
  age of that frame (half a state period on average), so it is reported separately as the guard-view lag.
* Midpoint lag: the time between the command and the measured joint crossing the middle of the pass.
  It uses no speed at all, so it cross-checks delta / v independently.
* Dynamic model over the whole recording, ramp corners included: measured(t) = F_tau[c(. - L)](t)
  + k * sign(v) + b, with F_tau a first-order filter (time constant tau) and k an offset against the
  direction of motion (friction, backlash). A pure delay, a filter and friction all give the same cruise
  delta at one speed; the corners separate L from tau, and several speeds separate k from L.

Cruise statistics only use frames whose commanded history over the last L + 5*tau (plus two state periods)
lies inside the cruise, so the transient after the ramp-up never biases L.

Link latency: the host stamps sends and receives, so a plain measurement also contains the time a setpoint
takes to reach the controller and a frame to come back (a few tenths of a millisecond on loopback). Where
the recording allows it, L is the controller's own lag: frame times are mapped onto the host clock through
the controller's timestamps, command times through the controller's answers (see LinkLatency). The plain
send-to-receive figure is kept as host_fit; the guard view always uses raw host times.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field

import numpy as np
from scipy import optimize, signal, stats

from servotool.analysis.recording import Recording, RecordingError, check_joint
from servotool.motion.guard import MARGIN_STEP_DEG, tuning_from_measurement

CRUISE = "cruise"
SETTLE = "settle"

MIN_FRAMES = 3  # state frames a cruise window needs before its lag counts
FIT_GRID_S = 0.001  # simulation step of the dynamic model
FRICTION_V_EPS = 1.0  # deg/s: speed over which the friction term reaches its full value (tanh)
TAU_FLOOR_S = 0.003  # shortest first-order lag the dynamic fit reports (see fit_dynamics)
DRIFT_MIN_SPAN_S = 10.0  # shortest run over which the drift between controller and host clocks is fitted
# an answer later than the typical round trip by this much (or 3 robust sigmas) leaves the moment the
# controller took that setpoint uncertain; frames that depend on it are kept out of the dynamic fit, as long
# as MIN_KEPT_FRACTION of them remain
UNCERTAIN_RTT_S = 0.0003
MIN_KEPT_FRACTION = 0.3


def _finite(x: float | None) -> bool:
    return x is not None and math.isfinite(x)


def _ms(x: float) -> float:
    return float(x) * 1e3 if _finite(x) else math.nan


@dataclass
class PassLag:
    """One pass of a ramp run. Lags in ms, deltas in deg, speeds in deg/s (NaN where not measurable)."""

    index: int
    direction: str  # "out" (away from the start pose) or "back"
    speed_deg_s: float  # |slope| of the commanded stream over the cruise
    cruise_s: float
    n_frames: int  # state frames in the settled cruise window
    delta_mean_deg: float
    delta_peak_deg: float
    lag_ms: float  # delta_mean / speed: the true commanded-to-measured lag
    guard_delta_mean_deg: float
    guard_delta_peak_deg: float  # over the whole cruise
    guard_lag_ms: float
    mid_lag_ms: float
    overshoot_deg: float  # past the end of the pass, after the stop
    note: str = ""


@dataclass
class OriginFit:
    """delta = v * L fitted through the origin over pass means; lag_ms with its standard error and 95 % CI."""

    lag_ms: float
    se_ms: float
    ci95_ms: tuple[float, float]
    n_passes: int
    # the same data fitted with an intercept: a non-zero offset (deg) means the delta is not pure lag
    intercept_deg: float = math.nan
    intercept_se_deg: float = math.nan


@dataclass
class MidpointCheck:
    mean_ms: float
    min_ms: float
    max_ms: float
    diff_from_fit_ms: float
    tolerance_ms: float
    agrees: bool


@dataclass
class ModelCheck:
    """Is L the same at every speed and in both directions? (the condition for compensating it as v * lag)"""

    constant: bool
    spread_ms: float  # max - min of the per-pass lags
    tolerance_ms: float
    out_minus_back_ms: float
    friction_deg: float  # k in L_pass = L + k / v, fitted over the passes
    message: str


@dataclass
class Dynamics:
    """Dead time L plus first-order lag tau plus a direction-dependent offset, fitted on every frame."""

    lag_ms: float
    lag_se_ms: float
    tau_ms: float
    tau_se_ms: float
    offset_deg: float  # k: measured trails the command by k against the direction of motion (k > 0)
    offset_se_deg: float
    bias_deg: float  # a constant measured - commanded offset
    rms_deg: float
    n_samples: int
    effective_lag_ms: float  # L + tau: what a cruise sees
    has_filter: bool
    has_friction: bool
    verdict: str


@dataclass
class Noise:
    """Measured-joint noise at rest (deg): standard deviation and largest deviation from the rest value."""

    std_deg: float
    peak_deg: float
    n_samples: int
    source: str  # "rest" (settled phases) or "fit residual"


@dataclass
class GuardAdvice:
    """Divergence-guard settings that follow from a measured lag (see motion.guard).

    The guard compares the setpoint just sent with the newest state frame, which is up to one state period
    old (frame_age_s), so it sees the lag L plus that age. lag_s is L rounded up to the next 10 ms
    (motion.guard.tuning_from_measurement). margin_deg covers what lag_s does not, rounded up to 0.1 deg:

        margin >= a_max * (L + age)^2 / 2       the braking transient (a hard stop from any speed)
                  + noise_deg                   measured noise at rest
                  + v_max * max(0, L + age - lag_s)   the part of the guard-view lag above lag_s, at v_max

    With no frame age this is the plain floor a_max * L^2 / 2 + noise. trail_deg / trail_s: how far the
    shaper trails a target moving at v_max (v^2 / (2 a_max) + v T), and the extra lag that adds.
    """

    measured_lag_ms: float
    frame_age_ms: float
    lag_s: float
    margin_deg: float
    braking_deg: float
    noise_deg: float
    frame_age_deg: float
    trail_deg: float
    trail_s: float
    a_max: float
    v_max: float
    dt: float


def guard_advice(
    lag_s: float, *, a_max: float, v_max: float, noise_deg: float, dt: float, frame_age_s: float = 0.0
) -> GuardAdvice:
    """Guard settings for a measured lag lag_s (s); see GuardAdvice for the rules."""
    lag = max(float(lag_s), 0.0)
    age = float(frame_age_s) if _finite(frame_age_s) and frame_age_s > 0 else 0.0
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


@dataclass
class LagResult:
    joint: int
    cmd_period_s: float
    state_period_s: float
    passes: list[PassLag]
    fit: OriginFit | None  # the controller's lag (link latency removed where the recording allows)
    host_fit: OriginFit | None  # send time to receive time, as a host sees it
    guard_fit: OriginFit | None  # setpoint just sent against the newest frame
    link: LinkLatency
    midpoint: MidpointCheck | None
    model: ModelCheck | None
    dynamics: Dynamics | None
    noise: Noise | None
    tuning: GuardAdvice | None
    warnings: list[str] = field(default_factory=list)

    def to_dict(self) -> dict:
        return asdict(self)


# ---------------------------------------------------------------------------------------------------------
# fits


def fit_through_origin(v: Sequence[float], delta: Sequence[float]) -> OriginFit | None:
    """Least-squares delta = v * L over the given points (v in deg/s, delta in deg). None with no points.

    The standard error comes from the scatter of the points about the line (n - 1 degrees of freedom), so a
    lag that changes with speed shows up as a wide interval, not a falsely precise one.
    """
    v = np.abs(np.asarray(v, dtype=float))
    d = np.asarray(delta, dtype=float)
    ok = np.isfinite(v) & np.isfinite(d) & (v > 0)
    v, d = v[ok], d[ok]
    n = len(v)
    if n == 0:
        return None
    sxx = float(np.sum(v * v))
    lag = float(np.sum(v * d) / sxx)
    if n >= 2:
        resid = d - lag * v
        s2 = float(np.sum(resid**2) / (n - 1))
        se = math.sqrt(s2 / sxx)
        tq = float(stats.t.ppf(0.975, n - 1))
        ci = (lag - tq * se, lag + tq * se)
    else:
        se = math.nan
        ci = (math.nan, math.nan)
    icpt = icpt_se = math.nan
    if n >= 3 and np.ptp(v) > 0:
        a = np.column_stack([np.ones(n), v])
        coef, *_ = np.linalg.lstsq(a, d, rcond=None)
        r = d - a @ coef
        s2 = float(np.sum(r**2) / (n - 2))
        cov = s2 * np.linalg.inv(a.T @ a)
        icpt, icpt_se = float(coef[0]), math.sqrt(max(cov[0, 0], 0.0))
    return OriginFit(
        lag_ms=lag * 1e3,
        se_ms=se * 1e3,
        ci95_ms=(ci[0] * 1e3, ci[1] * 1e3),
        n_passes=n,
        intercept_deg=icpt,
        intercept_se_deg=icpt_se,
    )


def first_order_response(u: np.ndarray, h: float, tau: float) -> np.ndarray:
    """Exact response of y' = (u - y) / tau to an input linear between samples h apart, from rest at u[0]."""
    if tau <= 1e-9:
        return u.copy()
    a = math.exp(-h / tau)
    g = (1.0 - a) * tau / h
    b = [1.0 - g, g - a]
    zi = signal.lfiltic(b, [1.0, -a], y=[u[0]], x=[u[0]])
    y, _ = signal.lfilter(b, [1.0, -a], u, zi=zi)
    return y


def _least_squares(
    fun, x0: np.ndarray, bounds, f_scale: float | None = None
) -> optimize.OptimizeResult | None:
    """Bounded least squares; with f_scale, a soft-L1 loss so that a few samples thrown far off by a late
    setpoint (a stalled link) do not drag the fit."""
    robust = {} if f_scale is None else {"loss": "soft_l1", "f_scale": f_scale}
    try:
        return optimize.least_squares(
            fun,
            x0,
            bounds=bounds,
            x_scale=0.01,
            diff_step=1e-4,
            method="trf",
            xtol=1e-10,
            ftol=1e-12,
            gtol=1e-12,
            max_nfev=200,
            **robust,
        )
    except (ValueError, np.linalg.LinAlgError):
        return None


def _param_se(res: optimize.OptimizeResult, dof: int) -> list[float]:
    s2 = float(res.fun @ res.fun) / max(dof, 1)
    cov = s2 * np.linalg.pinv(res.jac.T @ res.jac)
    return [math.sqrt(max(float(cov[i, i]), 0.0)) for i in range(len(res.x))]


def simulate(
    t_cmd: np.ndarray,
    q_cmd: np.ndarray,
    t_eval: np.ndarray,
    lag_s: float,
    tau_s: float,
    h: float = FIT_GRID_S,
) -> tuple[np.ndarray, np.ndarray]:
    """The commanded stream through dead time lag_s and a first-order lag tau_s, at t_eval.

    Returns (position, velocity) of the model at t_eval. Before the first setpoint the command is taken as
    held at its first value (the warm-up held that pose), after the last one as held at the last value.
    """
    t0 = min(t_cmd[0], t_eval[0]) - max(5 * tau_s, 2 * h)
    t1 = max(t_cmd[-1], t_eval[-1]) + 2 * h
    grid = np.arange(t0, t1 + h, h)
    u = np.interp(grid - lag_s, t_cmd, q_cmd)
    y = first_order_response(u, h, tau_s)
    dy = np.gradient(y, h)
    return np.interp(t_eval, grid, y), np.interp(t_eval, grid, dy)


def fit_dynamics(
    t_cmd: np.ndarray,
    q_cmd: np.ndarray,
    t_meas: np.ndarray,
    q_meas: np.ndarray,
    lag_guess_s: float,
    *,
    slowest_speed: float = math.nan,
) -> Dynamics:
    """Fit measured = F_tau[c(. - L)] + k * sign(v) + b by least squares on every measured sample.

    L and tau are found by scipy.optimize.least_squares (bounded, several starts); k and b are linear and
    solved exactly for each (L, tau) (variable projection). Standard errors from the Jacobian at the optimum.
    """
    t_meas = np.asarray(t_meas, float)
    q_meas = np.asarray(q_meas, float)
    ok = np.isfinite(t_meas) & np.isfinite(q_meas)
    t_meas, q_meas = t_meas[ok], q_meas[ok]
    n = len(t_meas)
    if n < 10:
        raise RecordingError("too few measured samples for the dynamic fit")

    def design(lag: float, tau: float) -> tuple[np.ndarray, np.ndarray]:
        y, dy = simulate(t_cmd, q_cmd, t_meas, lag, tau)
        a = np.column_stack([-np.tanh(dy / FRICTION_V_EPS), np.ones(n)])
        return y, a

    def residual(p: np.ndarray) -> np.ndarray:
        y, a = design(p[0], p[1])
        r0 = q_meas - y
        coef, *_ = np.linalg.lstsq(a, r0, rcond=None)
        return r0 - a @ coef

    guess = max(float(lag_guess_s), 0.0) if _finite(lag_guess_s) else 0.05
    upper = (max(1.0, 3 * guess), max(0.5, 2 * guess))

    def pure_residual(p: np.ndarray) -> np.ndarray:
        return residual(np.array([p[0], 0.0]))

    first = _least_squares(pure_residual, np.array([guess]), ([0.0], [upper[0]]))
    if first is None:
        raise RecordingError("the dynamic fit did not converge")
    scale = 1.4826 * float(np.median(np.abs(first.fun - np.median(first.fun))))
    f_scale = 3.0 * scale if scale > 0 else None
    pure = _least_squares(pure_residual, first.x, ([0.0], [upper[0]]), f_scale)
    best = None
    for frac in (0.0, 0.15, 0.5):
        tau0 = frac * guess
        x0 = np.array([min(max(guess - tau0, 0.0), upper[0]), min(tau0, upper[1])])
        res = _least_squares(residual, x0, ([0.0, 0.0], upper), f_scale)
        if res is not None and (best is None or res.cost < best.cost):
            best = res
    if best is None or pure is None:
        raise RecordingError("the dynamic fit did not converge")
    # near tau = 0 the data hardly depend on tau (the corner rounding grows as tau^2), so a fitted tau is only
    # believed when it lowers the residual significantly (F test on the samples both fits call inliers).
    # Residuals of neighbouring frames are correlated (timing jitter of one setpoint moves several frames):
    # count independent samples only, or the test and the standard errors would be far too confident.
    r_best, r_pure = best.fun, pure.fun
    inl = (np.abs(r_best) <= 4 * scale) & (np.abs(r_pure) <= 4 * scale) if scale > 0 else np.ones(n, bool)
    rb = r_best[inl]
    rho = float(np.corrcoef(rb[:-1], rb[1:])[0, 1]) if len(rb) > 3 and np.std(rb) > 0 else 0.0
    rho = min(max(rho, 0.0), 0.95)
    n_in = int(inl.sum())
    n_eff = max(n_in * (1 - rho) / (1 + rho), 5.0)
    dof = max(n_eff - 4, 1.0)
    ssr1, ssr0 = float(rb @ rb), float(r_pure[inl] @ r_pure[inl])
    f_stat = (ssr0 - ssr1) / (ssr1 / dof) if ssr1 > 0 else math.inf
    # and only above TAU_FLOOR_S: shorter filters cannot be told apart from the sub-millisecond jitter of when
    # the controller takes each setpoint (on the simulator, a pure delay fits "tau ~ 2 ms" now and then)
    has_filter = bool(f_stat > stats.f.ppf(0.999, 1, dof) and best.x[1] >= TAU_FLOOR_S)
    se_scale = math.sqrt(n / n_eff)
    tau_se = _param_se(best, n - 4)[1] * se_scale
    if has_filter:
        lag, tau = (float(x) for x in best.x)
        lag_se = _param_se(best, n - 4)[0] * se_scale
        r = best.fun
    else:
        lag, tau = float(pure.x[0]), 0.0
        lag_se = _param_se(pure, n - 3)[0] * se_scale
        r = pure.fun
    s2 = float(r @ r) / max(n - 4, 1) * (n / n_eff)
    y, a = design(lag, tau)
    coef, *_ = np.linalg.lstsq(a, q_meas - y, rcond=None)
    cov_lin = s2 * np.linalg.pinv(a.T @ a)
    k, b = float(coef[0]), float(coef[1])
    k_se = math.sqrt(max(float(cov_lin[0, 0]), 0.0))
    rms = math.sqrt(float(r @ r) / n)

    # friction matters when it is statistically there and worth at least half a millisecond of apparent lag
    # at the slowest speed of the run
    k_effect_s = abs(k) / slowest_speed if _finite(slowest_speed) and slowest_speed > 0 else math.inf
    has_friction = abs(k) > 3 * k_se and k_effect_s > 0.5e-3
    parts = []
    if not has_filter and not has_friction:
        parts.append(f"pure dead time: L = {lag * 1e3:.1f} ms, no measurable filtering or friction")
    else:
        parts.append(f"dead time L = {lag * 1e3:.1f} ms")
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
    return Dynamics(
        lag_ms=lag * 1e3,
        lag_se_ms=lag_se * 1e3,
        tau_ms=tau * 1e3,
        tau_se_ms=tau_se * 1e3,
        offset_deg=k,
        offset_se_deg=k_se,
        bias_deg=b,
        rms_deg=rms,
        n_samples=n,
        effective_lag_ms=(lag + tau) * 1e3,
        has_filter=bool(has_filter),
        has_friction=bool(has_friction),
        verdict="; ".join(parts),
    )


# ---------------------------------------------------------------------------------------------------------
# per-pass figures


@dataclass
class _PassTicks:
    index: int
    idx: np.ndarray  # cmd indices of the pass
    cruise: np.ndarray  # cmd indices of its cruise
    end_idx: int | None  # last cmd index before the settle (the commanded end of the pass), None if cut off
    next_t: float  # send time of the first tick after the pass


def _passes(rec: Recording) -> list[_PassTicks]:
    out = []
    labels = rec.cmd_pass
    for p in sorted(set(labels[labels >= 0].tolist())):
        idx = np.flatnonzero(labels == p)
        phases = rec.cmd_phase[idx]
        cruise = idx[phases == CRUISE]
        settle_pos = np.flatnonzero(phases == SETTLE)
        end_idx = int(idx[settle_pos[0] - 1]) if settle_pos.size and settle_pos[0] > 0 else None
        after = idx[-1] + 1
        next_t = float(rec.cmd_t[after]) if after < len(rec.cmd_t) else math.inf
        out.append(_PassTicks(p, idx, cruise, end_idx, next_t))
    return out


def _slope(t: np.ndarray, q: np.ndarray) -> float:
    if len(t) < 2 or np.ptp(t) <= 0:
        return math.nan
    tc = t - t.mean()
    return float(np.sum(tc * (q - q.mean())) / np.sum(tc * tc))


def _crossing(t: np.ndarray, q: np.ndarray, level: float, sign: float, window_s: float) -> float:
    """Time the series first crosses `level` moving in direction `sign`, refined by a local straight-line fit
    over the samples within window_s of the raw crossing (so one noisy sample cannot move it)."""
    above = sign * (q - level) >= 0
    hits = np.flatnonzero(above[1:] & ~above[:-1]) + 1
    if hits.size == 0:
        return math.nan
    i = int(hits[0])
    dq = q[i] - q[i - 1]
    t_raw = t[i - 1] + (t[i] - t[i - 1]) * (level - q[i - 1]) / dq if dq != 0 else t[i]
    near = np.abs(t - t_raw) <= window_s
    if near.sum() >= 3:
        slope, icpt = np.polyfit(t[near] - t_raw, q[near], 1)
        if sign * slope > 0:
            return float(t_raw + (level - icpt) / slope)
    return float(t_raw)


def _state_period(rec: Recording) -> float:
    if len(rec.state_t) < 3:
        return math.nan
    return float(np.median(np.diff(rec.state_t)))


def rest_noise(rec: Recording, joint: int, settle_s: float) -> Noise | None:
    """Noise of the measured joint at rest: frames whose commanded joint has not changed for settle_s.

    Deviations are taken from each rest period's own median, so slow drifts between periods do not count.
    """
    tc, qc = rec.commanded(joint)
    ts, qs = rec.measured(joint)
    changed = np.flatnonzero(np.abs(np.diff(qc)) > 1e-9) + 1
    change_t = tc[changed]
    if len(ts) == 0:
        return None
    k = np.searchsorted(change_t, ts, side="right") - 1  # index of the last change at or before each frame
    last_change = np.where(k >= 0, change_t[np.maximum(k, 0)], tc[0])
    nxt = np.searchsorted(change_t, ts, side="right")
    next_change = np.where(nxt < len(change_t), change_t[np.minimum(nxt, len(change_t) - 1)], math.inf)
    # a frame is at rest when the command was still for settle_s before it and it arrived before the command
    # moved again (the lag only makes that conservative)
    rest = (ts - last_change >= settle_s) & (ts <= next_change) & (ts >= tc[0]) & np.isfinite(qs)
    if rest.sum() < 5:
        return None
    groups = k[rest]
    vals = qs[rest]
    dev = np.empty_like(vals)
    for g in np.unique(groups):
        sel = groups == g
        dev[sel] = vals[sel] - np.median(vals[sel])
    return Noise(
        std_deg=float(np.std(dev)),
        peak_deg=float(np.max(np.abs(dev))),
        n_samples=int(rest.sum()),
        source="rest",
    )


@dataclass
class LinkLatency:
    """How long setpoints take to reach the controller and state frames to come back (ms), as far as the
    recording shows it.

    state_path_ms: mean time from the controller's sample (its own timestamp, mapped onto the host clock
    through the fastest frames, with a linear drift term) to the host receiving the frame, above the fastest
    frame's latency. command_path_ms: half the median round trip of the commands the controller answered
    (XML-RPC return or UDP reply): the moment it took a setpoint, under the usual assumption of symmetric
    paths. Each is only removed from L when the recording holds what it needs (`state_mapped`,
    `command_answers`); what is left is the fastest frame's one-way latency.
    """

    state_mapped: bool
    state_path_ms: float
    state_path_p99_ms: float
    drift_ppm: float
    command_answers: int
    command_path_ms: float
    note: str


def link_latency(
    rec: Recording, cmd_period_s: float
) -> tuple[LinkLatency, np.ndarray, np.ndarray, np.ndarray | None]:
    """(LinkLatency, command times as taken by the controller, state times as sampled by it, on the host
    clock; and which commands' timing is uncertain: unanswered, or answered well after the typical round
    trip, so the controller may have taken them anywhere in between. None when too few were answered.)"""
    notes = []
    ts, dev = rec.state_t, rec.state_dev
    mapped = ts.copy()
    state_ok = len(dev) == len(ts) and np.isfinite(dev).sum() >= 20
    state_ms = state_p99 = drift = math.nan
    if state_ok:
        ok = np.isfinite(dev)
        d, x = dev[ok], ts[ok] - dev[ok]
        # the lower envelope of (receive - device time): frames that crossed the link fastest; its slope is
        # the drift between the two clocks
        edges = np.arange(d.min(), d.max() + 1.0, 1.0)
        idx = np.clip(np.searchsorted(edges, d, side="right") - 1, 0, max(len(edges) - 1, 0))
        mins_d, mins_x = [], []
        for b in np.unique(idx):
            sel = idx == b
            k = int(np.argmin(x[sel]))
            mins_d.append(d[sel][k])
            mins_x.append(x[sel][k])
        mins_d, mins_x = np.array(mins_d), np.array(mins_x)
        # a drift only shows over a long run: on a short one the minima's scatter would fake one
        if len(mins_d) >= 3 and np.ptp(mins_d) >= DRIFT_MIN_SPAN_S:
            slope, icpt = np.polyfit(mins_d, mins_x, 1)
        else:
            slope, icpt = 0.0, float(mins_x.min())
        icpt -= max(0.0, float(np.max(icpt + slope * d - x)))  # no frame arrives before it was sampled
        h = d + icpt + slope * d
        mapped[ok] = h
        lat = ts[ok] - h
        state_ms, state_p99, drift = float(lat.mean() * 1e3), float(np.percentile(lat, 99) * 1e3), slope * 1e6
    else:
        notes.append("state frames carry no controller timestamp: the state-path latency stays in L")
    # command answers: each reply belongs to the last command sent before it, if it came within half a period
    cmd_ms = math.nan
    n_ans = 0
    taken = rec.cmd_t
    uncertain = None
    sel = rec.reply_cmd == ""
    rt = rec.reply_t[sel]
    if len(rt) and len(rec.cmd_t):
        i = np.searchsorted(rec.cmd_t, rt, side="right") - 1
        ok = i >= 0
        rtt = rt[ok] - rec.cmd_t[i[ok]]
        first = np.concatenate([[True], np.diff(i[ok]) > 0])
        good = first & (rtt < cmd_period_s / 2)
        n_ans = int(good.sum())
        if n_ans >= 20:
            half = float(np.median(rtt[good]) / 2)
            cmd_ms = half * 1e3
            # each answered command was taken about midway between its send and its answer (that follows a
            # late command, not just the typical one); the others at the typical half round trip
            taken = rec.cmd_t + half
            idx = i[ok][good]
            taken[idx] = 0.5 * (rec.cmd_t[idx] + rt[ok][good])
            med = float(np.median(rtt[good]))
            spread = 1.4826 * float(np.median(np.abs(rtt[good] - med)))
            uncertain = np.ones(len(rec.cmd_t), dtype=bool)
            uncertain[idx] = rtt[good] > med + max(UNCERTAIN_RTT_S, 3 * spread)
    if n_ans < 20:
        notes.append("the controller answered too few commands: the command-path latency stays in L")
    return (
        LinkLatency(
            state_mapped=bool(state_ok),
            state_path_ms=state_ms,
            state_path_p99_ms=state_p99,
            drift_ppm=drift,
            command_answers=n_ans,
            command_path_ms=cmd_ms,
            note="; ".join(notes),
        ),
        taken,
        mapped,
        uncertain,
    )


def _timing_certain(
    tc: np.ndarray, ts: np.ndarray, uncertain: np.ndarray | None, lag: float, period: float, warnings: list
) -> np.ndarray:
    """Frames whose modelled value does not depend on a setpoint of uncertain timing: the corner rounding
    that identifies tau is a fraction of a millisecond of timing, so one late setpoint near a corner would
    read as filtering. All frames when too few would be left."""
    keep = np.ones(len(ts), dtype=bool)
    if uncertain is None or not uncertain.any():
        return keep
    bad_t = tc[uncertain]
    lo = np.searchsorted(bad_t, ts - lag - 0.05)
    hi = np.searchsorted(bad_t, ts - lag + period)
    keep = hi == lo
    if keep.mean() < MIN_KEPT_FRACTION:
        warnings.append("many setpoints were taken at uncertain times: the dynamic fit uses every frame")
        return np.ones(len(ts), dtype=bool)
    return keep


@dataclass
class _Cruise:
    n: int
    mean: float
    peak: float


def _cruise_delta(tc, qc, ts, qs, t0: float, t1: float, sgn: float) -> _Cruise:
    sel = (ts >= t0) & (ts <= t1)
    n = int(sel.sum())
    if n < MIN_FRAMES:
        return _Cruise(n, math.nan, math.nan)
    d = sgn * (np.interp(ts[sel], tc, qc) - qs[sel])
    return _Cruise(n, float(d.mean()), float(d.max()))


def analyze_lag(
    rec: Recording,
    *,
    joint: int,
    cmd_period_s: float,
    a_max: float = 500.0,
    v_max: float = 130.0,
    start_deg: float | None = None,
    correct_link: bool = True,
) -> LagResult:
    """All lag figures of one ramp recording (see the module docstring). Pure function of the recording.

    With correct_link, L is the controller's own lag: command times are moved to when the controller took
    them and state times to when it sampled them (see LinkLatency), where the recording allows; host_fit
    keeps the plain send-to-receive figure and the guard view always uses the raw host times.
    """
    check_joint(rec, joint)
    warnings: list[str] = []
    tc_raw, qc = rec.commanded(joint)
    ts_all_raw, qs_all = rec.measured(joint)
    uncertain = None
    if correct_link:
        link, tc, ts_all, uncertain = link_latency(rec, cmd_period_s)
    else:
        link = LinkLatency(False, math.nan, math.nan, math.nan, 0, math.nan, "not corrected")
        tc, ts_all = tc_raw, ts_all_raw
    # after a controller fault the arm no longer executes the command: the model ends there
    horizon = float(rec.fault_t[0]) if len(rec.fault_t) else math.inf
    keep = (ts_all_raw < horizon) & np.isfinite(qs_all)
    if np.isfinite(horizon):
        warnings.append(f"controller fault at t = {horizon:.3f} s: samples after it are left out")
    ts, ts_raw, qs = ts_all[keep], ts_all_raw[keep], qs_all[keep]
    t_state = _state_period(rec)
    start = float(qc[0]) if start_deg is None else float(start_deg)
    passes = _passes(rec)
    if not passes:
        raise RecordingError("no labelled passes in the recording")

    # 1. midpoint crossings: independent of speed, and the first estimate of the lag
    mids: dict[int, float] = {}
    speeds: dict[int, float] = {}
    window = max(2.5 * t_state, 0.025) if _finite(t_state) else 0.025
    for ps in passes:
        v = _slope(tc[ps.cruise], qc[ps.cruise]) if ps.cruise.size >= 2 else math.nan
        speeds[ps.index] = v
        if not _finite(v) or v == 0 or ps.end_idx is None:
            continue
        sgn = float(np.sign(v))
        mid = 0.5 * (float(qc[ps.idx[0]]) + float(qc[ps.end_idx]))
        t_c = _crossing(tc[ps.idx], qc[ps.idx], mid, sgn, 0.0)
        lo, hi = np.searchsorted(ts, tc[ps.idx][0]), np.searchsorted(ts, ps.next_t + 2.0)
        t_m = _crossing(ts[lo:hi], qs[lo:hi], mid, sgn, window)
        if _finite(t_c) and _finite(t_m):
            mids[ps.index] = t_m - t_c
    lag0 = float(np.median(list(mids.values()))) if mids else math.nan

    # 2. the dynamic model over everything, which also tells how long the transient after a ramp lasts
    dyn: Dynamics | None = None
    cruise_speeds = [abs(v) for v in speeds.values() if _finite(v) and v != 0]
    if _finite(lag0):
        try:
            sel = ts >= tc[0]
            sel &= _timing_certain(tc, ts, uncertain, lag0, cmd_period_s, warnings)
            dyn = fit_dynamics(
                tc,
                qc,
                ts[sel],
                qs[sel],
                lag0,
                slowest_speed=min(cruise_speeds) if cruise_speeds else math.nan,
            )
        except (RecordingError, np.linalg.LinAlgError, ValueError) as exc:
            warnings.append(f"dynamic fit failed: {exc}")
    if dyn is not None:
        settle_time = (dyn.lag_ms + 5 * dyn.tau_ms) * 1e-3
    elif _finite(lag0):
        settle_time = 1.25 * lag0 + 0.03
    else:
        settle_time = 0.25
    skip = settle_time + (2 * t_state if _finite(t_state) else 0.02) + cmd_period_s

    # 3. per pass: cruise deltas (controller times and raw host times), guard view, overshoot
    m_latest = rec.latest_measured_at(tc_raw, joint)
    out: list[PassLag] = []
    host_points: list[tuple[float, float]] = []
    for ps in passes:
        v = speeds.get(ps.index, math.nan)
        q_a = float(qc[ps.idx[0]])
        q_end = float(qc[ps.end_idx]) if ps.end_idx is not None else float(qc[ps.idx[-1]])
        direction = "out" if abs(q_end - start) >= abs(q_a - start) else "back"
        if ps.cruise.size < 2 or not _finite(v) or v == 0:
            out.append(
                PassLag(
                    ps.index,
                    direction,
                    abs(v) if _finite(v) else math.nan,
                    0.0,
                    0,
                    *([math.nan] * 8),  # every measured figure of PassLag, delta_mean_deg .. overshoot_deg
                    note="no cruise",
                )
            )
            continue
        sgn, speed = float(np.sign(v)), abs(v)
        note = ""
        c0, c1 = ps.cruise[0], ps.cruise[-1]
        cr = _cruise_delta(tc, qc, ts, qs, float(tc[c0]) + skip, float(tc[c1]), sgn)
        host = _cruise_delta(tc_raw, qc, ts_raw, qs, float(tc_raw[c0]) + skip, float(tc_raw[c1]), sgn)
        host_points.append((speed, host.mean))
        if cr.n < MIN_FRAMES:
            note = "cruise too short for the lag: lengthen --sweep or lower the speed"
        # guard view at the send ticks: the setpoint just sent against the newest frame received before it
        ci = ps.cruise
        g = sgn * (qc[ci] - m_latest[ci])
        g_ok = np.isfinite(g)
        settled = g_ok & (tc_raw[ci] >= tc_raw[c0] + skip)
        g_peak = float(np.max(np.abs(g[g_ok]))) if g_ok.any() else math.nan
        g_mean = float(g[settled].mean()) if settled.sum() >= MIN_FRAMES else math.nan
        # overshoot: how far the arm went past the commanded end of the pass before the next pass began
        overshoot = math.nan
        if ps.end_idx is not None:
            t_end = float(tc[ps.end_idx])
            w = (ts >= t_end) & (ts <= ps.next_t + settle_time)
            if w.any() and (ps.next_t < math.inf or ts[-1] >= t_end + settle_time):
                overshoot = max(0.0, float(np.max(sgn * (qs[w] - q_end))))
            else:
                note = note or "cut off before the stop"
        out.append(
            PassLag(
                index=ps.index,
                direction=direction,
                speed_deg_s=speed,
                cruise_s=float(tc[c1] - tc[c0]),
                n_frames=cr.n,
                delta_mean_deg=cr.mean,
                delta_peak_deg=cr.peak,
                lag_ms=_ms(cr.mean / speed),
                guard_delta_mean_deg=g_mean,
                guard_delta_peak_deg=g_peak,
                guard_lag_ms=_ms(g_mean / speed),
                mid_lag_ms=_ms(mids.get(ps.index, math.nan)),
                overshoot_deg=overshoot,
                note=note,
            )
        )

    fit = fit_through_origin([p.speed_deg_s for p in out], [p.delta_mean_deg for p in out])
    host_fit = fit_through_origin([v for v, _ in host_points], [d for _, d in host_points])
    guard_fit = fit_through_origin([p.speed_deg_s for p in out], [p.guard_delta_mean_deg for p in out])
    if fit is None:
        warnings.append("no pass had a cruise long enough to measure the lag")
    midpoint = midpoint_check(out, fit)
    model = model_check(out, fit)
    noise = rest_noise(rec, joint, settle_time + 0.05)
    if noise is None and dyn is not None:
        noise = Noise(
            std_deg=dyn.rms_deg, peak_deg=3 * dyn.rms_deg, n_samples=dyn.n_samples, source="fit residual"
        )
    tuning = None
    if fit is not None:
        # the guard works on host times: tune it from the send-to-receive lag a host actually sees
        basis = host_fit.lag_ms if host_fit is not None else fit.lag_ms
        tuning = guard_advice(
            max(basis, fit.lag_ms) * 1e-3,
            a_max=a_max,
            v_max=v_max,
            noise_deg=noise.peak_deg if noise else 0.0,
            dt=cmd_period_s,
            frame_age_s=t_state,
        )
    return LagResult(
        joint=joint,
        cmd_period_s=cmd_period_s,
        state_period_s=t_state,
        passes=out,
        fit=fit,
        host_fit=host_fit,
        guard_fit=guard_fit,
        link=link,
        midpoint=midpoint,
        model=model,
        dynamics=dyn,
        noise=noise,
        tuning=tuning,
        warnings=warnings,
    )


def midpoint_check(
    passes: Sequence[PassLag], fit: OriginFit | None, tolerance_ms: float = 2.0
) -> MidpointCheck | None:
    vals = np.array([p.mid_lag_ms for p in passes if _finite(p.mid_lag_ms)])
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
        agrees=bool(_finite(diff) and abs(diff) <= tolerance_ms),
    )


def model_check(passes: Sequence[PassLag], fit: OriginFit | None) -> ModelCheck | None:
    """L constant across speeds and directions within max(1.5 ms, 3 % of L)?"""
    good = [p for p in passes if _finite(p.lag_ms)]
    if fit is None or len(good) < 2:
        return None
    lags = np.array([p.lag_ms for p in good])
    v = np.array([p.speed_deg_s for p in good])
    tol = max(1.5, 0.03 * abs(fit.lag_ms))
    spread = float(np.ptp(lags))
    outs = [p.lag_ms for p in good if p.direction == "out"]
    backs = [p.lag_ms for p in good if p.direction == "back"]
    omb = float(np.mean(outs) - np.mean(backs)) if outs and backs else math.nan
    friction = math.nan
    if np.ptp(v) > 0:
        # L_pass = L_inf + k / v: an offset k (deg) looks like extra lag that shrinks at speed
        a = np.column_stack([np.ones(len(v)), 1.0 / v])
        coef, *_ = np.linalg.lstsq(a, lags * 1e-3, rcond=None)
        friction = float(coef[1])
    constant = spread <= tol
    if constant:
        msg = (
            f"L is constant across speeds and directions (spread {spread:.2f} ms <= {tol:.2f} ms): "
            "the guard delta is v * L at every speed, a lag a guard can allow for"
        )
    else:
        lo, hi = good[int(np.argmin(lags))], good[int(np.argmax(lags))]
        msg = (
            f"L varies from {lo.lag_ms:.1f} ms ({lo.speed_deg_s:.0f} deg/s {lo.direction}) to "
            f"{hi.lag_ms:.1f} ms ({hi.speed_deg_s:.0f} deg/s {hi.direction}), more than {tol:.2f} ms: "
            "the lag holds real dynamics, and compensating it as v * L is only approximate"
        )
        if _finite(friction) and abs(friction) > 0:
            msg += f" (a 1/v trend fits an offset of {friction:+.4f} deg)"
        if _finite(omb) and abs(omb) > tol:
            msg += f"; out and back differ by {omb:+.1f} ms"
    return ModelCheck(
        constant=bool(constant),
        spread_ms=spread,
        tolerance_ms=tol,
        out_minus_back_ms=omb,
        friction_deg=friction,
        message=msg,
    )


# ---------------------------------------------------------------------------------------------------------
# several recordings


@dataclass
class CombinedLag:
    """One delta = v * L fit over the passes of several recordings (e.g. two joints of one arm)."""

    n_files: int
    fit: OriginFit | None
    guard_fit: OriginFit | None
    midpoint: MidpointCheck | None
    model: ModelCheck | None

    def to_dict(self) -> dict:
        return asdict(self)


def combine_lag(results: Sequence[LagResult]) -> CombinedLag:
    passes = [p for r in results for p in r.passes]
    fit = fit_through_origin([p.speed_deg_s for p in passes], [p.delta_mean_deg for p in passes])
    guard_fit = fit_through_origin([p.speed_deg_s for p in passes], [p.guard_delta_mean_deg for p in passes])
    return CombinedLag(
        n_files=len(results),
        fit=fit,
        guard_fit=guard_fit,
        midpoint=midpoint_check(passes, fit),
        model=model_check(passes, fit),
    )
