"""The two stream shapers behind one interface, so a run can choose either at the wire.

* "accel": StreamShaper, acceleration-bounded (velocity and per-tick velocity change bounded; C1 at the wire).
* "otg":   the jerk-limited online trajectory generator (velocity, acceleration and jerk bounded; C2).

Both take a raw target per tick and return the next setpoint; both prime at a measured pose at rest,
expose the last setpoint's velocity (the divergence guard's allowance uses it), and refuse non-finite targets.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

from servotool.motion.backstop import RateBounds, RateLimiter
from servotool.motion.checks import all_finite, flat_floats
from servotool.motion.defaults import A_MAX_DEG_S2, J_MAX_DEG_S3, V_MAX_DEG_S
from servotool.motion.otg import MultiOtg, OtgLimits
from servotool.motion.shaper import ShaperNotPrimedError, StreamShaper

SHAPER_KINDS = ("accel", "otg")
# an echo this close to the command it echoes is that command (the rounding of a unit conversion)
ECHO_TOLERANCE = 1e-9


def _any_beyond(differences: list[float]) -> bool:
    """Some difference is beyond ECHO_TOLERANCE: np.any(np.abs(d) > ECHO_TOLERANCE) for the finite differences
    of finite commands and echoes (the only ones here), without a generator per call."""
    return max(map(abs, differences)) > ECHO_TOLERANCE


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
    """MultiOtg stepped one nominal tick per call, axes synchronised, with the same prime/step/velocity API as
    StreamShaper, under the three rules of a generator in a robot's command loop:

    1. Per-axis limits: with `norm_budget`, the bounds are one vector-norm budget over the axes (a Cartesian
       limit) and each axis gets 1/sqrt(n) of it, so n axes at their limits stay inside it.
    2. One nominal step per command (`dt`) whatever the measured period: a late cycle must not become a
       doubled increment on the wire. (`nominal_step=False` steps the period given to `observe` instead:
       the mistake, kept to show what it does.)
    3. With `reanchor`, the commanded position is re-anchored every cycle on the robot's echo of the last
       command (`observe(echo)`), velocity and acceleration kept, so that whatever runs behind the generator
       may shape one command but never accumulate a lag it plans against. `echo_lag` 1: the echo given is
       of the command before the last one (a loop whose state comes back inside the send), and the offset
       between it and that command is what moves the generator.

    `backstop` (motion.backstop.RateLimiter) limits every command after the generator; it is meant never to
    bind, and records by how much it did.

    Guarantees per tick and joint, of the generator's output: |v| <= v_max, |a| <= a_max, |jerk| <= j_max
    (divided by sqrt(n) under a norm budget); a static target is landed on exactly and held. Non-finite
    targets or a wrong joint count raise ValueError with the state unchanged.
    """

    def __init__(
        self,
        v_max: float,
        a_max: float,
        j_max: float,
        dt: float,
        n_joints: int | None = None,
        *,
        norm_budget: bool = False,
        nominal_step: bool = True,
        reanchor: bool = False,
        echo_lag: int = 0,
        backstop: RateLimiter | None = None,
    ) -> None:
        if echo_lag not in (0, 1):
            raise ValueError(f"echo_lag must be 0 or 1 commands, got {echo_lag!r}")
        if not (np.isfinite(dt) and dt > 0):
            raise ValueError(f"dt must be a positive number of seconds, got {dt!r}")
        self.budget = OtgLimits(v_max, a_max, j_max)
        self.limits = self.budget
        self.dt = float(dt)
        self.norm_budget = norm_budget
        self.nominal_step = nominal_step
        self.reanchor = reanchor
        self.echo_lag = echo_lag
        self.backstop = backstop
        self._n = n_joints
        self._otg: MultiOtg | None = None
        # per-tick state as plain floats: a scalar loop over a handful of axes beats numpy's reductions
        self._echo: list[float] | None = None
        self._period: float | None = None
        self._sent: deque[list[float]] = deque(maxlen=3)  # the last commands, newest last

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

    @property
    def at_target(self) -> bool:
        """Landed: every axis exactly on its target, at rest (False before prime)."""
        return self._otg is not None and self._otg.at_target

    @property
    def max_alteration(self) -> float | None:
        """The largest change the backstop made to a command (None without a backstop)."""
        return None if self.backstop is None else self.backstop.max_alteration

    def prime(self, q: npt.ArrayLike) -> None:
        pose = np.asarray(q, dtype=float).reshape(-1)
        if not np.all(np.isfinite(pose)):
            raise ValueError(f"primed pose must be finite, got {pose.tolist()}")
        if self._n is not None and pose.size != self._n:
            raise ValueError(f"primed pose has {pose.size} joints, expected {self._n}")
        self._n = pose.size
        self.limits = self.budget.per_axis_for_norm(pose.size) if self.norm_budget else self.budget
        self._otg = MultiOtg(pose, self.limits, synchronized=True)
        self._echo, self._period = None, None
        self._sent = deque([pose.tolist()] * 3, maxlen=3)
        if self.backstop is not None:
            self.backstop.prime(pose)

    def reset(self) -> None:
        self._otg = None

    def observe(self, echo: npt.ArrayLike | None, period_s: float | None = None) -> None:
        """What the robot said this cycle, before the next step: its echo of the last command it took
        (used under rule 3) and the measured period since the previous cycle (used only when nominal_step
        is off). Non-finite values are ignored."""
        if echo is not None:
            e = flat_floats(echo)
            self._echo = e if len(e) == self._n and all_finite(e) else None
        if period_s is not None and np.isfinite(period_s) and period_s > 0:
            self._period = float(period_s)

    def _step_dt(self) -> float:
        if self.nominal_step or self._period is None:
            return self.dt
        period, self._period = self._period, None
        return period

    def step(self, target: npt.ArrayLike) -> np.ndarray:
        if self._otg is None:
            raise ShaperNotPrimedError("step() before prime(): prime the shaper at the measured pose first")
        goal = flat_floats(target)
        if len(goal) != self._n:
            raise ValueError(f"target has {len(goal)} joints, expected {self._n}")
        if not all_finite(goal):
            raise ValueError(f"target must be finite, got {goal}")
        if self.reanchor:
            self._anchor(self._echo)
        self._echo = None
        self._otg.set_target(goal)
        out = self._otg.step_floats(self._step_dt())
        if self.backstop is not None:
            out = self.backstop.limit_floats(out)
        self._sent.append(out)
        return np.array(out)

    def _anchor(self, echo: list[float] | None) -> None:
        """Rule 3: the commanded position becomes what the robot took: the last command sent (after the
        backstop), moved by what the echo says the robot took differently (an echo `echo_lag` commands old
        is compared with the command it echoes). An offset within ECHO_TOLERANCE is a unit conversion's
        rounding, not a change; a position that moves by no more than that re-plans nothing. An echo of the
        command before is one the robot never received (it held the one before): not a change behind the
        generator, and the next command, absolute, replaces it."""
        assert self._otg is not None
        anchor = self._sent[-1]
        if echo is not None:
            took, before = self._sent[-1 - self.echo_lag], self._sent[-2 - self.echo_lag]
            offset = [e - s for e, s in zip(echo, took, strict=True)]
            # not lost: the echo is not of the command before (np.all(|echo - before| <= tolerance) fails)
            if _any_beyond(offset) and _any_beyond([e - s for e, s in zip(echo, before, strict=True)]):
                anchor = [x + d for x, d in zip(anchor, offset, strict=True)]
        position = self._otg.position_floats
        if _any_beyond([x - p for x, p in zip(anchor, position, strict=True)]):
            self._otg.set_position(anchor)


@dataclass(frozen=True)
class ShaperSpec:
    """A shaper's kind and limits (deg, s), as recorded in a run's header.

    The jerk-limited generator's rules (OtgStreamShaper): norm_budget (rule 1), nominal_step (rule 2),
    reanchor and echo_lag (rule 3); backstop: the (v, a, j) bounds of a rate-limiting backstop behind it
    (the robot's own limits), None for none. The accel shaper takes none of these.
    """

    kind: str = "accel"
    v_max: float = V_MAX_DEG_S
    a_max: float = A_MAX_DEG_S2
    j_max: float = J_MAX_DEG_S3
    dt: float = 0.01
    norm_budget: bool = False
    nominal_step: bool = True
    reanchor: bool = False
    echo_lag: int = 0
    backstop: tuple[float, float, float] | None = None

    def __post_init__(self) -> None:
        if self.kind not in SHAPER_KINDS:
            raise ValueError(f"unknown shaper {self.kind!r} (choose {' or '.join(SHAPER_KINDS)})")
        for name in ("v_max", "a_max", "j_max", "dt"):
            value = getattr(self, name)
            if not (np.isfinite(value) and value > 0):
                raise ValueError(f"shaper {name} must be a positive number, got {value!r}")
        if self.backstop is not None:
            RateBounds(*self.backstop)  # refuses a bound that is not a positive number

    def build(self, n_joints: int | None = None) -> StreamShaper | OtgStreamShaper:
        if self.kind == "otg":
            backstop = None
            if self.backstop is not None:
                backstop = RateLimiter(RateBounds(*self.backstop, norm=self.norm_budget), self.dt)
            return OtgStreamShaper(
                self.v_max,
                self.a_max,
                self.j_max,
                self.dt,
                n_joints,
                norm_budget=self.norm_budget,
                nominal_step=self.nominal_step,
                reanchor=self.reanchor,
                echo_lag=self.echo_lag,
                backstop=backstop,
            )
        return StreamShaper(self.v_max, self.a_max, self.dt, n_joints=n_joints)

    def as_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["backstop"] = list(self.backstop) if self.backstop is not None else None
        return d
