"""Jerk-limited online trajectory generation: a stream of stepped targets in, a smooth bounded command out.

An online trajectory generator owns the commanded position, velocity and acceleration of each axis. Every
cycle it follows, for that one cycle, the time-optimal jerk-limited plan from that state to rest at the latest
target (the seven-segment profile of otg_profile), integrating the piecewise-constant jerk exactly. It needs
nothing but the latest target, keeps |v| <= v_max, |a| <= a_max and |jerk| <= j_max on every cycle whatever
the cycle length, and lands exactly on the target (position == target bit for bit, v = a = 0), then holds it
bit for bit. A target that moves mid-motion is planned from the current velocity and acceleration; one inside
the braking distance is passed, braked for and come back to.

The target velocity is always zero: this generator is for positional targets, not for velocity tracking.

Units are whatever the caller uses consistently (m or rad or deg, with /s, /s^2, /s^3); dt is in seconds.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from math import isfinite, sqrt
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from servotool.motion.checks import finite as _finite
from servotool.motion.checks import within as _within
from servotool.motion.compiled import profile_module
from servotool.motion.defaults import OTG_COORD_MAX, OTG_LIMIT_MAX, OTG_LIMIT_MIN
from servotool.motion.otg_profile import Axis, OtgPlan, Plan, Segments, Warm

if TYPE_CHECKING:
    from servotool.motion import otg_profile as _prof
else:
    # The profile math, compiled where the install built it (the same floats either way; compiled.py).
    _prof = profile_module()
axis_constants = _prof.axis_constants
duration_bound_axis = _prof.duration_bound_axis
follow = _prof.follow
plan_to_rest = _prof.plan_to_rest
plan_warm = _prof.plan_warm
stretch_to = _prof.stretch_to
stretch_warm_axis = _prof.stretch_warm_axis
warm_constants_axis = _prof.warm_constants_axis

__all__ = [
    "MultiOtg",
    "Otg",
    "OtgLimits",
    "OtgPlan",
    "otg_duration",
]


_EMPTY: Plan = ((), 0.0, 0.0)
_INF = float("inf")
# One axis in a synchronised planning: (duration bound or -1, axis, the bound's peak, displacement,
# warm_constants).
_Row = tuple[float, int, float, float, Warm | None]


@dataclass(frozen=True)
class OtgLimits:
    """Velocity, acceleration and jerk bounds of one axis (units/s, units/s^2, units/s^3).

    Every limit must be a finite number within [1e-9, 1e9] (OTG_LIMIT_MIN, OTG_LIMIT_MAX of defaults.py);
    anything else raises ValueError.
    """

    max_velocity: float
    max_acceleration: float
    max_jerk: float

    def __post_init__(self) -> None:
        for name in ("max_velocity", "max_acceleration", "max_jerk"):
            x = _finite(getattr(self, name), name)
            if not x > 0.0:
                raise ValueError(f"{name} must be > 0, got {getattr(self, name)!r}")
            if not OTG_LIMIT_MIN <= x <= OTG_LIMIT_MAX:
                raise ValueError(f"{name} must be within {OTG_LIMIT_MIN:g} and {OTG_LIMIT_MAX:g}, got {x!r}")
            object.__setattr__(self, name, x)

    def per_axis_for_norm(self, n: int) -> OtgLimits:
        """Limits for each of n axes so that n axes at their limits stay within this vector-norm budget.

        Each limit is divided by sqrt(n). n must be an integer >= 1.
        """
        if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
            raise ValueError(f"n must be an integer >= 1, got {n!r}")
        return self.scaled(1.0 / sqrt(n))

    def scaled(self, f: float) -> OtgLimits:
        """All three limits multiplied by f (finite and > 0, else ValueError)."""
        f = _finite(f, "scale factor")
        if not f > 0.0:
            raise ValueError(f"scale factor must be > 0, got {f!r}")
        return OtgLimits(self.max_velocity * f, self.max_acceleration * f, self.max_jerk * f)


def _check_limits(limits: object) -> OtgLimits:
    if not isinstance(limits, OtgLimits):
        raise TypeError(f"limits must be OtgLimits, got {type(limits).__name__}")
    return limits


def _valid_dt(dt: float) -> bool:
    # NaN fails every comparison, so it is refused here with zero, negative and infinite steps.
    try:
        return 0.0 < dt < float("inf")
    except TypeError:
        return False


def otg_duration(p0: float, v0: float, a0: float, target: float, limits: OtgLimits) -> float:
    """Duration (s) of the time-optimal jerk-limited plan from (p0, v0, a0) to rest at target.

    This is exactly the plan Otg would follow from that state. 0 when already at rest on the target.
    Non-finite inputs, and p0 or target beyond +-5e8 or v0 or a0 beyond +-1e9, raise ValueError.
    """
    limits = _check_limits(limits)
    p0 = _within(p0, "p0", OTG_COORD_MAX)
    v0 = _within(v0, "v0", OTG_LIMIT_MAX)
    a0 = _within(a0, "a0", OTG_LIMIT_MAX)
    target = _within(target, "target", OTG_COORD_MAX)
    return plan_to_rest(target - p0, v0, a0, limits.max_velocity, limits.max_acceleration, limits.max_jerk)[1]


def _make_plan(
    p: float, v: float, a: float, target: float, segs: Segments, duration: float, peak: float
) -> OtgPlan:
    pairs = tuple((segs[k], segs[k + 1]) for k in range(0, len(segs), 2) if segs[k] > 0.0)
    return OtgPlan(p, v, a, target, pairs, duration, peak)


class Otg:
    """Online trajectory generator for one axis.

    `position` is the starting commanded position, also the initial target; the axis starts at rest unless
    `velocity` / `acceleration` say otherwise (a state beyond the limits is brought back within them first,
    never with more than max_jerk). Non-finite numbers, a position or target beyond +-5e8 and a velocity
    or acceleration beyond +-1e9 raise ValueError.

    Each step follows the time-optimal plan from the current state to rest at the latest target. After a step
    that only followed the plan, what is left of it is the time-optimal plan from the new state (the tail of
    a time-optimal trajectory is time-optimal), so it is kept rather than searched for again; a new target or
    a re-anchoring plans afresh.
    """

    __slots__ = ("_p", "_v", "_a", "_x", "_vmax", "_amax", "_jmax", "_limits", "_plan", "_peak")

    def __init__(
        self, position: float, limits: OtgLimits, *, velocity: float = 0.0, acceleration: float = 0.0
    ) -> None:
        self._limits = _check_limits(limits)
        self._vmax = limits.max_velocity
        self._amax = limits.max_acceleration
        self._jmax = limits.max_jerk
        self._p = _within(position, "position", OTG_COORD_MAX)
        self._v = _within(velocity, "velocity", OTG_LIMIT_MAX)
        self._a = _within(acceleration, "acceleration", OTG_LIMIT_MAX)
        self._x = self._p
        self._plan: Plan | None = None  # valid for the current state and target
        self._peak: float | None = None  # last peak velocity, a starting guess for the next search

    @property
    def limits(self) -> OtgLimits:
        return self._limits

    @property
    def position(self) -> float:
        return self._p

    @property
    def velocity(self) -> float:
        return self._v

    @property
    def acceleration(self) -> float:
        return self._a

    @property
    def target(self) -> float:
        return self._x

    @property
    def at_target(self) -> bool:
        """True once landed: position equals the target exactly and velocity and acceleration are zero."""
        return self._p == self._x and self._v == 0.0 and self._a == 0.0

    def set_target(self, target: float) -> None:
        """Aim at a new target from the next step on. A non-finite one, or one beyond +-5e8, raises ValueError
        (nothing changes)."""
        x = _within(target, "target", OTG_COORD_MAX)
        if x != self._x:
            self._x = x
            self._plan = None
            self._peak = None  # a guess for the old target only

    def set_position(self, position: float) -> None:
        """Re-anchor the commanded position (e.g. on the robot's echo of it) and re-plan from there.

        Velocity and acceleration are kept; an echo equal to the position changes nothing. A non-finite
        position, or one beyond +-5e8, raises ValueError (nothing changes).
        """
        p = _within(position, "position", OTG_COORD_MAX)
        if p != self._p:
            self._p = p
            self._plan = None

    def _current(self) -> Plan:
        plan = self._plan
        if plan is None:
            plan = plan_to_rest(
                self._x - self._p, self._v, self._a, self._vmax, self._amax, self._jmax, self._peak
            )
            self._plan = plan
            self._peak = plan[2]
        return plan

    def plan(self) -> OtgPlan:
        """The plan the next step will follow from the current state (its duration is the time to land)."""
        return _make_plan(self._p, self._v, self._a, self._x, *self._current())

    def step(self, dt: float) -> float:
        """Advance one cycle of dt seconds and return the new position.

        A dt that is not finite and > 0 (0, negative, NaN, inf) changes nothing.
        """
        p = self._p
        if not _valid_dt(dt):
            return p
        dt = float(dt)  # a numpy float32 step would carry single precision into every later state
        x = self._x
        if p == x and self._v == 0.0 and self._a == 0.0:
            return p
        segs, duration, peak = self._current()
        if duration <= dt:
            # The plan ends within this cycle: land exactly, so the hold that follows is bit-exact.
            self._p = x
            self._v = 0.0
            self._a = 0.0
            self._plan = _EMPTY
            return x
        self._p, self._v, self._a, rest, left = follow(segs, dt, p, self._v, self._a)
        self._plan = (rest, left, peak)
        return self._p


def _vector(values: npt.ArrayLike, n: int | None, name: str, bound: float = OTG_COORD_MAX) -> list[float]:
    """`values` as a list of n (any n if None) finite floats within +-bound; ValueError otherwise."""
    try:
        arr = np.asarray(values, dtype=float)
    except OverflowError:  # an int beyond any float: no finite number
        raise ValueError(f"{name} must be finite, got {values!r}") from None
    if arr.ndim != 1 or arr.size == 0:
        raise ValueError(f"{name} must be a non-empty 1-D sequence, got shape {arr.shape}")
    if n is not None and arr.size != n:
        raise ValueError(f"{name} must have {n} values, got {arr.size}")
    out: list[float] = arr.tolist()
    # A scalar loop over a handful of axes is cheaper than np.isfinite and a reduction.
    for x in out:
        if not isfinite(x):
            raise ValueError(f"{name} must be finite, got {values!r}")
        if not -bound <= x <= bound:
            raise ValueError(f"{name} must be within +-{bound:g}, got {x!r}")
    return out


class MultiOtg:
    """Online trajectory generators for n axes, optionally synchronised.

    `limits` is one OtgLimits for every axis or a sequence of one per axis. When `synchronized`, the axes that
    could land sooner are stretched to the slowest axis's duration by lowering their peak velocity, so they
    arrive together (to 1e-7 of the duration), and a move from rest whose components are equal in magnitude
    (under equal limits) is a straight line. Other directions are not straight: a lowered peak keeps the full
    acceleration and jerk, so a shorter axis runs ahead early and behind late. An axis braking onto its
    target has no peak to lower and keeps its own minimum duration; so does an axis for which lowering the
    peak cannot reach the common duration (a few moving states). An axis at rest on a target that did not
    change never moves.

    Plans are kept between steps as in Otg; any new target or set_position re-plans every axis. A
    synchronised re-plan searches in full only the axes that may be the slowest (near it last time, and
    whose cheap upper bound of their minimum duration says so); the others are stretched straight from
    their previous peaks, to the plans the full search and stretch would give (to the stretch's
    tolerance). Vectors are returned as new numpy arrays; non-finite, out-of-range (as for Otg) or wrongly
    sized inputs raise ValueError.
    """

    def __init__(
        self,
        positions: npt.ArrayLike,
        limits: OtgLimits | Sequence[OtgLimits],
        synchronized: bool = True,
        *,
        velocities: Sequence[float] | None = None,
        accelerations: Sequence[float] | None = None,
    ) -> None:
        self._p = _vector(positions, None, "positions")
        n = len(self._p)
        self._n = n
        if isinstance(limits, OtgLimits):
            per_axis = [limits] * n
        else:
            per_axis = [_check_limits(lim) for lim in limits]
            if len(per_axis) != n:
                raise ValueError(f"limits must have {n} entries, got {len(per_axis)}")
        self._limits = tuple(per_axis)
        self._vmax = [lim.max_velocity for lim in per_axis]
        self._amax = [lim.max_acceleration for lim in per_axis]
        self._jmax = [lim.max_jerk for lim in per_axis]
        # What the warm planning needs of each axis's limits alone, computed once here, not per re-plan.
        self._k: list[Axis] = [
            axis_constants(lim.max_velocity, lim.max_acceleration, lim.max_jerk) for lim in per_axis
        ]
        self._v = [0.0] * n if velocities is None else _vector(velocities, n, "velocities", OTG_LIMIT_MAX)
        self._a = (
            [0.0] * n if accelerations is None else _vector(accelerations, n, "accelerations", OTG_LIMIT_MAX)
        )
        self._x = list(self._p)
        self._sync = bool(synchronized)
        self._plans: list[Plan] | None = None  # per axis, valid for the current state and targets
        # Per axis, what is left of its plan's first segment once a cycle has ended inside it, or -1.0 where
        # the plan's own first segment is (so following a plan need not rebuild its segments every cycle).
        self._first: list[float] = [-1.0] * n
        # own time-optimal peaks, starting guesses for the next search; stretched peaks, likewise
        self._peaks: list[float | None] = [None] * n
        self._stretched: list[float | None] = [None] * n
        # Every axis's peak in the last planning, where the next synchronised one starts (see _synced_warm).
        self._warm: list[float] = [0.0] * n
        # Per axis, by what fraction of the slowest duration its own fell short when last known (0: unknown).
        self._slack: list[float] = [0.0] * n

    @property
    def n_axes(self) -> int:
        return self._n

    @property
    def synchronized(self) -> bool:
        return self._sync

    @property
    def limits(self) -> tuple[OtgLimits, ...]:
        return self._limits

    @property
    def position(self) -> np.ndarray:
        return np.array(self._p)

    @property
    def velocity(self) -> np.ndarray:
        return np.array(self._v)

    @property
    def acceleration(self) -> np.ndarray:
        return np.array(self._a)

    @property
    def position_floats(self) -> list[float]:
        """The positions as a new list of floats (what `position` holds, without the array)."""
        return list(self._p)

    @property
    def target(self) -> np.ndarray:
        return np.array(self._x)

    @property
    def at_target(self) -> bool:
        """True once every axis has landed exactly on its target at rest."""
        for p, x, v, a in zip(self._p, self._x, self._v, self._a, strict=True):
            if p != x or v != 0.0 or a != 0.0:
                return False
        return True

    def set_target(self, targets: npt.ArrayLike) -> None:
        """Aim at new targets from the next step on; refused whole (ValueError) if any is non-finite or beyond
        +-5e8."""
        x = _vector(targets, self._n, "targets")
        if x != self._x:
            # The previous peaks are guesses for unchanged targets only; the common duration changes with
            # any target, so every stretched peak is stale.
            peaks, slack, p, xo = self._peaks, self._slack, self._p, self._x
            for i in range(self._n):
                d = x[i] - xo[i]
                if d != 0.0:
                    peaks[i] = None
                    # A change that is not small against what is left to travel says nothing of the slack.
                    e = xo[i] - p[i]
                    if (d if d >= 0.0 else -d) > (e if e >= 0.0 else -e):
                        slack[i] = 0.0
            self._stretched = [None] * self._n
            self._x = x
            self._plans = None

    def set_position(self, positions: npt.ArrayLike) -> None:
        """Re-anchor the commanded positions and re-plan from there; velocities and accelerations stay.

        An echo equal to the positions changes nothing; non-finite, beyond +-5e8 or wrongly sized input raises
        ValueError.
        """
        p = _vector(positions, self._n, "positions")
        if p != self._p:
            self._p = p
            self._plans = None

    def _current(self) -> list[Plan]:
        kept = self._plans
        if kept is not None:
            return kept
        plans = None
        if self._sync:
            plans = self._synced_warm()
            if plans is None:
                plans = self._synced_warm(every=True)
        if plans is None:
            # Unsynchronised, or a bound within rounding of a duration: plan every axis in full.
            plans = self._planned_cold()
        # Every peak: where the next synchronised planning starts its stretches.
        self._warm = [plan[2] for plan in plans]
        self._first = [-1.0] * self._n
        self._plans = plans
        return plans

    def _planned_cold(self) -> list[Plan]:
        """Every axis's time-optimal plan, then (synchronised) every faster axis stretched to the slowest."""
        n = self._n
        p, v, a, x = self._p, self._v, self._a, self._x
        vmax, amax, jmax = self._vmax, self._amax, self._jmax
        plans: list[Plan] = [_EMPTY] * n
        longest = 0.0
        for i in range(n):
            if p[i] == x[i] and v[i] == 0.0 and a[i] == 0.0:
                continue
            plan = plan_to_rest(x[i] - p[i], v[i], a[i], vmax[i], amax[i], jmax[i], self._peaks[i])
            self._peaks[i] = plan[2]
            plans[i] = plan
            if plan[1] > longest:
                longest = plan[1]
        if self._sync and longest > 0.0:
            for i in range(n):
                plans[i] = self._stretched_cold(i, plans[i], longest)
        return plans

    def _stretched_cold(self, i: int, plan: Plan, longest: float) -> Plan:
        """Axis i's plan stretched to `longest` where it is clearly faster and can be, else as it is."""
        _, duration, peak = plan
        # Only axes clearly faster than the slowest are stretched; a rounding-level gap is not worth it.
        if not 0.0 < duration < longest * (1.0 - 1e-12):
            return plan
        p, v, a = self._p[i], self._v[i], self._a[i]
        stretched = stretch_to(
            longest,
            self._x[i] - p,
            v,
            a,
            peak,
            duration,
            self._vmax[i],
            self._amax[i],
            self._jmax[i],
            self._stretched[i],
        )
        if stretched is None:
            return plan
        self._stretched[i] = stretched[2]
        return stretched

    def _synced_warm(self, every: bool = False) -> list[Plan] | None:
        """The synchronised plans of _planned_cold, to the stretch's tolerance, with fewer full searches.

        The slowest axis is looked for among the axes that were within 10 % of the slowest last time (or
        among every axis if `every`): each gets a cheap upper bound of its minimum duration (duration_bound),
        and the one of the largest bound is planned in full. The others are then stretched to its duration
        (see _stretched_warm), which also finds any slower one. None when no axis was looked at.
        """
        p, v, a, x = self._p, self._v, self._a, self._x
        vmax, amax, jmax, ks = self._vmax, self._amax, self._jmax, self._k
        slack = self._slack
        # (bound, axis, its peak, displacement, warm_constants) of every moving axis; bounds only where
        # needed.
        # The axes that may be the slowest (near) come first, by bound; then the others, last axis first.
        near: list[_Row] = []
        far: list[_Row] = []
        for i in range(self._n):
            dx = x[i] - p[i]
            if dx != 0.0 or v[i] != 0.0 or a[i] != 0.0:
                c = warm_constants_axis(v[i], a[i], ks[i])
                if c is None:
                    # searched in full first anyway: every other one needs its bound
                    near.append((_INF, i, 0.0, dx, c))
                elif every or slack[i] < 0.1:
                    near.append((0.0, i, 0.0, dx, c))
                else:
                    far.append((-1.0, i, 0.0, dx, c))
        if not near:
            return None if far else [_EMPTY] * self._n
        # One axis alone that may be the slowest is searched in full without a bound to choose it by.
        if len(near) > 1:
            for r, (_, i, _, dx, c) in enumerate(near):
                if c is not None:
                    ub, u = duration_bound_axis(dx, c, ks[i])
                    near[r] = (ub, i, u, dx, c)
            near.sort(reverse=True)
        far.reverse()
        rows = near + far
        ub, i, u, dx, c = rows[0]
        hint = self._peaks[i] or u or None
        if c is None:
            plan = plan_to_rest(dx, v[i], a[i], vmax[i], amax[i], jmax[i], hint)
        else:
            plan = plan_warm(dx, v[i], a[i], c, vmax[i], amax[i], jmax[i], hint)
        self._peaks[i] = plan[2]
        longest = plan[1]
        if not longest > 0.0:
            return None
        exact = {i: plan}
        return self._stretched_warm(rows, exact, longest)

    def _stretched_warm(self, rows: list[_Row], exact: dict[int, Plan], longest: float) -> list[Plan] | None:
        """_synced_warm's stretches; `exact` holds the axes planned in full, `longest` the longest of them.

        Every other axis is stretched from a guess of its peak (the last planning's, or its bound's) by
        stretch_warm, whose plan proves that axis no slower, and planned in full and stretched by stretch_to
        only where that finds nothing. An axis found slower that way becomes the longest and the stretches
        start again (from the peaks just found).
        """
        v, a = self._v, self._a
        vmax, amax, jmax, ks = self._vmax, self._amax, self._jmax, self._k
        warm, peaks, slack = self._warm, self._peaks, self._slack
        for _ in range(len(rows)):  # every pass ends or plans one more axis in full
            plans: list[Plan] = [_EMPTY] * self._n
            for ub, i, u, dx, c in rows:
                plan = exact.get(i)
                if plan is None and c is not None:
                    found = stretch_warm_axis(longest, dx, v[i], a[i], warm[i] or u, c, ks[i])
                    if found is not None:
                        plans[i] = found
                        warm[i] = self._stretched[i] = found[2]
                        if ub >= 0.0:
                            slack[i] = 1.0 - ub / longest
                        continue
                if plan is None:
                    if c is None:
                        plan = plan_to_rest(dx, v[i], a[i], vmax[i], amax[i], jmax[i], peaks[i])
                    else:
                        plan = plan_warm(dx, v[i], a[i], c, vmax[i], amax[i], jmax[i], peaks[i])
                    exact[i] = plan
                    peaks[i] = plan[2]
                if plan[1] > longest:
                    longest = plan[1]
                    break
                slack[i] = 1.0 - plan[1] / longest
                if c is not None and 0.0 < plan[1] < longest * (1.0 - 1e-12):
                    guess = warm[i] or plan[2]
                    found = stretch_warm_axis(longest, dx, v[i], a[i], guess, c, ks[i])
                    if found is not None:
                        plans[i] = found
                        warm[i] = self._stretched[i] = found[2]
                        continue
                plans[i] = self._stretched_cold(i, plan, longest)
            else:
                return plans
        return None

    def plan(self) -> tuple[OtgPlan, ...]:
        """Each axis's plan for the next step, synchronised; the longest duration is the time to land."""
        plans = self._current()
        out = []
        for i, (segs, duration, peak) in enumerate(plans):
            t = self._first[i]
            if t >= 0.0:
                segs = (t, *segs[1:])
            out.append(_make_plan(self._p[i], self._v[i], self._a[i], self._x[i], segs, duration, peak))
        return tuple(out)

    def step(self, dt: float) -> np.ndarray:
        """Advance every axis one cycle of dt seconds and return the new positions.

        A dt that is not finite and > 0 (0, negative, NaN, inf) changes nothing.
        """
        return np.array(self.step_floats(dt))

    def step_floats(self, dt: float) -> list[float]:
        """step() returning the new positions as a new list of floats."""
        # _valid_dt, inlined: this runs every cycle.
        try:
            ok = 0.0 < dt < _INF
        except TypeError:
            ok = False
        if not ok:
            return list(self._p)
        dt = float(dt)  # a numpy float32 step would carry single precision into every later state
        p, v, a, x = self._p, self._v, self._a, self._x
        plans = self._current()
        first = self._first
        for i in range(self._n):
            vi = v[i]
            ai = a[i]
            if vi == 0.0 and ai == 0.0 and p[i] == x[i]:
                continue
            segs, duration, peak = plans[i]
            if duration <= dt:
                # Land exactly (see Otg.step).
                p[i] = x[i]
                v[i] = a[i] = 0.0
                plans[i] = _EMPTY
                first[i] = -1.0
                continue
            t = first[i]
            if t < 0.0:
                t = segs[0]
            if t > dt:
                # The cycle ends inside the first segment: follow's arithmetic, without the call.
                j = segs[1]
                dj = dt * j  # 0.5 * dt * j is 0.5 * dj exactly: the same floats as follow's
                p[i] += dt * (vi + dt * (0.5 * ai + dj / 6.0))
                v[i] = vi + dt * (ai + 0.5 * dj)
                a[i] = ai + dj
                # What is left lasts dt less (to rounding; the landing test tolerates that). The segments
                # stay as they are: the first one's remainder is kept aside.
                first[i] = t - dt
                plans[i] = (segs, duration - dt, peak)
            else:
                if t != segs[0]:
                    segs = (t, *segs[1:])
                p[i], v[i], a[i], rest, left = follow(segs, dt, p[i], vi, ai)
                first[i] = -1.0
                plans[i] = (rest, left, peak)
        return list(p)
