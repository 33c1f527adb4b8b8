"""Acceleration-bounded stream shaper: the last stage before setpoints go on the wire.

The shaper turns any stream of raw joint targets, however broken (jumps, freezes, bursts), into a stream whose
velocity and per-tick velocity change are bounded. Its state is only the last setpoint it produced and that
setpoint's velocity; it never looks at the measured pose, so controller lag cannot blind it.

Per tick and joint, with T the tick period and a the acceleration limit:

    d     = target - s
    v_brk = -a*T + sqrt(a^2*T^2 + 2*a*|d|)      (one more tick at v_brk, then braking at a, stops within |d|)
    v_des = sign(d) * min(v_max, v_brk)
    v_new = clamp(v_des, v - a*T, v + a*T)
    s_new = s + v_new*T

plus a landing rule: when the target is reachable this tick within every bound, and the shaper could stop
there on the next tick, it lands on the target exactly. This is the discrete form of the time-optimal
(bang-bang) tracker of a double integrator: it reaches a static target within a few ticks of the fastest
motion the bounds allow, and never faster.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from servotool.errors import ServotoolError

__all__ = [
    "JumpEvent",
    "ShaperConfig",
    "ShaperNotPrimedError",
    "StreamShaper",
    "braking_velocity",
    "max_trail",
]


def braking_velocity(d: npt.ArrayLike, a_max: npt.ArrayLike, dt: float) -> Any:
    """Highest speed (>= 0, same unit as d per second) that can still stop within the distance |d|.

    "Can still stop" is the discrete rule: one more tick of dt at that speed, then braking at a_max, ends
    within |d|. That is the positive root of v*dt + v^2/(2*a_max) = |d|, i.e. -a_max*dt +
    sqrt(a_max^2*dt^2 + 2*a_max*|d|), evaluated as 2*a_max*|d| / (a_max*dt + sqrt(...)) so it is exactly 0 at
    d = 0 and loses no precision for tiny distances. Broadcasts over arrays; returns a float for scalar input.
    """
    dist = np.abs(np.asarray(d, dtype=float))
    a = np.asarray(a_max, dtype=float)
    at = a * dt
    with np.errstate(over="ignore", invalid="ignore"):
        v = 2.0 * a * dist / (at + np.sqrt(at * at + 2.0 * a * dist))
    return float(v) if v.ndim == 0 else v


def max_trail(v: npt.ArrayLike, a_max: npt.ArrayLike, dt: float) -> Any:
    """Largest distance the shaper can trail a target moving steadily at speed v: v^2/(2*a_max) + |v|*dt.

    This is the price of being able to stop on the target at any tick: the braking distance plus one tick of
    travel. At v = v_max it is also the threshold beyond which a raw input jump is reported as large.
    Broadcasts over arrays; returns a float for scalar input.
    """
    if type(v) is float and type(a_max) is float:  # plain floats: the same IEEE operations, without arrays
        s = abs(v)
        return float(s * s / (2.0 * a_max) + s * dt)
    speed = np.abs(np.asarray(v, dtype=float))
    trail = speed * speed / (2.0 * np.asarray(a_max, dtype=float)) + speed * dt
    return float(trail) if trail.ndim == 0 else trail


class ShaperNotPrimedError(ServotoolError, RuntimeError):
    """The shaper was stepped before prime() gave it a starting pose."""


@dataclass(frozen=True)
class JumpEvent:
    """A raw target that was farther from the current setpoint than any legitimately moving target can be.

    `tick` counts steps since the last prime (1 = the first step), `joint` is the joint index, `distance` is
    |target - setpoint| before the step and `threshold` is max_trail(v_max, a_max, dt) for that joint.
    """

    tick: int
    joint: int
    target: float
    setpoint: float
    distance: float
    threshold: float


def _per_joint(value: npt.ArrayLike, name: str) -> np.ndarray:
    arr = np.asarray(value, dtype=float)
    if arr.ndim > 1 or arr.size == 0:
        raise ValueError(f"{name} must be a number or one value per joint, got {value!r}")
    if not np.all(np.isfinite(arr)) or np.any(arr <= 0):
        raise ValueError(f"{name} must be finite and > 0, got {value!r}")
    return arr


@dataclass(frozen=True)
class ShaperConfig:
    """Bounds of a StreamShaper: v_max (unit/s) and a_max (unit/s^2), scalars or one value per joint, and the
    tick period dt (s). Validated on construction with the same rules as StreamShaper."""

    v_max: float | tuple[float, ...]
    a_max: float | tuple[float, ...]
    dt: float

    def __post_init__(self) -> None:
        for name in ("v_max", "a_max"):
            arr = _per_joint(getattr(self, name), name)
            object.__setattr__(self, name, float(arr) if arr.ndim == 0 else tuple(float(x) for x in arr))
        dt = float(self.dt)
        if not np.isfinite(dt) or dt <= 0:
            raise ValueError(f"dt must be finite and > 0 s, got {self.dt!r}")
        object.__setattr__(self, "dt", dt)

    @property
    def a_max_peak(self) -> float:
        """The largest acceleration any joint may be commanded."""
        return float(np.max(self.a_max))

    def build(self, n_joints: int | None = None) -> StreamShaper:
        return StreamShaper(self.v_max, self.a_max, self.dt, n_joints=n_joints)


class StreamShaper:
    """Acceleration-bounded shaper for a stream of N-joint setpoints (unit: degrees, or any unit used
    consistently; time in seconds).

    Construct with v_max (unit/s) and a_max (unit/s^2), each a positive scalar or one value per joint, and the
    tick period dt (s). n_joints may be omitted: it is then taken from per-joint bounds, or from the first
    prime(). prime(q) starts the stream at rest at the measured pose q; step(target) returns the next
    setpoint; reset() drops the state so the next stream must be primed again (stepping an unprimed shaper
    raises ShaperNotPrimedError).

    Guarantees, on every tick and every joint, whatever the sequence of targets:

    * |velocity| <= v_max and |velocity - previous velocity| <= a_max*dt, both exactly as evaluated in
      floating point on the reported velocities (the first tick after prime starts from velocity 0). The
      reported velocity is the one the step used: new position = old position + velocity*dt, up to the
      rounding of that sum; on a landing tick the position is the target and velocity = (target - old)/dt.
    * From rest, a static target is never overshot and is landed on exactly (the returned setpoint equals the
      target bit for bit), after which the setpoint holds there.
    * A target that starts at the primed pose and then moves in one direction only, at a speed of at most
      v <= v_max (a ramp, a trapezoid, any mix of cruising, slowing and pausing), is never passed and is
      trailed by at most max_trail(v, a_max, dt) = v^2/(2*a_max) + v*dt; when it stops, it is landed on.
    * A target that stays at the primed pose passes unchanged, and so does one that creeps from it in one
      direction by less than min(a_max*dt, v_max)*dt per tick (reachable within the bounds on every tick).

    The shaper is NOT an identity on moving input that is already within the bounds: it trails a moving
    target by up to the braking distance, because it must always be able to stop on the target. The trail
    bound above is the guarantee, not transparency.

    Refusals: a target containing NaN or inf, or with the wrong number of joints, raises ValueError and leaves
    the state untouched; nothing is passed on.

    Large jumps are reported, never tripped on: when |target - setpoint| on a joint first exceeds
    max_trail(v_max, a_max, dt) (no target moving within the bounds can be that far away), or exceeds it again
    through a new raw jump of that size, the shaper counts it in `large_jumps`, appends a JumpEvent to
    `jump_events` (the most recent `max_events` are kept) and calls `on_large_jump(event)` if given. The hook
    runs before the step is committed: if it raises, the step is abandoned and the state is unchanged.
    """

    def __init__(
        self,
        v_max: float | Sequence[float],
        a_max: float | Sequence[float],
        dt: float,
        n_joints: int | None = None,
        *,
        on_large_jump: Callable[[JumpEvent], None] | None = None,
        max_events: int = 256,
    ) -> None:
        v = _per_joint(v_max, "v_max")
        a = _per_joint(a_max, "a_max")
        dt = float(dt)
        if not np.isfinite(dt) or dt <= 0:
            raise ValueError(f"dt must be finite and > 0 s, got {dt!r}")
        sizes = {arr.size for arr in (v, a) if arr.ndim == 1}
        if n_joints is not None:
            if int(n_joints) != n_joints or n_joints < 1:
                raise ValueError(f"n_joints must be a positive integer, got {n_joints!r}")
            sizes.add(int(n_joints))
        if len(sizes) > 1:
            raise ValueError(f"per-joint bounds and n_joints disagree on the joint count: {sorted(sizes)}")
        self._v_max_in = v
        self._a_max_in = a
        self.dt = dt
        self._n: int | None = sizes.pop() if sizes else None
        self._s: np.ndarray | None = None
        self._v: np.ndarray | None = None
        self._prev_target: np.ndarray | None = None
        self._over: np.ndarray | None = None
        self._tick = 0
        self.on_large_jump = on_large_jump
        self.large_jumps = 0
        self.jump_events: deque[JumpEvent] = deque(maxlen=max_events)
        if self._n is not None:
            self._fix_joints(self._n)

    def _fix_joints(self, n: int) -> None:
        self._n = n
        self._vmax = np.broadcast_to(self._v_max_in, (n,)).astype(float)
        self._amax = np.broadcast_to(self._a_max_in, (n,)).astype(float)
        # The same products the guarantees are stated in, computed once so every tick compares against them.
        self._dv = self._amax * self.dt
        self._jump_thr = max_trail(self._vmax, self._amax, self.dt)
        # Below this distance the braking speed is under v_max; beyond it the formula is not needed (and could
        # overflow for absurd distances).
        self._brk_cap = self._jump_thr

    # -- state -----------------------------------------------------------------------------------------------

    @property
    def n_joints(self) -> int | None:
        return self._n

    @property
    def v_max(self) -> np.ndarray | None:
        """Per-joint velocity limit (unit/s), once the number of joints is known."""
        return None if self._n is None else self._vmax.copy()

    @property
    def a_max(self) -> np.ndarray | None:
        """Per-joint acceleration limit (unit/s^2), once the number of joints is known."""
        return None if self._n is None else self._amax.copy()

    @property
    def jump_threshold(self) -> np.ndarray | None:
        """Per-joint distance above which a raw jump is reported: max_trail(v_max, a_max, dt)."""
        return None if self._n is None else self._jump_thr.copy()

    @property
    def primed(self) -> bool:
        return self._s is not None

    @property
    def position(self) -> np.ndarray | None:
        """The last setpoint produced (or the primed pose); None when not primed."""
        return None if self._s is None else self._s.copy()

    @property
    def velocity(self) -> np.ndarray | None:
        """Velocity (unit/s) of the last step; zeros right after prime; None when not primed."""
        return None if self._v is None else self._v.copy()

    @property
    def ticks(self) -> int:
        """Steps taken since the last prime."""
        return self._tick

    def _pose(self, value: npt.ArrayLike, name: str) -> np.ndarray:
        arr = np.array(value, dtype=float, ndmin=1)
        if arr.ndim != 1:
            raise ValueError(f"{name} must be a flat sequence of joint positions, got shape {arr.shape}")
        if self._n is not None and arr.size != self._n:
            raise ValueError(f"{name} has {arr.size} joints, the shaper has {self._n}")
        bad = np.flatnonzero(~np.isfinite(arr))
        if bad.size:
            j = int(bad[0])
            raise ValueError(f"{name} joint {j} is {arr[j]!r}: non-finite values are refused")
        return arr

    def prime(self, q: Sequence[float] | np.ndarray) -> None:
        """Start a stream at rest at the measured pose q (refuses non-finite values, wrong joint count)."""
        pose = self._pose(q, "primed pose")
        if self._n is None:
            self._fix_joints(pose.size)
        n = pose.size
        self._s = pose
        self._v = np.zeros(n)
        self._prev_target = pose.copy()
        self._over = np.zeros(n, dtype=bool)
        self._tick = 0

    def reset(self) -> None:
        """Drop the stream state; the next stream must prime() again. Jump counters are kept."""
        self._s = None
        self._v = None
        self._prev_target = None
        self._over = None
        self._tick = 0

    # -- the law ---------------------------------------------------------------------------------------------

    def step(self, target: Sequence[float] | np.ndarray) -> np.ndarray:
        """Advance one tick toward `target` and return the new setpoint as a fresh array (guarantees: see the
        class docstring). Raises ShaperNotPrimedError before prime(), ValueError on a bad target."""
        if self._s is None or self._v is None:
            raise ShaperNotPrimedError("stream shaper not primed: prime() it on the measured pose first")
        x = self._pose(target, "target")
        s, v = self._s, self._v
        with np.errstate(over="ignore", invalid="ignore"):
            d = x - s
        if not np.all(np.isfinite(d)):
            raise ValueError("target is too far from the current setpoint to represent; nothing was sent")
        dist = np.abs(d)
        T = self.dt
        vmax, dv = self._vmax, self._dv

        far = dist >= self._brk_cap
        v_brk = braking_velocity(np.where(far, 0.0, dist), self._amax, T)
        speed = np.where(far, vmax, np.minimum(vmax, v_brk))
        v_des = np.sign(d) * speed
        v_new = np.minimum(np.maximum(v_des, v - dv), v + dv)
        v_new = self._within_change(v_new, v, dv)
        # v_new lies between v_des and v, both within +-v_max, so this only guards against a future edit.
        v_new = np.clip(v_new, -vmax, vmax)

        # Landing: reach the target this tick when that velocity is legal now and can be stopped next tick.
        v_land = d / T
        land = (np.abs(v_land) <= np.minimum(dv, vmax)) & (np.abs(v_land - v) <= dv)
        v_new = np.where(land, v_land, v_new)
        s_new = np.where(land, x, s + v_new * T)

        events = self._jump_events(x, s, dist)
        # Hooks run before anything is committed: if one raises, the step is abandoned, state unchanged.
        if self.on_large_jump is not None:
            for event in events:
                self.on_large_jump(event)
        self._tick += 1
        self.large_jumps += len(events)
        self.jump_events.extend(events)
        self._over = dist > self._jump_thr
        self._s = s_new
        self._v = v_new
        self._prev_target = x
        return s_new.copy()

    @staticmethod
    def _within_change(v_new: np.ndarray, v: np.ndarray, dv: np.ndarray) -> np.ndarray:
        # v +- dv is rounded, so v_new - v can come out one ulp above dv (about one joint-tick in eight on
        # random streams). Step v_new toward v until the bound holds as evaluated; holding v is always legal.
        for _ in range(4):
            bad = np.abs(v_new - v) > dv
            if not bad.any():
                return v_new
            v_new = np.where(bad, np.nextafter(v_new, v), v_new)
        return np.where(np.abs(v_new - v) > dv, v, v_new)

    def _jump_events(self, x: np.ndarray, s: np.ndarray, dist: np.ndarray) -> list[JumpEvent]:
        assert self._over is not None and self._prev_target is not None
        thr = self._jump_thr
        over = dist > thr
        fresh = over & (~self._over | (np.abs(x - self._prev_target) > thr))
        return [
            JumpEvent(
                tick=self._tick + 1,
                joint=int(j),
                target=float(x[j]),
                setpoint=float(s[j]),
                distance=float(dist[j]),
                threshold=float(thr[j]),
            )
            for j in np.flatnonzero(fresh)
        ]
