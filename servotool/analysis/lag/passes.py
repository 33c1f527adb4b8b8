"""Per-pass building blocks of the ramp analysis: pass ticks, slopes, crossings, cruise deltas, rest noise."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from servotool.analysis.lag.orderstats import median
from servotool.analysis.lag.results import Noise
from servotool.analysis.recording import Recording

CRUISE = "cruise"
SETTLE = "settle"
MIN_FRAMES = 3  # state frames a cruise window needs before its lag counts
MIN_REST_FRAMES = 5  # frames at rest needed to measure the noise
STILL_DEG = 1e-9  # a commanded change smaller than this is no change
LATE_SEND_PERIODS = 1.5  # a setpoint this many command periods late (sent or answered) is a late one


@dataclass
class PassTicks:
    """The command ticks of one labelled pass."""

    index: int
    idx: np.ndarray  # cmd indices of the pass
    cruise: np.ndarray  # cmd indices of its cruise
    end_idx: int | None  # last cmd index before the settle (the commanded end of the pass), None if cut off
    next_t: float  # send time of the first tick after the pass

    @property
    def ticks(self) -> slice | np.ndarray:
        """idx as a slice when its ticks are consecutive (as a rule): views instead of gathered copies."""
        return _span(self.idx)

    @property
    def cruise_ticks(self) -> slice | np.ndarray:
        """cruise as a slice when its ticks are consecutive (as a rule)."""
        return _span(self.cruise)


def _span(idx: np.ndarray) -> slice | np.ndarray:
    """The sorted, distinct indices idx as a slice when they are consecutive, else idx itself."""
    if len(idx) and int(idx[-1]) - int(idx[0]) + 1 == len(idx):
        return slice(int(idx[0]), int(idx[-1]) + 1)
    return idx


def pass_ticks(rec: Recording) -> list[PassTicks]:
    """Every labelled pass of the recording, in pass order."""
    out = []
    labels = rec.cmd_pass
    labelled = np.flatnonzero(labels >= 0)
    order = labelled[np.argsort(labels[labelled], kind="stable")]  # by pass, each in tick order
    cuts = np.flatnonzero(np.diff(labels[order])) + 1
    # the phase labels compared once for the whole run (they are Python strings: one compare per tick)
    phases = rec.cmd_phase
    is_cruise = phases == CRUISE
    is_settle = phases == SETTLE
    for idx in np.split(order, cuts) if len(order) else []:
        p = int(labels[idx[0]])
        cruise = idx[is_cruise[idx]]
        settle_pos = np.flatnonzero(is_settle[idx])
        end_idx = int(idx[settle_pos[0] - 1]) if settle_pos.size and settle_pos[0] > 0 else None
        after = idx[-1] + 1
        next_t = float(rec.cmd_t[after]) if after < len(rec.cmd_t) else math.inf
        out.append(PassTicks(p, idx, cruise, end_idx, next_t))
    return out


def slope(t: np.ndarray, q: np.ndarray) -> float:
    """Least-squares slope dq/dt; NaN with fewer than two distinct times."""
    if len(t) < 2 or np.ptp(t) <= 0:
        return math.nan
    tc = t - float(t.sum()) / len(t)
    return float(np.dot(tc, q - float(q.sum()) / len(q)) / np.dot(tc, tc))


def crossing(
    t: np.ndarray, q: np.ndarray, level: float, sign: float, window_s: float, ordered: bool = False
) -> float:
    """Time the series first crosses `level` moving in direction `sign`, refined by a local
    straight-line fit over the samples within window_s of the raw crossing (so one noisy sample cannot move
    it). NaN: never. ordered: t is sorted (the samples near the crossing are then looked for only around
    it, the same samples)."""
    above = sign * (q - level) >= 0
    hits = np.flatnonzero(above[1:] & ~above[:-1]) + 1
    if hits.size == 0:
        return math.nan
    i = int(hits[0])
    dq = q[i] - q[i - 1]
    t_raw = t[i - 1] + (t[i] - t[i - 1]) * (level - q[i - 1]) / dq if dq != 0 else t[i]
    if ordered:  # every sample within window_s lies inside this stretch: the test below picks the same
        a, b = np.searchsorted(t, [t_raw - 2.0 * window_s, t_raw + 2.0 * window_s])
        t, q = t[a : b + 1], q[a : b + 1]
    near = np.abs(t - t_raw) <= window_s
    if np.count_nonzero(near) >= 3:
        # a straight line through the nearby samples, by its closed form
        x, y = t[near] - t_raw, q[near]
        xm, ym = float(x.sum()) / len(x), float(y.sum()) / len(y)
        sxx = float(np.dot(x - xm, x - xm))
        if sxx > 0:
            sl = float(np.dot(x - xm, y - ym)) / sxx
            icpt = ym - sl * xm
            if sign * sl > 0:
                return float(t_raw + (level - icpt) / sl)
    return float(t_raw)


def state_period(rec: Recording) -> float:
    """Median interval between state frames (s); NaN with fewer than three frames."""
    if len(rec.state_t) < 3:
        return math.nan
    return median(np.diff(rec.state_t))


@dataclass
class CruiseDelta:
    n: int
    mean: float
    peak: float
    left_out: int = 0  # frames of the window left out because a late send disturbed them


def late_setpoints(
    t_send: np.ndarray, t_reply: np.ndarray | None, cmd_period_s: float
) -> tuple[np.ndarray, np.ndarray]:
    """(indices k of the setpoints the controller got late, how long after its send each may have been taken
    (s)). Late: sent more than LATE_SEND_PERIODS command periods after the one before, or (with t_reply, the
    controller's answers) first answered more than that after its send: a controller that stalls takes the
    setpoints sent meanwhile in one burst when it answers them."""
    lim = LATE_SEND_PERIODS * cmd_period_s
    wait = np.zeros(len(t_send))
    if len(t_send) < 2 or not cmd_period_s > 0:
        return np.zeros(0, dtype=np.intp), wait
    late = np.zeros(len(t_send), dtype=bool)
    late[1:] = np.diff(t_send) > lim
    if t_reply is not None and len(t_reply):
        j = np.searchsorted(t_reply, t_send)
        has = j < len(t_reply)
        wait[has] = t_reply[j[has]] - t_send[has]
        late |= wait > lim
    k = np.flatnonzero(late)
    return k, wait[k]


def late_frames(
    tc: np.ndarray, ts: np.ndarray, late: np.ndarray, wait: np.ndarray, after_s: float
) -> np.ndarray:
    """Mask of the frames a late setpoint k disturbed: ts within [tc[k - 1], tc[k] + wait + after_s].

    Until the controller takes a late setpoint it holds the one before, which a straight line between the
    sends does not show; what it measured then reaches a frame up to one lag (and the transient, within
    after_s) later."""
    out = np.zeros(len(ts), dtype=bool)
    for k, w in zip(late.tolist(), wait.tolist(), strict=True):
        out |= (ts >= tc[max(k - 1, 0)]) & (ts <= tc[k] + max(w, 0.0) + after_s)
    return out


def between(ts: np.ndarray, t0: float, t1: float, ordered: bool) -> slice | np.ndarray:
    """Frames with t0 <= ts <= t1: a slice when ts is sorted (ordered), else a mask."""
    if ordered:
        return slice(int(np.searchsorted(ts, t0, side="left")), int(np.searchsorted(ts, t1, side="right")))
    return (ts >= t0) & (ts <= t1)


def cruise_delta(
    tc: np.ndarray,
    qc: np.ndarray,
    ts: np.ndarray,
    qs: np.ndarray,
    t0: float,
    t1: float,
    sgn: float,
    ordered: bool = False,
    drop: np.ndarray | None = None,
) -> CruiseDelta:
    """True delta (command at each frame's time minus the frame) over frames in [t0, t1], along sgn,
    without the frames drop marks (see late_frames; their count is left_out).
    ordered: ts is sorted (a faster search, the same frames)."""
    sel = between(ts, t0, t1, ordered)
    t_sel, q_sel = ts[sel], qs[sel]
    left_out = 0
    if drop is not None:
        keep = ~drop[sel]
        left_out = len(t_sel) - int(np.count_nonzero(keep))
        t_sel, q_sel = t_sel[keep], q_sel[keep]
    n = len(t_sel)
    if n < MIN_FRAMES:
        return CruiseDelta(n, math.nan, math.nan, left_out)
    d = sgn * (np.interp(t_sel, tc, qc) - q_sel)
    return CruiseDelta(n, float(d.mean()), float(d.max()), left_out)


def cruise_deltas(
    tc: np.ndarray,
    qc: np.ndarray,
    ts: np.ndarray,
    qs: np.ndarray,
    windows: np.ndarray,
    sgn: np.ndarray,
    ordered: bool,
    drop: np.ndarray | None = None,
) -> list[CruiseDelta]:
    """cruise_delta for many windows ((k, 2) array of [t0, t1]) at once, with the same results: on sorted
    frames (ordered) by running sums and reductions over the slices, without a loop over the windows.
    drop: frames to leave out (late sends, rare): then window by window."""
    if not ordered or len(windows) == 0 or drop is not None:
        return [
            cruise_delta(tc, qc, ts, qs, float(a), float(b), float(g), ordered, drop)
            for (a, b), g in zip(windows, sgn, strict=True)
        ]
    lo = np.searchsorted(ts, windows[:, 0], side="left")
    hi = np.maximum(np.searchsorted(ts, windows[:, 1], side="right"), lo)
    d = np.zeros(len(ts) + 1)  # one spare cell: a window may end at the last frame
    d[:-1] = np.interp(ts, tc, qc) - qs
    sums = np.concatenate(([0.0], np.cumsum(d[:-1])))
    bounds = np.column_stack([lo, hi]).ravel()
    top, bottom = np.maximum.reduceat(d, bounds)[::2], np.minimum.reduceat(d, bounds)[::2]
    out = []
    for k, n in enumerate((hi - lo).tolist()):
        if n < MIN_FRAMES:
            out.append(CruiseDelta(n, math.nan, math.nan))
            continue
        g = float(sgn[k])
        peak = float(top[k]) if g > 0 else -float(bottom[k])
        out.append(CruiseDelta(n, g * float(sums[hi[k]] - sums[lo[k]]) / n, peak))
    return out


def _from_group_median(groups: np.ndarray, vals: np.ndarray) -> np.ndarray:
    """Each value minus the median of its group (the mean of the two middle values for an even count)."""
    order = np.lexsort((vals, groups))  # by group, each group's values in ascending order
    g, v = groups[order], vals[order]
    starts = np.flatnonzero(np.concatenate(([True], g[1:] != g[:-1])))
    counts = np.diff(np.append(starts, len(g)))
    med = 0.5 * (v[starts + (counts - 1) // 2] + v[starts + counts // 2])
    dev = np.empty_like(vals)
    dev[order] = v - np.repeat(med, counts)
    return dev


def rest_noise(rec: Recording, joint: int, settle_s: float) -> Noise | None:
    """Noise of the measured joint at rest: frames whose commanded joint has not changed for settle_s.

    Deviations are taken from each rest period's own median, so slow drifts between periods do not count.
    None with fewer than MIN_REST_FRAMES frames at rest.
    """
    tc, qc = rec.commanded(joint)
    ts, qs = rec.measured(joint)
    changed = np.flatnonzero(np.abs(np.diff(qc)) > STILL_DEG) + 1
    change_t = tc[changed]
    if len(ts) == 0:
        return None
    nxt = np.searchsorted(change_t, ts, side="right")  # the first change after each frame
    k = nxt - 1  # the last change at or before it
    if len(change_t):
        last_change = change_t[np.maximum(k, 0)]
        last_change[k < 0] = tc[0]
        next_change = change_t[np.minimum(nxt, len(change_t) - 1)]
        next_change[nxt >= len(change_t)] = math.inf
    else:
        last_change, next_change = np.full(len(ts), tc[0]), np.full(len(ts), math.inf)
    # a frame is at rest when the command was still for settle_s before it and it arrived before the command
    # moved again (the lag only makes that conservative)
    rest = ts - last_change >= settle_s
    rest &= ts <= next_change
    rest &= ts >= tc[0]
    rest &= np.isfinite(qs)
    n_rest = int(np.count_nonzero(rest))
    if n_rest < MIN_REST_FRAMES:
        return None
    dev = _from_group_median(k[rest], qs[rest])
    # np.std's own sums without its dispatch (the same values)
    centred = dev - float(np.add.reduce(dev)) / n_rest
    return Noise(
        std_deg=math.sqrt(float(np.add.reduce(centred * centred)) / n_rest),
        peak_deg=float(np.max(np.abs(dev))),
        n_samples=n_rest,
        source="rest",
    )
