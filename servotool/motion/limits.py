"""Per-joint position limits that refuse, and never clamp.

A goal outside its joint's limits is refused with the reason, and nothing moves. Moving to the nearest
limit instead would hide the caller's mistake and put the arm somewhere nobody asked for, so this module
deliberately has no clamp.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Iterable, Mapping, Sequence

import numpy as np

__all__ = ["JointLimits"]


def _number(value: object) -> float | None:
    """value as a float, or None if it is not a real number (bools and numeric strings are not positions)."""
    if isinstance(value, (bool, np.bool_, str, bytes)):
        return None
    try:
        return float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None


def _fmt(x: float) -> str:
    return f"{x:g}"


class JointLimits:
    """Inclusive [lo, hi] limits per joint, in whatever unit the caller uses (degrees, pulses, ...).

    Built from a mapping {joint: (lo, hi)} (joints may be any hashable names: servo ids, "q1", ...) or from
    a sequence of (lo, hi) pairs, which names the joints 0..n-1. `unit` only decorates the reasons. Bounds
    must be finite with lo <= hi, otherwise ValueError.
    """

    def __init__(
        self,
        limits: Mapping[Hashable, tuple[float, float]] | Sequence[tuple[float, float]],
        unit: str = "",
    ) -> None:
        items = list(limits.items()) if isinstance(limits, Mapping) else list(enumerate(limits))
        if not items:
            raise ValueError("joint limits must name at least one joint")
        self._limits: dict[Hashable, tuple[float, float]] = {}
        for joint, pair in items:
            try:
                lo_raw, hi_raw = pair
            except (TypeError, ValueError):
                raise ValueError(f"limits of joint {joint!r} must be a (lo, hi) pair, got {pair!r}") from None
            lo, hi = _number(lo_raw), _number(hi_raw)
            if lo is None or hi is None or not (math.isfinite(lo) and math.isfinite(hi)):
                raise ValueError(f"limits of joint {joint!r} must be finite numbers, got {pair!r}")
            if lo > hi:
                raise ValueError(f"limits of joint {joint!r} have lo > hi: [{_fmt(lo)}, {_fmt(hi)}]")
            self._limits[joint] = (lo, hi)
        self.unit = unit
        self._indexed = isinstance(limits, Sequence) and not isinstance(limits, Mapping)

    @classmethod
    def from_bounds(
        cls,
        lo: Sequence[float],
        hi: Sequence[float],
        joints: Sequence[Hashable] | None = None,
        unit: str = "",
    ) -> JointLimits:
        """Limits from parallel lo and hi sequences, naming the joints `joints` (default 0..n-1)."""
        lo, hi = list(lo), list(hi)
        if len(lo) != len(hi):
            raise ValueError(f"{len(lo)} lower bounds but {len(hi)} upper bounds")
        if joints is None:
            return cls(list(zip(lo, hi, strict=True)), unit=unit)
        joints = list(joints)
        if len(joints) != len(lo):
            raise ValueError(f"{len(joints)} joint names for {len(lo)} pairs of bounds")
        return cls(dict(zip(joints, zip(lo, hi, strict=True), strict=True)), unit=unit)

    # -- queries ------------------------------------------------------------------------------------------

    @property
    def joints(self) -> tuple[Hashable, ...]:
        return tuple(self._limits)

    def __len__(self) -> int:
        return len(self._limits)

    def __contains__(self, joint: object) -> bool:
        return joint in self._limits

    def __getitem__(self, joint: Hashable) -> tuple[float, float]:
        return self._limits[joint]

    def as_dict(self) -> dict[Hashable, tuple[float, float]]:
        return dict(self._limits)

    def __repr__(self) -> str:
        unit = f", unit={self.unit!r}" if self.unit else ""
        return f"JointLimits({self._limits!r}{unit})"

    def _u(self) -> str:
        return f" {self.unit}" if self.unit else ""

    def _goal_items(self, goal: object) -> list[tuple[Hashable, object]] | str:
        if isinstance(goal, Mapping):
            if not goal:
                return "goal names no joints"
            return list(goal.items())
        if isinstance(goal, np.ndarray) and goal.ndim != 1:
            return f"goal must be one value per joint, got an array of shape {goal.shape}"
        if isinstance(goal, (str, bytes)):
            return f"goal must be a mapping {{joint: value}} or a sequence of values, got {goal!r}"
        try:
            values = list(goal)  # type: ignore[call-overload]
        except TypeError:
            return f"goal must be a mapping {{joint: value}} or a sequence of values, got {goal!r}"
        if not self._indexed:
            return "a goal given as a plain sequence needs limits given as a sequence: name the joints"
        if len(values) != len(self._limits):
            return f"goal has {len(values)} values but limits are set for {len(self._limits)} joints"
        return list(enumerate(values))

    def check(self, goal: Mapping[Hashable, float] | Sequence[float] | np.ndarray) -> str | None:
        """None when every joint of `goal` is inside its limits, else the reason it is refused.

        `goal` is a mapping {joint: value} (a partial goal naming only the joints that move is fine) or, for
        limits built from a sequence, a sequence with one value per joint. Refused, with the joint, the value
        and the limits in the reason: a joint with no limits configured, a value that is not a finite number,
        a value outside [lo, hi]. Nothing is ever clamped.
        """
        items = self._goal_items(goal)
        if isinstance(items, str):
            return items
        u = self._u()
        for joint, raw in items:
            if joint not in self._limits:
                return f"joint {joint!r} has no limits configured"
            value = _number(raw)
            if value is None or not math.isfinite(value):
                return f"joint {joint!r} goal {raw!r} is not a finite number"
            lo, hi = self._limits[joint]
            if not lo <= value <= hi:
                return f"joint {joint!r} goal {_fmt(value)}{u} outside limits [{_fmt(lo)}, {_fmt(hi)}]{u}"
        return None

    def check_path(self, samples: Iterable) -> str | None:
        """check() every sample of a path (an iterable of goals, or a 2-D array with one goal per row).

        Returns None when all are allowed, else the first refusal prefixed with the sample's index. An empty
        path is refused: there is nothing to validate, which is more likely a bug than a request.
        """
        count = 0
        for i, sample in enumerate(samples):
            count += 1
            reason = self.check(sample)
            if reason is not None:
                return f"sample {i}: {reason}"
        if count == 0:
            return "path has no samples"
        return None
