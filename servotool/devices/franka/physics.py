"""The arm behind the simulator: a joint impedance controller modelled as dead time plus second-order joint
dynamics, and the robot's checks on every joint position command. Pure: no I/O, no clock.

One `step(q_c)` is one 1 ms cycle. q_d echoes the previous cycle's command; q follows the command `dead`
cycles late through a critically damped joint (omega_n, zeta of the profile), so on a ramp it trails q_c by
about 6.7 ms (Profile.ramp_lag_ms). A command that breaks a limit raises the reflex by libfranka's name:
the caller latches it.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass

from servotool.devices.franka.profiles import Profile

DT = 0.001
SUCCESS_WINDOW = 100  # cycles the success rate is measured over
MAX_MISSED = 20  # consecutive lost commands after which the robot gives up on the link


@dataclass
class Check:
    """A reflex the command raised: the flag's name and why."""

    name: str
    detail: str


class Joints:
    """The joint state and the last commands, for one motion."""

    def __init__(self, profile: Profile) -> None:
        self.profile = profile
        self.q = list(profile.q0)
        self.dq = [0.0] * len(self.q)
        self.q_d = list(self.q)
        self.dq_d = [0.0] * len(self.q)
        self.ddq_d = [0.0] * len(self.q)
        self._queue: deque[list[float]] = deque()
        self._outcomes: deque[bool] = deque(maxlen=SUCCESS_WINDOW)
        self.missed_in_row = 0

    def success_rate(self) -> float:
        # over the cycles of this motion while it is younger than the window: a fresh motion lost nothing
        return sum(self._outcomes) / len(self._outcomes) if self._outcomes else 0.0

    def start(self) -> None:
        """A motion starts from rest where the arm is: the command history is the current pose."""
        self.q_d = list(self.q)
        self.dq_d = [0.0] * len(self.q)
        self.ddq_d = [0.0] * len(self.q)
        self._queue = deque([list(self.q)] * self.profile.dead_cycles)
        self._outcomes.clear()
        self.missed_in_row = 0

    def check(self, q_c: Sequence[float], finished: bool) -> Check | None:
        """The robot's checks of one joint position command against the previous cycle's (libfranka's
        documented limits: position, velocity, acceleration, jerk; a finish needs a command at rest)."""
        m = self.profile.model
        # every packet is judged against the one before it on a 1 ms budget, however long ago that came:
        # after a lost packet, a step twice the size is a doubled velocity to the robot
        dt = DT
        for j, x in enumerate(q_c):
            if not m.q_min[j] <= x <= m.q_max[j]:
                return Check("joint_motion_generator_position_limits_violation", f"J{j + 1} at {x:.4f} rad")
        for j, x in enumerate(q_c):
            v = (x - self.q_d[j]) / dt
            a = (v - self.dq_d[j]) / dt
            jerk = (a - self.ddq_d[j]) / dt
            if abs(v) > m.dq[j]:
                name = "joint_motion_generator_velocity_limits_violation"
                if abs(self.dq_d[j]) < m.dq[j] and abs(a) > m.ddq[j] * 10:
                    name = "joint_motion_generator_velocity_discontinuity"
                return Check(name, f"J{j + 1} at {v:.3f} rad/s")
            if abs(a) > m.ddq[j]:
                name = (
                    "joint_motion_generator_acceleration_discontinuity"
                    if abs(jerk) > m.dddq[j]
                    else "joint_motion_generator_velocity_discontinuity"
                )
                return Check(name, f"J{j + 1} at {a:.2f} rad/s^2")
            if abs(jerk) > m.dddq[j]:
                return Check(
                    "joint_motion_generator_acceleration_discontinuity", f"J{j + 1} jerk {jerk:.0f} rad/s^3"
                )
            if finished and abs(v) > 1e-9:
                return Check(
                    "joint_motion_generator_velocity_discontinuity",
                    f"finish on a moving command (J{j + 1} at {v:.4f} rad/s)",
                )
        return None

    def accept(self, q_c: Sequence[float]) -> None:
        """The command of this cycle is taken: q_d, dq_d, ddq_d become it."""
        dt = DT
        v = [(x - self.q_d[j]) / dt for j, x in enumerate(q_c)]
        self.ddq_d = [(v[j] - self.dq_d[j]) / dt for j in range(len(v))]
        self.dq_d = v
        self.q_d = list(q_c)
        self._outcomes.append(True)
        self.missed_in_row = 0

    def miss(self) -> None:
        """No command came for this cycle: the last one holds."""
        self._outcomes.append(False)
        self.missed_in_row += 1

    def step(self) -> None:
        """One cycle of the joints toward the command `dead` cycles old."""
        self._queue.append(list(self.q_d))
        target = self._queue.popleft() if len(self._queue) > self.profile.dead_cycles else self.q_d
        wn, zeta = self.profile.omega_n, self.profile.zeta
        for j in range(len(self.q)):
            acc = wn * wn * (target[j] - self.q[j]) - 2.0 * zeta * wn * self.dq[j]
            self.dq[j] += acc * DT
            self.q[j] += self.dq[j] * DT
