"""Link latency: when the controller took each setpoint and sampled each frame, on the host clock.

The host stamps sends and receives, so a plain measurement also contains the time a setpoint takes to reach
the controller and a frame to come back (a few tenths of a millisecond on loopback). Where the recording
allows it, frame times are mapped onto the host clock through the controller's timestamps, command times
through the controller's answers.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from servotool.analysis.lag.orderstats import median, percentile
from servotool.analysis.lag.results import LinkLatency
from servotool.analysis.recording import Recording

DRIFT_MIN_SPAN_S = 10.0  # shortest run over which the drift between controller and host clocks is fitted
DRIFT_BIN_S = 1.0  # controller-time bins whose fastest frame traces the lower envelope
MIN_TIMESTAMPED_FRAMES = 20  # frames with a controller timestamp needed to map the state path
# the controller's clock and the host's, over the same frames, may differ in rate by a drift (ppm) and the
# link's jitter; by more than this share they do not count time alike (a host column rescaled by hand, to
# ms or ns) and the frames stay on the host's times
MAX_RATE_GAP = 0.1
MIN_ANSWERS = 20  # answered commands needed to place the command path
# an answer later than the typical round trip by this much (or RTT_SIGMAS robust sigmas) leaves the moment
# the controller took that setpoint uncertain; frames that depend on it are kept out of the dynamic fit, as
# long as MIN_KEPT_FRACTION of them remain
UNCERTAIN_RTT_S = 0.0003
RTT_SIGMAS = 3.0
MIN_KEPT_FRACTION = 0.3
MAD_TO_SIGMA = 1.4826
CERTAIN_LOOKBACK_S = 0.05  # setpoints this long before a frame's lagged time still shape its value
# a frame's controller timestamp is an outlier when its receive - sample gap x strays from the typical one
# (the median over its second of controller time) by more than CLOCK_OUTLIER_SIGMAS robust sigmas and at
# least the floor: EARLY_FLOOR_S below (no frame crosses the link faster than the fastest ones, whose gap
# is within jitter of the typical one: a timestamp ahead by a few ms would pull every mapped time with it
# through the lower envelope), a state period above (a frame late on a loaded host is no outlier, but a
# timestamp behind by more than a period maps its frame a period or more off)
CLOCK_OUTLIER_SIGMAS = 6.0
EARLY_FLOOR_S = 0.001


@dataclass
class _StatePath:
    mapped: np.ndarray  # state times as sampled by the controller, on the host clock
    ok: bool
    mean_ms: float = math.nan
    p99_ms: float = math.nan
    drift_ppm: float = math.nan
    outliers: int = 0  # frames whose controller timestamp was an outlier: kept at their host times


def _fastest_per_bin(idx: np.ndarray, d: np.ndarray, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(d, x) of the frame with the smallest x in each bin, bins in order (the first such frame on ties)."""
    if len(idx) and np.all(idx[1:] >= idx[:-1]):  # frames in controller-time order: bins are contiguous
        starts = np.concatenate([[0], np.flatnonzero(np.diff(idx)) + 1])
        mins = np.minimum.reduceat(x, starts)
        group = np.repeat(np.arange(len(starts)), np.diff(np.append(starts, len(x))))
        hit = np.flatnonzero(x == mins[group])
        g = group[hit]  # in order: the first hit of each bin is where the bin number changes
        first = hit[np.concatenate(([True], g[1:] != g[:-1]))]
        return d[first], x[first]
    order = np.lexsort((x, idx))  # by bin, fastest first inside each bin
    first_of_bin = np.concatenate([[True], np.diff(idx[order]) > 0])
    return d[order][first_of_bin], x[order][first_of_bin]


def clock_outliers(d: np.ndarray, x: np.ndarray, period_s: float) -> np.ndarray:
    """Which frames' controller timestamps are outliers (see CLOCK_OUTLIER_SIGMAS), given each frame's
    controller time d and receive - sample gap x: a robust fit (medians per DRIFT_BIN_S of controller time,
    joined linearly, so a drift between the clocks is followed; the robust sigma from the median absolute
    residual), not a mean nor an extreme, so a few damaged timestamps cannot move it."""
    n = len(x)
    edges = np.arange(float(d.min()), float(d.max()) + DRIFT_BIN_S, DRIFT_BIN_S)
    idx = np.clip(np.searchsorted(edges, d, side="right") - 1, 0, max(len(edges) - 1, 0))
    order = np.argsort(idx, kind="stable")
    starts = np.concatenate([[0], np.flatnonzero(np.diff(idx[order])) + 1, [n]])
    centres, levels = [], []
    for a, b in zip(starts[:-1], starts[1:], strict=True):
        members = order[a:b]
        centres.append(median(d[members]))
        levels.append(median(x[members]))
    base = np.interp(d, centres, levels) if len(centres) > 1 else np.full(n, levels[0])
    r = x - base
    sigma = MAD_TO_SIGMA * median(np.abs(r - median(r)))
    late_floor = period_s if math.isfinite(period_s) else EARLY_FLOOR_S
    early = r < -max(CLOCK_OUTLIER_SIGMAS * sigma, EARLY_FLOOR_S)
    late = r > max(CLOCK_OUTLIER_SIGMAS * sigma, late_floor)
    return early | late


def _state_path(rec: Recording) -> _StatePath:
    ts, dev = rec.state_t, rec.state_dev
    ok = np.isfinite(dev) if len(dev) == len(ts) else np.zeros(len(ts), dtype=bool)
    n_ok = int(np.count_nonzero(ok))
    if n_ok < MIN_TIMESTAMPED_FRAMES:
        return _StatePath(ts.copy(), False)
    every = n_ok == len(ts)  # every frame timestamped (as a rule): no copies through the mask
    d, ts_ok = (dev, ts) if every else (dev[ok], ts[ok])
    host_span = float(ts_ok.max() - ts_ok.min())
    # first the spans (an absurd timestamp fails this, and leaves every frame at its host time), then the
    # outliers within them, which the bins of the robust fit can then count on
    if not abs(float(d.max()) - float(d.min()) - host_span) <= MAX_RATE_GAP * host_span:
        return _StatePath(ts.copy(), False)
    period = median(np.diff(ts)) if len(ts) >= 3 else math.nan
    outlier = clock_outliers(d, ts_ok - d, period)
    n_out = int(np.count_nonzero(outlier))
    if n_out:
        # an outlier's frame stays at its host time, as a frame with no timestamp: its own mapping is not
        # to be trusted, and it must not pull the fit of the others
        ok[np.flatnonzero(ok)[outlier]] = False
        every = False
        d, ts_ok = d[~outlier], ts_ok[~outlier]
        if len(d) < MIN_TIMESTAMPED_FRAMES:
            return _StatePath(ts.copy(), False, outliers=n_out)
    d_min = float(d.min())
    x = ts_ok - d
    if float(d.max()) - d_min < DRIFT_MIN_SPAN_S:
        # a drift only shows over a long run: on a short one no drift is fitted, and the lower envelope is the
        # fastest frame of all (the smallest of the bins' minima below), which no frame arrives before
        slope, icpt = 0.0, float(x.min())
        h = d + icpt
    else:
        slope, icpt = _drift(d, x, d_min)
        icpt -= max(0.0, float(np.max(icpt + slope * d - x)))  # no frame arrives before it was sampled
        h = d + icpt + slope * d
    if every:
        mapped = h
    else:
        mapped = ts.copy()
        mapped[ok] = h
    lat = ts_ok - h
    return _StatePath(mapped, True, float(lat.mean() * 1e3), percentile(lat, 99) * 1e3, slope * 1e6, n_out)


def _drift(d: np.ndarray, x: np.ndarray, d_min: float) -> tuple[float, float]:
    """(slope, intercept) of the lower envelope of x = receive - device time against device time d: the
    frames that crossed the link fastest, one per DRIFT_BIN_S; its slope is the drift between the clocks."""
    edges = np.arange(d_min, float(d.max()) + DRIFT_BIN_S, DRIFT_BIN_S)
    idx = np.searchsorted(edges, d, side="right") - 1
    np.maximum(idx, 0, out=idx)
    np.minimum(idx, max(len(edges) - 1, 0), out=idx)
    mins_d, mins_x = _fastest_per_bin(idx, d, x)
    # on a run just past DRIFT_MIN_SPAN_S the fastest frames may still span less: no drift then either
    if len(mins_d) >= 3 and np.ptp(mins_d) >= DRIFT_MIN_SPAN_S:
        slope, icpt = (float(c) for c in np.polyfit(mins_d, mins_x, 1))
        return slope, icpt
    return 0.0, float(mins_x.min())


@dataclass
class _CommandPath:
    taken: np.ndarray  # command times as taken by the controller, on the host clock
    answers: int
    half_rtt_ms: float = math.nan
    uncertain: np.ndarray | None = None


def _command_path(rec: Recording, cmd_period_s: float) -> _CommandPath:
    """Each reply belongs to the last command sent before it, if it came within half a period."""
    rt = rec.reply_t[rec.reply_cmd == ""]
    if not (len(rt) and len(rec.cmd_t)):
        return _CommandPath(rec.cmd_t, 0)
    i = np.searchsorted(rec.cmd_t, rt, side="right") - 1
    if int(i.min()) < 0:  # replies before the first command belong to none
        ok = i >= 0
        i, rt = i[ok], rt[ok]
        if not len(i):
            return _CommandPath(rec.cmd_t, 0)
    rtt = rt - rec.cmd_t[i]
    good = np.empty(len(i), dtype=bool)
    good[0] = True
    np.greater(i[1:], i[:-1], out=good[1:])  # the first reply after each command
    good &= rtt < cmd_period_s / 2
    n_ans = int(np.count_nonzero(good))
    if n_ans < MIN_ANSWERS:
        return _CommandPath(rec.cmd_t, n_ans)
    if n_ans < len(good):
        i, rt, rtt = i[good], rt[good], rtt[good]
    med = median(rtt)
    half = med / 2
    # each answered command was taken about midway between its send and its answer (that follows a late
    # command, not just the typical one); the others at the typical half round trip
    taken = rec.cmd_t + half
    taken[i] = 0.5 * (rec.cmd_t[i] + rt)
    spread = MAD_TO_SIGMA * median(np.abs(rtt - med))
    uncertain = np.ones(len(rec.cmd_t), dtype=bool)
    uncertain[i] = rtt > med + max(UNCERTAIN_RTT_S, RTT_SIGMAS * spread)
    return _CommandPath(taken, n_ans, half * 1e3, uncertain)


def link_latency(
    rec: Recording, cmd_period_s: float
) -> tuple[LinkLatency, np.ndarray, np.ndarray, np.ndarray | None]:
    """(LinkLatency, command times as taken by the controller, state times as sampled by it, on the host
    clock; and which commands' timing is uncertain: unanswered, or answered well after the typical round
    trip, so the controller may have taken them anywhere in between. None when too few were answered.)"""
    notes = []
    state = _state_path(rec)
    if state.outliers:
        notes.append(
            f"{state.outliers} state frame(s) whose controller timestamp strays from the others' "
            "were kept at their host times"
        )
    if not state.ok:
        notes.append("state frames carry no controller timestamp: the state-path latency stays in L")
    cmd = _command_path(rec, cmd_period_s)
    if cmd.answers < MIN_ANSWERS:
        notes.append("the controller answered too few commands: the command-path latency stays in L")
    link = LinkLatency(
        state_mapped=bool(state.ok),
        state_path_ms=state.mean_ms,
        state_path_p99_ms=state.p99_ms,
        drift_ppm=state.drift_ppm,
        command_answers=cmd.answers,
        command_path_ms=cmd.half_rtt_ms,
        note="; ".join(notes),
    )
    return link, cmd.taken, state.mapped, cmd.uncertain


def timing_certain(
    tc: np.ndarray,
    ts: np.ndarray,
    uncertain: np.ndarray | None,
    lag: float,
    period: float,
    warnings: list[str],
) -> np.ndarray:
    """Frames whose modelled value does not depend on a setpoint of uncertain timing: the corner rounding
    that identifies tau is a fraction of a millisecond of timing, so one late setpoint near a corner would
    read as filtering. All frames when too few would be left (with a warning appended)."""
    keep = np.ones(len(ts), dtype=bool)
    if uncertain is None or not uncertain.any():
        return keep
    bad_t = tc[uncertain]
    lo = np.searchsorted(bad_t, ts - lag - CERTAIN_LOOKBACK_S)
    hi = np.searchsorted(bad_t, ts - lag + period)
    keep = hi == lo
    if keep.mean() < MIN_KEPT_FRACTION:
        warnings.append("many setpoints were taken at uncertain times: the dynamic fit uses every frame")
        return np.ones(len(ts), dtype=bool)
    return keep
