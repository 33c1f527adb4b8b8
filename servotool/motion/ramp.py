"""Setpoint profiles for the lag measurement: smooth ramp passes and raw step levels.

Ramp mode sweeps one joint out and back once per speed. Each pass is a trapezoid in velocity: a linear rise
over ramp_s, a cruise, a linear fall over ramp_s, then a settle at rest. The velocity changes by at most
v/(ramp_s/dt) per tick, so a ramp can never put a velocity discontinuity on the wire.

Step mode is the opposite on purpose: raw level changes (+X, 0, -X, 0, ...) in a single tick, each level held,
meant to go through the stream shaper unless a raw run was explicitly asked for.

Ticks are numbered from 0; tick k is due at t = (k + 1) * dt after the start pose, which is the implicit tick
at t = 0 (at rest) and is not part of the arrays.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import numpy as np

from servotool.motion.checks import finite as _finite
from servotool.motion.checks import positive as _positive
from servotool.motion.defaults import CMD_PERIOD_S, LAG_RAMP_S, LAG_SETTLE_S, LAG_SPEEDS_DEG_S, LAG_SWEEP_DEG

__all__ = [
    "LAG_RAMP_S",
    "LAG_SETTLE_S",
    "LAG_SPEEDS_DEG_S",
    "LAG_SWEEP_DEG",
    "PHASES",
    "RampPass",
    "RampProfile",
    "RampTick",
    "StepLevels",
    "ramp_profile",
    "step_levels",
]

PHASES = ("ramp-up", "cruise", "ramp-down", "settle")

# Tolerance when turning a duration into a whole number of ticks, so 0.2 s / 0.01 s counts as 20, not 21.
_TICK_EPS = 1e-9


def _ticks(duration: float, dt: float) -> int:
    """Whole ticks covering `duration` (rounded up, so a ramp is never shorter than asked)."""
    return max(0, math.ceil(duration / dt - _TICK_EPS))


@dataclass(frozen=True)
class RampPass:
    """One pass of a ramp profile: from q_from to q_to in `direction` (+1 or -1).

    `speed` is the requested cruise speed, `peak` the speed actually reached (deg/s): lowered slightly so a
    whole number of cruise ticks covers the sweep exactly, or lowered into a triangle (`triangular`, no
    cruise tick) when the sweep is too short for the ramps at that speed. Ticks [first_tick, end_tick) of the
    profile belong to this pass; the pass arrives at q_to on tick `arrive_tick`, and settles after it.
    """

    index: int
    speed: float
    peak: float
    direction: int
    q_from: float
    q_to: float
    triangular: bool
    cruise_ticks: int
    first_tick: int
    arrive_tick: int
    end_tick: int


@dataclass(frozen=True)
class RampTick:
    """One tick of a ramp profile, ready to stream."""

    index: int
    t: float
    q: float
    v: float
    pass_index: int
    direction: int
    phase: str


@dataclass(frozen=True)
class RampProfile:
    """A ramp-mode profile as per-tick numpy arrays (all of length n_ticks) plus one RampPass per pass.

    t (s, tick k at (k+1)*dt), q (deg), v (deg/s, the velocity over the tick ending at q), pass_index (int),
    direction (+1/-1) and phase (one of PHASES). Passes alternate "out" (even index) and "back" (odd index);
    pass_speed holds the requested speed of each pass, `notes` says which passes had to be lowered into a
    triangle.
    """

    start_deg: float
    sweep_deg: float
    dt: float
    ramp_s: float
    settle_s: float
    ramp_ticks: int
    t: np.ndarray
    q: np.ndarray
    v: np.ndarray
    pass_index: np.ndarray
    direction: np.ndarray
    phase: np.ndarray
    passes: tuple[RampPass, ...]
    notes: tuple[str, ...]

    def __len__(self) -> int:
        return int(self.t.size)

    @property
    def pass_speed(self) -> np.ndarray:
        return np.array([p.speed for p in self.passes])

    @property
    def max_dv(self) -> float:
        """Largest velocity change between consecutive ticks, the start pose at rest included (deg/s)."""
        return float(np.max(np.abs(np.diff(self.v, prepend=0.0))))

    def ticks(self) -> Iterator[RampTick]:
        """The profile tick by tick, in order."""
        for k in range(self.t.size):
            yield RampTick(
                index=k,
                t=float(self.t[k]),
                q=float(self.q[k]),
                v=float(self.v[k]),
                pass_index=int(self.pass_index[k]),
                direction=int(self.direction[k]),
                phase=str(self.phase[k]),
            )


def _one_pass(
    q_from: float, q_to: float, speed: float, dt: float, n_ramp: int, n_settle: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray, float, int, int]:
    """Velocity units, positions, phase codes and (peak, cruise ticks) of one pass.

    Velocities are integer multiples u of peak/n_ramp (u = 1..n on the rise, n on the cruise, n-1..1 on the
    fall, 0 on the settle), so the cumulative sum of u is exact and the positions are an exact fraction of the
    distance; the arrival tick is then set to q_to itself.
    """
    dist = abs(q_to - q_from)
    # Distance = peak * dt * (n_ramp + n_cruise): take the fewest cruise ticks that keep peak <= speed.
    n_cruise = max(0, math.ceil(dist / (speed * dt) - n_ramp - _TICK_EPS))
    peak = dist / ((n_ramp + n_cruise) * dt)
    while peak > speed:
        n_cruise += 1
        peak = dist / ((n_ramp + n_cruise) * dt)
    units = np.concatenate(
        [
            np.arange(1, n_ramp + 1),
            np.full(n_cruise, n_ramp),
            np.arange(n_ramp - 1, 0, -1),
            np.zeros(n_settle, dtype=int),
        ]
    )
    codes = np.concatenate(
        [
            np.full(n_ramp, 0),
            np.full(n_cruise, 1),
            np.full(n_ramp - 1, 2),
            np.full(n_settle, 3),
        ]
    )
    total = n_ramp * (n_ramp + n_cruise)
    frac = np.cumsum(units) / total
    q = q_from + (q_to - q_from) * frac
    arrive = 2 * n_ramp + n_cruise - 2  # index of the last moving tick
    q[arrive:] = q_to
    sign = 1.0 if q_to > q_from else -1.0
    # The cruise is set to the peak itself, which peak * n / n is not always in floating point.
    v = np.where(units == n_ramp, sign * peak, sign * peak * units / n_ramp)
    return q, v, codes, peak, n_cruise, arrive


def _ramp_settings(
    start_deg: float,
    sweep_deg: float,
    speeds_deg_s: Sequence[float],
    dt: float,
    ramp_s: float,
    settle_s: float,
) -> tuple[float, float, float, float, float, list[float]]:
    """ramp_profile's arguments checked (ValueError, see there): start, sweep, dt, ramp_s, settle_s and
    the speeds, as floats."""
    start = _finite(start_deg, "start_deg")
    sweep = _finite(sweep_deg, "sweep_deg")
    if sweep == 0:
        raise ValueError("sweep_deg must be non-zero")
    dt = _positive(dt, "dt")
    ramp_s = _positive(ramp_s, "ramp_s")
    settle_s = _finite(settle_s, "settle_s")
    if settle_s < 0:
        raise ValueError(f"settle_s must be >= 0, got {settle_s!r}")
    speeds = [_positive(v, f"speed #{i + 1}") for i, v in enumerate(speeds_deg_s)]
    if not speeds:
        raise ValueError("speeds_deg_s must list at least one speed")
    return start, sweep, dt, ramp_s, settle_s, speeds


def _triangle_note(p: int, leg: int, speed: float, sweep: float, ramp_s: float, peak: float) -> str:
    """The note of a pass too short for its ramps, whose peak was lowered."""
    return (
        f"pass {p + 1} ({'out' if leg == 0 else 'back'} at {speed:g} deg/s): sweep "
        f"{abs(sweep):g} deg is too short for {ramp_s:g} s ramps; peak lowered to "
        f"{peak:.4g} deg/s (triangle, no cruise)"
    )


def ramp_profile(
    start_deg: float,
    sweep_deg: float,
    speeds_deg_s: Sequence[float],
    dt: float = CMD_PERIOD_S,
    ramp_s: float = 0.2,
    settle_s: float = 0.5,
) -> RampProfile:
    """Ramp-mode profile: for each speed, a pass out by sweep_deg from start_deg and a pass back to it.

    Guarantees: the velocity changes by at most speed/(ramp_s/dt) per tick for every pass, including the
    start from rest and the stop into each settle (so no velocity discontinuity, ever); no pass exceeds its
    requested speed; every pass ends exactly at its target (start_deg + sweep_deg out, start_deg back, bit for
    bit), by adjusting the number of cruise ticks and lowering the peak a little, or into a triangle when the
    sweep is too short for the ramps at that speed (said in `notes` and RampPass.triangular). After each pass
    the joint holds still for settle_s, and for at least one tick even when settle_s is 0, so a reversal never
    steps the velocity.

    A negative sweep_deg goes out in the negative direction. Refuses (ValueError) an empty speed list, a
    speed, dt or ramp_s that is not finite and > 0, a negative or non-finite settle_s, a non-finite start_deg
    and a zero or non-finite sweep_deg.
    """
    start, sweep, dt, ramp_s, settle_s, speeds = _ramp_settings(
        start_deg, sweep_deg, speeds_deg_s, dt, ramp_s, settle_s
    )
    n_ramp = max(1, _ticks(ramp_s, dt))
    n_settle = max(1, _ticks(settle_s, dt))
    end = start + sweep

    qs, vs, codes, idx, dirs, passes, notes = [], [], [], [], [], [], []
    first = 0
    for i, speed in enumerate(speeds):
        for leg, (q_from, q_to) in enumerate(((start, end), (end, start))):
            p = 2 * i + leg
            q, v, c, peak, n_cruise, arrive = _one_pass(q_from, q_to, speed, dt, n_ramp, n_settle)
            direction = 1 if q_to > q_from else -1
            triangular = n_cruise == 0
            if triangular:
                notes.append(_triangle_note(p, leg, speed, sweep, ramp_s, peak))
            passes.append(
                RampPass(
                    index=p,
                    speed=speed,
                    peak=peak,
                    direction=direction,
                    q_from=q_from,
                    q_to=q_to,
                    triangular=triangular,
                    cruise_ticks=n_cruise,
                    first_tick=first,
                    arrive_tick=first + arrive,
                    end_tick=first + q.size,
                )
            )
            qs.append(q)
            vs.append(v)
            codes.append(c)
            idx.append(np.full(q.size, p))
            dirs.append(np.full(q.size, direction))
            first += q.size

    n = first
    phase_names = np.array(PHASES)
    return RampProfile(
        start_deg=start,
        sweep_deg=sweep,
        dt=dt,
        ramp_s=ramp_s,
        settle_s=settle_s,
        ramp_ticks=n_ramp,
        t=np.arange(1, n + 1) * dt,
        q=np.concatenate(qs),
        v=np.concatenate(vs),
        pass_index=np.concatenate(idx),
        direction=np.concatenate(dirs),
        phase=phase_names[np.concatenate(codes)],
        passes=tuple(passes),
        notes=tuple(notes),
    )


@dataclass(frozen=True)
class StepLevels:
    """Step-mode raw targets, one per tick (tick k due at (k+1)*dt after the start pose).

    q is the raw target (deg), level the offset from start_deg, step_index the step whose level is held.
    Per step: step_tick (first tick at the new level), step_time (its t), step_level (offset after the step)
    and step_size (the jump, level after minus level before).
    """

    start_deg: float
    size_deg: float
    dt: float
    hold_s: float
    hold_ticks: int
    t: np.ndarray
    q: np.ndarray
    level: np.ndarray
    step_index: np.ndarray
    step_tick: np.ndarray
    step_time: np.ndarray
    step_level: np.ndarray
    step_size: np.ndarray

    def __len__(self) -> int:
        return int(self.t.size)

    @property
    def end_deg(self) -> float:
        """Where the last level leaves the joint (start_deg only when n_steps is even)."""
        return float(self.q[-1])


def hold_ticks(hold_s: float, dt: float) -> int:
    """The ticks each level of step_levels is held for: hold_s rounded up to whole ticks, at least one."""
    return max(1, _ticks(hold_s, dt))


def step_levels(
    start_deg: float, size_deg: float, n_steps: int, hold_s: float = 0.6, dt: float = CMD_PERIOD_S
) -> StepLevels:
    """Raw step targets for the level cycle +X, 0, -X, 0 (X = size_deg around start_deg), repeated or cut
    to n_steps level changes. Each level is held for hold_s (rounded up to whole ticks); the first step
    happens on tick 0. These targets jump by design: stream them through the shaper unless a raw run was
    asked for.

    Refuses (ValueError) a zero or non-finite size_deg, a non-finite start_deg, n_steps that is not a
    positive integer, and hold_s or dt that is not finite and > 0.
    """
    start = _finite(start_deg, "start_deg")
    size = _finite(size_deg, "size_deg")
    if size == 0:
        raise ValueError("size_deg must be non-zero")
    if isinstance(n_steps, bool) or not isinstance(n_steps, (int, np.integer)) or n_steps < 1:
        raise ValueError(f"n_steps must be a positive integer, got {n_steps!r}")
    n_steps = int(n_steps)
    hold_s = _positive(hold_s, "hold_s")
    dt = _positive(dt, "dt")
    n_hold = hold_ticks(hold_s, dt)

    cycle = np.array([size, 0.0, -size, 0.0])
    levels = cycle[np.arange(n_steps) % 4]
    before = np.concatenate([[0.0], levels[:-1]])
    step_tick = np.arange(n_steps) * n_hold
    n = n_steps * n_hold
    step_index = np.repeat(np.arange(n_steps), n_hold)
    level = levels[step_index]
    t = np.arange(1, n + 1) * dt
    return StepLevels(
        start_deg=start,
        size_deg=size,
        dt=dt,
        hold_s=hold_s,
        hold_ticks=n_hold,
        t=t,
        q=start + level,
        level=level,
        step_index=step_index,
        step_tick=step_tick,
        step_time=t[step_tick],
        step_level=levels,
        step_size=levels - before,
    )
