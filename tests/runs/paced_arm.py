"""A 1 kHz position-streamed arm in lock-step, for run tests: the Franka simulator's joint physics and checks
(devices/franka/physics.py) behind the Arm protocol, in process, on a FakeClock.

Each servo_j is one state cycle: the robot judges the command that answered the previous state (a reflex by
its libfranka name when it breaks a limit), moves its joints one millisecond, and the state it sends (q, the
echo q_d of the command it took, its own time) is what the client reads; the setpoint then answers it.
`lose_states` are the calls before which the client misses 1-3 states (the robot runs those cycles with no
command: a measured period of 2-4 ms); `dead` freezes the joints (the arm does not follow).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

from servotool.clock import FakeClock
from servotool.devices.arm import Fault, MotionState, StateFrame
from servotool.devices.franka import codes
from servotool.devices.franka.physics import MAX_MISSED, Joints
from servotool.devices.franka.profiles import PROFILES
from servotool.errors import DeviceError

CYCLE_S = 0.001


class PacedArm:
    def __init__(
        self,
        profile: str = "franka-fr3",
        lose_states: Mapping[int, int] | None = None,
        dead_after_s: float | None = None,
    ) -> None:
        p = PROFILES[profile]
        self.url = f"sim:{profile}"
        self.model = p.model.name
        self.simulated = True
        self.n_joints = len(p.q0)
        self.joint_speed_limits = p.model.speeds_deg()
        self.joint_ranges = p.model.ranges_deg()
        self.nominal_lag_ms: float | None = 1.3
        self.clock = FakeClock()
        self.joints = Joints(p)
        self.mode = "Idle"
        self.reflex: str | None = None
        self.finished: bool | None = None  # the finish was taken (True) or refused (False)
        self.still_before_finish = 0  # identical commands the robot took in a row before the finish
        self.lose_states = dict(lose_states or {})
        self.dead_after_s = dead_after_s
        self._calls = 0
        self._pending: tuple[list[float], bool] | None = None
        self._last_taken: list[float] | None = None
        self._unread: list[StateFrame] = []
        self._latest = self._state()

    # -- the robot ---------------------------------------------------------------------------------------

    def _state(self) -> StateFrame:
        fault = None
        if self.reflex is not None:
            fault = Fault((codes.ERROR_INDEX[self.reflex] + 1,), self.reflex)
        return StateFrame(
            self.clock.now(),
            tuple(math.degrees(x) for x in self.joints.q),
            fault=fault,
            setpoint=tuple(math.degrees(x) for x in self.joints.q_d),
            device_time_s=self.clock.now(),
            motion=MotionState(codes.MOTION_STATE_OF_MODE[self.mode]),
        )

    def _cycle(self) -> None:
        if self.mode == "Move":
            self._judge()
        if self.dead_after_s is None or self.clock.now() < self.dead_after_s:
            self.joints.step()
        self.clock.advance(CYCLE_S)

    def _judge(self) -> None:
        pending, self._pending = self._pending, None
        if pending is None:
            self.joints.miss()
            if self.joints.missed_in_row >= MAX_MISSED:
                self._raise("communication_constraints_violation")
            return
        q, finish = pending
        check = self.joints.check(q, finish)
        if check is not None:
            self._raise(check.name)
            if finish:
                self.finished = False
            return
        self.still_before_finish = self.still_before_finish + 1 if q == self._last_taken else 0
        self._last_taken = list(q)
        self.joints.accept(q)
        if finish:
            self.finished, self.mode = True, "Idle"

    def _raise(self, name: str) -> None:
        self.reflex, self.mode = name, "Reflex"
        self.joints.dq = [0.0] * self.n_joints
        self.joints.q_d = list(self.joints.q)

    def _read(self, cycles: int = 1) -> StateFrame:
        for _ in range(cycles):
            self._cycle()
        frame = self._state()
        self._unread.append(frame)
        self._latest = frame
        return frame

    # -- the Arm protocol ----------------------------------------------------------------------------------

    def enable(self, timeout_s: float = 5.0) -> None:
        if self.mode != "Idle":
            raise DeviceError(f"{self.url}: robot_mode is {self.mode}, not Idle")

    def disable(self) -> int:
        return 0

    def servo_start(self) -> int:
        self.mode = "Move"
        self.joints.start()
        return 0

    def warm_up(
        self, q_hold: Sequence[float] | None = None, cmd_period_s: float = 0.001, timeout_s: float = 5.0
    ) -> float:
        for _ in range(5):
            self.servo_j(list(q_hold) if q_hold is not None else list(self._latest.q), cmd_period_s)
        return 0.005

    def servo_j(self, q: Sequence[float], cmd_period_s: float = CYCLE_S) -> None:
        if self.mode != "Move":
            raise DeviceError(f"{self.url}: no motion runs (robot_mode {self.mode})")
        self._calls += 1
        self._read(1 + self.lose_states.get(self._calls, 0))
        self._pending = ([math.radians(x) for x in q], False)

    def servo_end(self) -> int:
        if self.mode != "Move" or self._last_taken is None:
            return 0
        q = self._pending[0] if self._pending is not None else self._last_taken
        self._read()
        self._pending = (q, True)
        self._read()
        return 0 if self.finished else 1

    def poll_states(self) -> list[StateFrame]:
        if not self._unread and self.mode != "Move":
            self._read()
        frames, self._unread = self._unread, []
        return frames

    def latest_state(self) -> StateFrame | None:
        return self._latest

    def replies(self) -> list[object]:
        return []

    def reset_faults(self) -> int:
        self.reflex, self.mode = None, "Idle"
        return 0

    def close(self) -> None:
        pass

    def __enter__(self) -> PacedArm:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
