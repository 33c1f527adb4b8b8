"""Per-pass figures of a controller that echoes what it executes (a recording with e1..eN and `success`
columns): the echo lag of the executed setpoint behind the one sent, the lowest success rate of the
setpoints it received, and the state cycles the host missed (gaps of two cycles or more in the
controller's time). Pure: numpy on a Recording."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from servotool.analysis.lag.passes import PassTicks
from servotool.analysis.lag.results import PassLag
from servotool.analysis.recording import Recording

MIN_ECHO_FRAMES = 3


@dataclass(frozen=True)
class EchoFigures:
    """One pass: echo_lag_ms (NaN without a cruise), success_rate (the pass's lowest, NaN when none was
    reported) and lost_cycles (None without the controller's time)."""

    echo_lag_ms: float
    success_rate: float
    lost_cycles: int | None


def lost_cycles(dev_t: np.ndarray, cycle_s: float) -> int | None:
    """The cycles missing between consecutive controller times (each gap of n cycles misses n - 1); None
    when fewer than two are finite."""
    t = dev_t[np.isfinite(dev_t)]
    if len(t) < 2 or not cycle_s > 0:
        return None
    gaps = np.rint(np.diff(t) / cycle_s).astype(np.int64) - 1
    return int(gaps[gaps > 0].sum())


def _echo_lag(
    rec: Recording, joint: int, ps: PassTicks, speed: float, skip: float, echo: np.ndarray
) -> float:
    if ps.cruise.size < 2 or not math.isfinite(speed) or speed == 0:
        return math.nan
    tc, qc = rec.commanded(joint)
    t0, t1 = float(tc[ps.cruise[0]]) + skip, float(tc[ps.cruise[-1]])
    lo, hi = np.searchsorted(rec.state_t, [t0, t1], side="left")
    e = echo[lo:hi]
    ok = np.isfinite(e)
    if np.count_nonzero(ok) < MIN_ECHO_FRAMES:
        return math.nan
    ts = rec.state_t[lo:hi][ok]
    delta = np.interp(ts, tc, qc) - e[ok]
    return float(np.mean(delta) * np.sign(speed) / abs(speed) * 1e3)


def pass_figures(
    rec: Recording, joint: int, ps: PassTicks, speed: float, cycle_s: float, skip: float
) -> EchoFigures:
    """The figures of one pass; its frames are those from its first setpoint to the next pass's."""
    tc = rec.cmd_t
    lo, hi = np.searchsorted(rec.state_t, [float(tc[ps.idx[0]]), ps.next_t], side="left")
    echo = rec.state_echo[:, joint] if rec.state_echo is not None else None
    lag = _echo_lag(rec, joint, ps, speed, skip, echo) if echo is not None else math.nan
    success = math.nan
    if rec.state_success is not None:
        s = rec.state_success[lo:hi]
        s = s[np.isfinite(s)]
        success = float(s.min()) if len(s) else math.nan
    lost = lost_cycles(rec.state_dev[lo:hi], cycle_s) if len(rec.state_dev) == len(rec.state_t) else None
    return EchoFigures(lag, success, lost)


def with_echo_figures(
    rec: Recording,
    joint: int,
    passes: Sequence[PassTicks],
    speeds: dict[int, float],
    lags: list[PassLag],
    cycle_s: float,
    skip: float,
) -> list[PassLag]:
    """`lags` with each pass's echo figures, when the recording has the echo columns (else as they are)."""
    if rec.state_echo is None and rec.state_success is None:
        return lags
    out = []
    for ps, lag in zip(passes, lags, strict=True):
        f = pass_figures(rec, joint, ps, speeds.get(ps.index, math.nan), cycle_s, skip)
        out.append(
            dataclasses.replace(
                lag, echo_lag_ms=f.echo_lag_ms, success_rate=f.success_rate, lost_cycles=f.lost_cycles
            )
        )
    return out
