"""The two stream shapers behind one interface, so a run can choose either at the wire.

* "accel": StreamShaper, acceleration-bounded (velocity and per-tick velocity change bounded; C1 at the wire).
* "otg":   the jerk-limited online trajectory generator (velocity, acceleration and jerk bounded; C2).

Both take a raw target per tick and return the next setpoint; both prime at a measured pose at rest,
expose the last setpoint's velocity (the divergence guard's allowance uses it), and refuse non-finite targets.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Protocol

import numpy as np

from servotool.motion.defaults import A_MAX_DEG_S2, J_MAX_DEG_S3, V_MAX_DEG_S
from servotool.motion.otg import MultiOtg, OtgLimits
from servotool.motion.shaper import ShaperNotPrimedError, StreamShaper

SHAPER_KINDS = ("accel", "otg")


class Shaper(Protocol):
    @property
    def velocity(self) -> np.ndarray | None: ...
    @property
    def position(self) -> np.ndarray | None: ...
    @property
    def primed(self) -> bool: ...
    def prime(self, q: Sequence[float]) -> None: ...
    def step(self, target: Sequence[float]) -> np.ndarray: ...
    def reset(self) -> None: ...


class OtgStreamShaper:
    """MultiOtg stepped one nominal tick per call (never the measured period: a late tick must not become a
    doubled increment on the wire), axes synchronised, with the same prime/step/velocity API as StreamShaper.

    Guarantees per tick and joint: |v| <= v_max, |a| <= a_max, |jerk| <= j_max; a static target is landed on
    exactly and held. Non-finite targets or a wrong joint count raise ValueError with the state unchanged.
    """

    def __init__(
        self, v_max: float, a_max: float, j_max: float, dt: float, n_joints: int | None = None
    ) -> None:
        if not (np.isfinite(dt) and dt > 0):
            raise ValueError(f"dt must be a positive number of seconds, got {dt!r}")
        self.limits = OtgLimits(v_max, a_max, j_max)
        self.dt = float(dt)
        self._n = n_joints
        self._otg: MultiOtg | None = None
        self._v_last: np.ndarray | None = None

    @property
    def primed(self) -> bool:
        return self._otg is not None

    @property
    def position(self) -> np.ndarray | None:
        return None if self._otg is None else self._otg.position

    @property
    def velocity(self) -> np.ndarray | None:
        return None if self._otg is None else self._otg.velocity

    @property
    def acceleration(self) -> np.ndarray | None:
        return None if self._otg is None else self._otg.acceleration

    def prime(self, q: Sequence[float]) -> None:
        pose = np.asarray(q, dtype=float).reshape(-1)
        if not np.all(np.isfinite(pose)):
            raise ValueError(f"primed pose must be finite, got {pose.tolist()}")
        if self._n is not None and pose.size != self._n:
            raise ValueError(f"primed pose has {pose.size} joints, expected {self._n}")
        self._n = pose.size
        self._otg = MultiOtg(pose, self.limits, synchronized=True)

    def reset(self) -> None:
        self._otg = None

    def step(self, target: Sequence[float]) -> np.ndarray:
        if self._otg is None:
            raise ShaperNotPrimedError("step() before prime(): prime the shaper at the measured pose first")
        goal = np.asarray(target, dtype=float).reshape(-1)
        if goal.size != self._n:
            raise ValueError(f"target has {goal.size} joints, expected {self._n}")
        if not np.all(np.isfinite(goal)):
            raise ValueError(f"target must be finite, got {goal.tolist()}")
        self._otg.set_target(goal)
        return self._otg.step(self.dt)


@dataclass(frozen=True)
class ShaperSpec:
    """A shaper's kind and limits (deg, s), as recorded in a run's header."""

    kind: str = "accel"
    v_max: float = V_MAX_DEG_S
    a_max: float = A_MAX_DEG_S2
    j_max: float = J_MAX_DEG_S3
    dt: float = 0.01

    def __post_init__(self) -> None:
        if self.kind not in SHAPER_KINDS:
            raise ValueError(f"unknown shaper {self.kind!r} (choose {' or '.join(SHAPER_KINDS)})")
        for name in ("v_max", "a_max", "j_max", "dt"):
            value = getattr(self, name)
            if not (np.isfinite(value) and value > 0):
                raise ValueError(f"shaper {name} must be a positive number, got {value!r}")

    def build(self, n_joints: int | None = None) -> StreamShaper | OtgStreamShaper:
        if self.kind == "otg":
            return OtgStreamShaper(self.v_max, self.a_max, self.j_max, self.dt, n_joints)
        return StreamShaper(self.v_max, self.a_max, self.dt, n_joints=n_joints)

    def as_dict(self) -> dict[str, float | str]:
        return asdict(self)
