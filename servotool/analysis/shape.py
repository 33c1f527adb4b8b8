"""Replay a recorded raw target stream through a shaper, offline, and measure what the wire would carry.

Pure: arrays in, arrays and figures out. Units are the recording's (deg, s).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from servotool.motion.stream_shapers import ShaperSpec

# The smallest per-tick setpoint velocity change (deg in one 10 ms tick) at which a FAIRINO controller was
# seen to latch the runaway fault; 1.0-1.5 deg is the coin-flip band.
RUNAWAY_BAND_DEG = (1.0, 1.5)


@dataclass(frozen=True)
class StreamFigures:
    """Peak derivatives of one stream of setpoints (finite differences at the tick period), per joint."""

    peak_velocity: list[float]  # deg/s
    peak_acceleration: list[float]  # deg/s^2
    peak_jerk: list[float]  # deg/s^3
    max_dv_per_tick: list[float]  # deg: the largest change of the per-tick increment (the runaway trigger)


@dataclass(frozen=True)
class Arrival:
    """A change of the raw target and when the shaped stream arrived on it (None: it never did)."""

    t: float
    joint: int
    target: float
    size: float
    arrive_s: float | None


@dataclass
class ReplayResult:
    spec: ShaperSpec
    t: np.ndarray
    raw: np.ndarray  # (n, joints)
    shaped: np.ndarray  # (n, joints)
    raw_figures: StreamFigures
    shaped_figures: StreamFigures
    arrivals: list[Arrival] = field(default_factory=list)
    max_trail: list[float] = field(default_factory=list)  # deg, while the raw target moves
    runaway_band_deg: tuple[float, float] = RUNAWAY_BAND_DEG

    def crosses_runaway_band(self, which: str = "shaped") -> bool:
        figs = self.shaped_figures if which == "shaped" else self.raw_figures
        return max(figs.max_dv_per_tick, default=0.0) >= self.runaway_band_deg[0]


def stream_figures(q: np.ndarray, dt: float) -> StreamFigures:
    """Finite-difference peaks of a (ticks, joints) setpoint stream sampled every dt seconds."""
    q = np.asarray(q, dtype=float)
    if q.ndim == 1:
        q = q[:, None]
    d1 = np.diff(q, axis=0)
    d2 = np.diff(d1, axis=0)
    d3 = np.diff(d2, axis=0)

    def peak(x: np.ndarray, scale: float) -> list[float]:
        if x.shape[0] == 0:
            return [0.0] * q.shape[1]
        return (np.nanmax(np.abs(x), axis=0) * scale).tolist()

    return StreamFigures(
        peak_velocity=peak(d1, 1 / dt),
        peak_acceleration=peak(d2, 1 / dt**2),
        peak_jerk=peak(d3, 1 / dt**3),
        max_dv_per_tick=peak(d2, 1.0),
    )


def _arrivals(t: np.ndarray, raw: np.ndarray, shaped: np.ndarray, tol_frac: float) -> list[Arrival]:
    out: list[Arrival] = []
    for j in range(raw.shape[1]):
        changes = np.flatnonzero(np.diff(raw[:, j]) != 0) + 1
        for k, i in enumerate(changes):
            end = changes[k + 1] if k + 1 < len(changes) else len(t)
            target = raw[i, j]
            size = target - raw[i - 1, j]
            tol = max(abs(size) * tol_frac, 1e-9)
            inside = np.flatnonzero(np.abs(shaped[i:end, j] - target) <= tol)
            arrive = float(t[i + inside[0]] - t[i]) if inside.size else None
            out.append(
                Arrival(t=float(t[i]), joint=j, target=float(target), size=float(size), arrive_s=arrive)
            )
    return out


def replay(
    t: np.ndarray, raw: np.ndarray, spec: ShaperSpec, *, arrive_tol_frac: float = 0.01
) -> ReplayResult:
    """Stream raw targets (ticks, joints) through the shaper `spec` one tick each, primed at the first target.

    Arrival: the first tick within arrive_tol_frac of a step's size from its new target, before the next
    change (a ramp counts every tick as a change, so arrivals matter for steps). Trail: the largest
    |raw - shaped| over ticks where the raw target moved on this tick and the one before (0 for pure
    steps). Refuses empty or non-finite input.
    """
    t = np.asarray(t, dtype=float)
    raw = np.asarray(raw, dtype=float)
    if raw.ndim == 1:
        raw = raw[:, None]
    if raw.shape[0] < 2 or raw.shape[0] != t.shape[0]:
        raise ValueError("a replay needs at least two ticks of raw targets with one time each")
    if not np.all(np.isfinite(raw)):
        raise ValueError("the raw target stream holds non-finite values")
    shaper = spec.build(raw.shape[1])
    shaper.prime(raw[0])
    shaped = np.empty_like(raw)
    shaped[0] = raw[0]
    for k in range(1, raw.shape[0]):
        shaped[k] = shaper.step(raw[k])
    # a target "moves" when it changed on this tick and the one before: a step is one change, not a motion
    changed = np.zeros(raw.shape[0], dtype=bool)
    changed[1:] = np.any(np.diff(raw, axis=0) != 0, axis=1)
    moving = changed.copy()
    moving[1:] &= changed[:-1]
    moving[0] = False
    gap = np.abs(raw - shaped)
    trail = (np.max(gap[moving], axis=0) if moving.any() else np.zeros(raw.shape[1])).tolist()
    return ReplayResult(
        spec=spec,
        t=t,
        raw=raw,
        shaped=shaped,
        raw_figures=stream_figures(raw, spec.dt),
        shaped_figures=stream_figures(shaped, spec.dt),
        arrivals=_arrivals(t, raw, shaped, arrive_tol_frac),
        max_trail=trail,
    )
