"""What every streaming arm backend offers the layers above it (runs/ and cli/).

A backend (FAIRINO today: devices.fairino.client.FairinoArm, for a real controller and for the simulator
alike) implements `Arm`. Joint values are degrees, speeds deg/s, times seconds on the host monotonic clock
that was handed to the backend as `now` (so the run and the transport stamp on one clock). A backend that
runs on a clock of its own (a simulator in simulated time) offers it as its `clock` attribute, and every
run on that arm streams on it: `clock_of(arm)`.

Errors: `DeviceError` (the device refused or failed, exit 3) and `ConnectionLost` (the link went away) are
the package-wide classes of servotool.errors, re-exported here for the callers that import them from this
module.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from servotool.clock import Clock
from servotool.errors import ConnectionLost, DeviceError

JointRanges = tuple[tuple[float, float], ...]  # (lo, hi) in degrees, one pair per joint


@dataclass(frozen=True)
class StateFrame:
    """One state sample as received by the host.

    t: host receive time (s, the clock given to the backend); q: measured joints (deg);
    main_code / sub_code: the controller's fault latch (0, 0 when healthy); enabled: the drive is enabled;
    setpoint: the last setpoint the controller reports having taken (deg), when the stream carries it;
    device_time_s: the controller's own clock, when streamed.
    The fields below are None when the controller does not stream them:
    qd: measured joint speeds (deg/s); robot_state: the controller's motion state (FAIRINO: 1 stopped,
    2 moving, 3 paused, 4 hand-guided); cmd_num: the count of ServoJ commands the controller has taken;
    servo_active: the controller is in servo (streaming) mode, whoever put it there.
    """

    t: float
    q: tuple[float, ...]
    main_code: int = 0
    sub_code: int = 0
    enabled: bool = True
    setpoint: tuple[float, ...] | None = None
    device_time_s: float | None = None
    qd: tuple[float, ...] | None = None
    robot_state: int | None = None
    cmd_num: int | None = None
    servo_active: bool | None = None


@dataclass(frozen=True)
class Reply:
    """The controller's answer to one command, where the transport gives one (t: host receive time, s)."""

    t: float
    errcode: int
    command: str = "ServoJ"


@runtime_checkable
class Arm(Protocol):
    """A position-streamed arm (ServoJ style). Methods block at most for their documented timeouts; a lost
    link raises ConnectionLost from the next call, a refused command DeviceError."""

    url: str  # the device URL it was opened with
    model: str  # profile or model name, e.g. "fr3"
    simulated: bool  # a simulator answers (announced loudly by the CLI)
    n_joints: int
    joint_speed_limits: tuple[float, ...]  # deg/s per joint
    nominal_lag_ms: float | None  # the model's measured command-to-state lag L (ms), None when unknown

    @property
    def joint_ranges(self) -> JointRanges:
        """(lo, hi) per joint in degrees: what the controller reports where it does, else the model
        profile's datasheet ranges. A goal outside them is refused, never clamped."""
        ...

    def busy_reason(self) -> str | None:
        """Why another owner holds the arm, read from the state stream before enabling (another client
        streams ServoJ, the arm moves, the controller is in servo mode), or None when it is free. Blocks
        for at most a few state periods."""
        ...

    def enable(self, timeout_s: float = 5.0) -> None:
        """Enable the drives and wait out the enable window; DeviceError when refused or not in time."""
        ...

    def disable(self) -> int:
        """Disable the drives; returns the controller's code (not raised: part of every cleanup)."""
        ...

    def servo_start(self) -> int:
        """Enter servo (streaming) mode; returns the controller's code."""
        ...

    def servo_end(self) -> int:
        """Leave servo mode; returns the controller's code."""
        ...

    def servo_j(self, q: Sequence[float], cmd_period_s: float) -> Reply | None:
        """Send one setpoint (deg) with its command period (s); the Reply when the transport answers at once,
        else None (answers then come by replies()). ValueError for a wrong joint count or non-finite value."""
        ...

    def warm_up(self, q_hold: Sequence[float] | None = None, cmd_period_s: float = 0.01,
                timeout_s: float = 5.0) -> float:
        """Stream the held pose until the controller executes the stream; returns the seconds it took.
        DeviceError when it does not within timeout_s, on a fault, or if the arm moves away."""
        ...

    def poll_states(self) -> list[StateFrame]:
        """The state frames received since the last call, oldest first."""
        ...

    def latest_state(self) -> StateFrame | None:
        """The newest state frame, or None before the first one."""
        ...

    def replies(self) -> list[Reply]:
        """Command answers received since the last call (asynchronous transports)."""
        ...

    def reset_faults(self) -> int:
        """Clear latched faults; returns the controller's code."""
        ...

    def close(self) -> None:
        """Close every link (and stop a simulator behind it); idempotent, never raises."""
        ...


def clock_of(arm: object) -> Clock | None:
    """The clock `arm` runs on when it carries one (its optional `clock` attribute: a simulator in
    lock-step on a FakeClock), else None. A run on such an arm must take its time from this clock: on any
    other, the simulated arm would never move."""
    clock = getattr(arm, "clock", None)
    return clock if isinstance(clock, Clock) else None


__all__ = ["Arm", "clock_of", "ConnectionLost", "DeviceError", "JointRanges", "Reply", "StateFrame"]
