"""Step-response figures and the runaway verdict from a step run (level cycle +X, 0, -X, 0).

Per step, with t_step the send time of the first setpoint of the new level and `pre` the measured pose just
before it:

* first_move_ms: first state frame that left `pre` by more than the noise threshold;
* arrive_ms: first frame within 10 % of the step of the target;
* peak_delta_deg: largest guard-view |setpoint - measured| (the setpoint just sent against the newest frame);
* guard_lag_ms: how long that delta stayed above 10 % of the step (first to last tick above it);
* travel_deg: largest excursion of the measured joint from `pre` (a runaway travels 14-35x the step);
* peak_speed_deg_s: largest measured speed between consecutive frames;
* rejects (replies with a non-zero errcode) and faults (new fault latches) inside the step;
* guard trip times relative to the step, to the fault, to the moment the arm went past its target, and to
  the first frame that was beyond the guard's allowance (the guard's own reaction time).

The noise threshold is six standard deviations of the measured joint at rest before the steps, and never below
0.01 deg. Verdicts: "runaway" (travel beyond 1.5x the step), "refused" (a fault or rejects and no motion),
"fault, bounded" (a fault but the arm stayed near its target), "ok" (arrived), "no move" (at its target
without moving: it stood there already, the step before it never made), "no arrival" (none within a
whole hold, or while it was due before an early end), "cut short" (none before the run's early end cut the
step's hold short).

A step is cut short (cut_short, with cut_reason saying why the run ended) when the run ended early while its
hold was being streamed: it is the last step and fewer of its ticks were sent than a hold has. Only a frame
before that end (the `stop` row) counts as its arrival: the braked stop's travel is not the step's response.
Without an arrival it is "cut short" only when the end could have kept the arrival from happening: not when
its own divergence tripped the guard, nor when its arrival was due (its setpoint at the target for
DUE_LAG_FACTOR x the lag) and the frames after that show the arm no longer closing in: that is "no arrival".
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field

import numpy as np

from servotool.analysis.recording import Recording, RecordingError, check_joint
from servotool.motion.ramp import hold_ticks

ARRIVE_FRACTION = 0.10
# A step's arrival is due once its setpoint has been at the target (within ARRIVE_FRACTION) for this many
# times the arm's lag (the guard's), and never less than DUE_FLOOR_S: generous, so that a slow arm is not
# called failed, yet a step that had long had its time is not excused by the run's end.
DUE_LAG_FACTOR = 3.0
DUE_FLOOR_S = 0.2
DUE_LAG_DEFAULT_S = 0.1  # the lag assumed when the run's config does not give the guard's
RUNAWAY_FACTOR = 1.5
MIN_THRESHOLD_DEG = 0.01
NOISE_SIGMAS = 6.0
PRE_WINDOW_S = 0.15


def _nan_ms(dt: float | None) -> float:
    return float(dt) * 1e3 if dt is not None and math.isfinite(dt) else math.nan


@dataclass
class StepMetrics:
    index: int
    t_step_s: float
    size_deg: float
    from_deg: float
    target_deg: float
    pre_deg: float
    first_move_ms: float
    arrive_ms: float
    peak_delta_deg: float
    guard_lag_ms: float
    travel_deg: float
    travel_ratio: float
    overshoot_deg: float
    peak_speed_deg_s: float
    rejects: int
    faults: int
    fault_codes: str
    fault_ms: float
    guard_trip_ms: float
    guard_after_fault_ms: float
    guard_after_overshoot_ms: float
    crossed_ms: float  # first frame beyond the guard's allowance (receive time, ms after the step)
    guard_after_crossing_ms: float
    runaway: bool
    verdict: str
    window_s: float
    cut_short: bool = False  # the run ended early while this step's hold was streamed
    cut_reason: str = ""  # why the run ended, for a step cut short


@dataclass
class StepResult:
    joint: int
    shaped: bool
    cmd_period_s: float
    noise_std_deg: float
    threshold_deg: float
    steps: list[StepMetrics]
    runaways: int
    total_rejects: int
    total_faults: int
    guard_trips: list[dict]
    warnings: list[str] = field(default_factory=list)
    cut_short: int = 0  # steps cut short by the run's early end (none of them judged on its arrival)

    def to_dict(self) -> dict:
        return asdict(self)


def _pre_noise(rec: Recording, joint: int, step_times: np.ndarray) -> float:
    ts, qs = rec.measured(joint)
    devs = []
    for t0 in step_times:
        sel = (ts >= t0 - PRE_WINDOW_S) & (ts < t0) & np.isfinite(qs)
        if sel.sum() >= 4:
            devs.append(qs[sel] - np.median(qs[sel]))
    if not devs:
        return math.nan
    d = np.concatenate(devs)
    # median absolute deviation: a step that had not fully settled should not inflate the noise
    return float(1.4826 * np.median(np.abs(d - np.median(d))))


def _guard_velocity(tc: np.ndarray, sp: np.ndarray, shaped: bool, lag_s: float, period: float) -> np.ndarray:
    """The speed the guard's allowance used at each send tick: the stream's velocity for a shaped run, the
    largest commanded speed of the last lag_s for a raw one (runs/arm/step.py)."""
    v = np.abs(np.diff(sp, prepend=sp[0]) / period)
    if shaped or lag_s <= 0:
        return v
    n = max(1, int(math.ceil(lag_s / period)) + 1)
    out = np.empty_like(v)
    for k in range(len(v)):
        out[k] = v[max(0, k - n + 1) : k + 1].max()
    return out


def guard_allowance(
    tc: np.ndarray, sp: np.ndarray, *, shaped: bool, margin_deg: float, lag_s: float, period_s: float
) -> np.ndarray:
    """The divergence guard's allowance at each send tick (deg): margin + speed * lag, with the speed the
    guard used (see _guard_velocity). |setpoint - measured| beyond it trips the guard."""
    return margin_deg + _guard_velocity(tc, sp, shaped, lag_s, period_s) * lag_s


@dataclass
class _Series:
    """The recording's series a step analysis reads, cleaned once (times in s, positions in deg)."""

    rec: Recording
    tc: np.ndarray  # send times
    sp: np.ndarray  # setpoints on the wire
    raw: np.ndarray  # raw targets (the setpoints for a raw run)
    ts: np.ndarray  # frame receive times (finite positions only)
    qs: np.ndarray
    speed_t: np.ndarray  # the frames' times for speeds: the controller's own when all frames carry one
    m_latest: np.ndarray  # the newest measured position before each send
    thr: float  # noise threshold
    beyond: np.ndarray | None  # per frame: beyond the guard's allowance (None without guard settings)
    period_s: float
    due_s: float = DUE_FLOOR_S  # how long after its setpoint reached the target a step's arrival is due


@dataclass
class _Window:
    """One step's window: its index, start tick, start and end time, and whether it is the last; for a step
    cut short, why the run ended and when (no frame after that counts as its arrival)."""

    index: int
    i0: int
    t0: float
    t1: float
    last: bool
    cut_reason: str | None = None
    cut_t: float = math.inf

    def inside(self, t: np.ndarray) -> np.ndarray:
        return (t >= self.t0) & ((t <= self.t1) if self.last else (t < self.t1))


def _series(
    rec: Recording,
    joint: int,
    shaped: bool,
    period_s: float,
    thr: float,
    guard_margin_deg: float | None,
    guard_lag_s: float | None,
) -> _Series:
    tc = rec.cmd_t
    sp = rec.cmd_q[:, joint]
    raw = rec.cmd_r[:, joint] if rec.cmd_r is not None else sp
    ts, qs = rec.measured(joint)
    good = np.isfinite(qs)
    ts, qs = ts[good], qs[good]
    # speeds from the controller's own sample times when the frames carry them (receive times jitter)
    dev = rec.state_dev[good] if len(rec.state_dev) == len(rec.state_t) else np.full(len(ts), np.nan)
    speed_t = dev if np.isfinite(dev).all() and len(dev) else ts
    beyond = None
    if guard_margin_deg is not None and guard_lag_s is not None:
        allowance = guard_allowance(
            tc, sp, shaped=shaped, margin_deg=guard_margin_deg, lag_s=guard_lag_s, period_s=period_s
        )
        # at each frame: the newest setpoint sent before it and the allowance the guard used with it
        k_at = np.maximum(np.searchsorted(tc, ts, side="right") - 1, 0)
        beyond = (np.searchsorted(tc, ts, side="right") >= 1) & (np.abs(sp[k_at] - qs) > allowance[k_at])
    m_latest = rec.latest_measured_at(tc, joint)
    return _Series(rec, tc, sp, raw, ts, qs, speed_t, m_latest, thr, beyond, period_s)


def _motion(s: _Series, w: _Window, pre: float, target: float, size: float) -> dict[str, float]:
    """First move, arrival, travel, overshoot and peak speed of one step (s, deg, deg/s; NaN if none)."""
    sel = w.inside(s.ts)
    tw, qw = s.ts[sel], s.qs[sel]
    sgn = math.copysign(1.0, size) if size != 0 else 1.0
    moved = np.flatnonzero(np.abs(qw - pre) > s.thr)
    near = np.flatnonzero((np.abs(qw - target) <= ARRIVE_FRACTION * abs(size)) & (tw <= w.cut_t))
    peak_speed = math.nan
    if qw.size >= 2:
        dt = np.diff(s.speed_t[sel])
        ok = dt > 1e-6
        peak_speed = float(np.max(np.abs(np.diff(qw)[ok] / dt[ok]))) if ok.any() else math.nan
    past = np.flatnonzero(sgn * (qw - target) > s.thr)
    cross_t = math.nan
    if s.beyond is not None:
        crossed = np.flatnonzero(s.beyond[sel])
        cross_t = tw[crossed[0]] - w.t0 if crossed.size else math.nan
    return {
        "first_move": tw[moved[0]] - w.t0 if moved.size else math.nan,
        "arrive": tw[near[0]] - w.t0 if near.size and size != 0 else math.nan,
        "travel": float(np.max(np.abs(qw - pre))) if qw.size else math.nan,
        "overshoot": float(max(0.0, np.max(sgn * (qw - target)))) if qw.size else math.nan,
        "peak_speed": peak_speed,
        "past": tw[past[0]] - w.t0 if past.size else math.nan,
        "cross": cross_t,
    }


def _guard_view(s: _Series, w: _Window, size: float) -> tuple[float, float]:
    """Peak guard-view delta (deg) and how long it stayed above 10 % of the step (s) at the send ticks."""
    kw = w.inside(s.tc)
    g = np.abs(s.sp[kw] - s.m_latest[kw])
    g_ok = np.isfinite(g)
    peak_delta = float(np.max(g[g_ok])) if g_ok.any() else math.nan
    elevated = np.flatnonzero(g_ok & (g > max(s.thr, ARRIVE_FRACTION * abs(size))))
    tk = s.tc[kw]
    guard_lag = (tk[elevated[-1]] - tk[elevated[0]] + s.period_s) if elevated.size else 0.0
    return peak_delta, guard_lag


def _verdict(
    size: float,
    travel: float,
    thr: float,
    faults: int,
    rejects: int,
    arrive: float,
    excused: bool,
    moved: bool = True,
) -> tuple[bool, str]:
    runaway = bool(size != 0 and travel >= RUNAWAY_FACTOR * abs(size) + thr)
    if runaway:
        return True, "runaway"
    if (faults or rejects) and travel <= 3 * thr:
        return False, "refused"
    if faults:
        return False, "fault, bounded"
    if math.isfinite(arrive):
        # at its target without a move: it stood there already, the step before it never made
        return False, "ok" if moved or abs(size) <= thr else "no move"
    if excused:  # the run's end came before this step's arrival was due
        return False, "cut short"
    return False, "no arrival"


def _step_metrics(s: _Series, w: _Window) -> StepMetrics:
    """Every figure of one step (see the module docstring)."""
    rec, i0, t0 = s.rec, w.i0, w.t0
    before = float(s.raw[i0 - 1] if i0 > 0 else s.raw[i0])
    target = float(s.raw[i0])
    size = target - before
    pre_sel = (s.ts >= t0 - PRE_WINDOW_S) & (s.ts < t0)
    pre = float(np.median(s.qs[pre_sel])) if pre_sel.any() else before
    mo = _motion(s, w, pre, target, size)
    peak_delta, guard_lag = _guard_view(s, w, size)
    rejects = int(np.sum(rec.reply_err[w.inside(rec.reply_t)] != 0))
    fw = w.inside(rec.fault_t)
    faults = int(fw.sum())
    fault_t = float(rec.fault_t[fw][0]) - t0 if faults else math.nan
    codes = ", ".join(f"{m}/{c}" for m, c in zip(rec.fault_main[fw], rec.fault_sub[fw], strict=True))
    gw = w.inside(rec.guard_t)
    guard_t = float(rec.guard_t[gw][0]) - t0 if gw.any() else math.nan
    cut = w.cut_reason is not None
    # excused only when the end came before the arrival was due and was not this step's own guard trip
    excused = cut and math.isnan(guard_t) and not _arrival_due(s, w, target, size)
    moved = math.isfinite(mo["first_move"])
    runaway, verdict = _verdict(size, mo["travel"], s.thr, faults, rejects, mo["arrive"], excused, moved)
    return StepMetrics(
        index=w.index,
        t_step_s=t0,
        size_deg=size,
        from_deg=before,
        target_deg=target,
        pre_deg=pre,
        first_move_ms=_nan_ms(mo["first_move"]),
        arrive_ms=_nan_ms(mo["arrive"]),
        peak_delta_deg=peak_delta,
        guard_lag_ms=_nan_ms(guard_lag),
        travel_deg=mo["travel"],
        travel_ratio=mo["travel"] / abs(size) if size else math.nan,
        overshoot_deg=mo["overshoot"],
        peak_speed_deg_s=mo["peak_speed"],
        rejects=rejects,
        faults=faults,
        fault_codes=codes,
        fault_ms=_nan_ms(fault_t),
        guard_trip_ms=_nan_ms(guard_t),
        guard_after_fault_ms=_nan_ms(guard_t - fault_t),
        guard_after_overshoot_ms=_nan_ms(guard_t - mo["past"]),
        crossed_ms=_nan_ms(mo["cross"]),
        guard_after_crossing_ms=_nan_ms(guard_t - mo["cross"]),
        runaway=runaway,
        verdict=verdict,
        window_s=w.t1 - w.t0,
        cut_short=cut,
        cut_reason=w.cut_reason or "",
    )


def _arrival_due(s: _Series, w: _Window, target: float, size: float) -> bool:
    """Whether the step had failed to arrive before the run's end: its setpoint had been at the target
    (within ARRIVE_FRACTION of the step) for s.due_s, a frame after that time was received, and over the
    s.due_s before the last such frame the arm made no progress towards the target (beyond the noise
    threshold). An arm unseen since, or still closing in, could have arrived: the end, not the arm, cut it."""
    sel = w.inside(s.tc) & (s.tc < w.cut_t)
    there = np.flatnonzero(np.abs(s.sp[sel] - target) <= ARRIVE_FRACTION * abs(size))
    if not there.size:
        return False
    due = float(s.tc[sel][there[0]]) + s.due_s
    seen = np.flatnonzero((s.ts >= due) & (s.ts <= w.cut_t))
    if not seen.size:
        return False
    t_last, q_last = float(s.ts[seen[-1]]), float(s.qs[seen[-1]])
    q_back = float(s.qs[np.flatnonzero(s.ts >= t_last - s.due_s)[0]])
    return math.copysign(1.0, size) * (q_last - q_back) <= s.thr


def _last_step_cut(
    rec: Recording, ticks: list[int], hold_s: float | None, period_s: float, end_reason: str | None
) -> str | None:
    """Why the run ended, when that cut the last step's hold short (ticks: the ticks sent of each step);
    None when its hold was streamed whole or the run did not end early."""
    reason = end_reason
    if reason is None and rec.stop_t is not None:
        reason = rec.stop_reason or "stopped"
    if reason is None:
        return None
    if hold_s is not None and math.isfinite(hold_s) and hold_s > 0 and period_s > 0:
        whole: int | None = hold_ticks(hold_s, period_s)
    else:  # a hold is as long as the longest step before the last; with one step, a stop row says it all
        whole = max(ticks[:-1]) if len(ticks) > 1 else None
    cut = ticks[-1] < whole if whole is not None else rec.stop_t is not None
    return reason if cut else None


def analyze_step(
    rec: Recording,
    *,
    joint: int,
    cmd_period_s: float,
    shaped: bool,
    guard_margin_deg: float | None = None,
    guard_lag_s: float | None = None,
    hold_s: float | None = None,
    end_reason: str | None = None,
    complete: bool = False,
) -> StepResult:
    """Per-step metrics of a step recording (see the module docstring). Pure function of the recording.
    Raises RecordingError for a shaped run without its raw targets (its step sizes are unknown).

    With the guard's margin and lag (from the run's config), each step also says when the arm first went
    beyond the guard's allowance, and how long after that the recorded guard trip came. end_reason is why
    the run ended early (its end line; None for a complete run, or unknown: a `stop` row then says it) and
    hold_s the run's hold per step: together they tell a step cut short from one that never arrived. With
    complete (the end line says every tick was streamed) no step is cut short, whatever rows the file holds.
    A step is only excused as "cut short" when the end came before its arrival was due (DUE_LAG_FACTOR) and
    was not its own guard trip; otherwise a missing arrival is "no arrival".
    """
    check_joint(rec, joint)
    if shaped and rec.cmd_r is None:
        # the shaper's setpoints move a tick at a time: without the raw targets every step's size would be
        # read as one tick, and a normal arrival as a runaway of many times that
        raise RecordingError(
            f"a shaped step run without its raw targets (column r{joint + 1}): the step sizes are unknown"
        )
    warnings: list[str] = []
    labels = rec.cmd_pass
    steps_idx = sorted(set(labels[labels >= 0].tolist()))
    if not steps_idx:
        raise RecordingError("no labelled steps in the recording")
    starts = [int(np.flatnonzero(labels == s)[0]) for s in steps_idx]
    step_times = rec.cmd_t[starts]
    sigma = _pre_noise(rec, joint, step_times)
    thr = max(NOISE_SIGMAS * sigma, MIN_THRESHOLD_DEG) if math.isfinite(sigma) else MIN_THRESHOLD_DEG
    if not math.isfinite(sigma):
        warnings.append("no rest samples before the steps: noise threshold set to its floor")
    s = _series(rec, joint, shaped, cmd_period_s, thr, guard_margin_deg, guard_lag_s)
    lag = guard_lag_s if guard_lag_s is not None and math.isfinite(guard_lag_s) else DUE_LAG_DEFAULT_S
    s.due_s = max(DUE_LAG_FACTOR * lag, DUE_FLOOR_S)
    t_end = max(float(s.tc[-1]), float(s.ts[-1]) if len(s.ts) else -math.inf)
    ticks = [int(np.sum(labels == i)) for i in steps_idx]
    cut_reason = None if complete else _last_step_cut(rec, ticks, hold_s, cmd_period_s, end_reason)
    cut_t = rec.stop_t if rec.stop_t is not None else t_end
    out: list[StepMetrics] = []
    for n, (index, i0) in enumerate(zip(steps_idx, starts, strict=True)):
        last = n + 1 == len(starts)
        t1 = t_end if last else float(step_times[n + 1])
        w = _Window(int(index), i0, float(s.tc[i0]), t1, last)
        if last and cut_reason is not None:
            w.cut_reason, w.cut_t = cut_reason, cut_t
        out.append(_step_metrics(s, w))
    trips = [{"t_s": float(t), "reason": r} for t, r in zip(rec.guard_t, rec.guard_info, strict=True)]
    return StepResult(
        joint=joint,
        shaped=shaped,
        cmd_period_s=cmd_period_s,
        noise_std_deg=sigma,
        threshold_deg=thr,
        steps=out,
        runaways=sum(m.runaway for m in out),
        total_rejects=int(np.sum(rec.reply_err != 0)),
        total_faults=len(rec.fault_t),
        guard_trips=trips,
        warnings=warnings,
        cut_short=sum(m.verdict == "cut short" for m in out),
    )
