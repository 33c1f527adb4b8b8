"""What every streaming arm backend offers the layers above it (runs/ and cli/).

A backend (FAIRINO today) implements `Arm`. Joint values are degrees, times are seconds on the host monotonic
clock that was handed to the backend as `now` (so the run and the transport stamp on one clock).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable


class DeviceError(RuntimeError):
    """A device failed in a way the run must stop for (lost link, refused command, timeout)."""


class ConnectionLost(DeviceError):
    """The link to the device went away; raised within 100 ms of the loss, never a hang."""


@dataclass(frozen=True)
class StateFrame:
    """One state sample as received by the host.

    t: host receive time (s, the clock given to the backend); q: measured joints (deg);
    main_code / sub_code: the controller's fault latch (0, 0 when healthy); enabled: the drive is enabled;
    setpoint: the last setpoint the controller reports having taken (deg), when the stream carries it.
    """

    t: float
    q: tuple[float, ...]
    main_code: int = 0
    sub_code: int = 0
    enabled: bool = True
    setpoint: tuple[float, ...] | None = None
    device_time_s: float | None = None


@dataclass(frozen=True)
class Reply:
    """The controller's answer to one command, where the transport gives one (t: host receive time, s)."""

    t: float
    errcode: int
    command: str = "ServoJ"


@runtime_checkable
class Arm(Protocol):
    """A position-streamed arm (ServoJ style). Methods block at most for their documented timeouts."""

    url: str
    model: str  # profile or model name, e.g. "fr3"
    simulated: bool
    n_joints: int
    joint_speed_limits: tuple[float, ...]  # deg/s per joint

    def enable(self, timeout_s: float = 5.0) -> None: ...
    def disable(self) -> None: ...
    def servo_start(self) -> int: ...
    def servo_end(self) -> int: ...
    def servo_j(self, q: Sequence[float], cmd_period_s: float) -> Reply | None: ...
    def poll_states(self) -> list[StateFrame]: ...
    def latest_state(self) -> StateFrame | None: ...
    def replies(self) -> list[Reply]: ...
    def reset_faults(self) -> int: ...
    def close(self) -> None: ...
