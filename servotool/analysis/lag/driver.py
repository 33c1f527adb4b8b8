"""The ramp analysis driver: midpoints, the dynamic model, per-pass figures, then the fits and checks.

Cruise statistics only use frames whose commanded history over the last L + 5*tau (plus two state periods)
lies inside the cruise, so the transient after the ramp-up never biases L.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from servotool.analysis.lag.dynamics import fit_dynamics
from servotool.analysis.lag.echo import with_echo_figures
from servotool.analysis.lag.link import link_latency, timing_certain
from servotool.analysis.lag.origin import fit_through_origin, guard_advice, midpoint_check, model_check
from servotool.analysis.lag.passes import (
    MIN_FRAMES,
    CruiseDelta,
    PassTicks,
    between,
    crossing,
    cruise_deltas,
    late_frames,
    late_setpoints,
    pass_ticks,
    rest_noise,
    slope,
    state_period,
)
from servotool.analysis.lag.results import (
    CombinedLag,
    Dynamics,
    LagResult,
    LinkLatency,
    Noise,
    PassLag,
    finite,
    ms,
)
from servotool.analysis.recording import Recording, RecordingError, check_joint
from servotool.motion.defaults import A_MAX_DEG_S2, V_MAX_DEG_S

MIN_MID_WINDOW_S = 0.025  # the midpoint crossing is refined over at least this window ...
MID_WINDOW_PERIODS = 2.5  # ... or this many state periods
MID_SEARCH_AFTER_S = 2.0  # how long after a pass the measured crossing is searched for
FALLBACK_SETTLE_FACTOR = 1.25  # without the dynamic model, a transient lasts FACTOR * L + PAD
FALLBACK_SETTLE_PAD_S = 0.03
NO_LAG_SETTLE_S = 0.25  # transient assumed when no lag estimate exists at all
TAU_SETTLE_MULTIPLE = 5  # a first-order lag has settled after this many time constants
STATE_PERIODS_SKIPPED = 2  # plus this many state periods of the cruise start
NO_STATE_PERIOD_SKIP_S = 0.02
REST_NOISE_EXTRA_S = 0.05  # rest starts this long after the transient has settled
NOISE_PEAK_SIGMAS = 3  # peak noise assumed from a fit residual's rms
# the dynamic model is fitted on at most this many passes (corners, cruise and the rest after each), spread
# evenly over the run: a long recording holds the same few parameters, and its cost stays bounded
MAX_FIT_PASSES = 8


@dataclass
class _Series:
    """The recording's joint series, link-corrected (tc, ts) and raw host times (tc_raw, ts_raw)."""

    tc: np.ndarray
    tc_raw: np.ndarray
    qc: np.ndarray
    ts: np.ndarray
    ts_raw: np.ndarray
    qs: np.ndarray
    link: LinkLatency
    uncertain: np.ndarray | None
    t_state: float
    warnings: list[str] = field(default_factory=list)
    ordered: bool = False  # ts and ts_raw are both sorted

    def __post_init__(self) -> None:
        ts, raw = self.ts, self.ts_raw
        self.ordered = bool((ts[1:] >= ts[:-1]).all() and (raw[1:] >= raw[:-1]).all())


def _series(rec: Recording, joint: int, cmd_period_s: float, correct_link: bool) -> _Series:
    tc_raw, qc = rec.commanded(joint)
    ts_all_raw, qs_all = rec.measured(joint)
    uncertain = None
    if correct_link:
        link, tc, ts_all, uncertain = link_latency(rec, cmd_period_s)
    else:
        link = LinkLatency(False, math.nan, math.nan, math.nan, 0, math.nan, "not corrected")
        tc, ts_all = tc_raw, ts_all_raw
    warnings = []
    # after a controller fault the arm no longer executes the command: the model ends there
    horizon = float(rec.fault_t[0]) if len(rec.fault_t) else math.inf
    keep = np.isfinite(qs_all)
    keep &= ts_all_raw < horizon
    if np.isfinite(horizon):
        warnings.append(f"controller fault at t = {horizon:.3f} s: samples after it are left out")
    if keep.all():  # as a rule: the arrays themselves, no copies through the mask
        ts, ts_raw, qs = ts_all, ts_all_raw, qs_all
    else:
        ts, ts_raw, qs = ts_all[keep], ts_all_raw[keep], qs_all[keep]
    return _Series(tc, tc_raw, qc, ts, ts_raw, qs, link, uncertain, state_period(rec), warnings)


def _midpoints(s: _Series, passes: Sequence[PassTicks]) -> tuple[dict[int, float], dict[int, float]]:
    """Step 1: (midpoint lag, cruise speed) per pass. Independent of speed: the first lag estimate."""
    mids: dict[int, float] = {}
    speeds: dict[int, float] = {}
    window = max(MID_WINDOW_PERIODS * s.t_state, MIN_MID_WINDOW_S) if finite(s.t_state) else MIN_MID_WINDOW_S
    for ps in passes:
        cruise = ps.cruise_ticks
        v = slope(s.tc[cruise], s.qc[cruise]) if ps.cruise.size >= 2 else math.nan
        speeds[ps.index] = v
        if not finite(v) or v == 0 or ps.end_idx is None:
            continue
        sgn = float(np.sign(v))
        first = int(ps.idx[0])
        mid = 0.5 * (float(s.qc[first]) + float(s.qc[ps.end_idx]))
        ticks = ps.ticks
        t_c = crossing(s.tc[ticks], s.qc[ticks], mid, sgn, 0.0)
        lo, hi = np.searchsorted(s.ts, [s.tc[first], ps.next_t + MID_SEARCH_AFTER_S])
        t_m = crossing(s.ts[lo:hi], s.qs[lo:hi], mid, sgn, window, s.ordered)
        if finite(t_c) and finite(t_m):
            mids[ps.index] = t_m - t_c
    return mids, speeds


def _fit_windows(s: _Series, passes: Sequence[PassTicks]) -> list[tuple[float, float]] | None:
    """(start, end) times of the passes the dynamic fit uses; None (the whole run) with few passes.

    Each window runs from the first tick of its pass (the command still since the settle before it) to the
    first tick of the next pass, so every corner of the pass and the rest after it are in."""
    if len(passes) <= MAX_FIT_PASSES:
        return None
    starts = [float(s.tc[ps.idx[0]]) for ps in passes] + [math.inf]
    starts[0] = min(starts[0], float(s.tc[0]))
    picks = np.unique(np.round(np.linspace(0, len(passes) - 1, MAX_FIT_PASSES)).astype(int))
    return [(starts[i], starts[i + 1]) for i in picks.tolist()]


def _dynamics(
    s: _Series, lag0: float, speeds: dict[int, float], cmd_period_s: float, passes: Sequence[PassTicks]
) -> Dynamics | None:
    """Step 2: the dynamic model over everything (None, with a warning, when it cannot be fitted)."""
    if not finite(lag0):
        return None
    cruise_speeds = [abs(v) for v in speeds.values() if finite(v) and v != 0]
    try:
        sel = s.ts >= s.tc[0]
        sel &= timing_certain(s.tc, s.ts, s.uncertain, lag0, cmd_period_s, s.warnings)
        every = bool(sel.all())
        return fit_dynamics(
            s.tc,
            s.qc,
            s.ts if every else s.ts[sel],
            s.qs if every else s.qs[sel],
            lag0,
            slowest_speed=min(cruise_speeds) if cruise_speeds else math.nan,
            windows=_fit_windows(s, passes),
        )
    except (RecordingError, np.linalg.LinAlgError, ValueError) as exc:
        s.warnings.append(f"dynamic fit failed: {exc}")
        return None


def _settle_time(dyn: Dynamics | None, lag0: float) -> float:
    """How long the transient after a ramp corner lasts (s)."""
    if dyn is not None:
        return (dyn.lag_ms + TAU_SETTLE_MULTIPLE * dyn.tau_ms) * 1e-3
    if finite(lag0):
        return FALLBACK_SETTLE_FACTOR * lag0 + FALLBACK_SETTLE_PAD_S
    return NO_LAG_SETTLE_S


@dataclass
class _PassContext:
    s: _Series
    start: float
    skip: float
    settle_time: float
    m_latest: np.ndarray
    mids: dict[int, float]
    late: tuple[np.ndarray, np.ndarray]  # setpoints the controller got late, and their waits (late_setpoints)


def _no_cruise(ps: PassTicks, direction: str, v: float) -> PassLag:
    nan = math.nan
    speed = abs(v) if finite(v) else nan
    # every measured figure, delta_mean_deg .. overshoot_deg, is NaN
    return PassLag(
        ps.index, direction, speed, 0.0, 0, nan, nan, nan, nan, nan, nan, nan, nan, note="no cruise"
    )


def _overshoot(c: _PassContext, ps: PassTicks, q_end: float, sgn: float) -> float:
    """How far the arm went past the commanded end of the pass before the next pass began (NaN: cut off)."""
    if ps.end_idx is None:
        return math.nan
    s = c.s
    t_end = float(s.tc[ps.end_idx])
    w = between(s.ts, t_end, ps.next_t + c.settle_time, s.ordered)
    q_w = s.qs[w]
    if len(q_w) and (ps.next_t < math.inf or s.ts[-1] >= t_end + c.settle_time):
        return max(0.0, float(np.max(sgn * (q_w - q_end))))
    return math.nan


def _has_cruise(ps: PassTicks, v: float) -> bool:
    return ps.cruise.size >= 2 and finite(v) and v != 0


def _cruise_figures(
    c: _PassContext, passes: Sequence[PassTicks], speeds: dict[int, float]
) -> dict[int, tuple[CruiseDelta, CruiseDelta]]:
    """Per pass with a cruise: its cruise deltas on controller times and on raw host times, all at once."""
    s = c.s
    todo = [ps for ps in passes if _has_cruise(ps, speeds.get(ps.index, math.nan))]
    c0 = np.array([ps.cruise[0] for ps in todo], dtype=np.intp)
    c1 = np.array([ps.cruise[-1] for ps in todo], dtype=np.intp)
    sgn = np.sign([speeds[ps.index] for ps in todo]).astype(float)
    ctrl = np.column_stack([s.tc[c0] + c.skip, s.tc[c1]]) if todo else np.zeros((0, 2))
    host = np.column_stack([s.tc_raw[c0] + c.skip, s.tc_raw[c1]]) if todo else np.zeros((0, 2))
    # a late setpoint is a corner like the ramp-up's: the frames within skip after it are left out alike
    late, wait = c.late
    drop = late_frames(s.tc, s.ts, late, wait, c.skip) if late.size else None
    drop_raw = late_frames(s.tc_raw, s.ts_raw, late, wait, c.skip) if late.size else None
    cr = cruise_deltas(s.tc, s.qc, s.ts, s.qs, ctrl, sgn, s.ordered, drop)
    hr = cruise_deltas(s.tc_raw, s.qc, s.ts_raw, s.qs, host, sgn, s.ordered, drop_raw)
    return {ps.index: (a, b) for ps, a, b in zip(todo, cr, hr, strict=True)}


def _pass_lag(
    c: _PassContext, ps: PassTicks, v: float, figures: tuple[CruiseDelta, CruiseDelta] | None
) -> tuple[PassLag, tuple[float, float] | None]:
    """Step 3 for one pass: cruise deltas (controller and raw host times, from _cruise_figures), guard
    view, overshoot.

    Returns the pass and its (speed, host-time delta) point, None when the pass has no cruise."""
    s = c.s
    q_a = float(s.qc[ps.idx[0]])
    q_end = float(s.qc[ps.end_idx]) if ps.end_idx is not None else float(s.qc[ps.idx[-1]])
    direction = "out" if abs(q_end - c.start) >= abs(q_a - c.start) else "back"
    if figures is None or not _has_cruise(ps, v):
        return _no_cruise(ps, direction, v), None
    sgn, speed = float(np.sign(v)), abs(v)
    c0, c1 = ps.cruise[0], ps.cruise[-1]
    cr, host = figures
    note = ""
    if cr.n < MIN_FRAMES:  # a pass the run's end cut off is not a sweep too short for its speed
        note = (
            "cut off by the end of the run before enough cruise"
            if ps.end_idx is None
            else "cruise too short for the lag: lengthen --sweep or lower the speed"
        )
    # guard view at the send ticks: the setpoint just sent against the newest frame received before it
    ci = ps.cruise_ticks
    g = s.qc[ci] - c.m_latest[ci]
    g *= sgn
    g_ok = np.isfinite(g)
    every = bool(g_ok.all())
    settled = s.tc_raw[ci] >= s.tc_raw[c0] + c.skip
    if not every:
        settled &= g_ok
    g_peak = float(np.max(np.abs(g if every else g[g_ok]))) if g_ok.any() else math.nan
    g_mean = float(g[settled].mean()) if np.count_nonzero(settled) >= MIN_FRAMES else math.nan
    overshoot = _overshoot(c, ps, q_end, sgn)
    if ps.end_idx is not None and not finite(overshoot):
        note = note or "cut off before the stop"
    lag = PassLag(
        index=ps.index,
        direction=direction,
        speed_deg_s=speed,
        cruise_s=float(s.tc[c1] - s.tc[c0]),
        n_frames=cr.n,
        delta_mean_deg=cr.mean,
        delta_peak_deg=cr.peak,
        lag_ms=ms(cr.mean / speed),
        guard_delta_mean_deg=g_mean,
        guard_delta_peak_deg=g_peak,
        guard_lag_ms=ms(g_mean / speed),
        mid_lag_ms=ms(c.mids.get(ps.index, math.nan)),
        overshoot_deg=overshoot,
        note=note,
        n_late_left_out=cr.left_out,
    )
    return lag, (speed, host.mean)


def analyze_lag(
    rec: Recording,
    *,
    joint: int,
    cmd_period_s: float,
    a_max: float = A_MAX_DEG_S2,
    v_max: float = V_MAX_DEG_S,
    start_deg: float | None = None,
    correct_link: bool = True,
) -> LagResult:
    """All lag figures of one ramp recording (see servotool.analysis.lag). Pure function of the recording.

    With correct_link, L is the controller's own lag: command times are moved to when the controller took
    them and state times to when it sampled them (see LinkLatency), where the recording allows; host_fit
    keeps the plain send-to-receive figure and the guard view always uses the raw host times.
    Raises RecordingError when the recording has no labelled passes or too few rows for the joint.
    """
    check_joint(rec, joint)
    s = _series(rec, joint, cmd_period_s, correct_link)
    passes = pass_ticks(rec)
    if not passes:
        raise RecordingError("no labelled passes in the recording")
    # 1. midpoint crossings; 2. the dynamic model, which also tells how long the transient after a ramp lasts
    mids, speeds = _midpoints(s, passes)
    lag0 = float(np.median(list(mids.values()))) if mids else math.nan
    dyn = _dynamics(s, lag0, speeds, cmd_period_s, passes)
    settle_time = _settle_time(dyn, lag0)
    skip = settle_time + (STATE_PERIODS_SKIPPED * s.t_state if finite(s.t_state) else NO_STATE_PERIOD_SKIP_S)
    skip += cmd_period_s
    # 3. per pass: cruise deltas, guard view, overshoot
    start = float(s.qc[0]) if start_deg is None else float(start_deg)
    # the answers only tell when the controller took a setpoint when it answers them as a rule
    answers = rec.reply_t[rec.reply_cmd == ""] if s.uncertain is not None else None
    late = late_setpoints(s.tc_raw, answers, cmd_period_s)
    ctx = _PassContext(s, start, skip, settle_time, rec.latest_measured_at(s.tc_raw, joint), mids, late)
    out: list[PassLag] = []
    host_points: list[tuple[float, float]] = []
    figures = _cruise_figures(ctx, passes, speeds)
    for ps in passes:
        lag, point = _pass_lag(ctx, ps, speeds.get(ps.index, math.nan), figures.get(ps.index))
        out.append(lag)
        if point is not None:
            host_points.append(point)
    out = with_echo_figures(rec, joint, passes, speeds, out, cmd_period_s, skip)
    # 4. the fits through the origin, their checks, the noise and the guard tuning
    res = _summarise(rec, joint, cmd_period_s, s, out, host_points, dyn, settle_time, a_max, v_max)
    res.late_sends = int(late[0].size)
    res.late_frames_left_out = sum(p.n_late_left_out for p in out)
    disagreement = clock_disagreement(res)
    if disagreement is not None:
        # the controller's clock cannot be trusted over this recording: the host view is the result
        host = analyze_lag(
            rec,
            joint=joint,
            cmd_period_s=cmd_period_s,
            a_max=a_max,
            v_max=v_max,
            start_deg=start_deg,
            correct_link=False,
        )
        host.warnings.insert(0, disagreement)
        host.link = dataclasses.replace(host.link, note=disagreement)
        return host
    return res


def clock_disagreement(res: LagResult) -> str | None:
    """A warning when the lag on the controller's clock and the host view differ by more than their combined
    uncertainty (the two 95 % half-widths, added in quadrature) plus one state period: the link latency
    the mapping removes is a fraction of a period, so more than that is a clock that is not what it says
    (damaged or jumping timestamps). None when they agree, or when no controller clock was used."""
    fit, host = res.fit, res.host_fit
    if not res.link.state_mapped or fit is None or host is None:
        return None
    half = [abs(f.ci95_ms[1] - f.ci95_ms[0]) / 2 for f in (fit, host)]
    half = [h if finite(h) else 0.0 for h in half]
    period_ms = ms(res.state_period_s) if finite(res.state_period_s) else 0.0
    allowed = math.hypot(*half) + period_ms
    gap = fit.lag_ms - host.lag_ms
    if not finite(gap) or abs(gap) <= allowed:
        return None
    return (
        f"the lag on the controller's clock ({fit.lag_ms:.2f} ms) and the host view "
        f"({host.lag_ms:.2f} ms) differ by {abs(gap):.2f} ms, more than their uncertainty and a state "
        f"period allow ({allowed:.2f} ms): the controller's timestamps are not to be trusted here; "
        "the host view is reported"
    )


def _summarise(
    rec: Recording,
    joint: int,
    cmd_period_s: float,
    s: _Series,
    out: list[PassLag],
    host_points: list[tuple[float, float]],
    dyn: Dynamics | None,
    settle_time: float,
    a_max: float,
    v_max: float,
) -> LagResult:
    fit = fit_through_origin([p.speed_deg_s for p in out], [p.delta_mean_deg for p in out])
    host_fit = fit_through_origin([v for v, _ in host_points], [d for _, d in host_points])
    guard_fit = fit_through_origin([p.speed_deg_s for p in out], [p.guard_delta_mean_deg for p in out])
    if fit is None:
        s.warnings.append("no pass had a cruise long enough to measure the lag")
    noise = rest_noise(rec, joint, settle_time + REST_NOISE_EXTRA_S)
    if noise is None and dyn is not None:
        noise = Noise(dyn.rms_deg, NOISE_PEAK_SIGMAS * dyn.rms_deg, dyn.n_samples, source="fit residual")
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
            frame_age_s=s.t_state,
        )
    return LagResult(
        joint=joint,
        cmd_period_s=cmd_period_s,
        state_period_s=s.t_state,
        passes=out,
        fit=fit,
        host_fit=host_fit,
        guard_fit=guard_fit,
        link=s.link,
        midpoint=midpoint_check(out, fit),
        model=model_check(out, fit),
        dynamics=dyn,
        noise=noise,
        tuning=tuning,
        warnings=s.warnings,
    )


def combine_lag(results: Sequence[LagResult]) -> CombinedLag:
    """One delta = v * L fit over the passes of all results, with its midpoint and model checks."""
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
