"""Minimum-jerk point-to-point moves and timed waypoint playback for bus servos, in whole pulses.

The minimum-jerk (quintic) profile s(u) = 10u^3 - 15u^4 + 6u^5, u in [0, 1], starts and stops with zero
velocity and acceleration, so a move neither jolts at the start nor at the end. Its peak speed is
1.875 * distance / duration, which gives the duration for a speed cap.

Servos take whole pulses, sampled every `period` (40 ms on the bus-servo arm). Rounding to whole pulses can
make one sample step one pulse longer than the smooth curve: with a cap of 240 pulses/s the curve moves at
most 9.6 pulses per 40 ms, and two roundings can turn 9.59 into a 10-pulse step. Moves here are therefore
timed against the effective cap floor(cap * period) / period (unchanged whenever cap * period is a whole
number, as for the arm's 250 pulses/s), which keeps every rounded step within cap * period.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Hashable, Iterable, Mapping, Sequence
from itertools import pairwise

from servotool.motion.checks import finite as _finite
from servotool.motion.checks import positive as _positive

__all__ = [
    "QUINTIC_PEAK",
    "Trajectory",
    "WaypointTrajectory",
    "duration_for",
    "effective_cap",
    "min_jerk",
    "round_pulse",
]

QUINTIC_PEAK = 1.875  # peak of ds/du, at u = 1/2


def min_jerk(u: float) -> float:
    """s(u) = 10u^3 - 15u^4 + 6u^5 with u clamped to [0, 1]: 0 at u <= 0, 1 at u >= 1, monotonic between."""
    u = min(1.0, max(0.0, float(u)))
    return u * u * u * (10.0 + u * (-15.0 + 6.0 * u))


def round_pulse(x: float) -> int:
    """Nearest whole pulse, halves rounding up (a shift by whole pulses shifts the result by exactly that)."""
    return math.floor(x + 0.5)


def duration_for(distance: float, max_speed: float, min_t: float = 0.2) -> float:
    """Duration (s) of a minimum-jerk move over `distance` whose peak speed stays <= max_speed:
    max(min_t, 1.875 * |distance| / max_speed). The min_t floor keeps tiny moves from being one jump.
    Refuses (ValueError) a non-finite distance, max_speed <= 0 and a negative min_t."""
    d = _finite(distance, "distance")
    cap = _positive(max_speed, "max_speed")
    floor_t = _finite(min_t, "min_t")
    if floor_t < 0:
        raise ValueError(f"min_t must be >= 0, got {min_t!r}")
    return max(floor_t, QUINTIC_PEAK * abs(d) / cap)


def effective_cap(max_speed: float, period: float) -> float:
    """The speed (pulses/s) to time moves against so that rounded samples `period` apart never step more than
    max(max_speed * period, 1) pulses: floor(max_speed * period) / period, or max_speed itself when
    max_speed * period < 1 (no smooth move then steps more than one pulse). Never above max_speed."""
    cap = _positive(max_speed, "max_speed")
    h = _positive(period, "period")
    whole = math.floor(cap * h + 1e-9)  # 250 pulses/s * 0.04 s must count as 10, not 9.999...
    if whole < 1:
        return cap
    return min(cap, whole / h)


def _pose(value: object, name: str) -> dict[Hashable, float]:
    if not isinstance(value, Mapping):
        raise ValueError(f"{name} must be a mapping {{joint: pulse}}, got {type(value).__name__}")
    return {k: _finite(v, f"{name} joint {k!r}") for k, v in value.items()}


def _common_start(
    start: Mapping[Hashable, float], joints: Iterable[Hashable], what: str
) -> dict[Hashable, float]:
    pose = _pose(start, "start")
    missing = [k for k in joints if k not in pose]
    if missing:
        raise ValueError(f"start has no position for {what} joint(s) {missing!r}")
    return {k: pose[k] for k in joints}


class Trajectory:
    """A minimum-jerk move of several joints from `start` to `goal` ({joint: pulse}), starting at time t0 (s).

    All joints follow the same curve and arrive together; the joint with the longest distance sets the
    duration T = max(min_t, 1.875 * max|goal - start| / effective_cap(max_speed, period)). Guarantees: the
    smooth peak speed 1.875 * distance / T of every joint is <= max_speed (pulses/s), and at(t) and
    at(t + period) never differ by more than max(max_speed * period, 1) pulses on any joint, for any t,
    after rounding to whole pulses. at(t) is `start` before t0 and exactly round(goal) from t0 + T on.

    `start` may hold more joints than `goal` (the others do not move). Refuses (ValueError) an empty goal, a
    goal joint missing from start, non-finite values, max_speed or period <= 0, and a non-finite t0.
    """

    def __init__(
        self,
        start: Mapping[Hashable, float],
        goal: Mapping[Hashable, float],
        max_speed: float,
        t0: float = 0.0,
        *,
        period: float = 0.04,
        min_t: float = 0.2,
    ) -> None:
        goal_pose = _pose(goal, "goal")
        if not goal_pose:
            raise ValueError("goal names no joints")
        self.goal = goal_pose
        self.start = _common_start(start, goal_pose, "goal")
        self.max_speed = _positive(max_speed, "max_speed")
        self.period = _positive(period, "period")
        self.t0 = _finite(t0, "t0")
        self.distance = max(abs(self.goal[k] - self.start[k]) for k in self.goal)
        self.T = duration_for(self.distance, effective_cap(self.max_speed, self.period), min_t)

    @property
    def peak_speed(self) -> float:
        """Peak speed of the smooth curve of the longest joint (pulses/s), <= max_speed."""
        return QUINTIC_PEAK * self.distance / self.T

    def at(self, t: float) -> dict[Hashable, int]:
        """Pose at time t, in whole pulses."""
        s = min_jerk((t - self.t0) / self.T)
        return {k: round_pulse(self.start[k] + (self.goal[k] - self.start[k]) * s) for k in self.goal}

    def done(self, t: float) -> bool:
        return t - self.t0 >= self.T

    def sample_times(self, period: float | None = None) -> list[float]:
        """t0, t0 + period, ... up to the first time at or after the end of the move."""
        h = self.period if period is None else _positive(period, "period")
        n = math.ceil(self.T / h - 1e-9)
        return [self.t0 + k * h for k in range(n + 1)]

    def samples(self, period: float | None = None) -> list[dict[Hashable, int]]:
        """The poses at sample_times(period) (default: the period the move was timed for); the last is the
        goal. Use these to check a move against limits or a collision model before streaming it."""
        return [self.at(t) for t in self.sample_times(period)] if self.T > 0 else [self.at(self.t0)]


class WaypointTrajectory:
    """Playback of timed waypoints, linear in pulses between them, starting from `start` at time t0.

    `points` is a sequence of (t, {joint: pulse}) with t in seconds from the start, finite, > 0 and strictly
    increasing; every point names the same joints, and `start` must hold them all. If any segment is faster
    than effective_cap(max_speed, period), the WHOLE timeline is stretched by `scale` (>= 1) so that none is:
    a fast path becomes slower, it is never refused for speed. As for Trajectory, rounded samples `period`
    apart then never step more than max(max_speed * period, 1) pulses.

    Refuses (ValueError) no points, an empty or mismatched pose, non-finite values, non-increasing times,
    max_speed or period <= 0.
    """

    def __init__(
        self,
        start: Mapping[Hashable, float],
        points: Sequence[tuple[float, Mapping[Hashable, float]]],
        max_speed: float,
        t0: float = 0.0,
        *,
        period: float = 0.04,
    ) -> None:
        points = list(points)
        if not points:
            raise ValueError("a waypoint trajectory needs at least one point")
        self.max_speed = _positive(max_speed, "max_speed")
        self.period = _positive(period, "period")
        self.t0 = _finite(t0, "t0")
        parsed: list[tuple[float, dict[Hashable, float]]] = []
        joints: tuple[Hashable, ...] = ()
        last_t = 0.0
        for i, item in enumerate(points):
            try:
                t_raw, pose_raw = item
            except (TypeError, ValueError):
                raise ValueError(f"point {i} must be a (t, pose) pair, got {item!r}") from None
            t = _finite(t_raw, f"point {i} time")
            pose = _pose(pose_raw, f"point {i}")
            if not pose:
                raise ValueError(f"point {i} names no joints")
            if i == 0:
                joints = tuple(pose)
            elif set(pose) != set(joints):
                raise ValueError(
                    f"point {i} names joints {sorted(map(repr, pose))}, point 0 names "
                    f"{sorted(map(repr, joints))}"
                )
            if t <= last_t:
                raise ValueError(f"point {i} time {t:g} s is not after the previous one ({last_t:g} s)")
            parsed.append((t, pose))
            last_t = t
        pts = [(0.0, _common_start(start, joints, "waypoint")), *parsed]
        cap = effective_cap(self.max_speed, self.period)
        fastest = max(max(abs(b[k] - a[k]) for k in joints) / (tb - ta) for (ta, a), (tb, b) in pairwise(pts))
        self.scale = max(1.0, fastest / cap)
        self.points: tuple[tuple[float, dict[Hashable, float]], ...] = tuple(
            (t * self.scale, p) for t, p in pts
        )
        self._times = [t for t, _ in self.points]
        self.start = self.points[0][1]
        self.goal = self.points[-1][1]
        self.T = self.points[-1][0]

    def at(self, t: float) -> dict[Hashable, int]:
        """Pose at time t, in whole pulses: the start before t0, the last waypoint from t0 + T on."""
        s = t - self.t0
        if s <= 0:
            return {k: round_pulse(v) for k, v in self.start.items()}
        if s >= self.T:
            return {k: round_pulse(v) for k, v in self.goal.items()}
        i = bisect.bisect_right(self._times, s)
        (ta, a), (tb, b) = self.points[i - 1], self.points[i]
        f = (s - ta) / (tb - ta)
        return {k: round_pulse(a[k] + (b[k] - a[k]) * f) for k in b}

    def done(self, t: float) -> bool:
        return t - self.t0 >= self.T

    def samples(self) -> list[dict[Hashable, int]]:
        """Every waypoint (the start first) and each segment's midpoint between them, in path order, in
        whole pulses: the poses to check against limits or a collision model before playback."""
        out = [{k: round_pulse(v) for k, v in self.start.items()}]
        for (_, a), (_, b) in pairwise(self.points):
            out.append({k: round_pulse((a[k] + b[k]) / 2.0) for k in b})
            out.append({k: round_pulse(v) for k, v in b.items()})
        return out
