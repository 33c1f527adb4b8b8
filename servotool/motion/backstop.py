"""A rate-limiting backstop: the last check on each command before the wire, against the robot's own limits.

The backstop sits behind a trajectory generator and is meant never to bind. Every cycle it takes the next
command and compares its finite-difference velocity, acceleration and jerk, at the nominal command period,
with the bounds; a command within them goes out unchanged (bit for bit), one beyond them is replaced by the
nearest command that keeps them (jerk first, then acceleration, then velocity), and the size of that change
is recorded: `max_alteration` is the figure a run reports.

Its reference is what it sent, never the robot's echo (a rounded echo would read as jerk), and its step is
always the nominal period: the robot checks every command against that period, so a late cycle is no
licence for a larger increment.

It has no braking logic: tracking a position it has fallen behind, it saturates at its bounds, passes the
position and reverses. That is the orbit a generator that never hears of the backstop's changes ends up in
(motion/replay.py reproduces it), and why a generator in front of it must keep within the same bounds.

Bounds are per axis, or (`norm=True`) one vector-norm budget over all axes, as a Cartesian limit is.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from servotool.motion.checks import all_finite, flat_floats
from servotool.motion.checks import finite as _finite

# the backstop keeps this fraction inside each bound: its bounds are the robot's own, which the robot checks
# strictly, and a command exactly at one reaches it by the rounding of its finite differences (about 1e-12
# of it) or of a unit conversion
MARGIN = 1e-6


@dataclass(frozen=True)
class RateBounds:
    """Velocity, acceleration and jerk bounds (units/s, /s^2, /s^3), per axis or as one vector norm."""

    v_max: float
    a_max: float
    j_max: float
    norm: bool = False

    def __post_init__(self) -> None:
        for name in ("v_max", "a_max", "j_max"):
            x = _finite(getattr(self, name), name)
            if not x > 0.0:
                raise ValueError(f"{name} must be > 0, got {getattr(self, name)!r}")
            object.__setattr__(self, name, x)


def _clip_norm(x: np.ndarray, bound: float) -> np.ndarray:
    n = float(np.linalg.norm(x))
    return x * (bound / n) if n > bound else x


class RateLimiter:
    """The backstop of one stream; `prime` it at the first command (at rest), then `limit` every command.

    Guarantees for every command it returns, at the nominal period dt and against what it returned before:
    |v| <= v_max and |a| <= a_max (per axis, or in norm), and |jerk| <= j_max unless keeping the velocity or
    acceleration bound leaves no command that keeps it too, each with MARGIN to spare; a command already
    within every bound by that margin is returned unchanged. Non-finite or wrongly sized commands raise
    ValueError.

    Its state is kept as plain floats: a command within the bounds (every cycle but the rare one it binds) is
    checked by a scalar loop, the same IEEE arithmetic as the array expressions it replaces, so the same
    floats; only an altered command goes through numpy.
    """

    def __init__(self, bounds: RateBounds, dt: float) -> None:
        dt = _finite(dt, "dt")
        if not dt > 0.0:
            raise ValueError(f"dt must be > 0, got {dt!r}")
        self.bounds = bounds
        self.dt = dt
        self._p: list[float] | None = None
        self._v: list[float] = []
        self._a: list[float] = []
        self.max_alteration = 0.0
        self.altered_cycles = 0
        self.first_altered: int | None = None
        self.cycles = 0

    @property
    def primed(self) -> bool:
        return self._p is not None

    @property
    def position(self) -> np.ndarray | None:
        return None if self._p is None else np.array(self._p)

    @property
    def velocity(self) -> np.ndarray | None:
        return None if self._p is None else np.array(self._v)

    def prime(self, q: npt.ArrayLike) -> None:
        """Start at q, at rest; the alteration record starts again."""
        p = flat_floats(q)
        if not p or not all_finite(p):
            raise ValueError(f"the backstop's start must be finite, got {p}")
        self._p, self._v, self._a = p, [0.0] * len(p), [0.0] * len(p)
        self.max_alteration, self.altered_cycles, self.first_altered, self.cycles = 0.0, 0, None, 0

    def _within_norm(self, v: list[float], a: list[float], j: list[float]) -> bool:
        b, f = self.bounds, 1.0 - MARGIN
        return bool(
            np.linalg.norm(np.array(v)) <= b.v_max * f
            and np.linalg.norm(np.array(a)) <= b.a_max * f
            and np.linalg.norm(np.array(j)) <= b.j_max * f
        )

    def _limited_velocity(self, j: np.ndarray) -> np.ndarray:
        """The velocity of the nearest admissible command to one of jerk j: jerk, then acceleration, then
        velocity bounded (the acceleration also kept from carrying the velocity past its bound)."""
        dt, v0, a0, f = self.dt, np.array(self._v), np.array(self._a), 1.0 - MARGIN
        vm, am, jm = self.bounds.v_max * f, self.bounds.a_max * f, self.bounds.j_max * f
        if self.bounds.norm:
            a = _clip_norm(a0 + _clip_norm(j, jm) * dt, am)
            return _clip_norm(v0 + a * dt, vm)
        a = np.clip(a0 + np.clip(j, -jm, jm) * dt, -am, am)
        a = np.clip(a, (-vm - v0) / dt, (vm - v0) / dt)
        return np.clip(v0 + a * dt, -vm, vm)

    def limit(self, command: npt.ArrayLike) -> np.ndarray:
        """The command to send in place of `command`: itself when within the bounds, else the nearest that
        is (see the class); the change is recorded."""
        return np.array(self.limit_floats(flat_floats(command)))

    def limit_floats(self, x: list[float]) -> list[float]:
        """limit() on a flat list of floats, returning a new list: the same numbers, without the arrays."""
        p = self._p
        if p is None:
            raise RuntimeError("limit() before prime(): prime the backstop at the first command")
        n = len(p)
        if len(x) != n or not all_finite(x):
            raise ValueError(f"a command of {n} finite values, not {x}")
        dt, v0, a0, b = self.dt, self._v, self._a, self.bounds
        f = 1.0 - MARGIN
        vm, am, jm = b.v_max * f, b.a_max * f, b.j_max * f
        v, a, j = [0.0] * n, [0.0] * n, [0.0] * n
        ok = True
        for i in range(n):
            vi = (x[i] - p[i]) / dt
            ai = (vi - v0[i]) / dt
            ji = (ai - a0[i]) / dt
            v[i], a[i], j[i] = vi, ai, ji
            # `not <=`: a NaN (an overflowed difference) is out of bounds, as in the array comparison
            if not (abs(vi) <= vm and abs(ai) <= am and abs(ji) <= jm):
                ok = False
        self.cycles += 1
        if b.norm:
            ok = self._within_norm(v, a, j)
        if ok:
            out = list(x)
        else:
            xa = np.array(x)
            va = self._limited_velocity(np.array(j))
            outa = np.array(p) + va * dt
            out, v, a = outa.tolist(), va.tolist(), ((va - np.array(v0)) / dt).tolist()
            change = float(np.max(np.abs(outa - xa)))
            self.altered_cycles += 1
            if self.first_altered is None:
                self.first_altered = self.cycles - 1
            self.max_alteration = max(self.max_alteration, change)
        self._p, self._v, self._a = out, v, a
        return list(out)

    def follow(self, sent: npt.ArrayLike) -> None:
        """Take `sent` as the command that went out this cycle without being limited (a settle hold sent
        past the backstop): its differences become the reference."""
        if self._p is None:
            return
        x = flat_floats(sent)
        dt = self.dt
        v = [(xi - pi) / dt for xi, pi in zip(x, self._p, strict=True)]
        self._a = [(vi - v0) / dt for vi, v0 in zip(v, self._v, strict=True)]
        self._p, self._v = list(x), v
