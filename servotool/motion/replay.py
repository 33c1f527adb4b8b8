"""Replay a per-cycle log of targets through the jerk-limited generator, with or without a backstop behind it,
under any choice of the three rules: the offline check of what a command loop would have sent.

A log is the target the loop held in each cycle and the period it measured before that cycle. The robot of
the replay takes every command it is sent and echoes it in the next cycle (what a joint or pose interface
reports as its last command); it checks each command against the nominal period, whatever the measured one.

What a replay reports: whether the command landed exactly on the last target and stayed; the landing
error; the largest alteration the backstop made; the largest gap between the command and the generator's
own state (a backstop that binds against a generator that never hears of it opens that gap); the amplitude
of the command's swing about the last target once the generator had landed there (the orbit); and the
command's peak velocity, acceleration and jerk at the nominal period.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from servotool.motion.backstop import RateBounds, RateLimiter
from servotool.motion.stream_shapers import OtgStreamShaper


@dataclass(frozen=True)
class CycleLog:
    """Per cycle: the target held (cycles x axes) and the measured period before it (s); the start pose."""

    start: np.ndarray
    targets: np.ndarray
    periods: np.ndarray

    def __post_init__(self) -> None:
        start = np.asarray(self.start, dtype=float).reshape(-1)
        targets = np.asarray(self.targets, dtype=float)
        periods = np.asarray(self.periods, dtype=float).reshape(-1)
        if targets.ndim != 2 or targets.shape[1] != start.size or len(targets) == 0:
            raise ValueError(f"targets must be (cycles x {start.size}), got shape {targets.shape}")
        if periods.size != len(targets):
            raise ValueError(f"{periods.size} periods for {len(targets)} cycles")
        if not (np.all(np.isfinite(targets)) and np.all(np.isfinite(start)) and np.all(periods > 0)):
            raise ValueError("a log holds finite targets and positive periods only")
        object.__setattr__(self, "start", start)
        object.__setattr__(self, "targets", targets)
        object.__setattr__(self, "periods", periods)


@dataclass(frozen=True)
class Rules:
    """Which of the three rules the generator keeps (see OtgStreamShaper)."""

    norm_budget: bool = True
    nominal_step: bool = True
    reanchor: bool = True


@dataclass
class Replay:
    """What one replay sent and its figures (units of the log; see the module docstring)."""

    commands: np.ndarray
    generator: np.ndarray
    landed_exactly: bool
    landing_error: float
    max_alteration: float
    altered_cycles: int
    first_altered_s: float | None
    max_gap: float
    orbit_amplitude: float
    peak_velocity: float
    peak_acceleration: float
    peak_jerk: float


def rates(commands: npt.ArrayLike, start: npt.ArrayLike, dt: float, norm: bool = False) -> np.ndarray:
    """Per cycle, the command's velocity, acceleration and jerk at the nominal period dt from rest at start
    (cycles x 3): the largest axis's, or the vector norm's."""
    q = np.vstack([np.tile(np.asarray(start, dtype=float), (3, 1)), np.asarray(commands, dtype=float)])
    v = np.diff(q, axis=0) / dt
    a = np.diff(v, axis=0) / dt
    j = np.diff(a, axis=0) / dt
    v, a = v[2:], a[1:]

    def size(x: np.ndarray) -> np.ndarray:
        return np.linalg.norm(x, axis=1) if norm else np.max(np.abs(x), axis=1)

    return np.column_stack([size(v), size(a), size(j)])


def _settled_from(generator: np.ndarray, last: np.ndarray) -> int:
    """The first cycle from which the generator holds the last target exactly (len when it never does)."""
    on = np.all(generator == last, axis=1)
    k = len(on)
    while k > 0 and on[k - 1]:
        k -= 1
    return k


def replay(
    log: CycleLog,
    budget: RateBounds,
    dt: float,
    rules: Rules = Rules(),
    *,
    backstop: RateBounds | None = None,
) -> Replay:
    """Run the log through the generator under `budget` (a norm budget when budget.norm) and the rules, with
    a backstop under `backstop` behind it when given; see Replay for the figures."""
    limiter = RateLimiter(backstop, dt) if backstop is not None else None
    gen = OtgStreamShaper(
        budget.v_max,
        budget.a_max,
        budget.j_max,
        dt,
        log.start.size,
        norm_budget=budget.norm and rules.norm_budget,
        nominal_step=rules.nominal_step,
        reanchor=rules.reanchor,
        backstop=limiter,
    )
    gen.prime(log.start)
    n = len(log.targets)
    commands = np.empty_like(log.targets)
    positions = np.empty_like(log.targets)
    echo: np.ndarray | None = None
    for k in range(n):
        gen.observe(echo, float(log.periods[k]))
        commands[k] = gen.step(log.targets[k])
        positions[k] = gen.position
        echo = commands[k]  # the robot takes the command and echoes it next cycle
    last = log.targets[-1]
    settled = _settled_from(positions, last)
    tail = commands[settled:] if settled < n else commands[-1:]
    peaks = rates(commands, log.start, dt, norm=budget.norm).max(axis=0)
    first = None if limiter is None or limiter.first_altered is None else limiter.first_altered * dt
    return Replay(
        commands=commands,
        generator=positions,
        landed_exactly=bool(settled < n and np.all(commands[settled:] == last)),
        landing_error=float(np.max(np.abs(commands[-1] - last))),
        max_alteration=0.0 if limiter is None else limiter.max_alteration,
        altered_cycles=0 if limiter is None else limiter.altered_cycles,
        first_altered_s=first,
        max_gap=float(np.max(np.abs(commands - positions))),
        orbit_amplitude=float(np.max(np.abs(tail - last))),
        peak_velocity=float(peaks[0]),
        peak_acceleration=float(peaks[1]),
        peak_jerk=float(peaks[2]),
    )
