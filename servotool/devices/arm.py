"""What every streaming arm backend offers the layers above it (runs/ and cli/), in neutral terms.

A backend (one per family, under devices/<family>/, for a real controller and for its simulator alike)
implements `Arm`. Joint values are degrees, speeds deg/s, times seconds on the host monotonic clock that was
handed to the backend as `now` (so the run and the transport stamp on one clock).

The vocabulary is the same for every family: a latched fault is a `Fault` (the family's own codes, a short
name, a readable text; a healthy arm has none), the controller's motion state a `MotionState`, the answer
to a command a `Reply` (`SETPOINT` for the answer to a streamed setpoint). Each family decodes its own
codes into these in its folder; nothing above devices/ reads a family's raw codes.

What only some arms have is a small capability protocol, checked with isinstance (never probed by name):
`ReportsJointRanges`, `ReportsOwner`, `WarmsUp`, `HasWatchdog`, `HasStatePeriod`, `HasClock`,
`NamesCommands`, `PacedByDevice`, `RecordsSettings`, `EchoesSetpoints`. A backend that
runs on a clock of its own (a simulator in simulated time) offers it as its `clock` attribute, and every
run on that arm streams on it: `clock_of(arm)`. Every arm is a context manager: `with open_arm(url) as
arm:` closes it on the way out.

Errors: `DeviceError` (the device refused or failed, exit 3) and `ConnectionLost` (the link went away) are
the package-wide classes of servotool.errors, re-exported here for the callers that import them from this
module.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, Protocol, runtime_checkable

from servotool.clock import Clock
from servotool.errors import ConnectionLost, DeviceError

JointRanges = tuple[tuple[float, float], ...]  # (lo, hi) in degrees, one pair per joint

# how many codes a Fault carries at most: a family's code and sub-code (the columns of a run's CSV)
FAULT_CODE_COUNT = 2
HEALTHY_CODES: tuple[int, ...] = (0,) * FAULT_CODE_COUNT  # what the CSV records while no fault is latched


@dataclass(frozen=True)
class Fault:
    """A fault the controller latched, decoded by its family.

    codes: the family's own numbers for it, one or two whole numbers (a code and its sub-code; a family
    with named flags numbers them), recorded as they are in a run's CSV; name: short, the way the family's
    documentation names it (a code pair, a flag name); text: what it means, readable ("" when the family's
    table does not know it). Two faults are the same when their codes are.
    """

    codes: tuple[int, ...]
    name: str = field(compare=False)
    text: str = field(default="", compare=False)

    def __post_init__(self) -> None:
        codes = tuple(self.codes)
        if not 1 <= len(codes) <= FAULT_CODE_COUNT or not all(
            isinstance(c, int) and not isinstance(c, bool) for c in codes
        ):
            raise ValueError(f"a fault carries 1 to {FAULT_CODE_COUNT} whole numbers, not {self.codes!r}")
        object.__setattr__(self, "codes", codes)
        if not self.name:
            raise ValueError("a fault needs a name")

    @property
    def padded_codes(self) -> tuple[int, ...]:
        """The codes filled with 0 to FAULT_CODE_COUNT entries: what a run's CSV columns record."""
        return self.codes + (0,) * (FAULT_CODE_COUNT - len(self.codes))

    def __str__(self) -> str:
        return f"{self.name}: {self.text}" if self.text else self.name


def fault_codes(fault: Fault | None) -> tuple[int, ...]:
    """The codes a run's CSV records for a frame's fault: HEALTHY_CODES when there is none."""
    return HEALTHY_CODES if fault is None else fault.padded_codes


class MotionState(Enum):
    """What the controller says its arm is doing, whatever its family calls it.

    STOPPED: at rest and ready for commands; MOVING: executing motion (a program, a stream, a jog);
    PAUSED: a motion held, to be resumed; HAND_GUIDED: moved by hand (drag, freedrive, guiding);
    PROTECTIVE_STOP: halted by the controller's own safety reaction (a reflex, a protective or safeguard
    stop), needs a recovery before motion; EMERGENCY_STOP: halted by an emergency or user stop;
    RECOVERING: the controller's automatic error recovery is moving or preparing the arm;
    POWERED_OFF: the drives have no power (booting, powered off); UNKNOWN: reported, but not one of these.
    """

    STOPPED = "stopped"
    MOVING = "moving"
    PAUSED = "paused"
    HAND_GUIDED = "hand_guided"
    PROTECTIVE_STOP = "protective_stop"
    EMERGENCY_STOP = "emergency_stop"
    RECOVERING = "recovering"
    POWERED_OFF = "powered_off"
    UNKNOWN = "unknown"


@dataclass(frozen=True)
class StateFrame:
    """One state sample as received by the host.

    t: host receive time (s, the clock given to the backend); q: measured joints (deg);
    fault: the fault the controller has latched, None when healthy; enabled: the drive is enabled;
    setpoint: the last setpoint the controller reports having taken (deg), when the stream carries it;
    device_time_s: the controller's own clock, when streamed.
    The fields below are None when the controller does not stream them:
    qd: measured joint speeds (deg/s); motion: the controller's motion state; cmd_num: the count of
    streamed setpoints the controller has taken; servo_active: the controller is in streaming mode,
    whoever put it there; success_rate: the share (0..1) of the recent cycles' setpoints the controller
    received in time; extra: the other values of that cycle the controller streams, by the CSV column the
    arm names for each (ReportsStateColumns), numbers or short texts.
    """

    t: float
    q: tuple[float, ...]
    fault: Fault | None = None
    enabled: bool = True
    setpoint: tuple[float, ...] | None = None
    device_time_s: float | None = None
    qd: tuple[float, ...] | None = None
    motion: MotionState | None = None
    cmd_num: int | None = None
    servo_active: bool | None = None
    success_rate: float | None = None
    extra: Mapping[str, float | str] | None = None

    @property
    def codes(self) -> tuple[int, ...]:
        """The fault's codes as a run's CSV records them (HEALTHY_CODES when healthy)."""
        return fault_codes(self.fault)

    # read-only compatibility for the recorder's arm source until it reads `fault`: the CSV's two columns
    @property
    def main_code(self) -> int:
        return self.codes[0]

    @property
    def sub_code(self) -> int:
        return self.codes[1]


SETPOINT = "setpoint"  # Reply.command of the answer to a streamed setpoint


@dataclass(frozen=True)
class CommandNames:
    """How the device's own documentation names the calls behind Arm's methods, so that a run's notes
    quote what an operator finds in the controller's manual. The defaults are neutral words."""

    servo_start: str = "start streaming"
    servo_end: str = "end streaming"
    disable: str = "disable"
    reset_faults: str = "reset faults"


NEUTRAL_NAMES = CommandNames()


@dataclass(frozen=True)
class Reply:
    """The controller's answer to one command, where the transport gives one.

    t: host receive time (s); errcode: the controller's code (0: accepted); command: what it answers,
    SETPOINT for a streamed setpoint, else the device's own name of the command.
    """

    t: float
    errcode: int
    command: str = SETPOINT

    @property
    def to_setpoint(self) -> bool:
        """The answer to a streamed setpoint."""
        return self.command == SETPOINT


@runtime_checkable
class Arm(Protocol):
    """A position-streamed arm: setpoints streamed at a fixed command period, state frames streamed back.
    Methods block at most for their documented timeouts; a lost link raises ConnectionLost from the next
    call, a refused command DeviceError. A context manager: `__exit__` closes it."""

    url: str  # the device URL it was opened with
    model: str  # the family's profile or model name ("" or the family's name when the URL names none)
    simulated: bool  # a simulator answers (announced loudly by the CLI)
    n_joints: int
    joint_speed_limits: tuple[float, ...]  # deg/s per joint
    nominal_lag_ms: float | None  # the model's measured command-to-state lag L (ms), None when unknown

    def enable(self, timeout_s: float = 5.0) -> None:
        """Enable the drives and wait out the enable window; DeviceError when refused or not in time."""
        ...

    def disable(self) -> int:
        """Disable the drives; returns the controller's code (not raised: part of every cleanup)."""
        ...

    def servo_start(self) -> int:
        """Enter streaming mode; returns the controller's code."""
        ...

    def servo_end(self) -> int:
        """Leave streaming mode; returns the controller's code."""
        ...

    def servo_j(self, q: Sequence[float], cmd_period_s: float) -> Reply | None:
        """Send one setpoint (deg) with its command period (s); the Reply when the transport answers at once,
        else None (answers then come by replies()). ValueError for a wrong joint count or non-finite value."""
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

    def __enter__(self) -> Arm:
        """The arm itself."""
        ...

    def __exit__(self, *exc: object) -> None:
        """close()."""
        ...


# --- what only some arms have: check with isinstance ------------------------------------------------------


@runtime_checkable
class ReportsJointRanges(Protocol):
    """An arm that knows its joint ranges once open."""

    @property
    def joint_ranges(self) -> JointRanges:
        """(lo, hi) per joint in degrees: what the controller reports where it does, else the model's
        datasheet ranges. A goal outside them is refused, never clamped."""
        ...


@runtime_checkable
class ReportsOwner(Protocol):
    """An arm whose state tells whether someone else drives it."""

    def busy_reason(self) -> str | None:
        """Why another owner holds the arm, read from the state stream before enabling (another client
        streams setpoints, the arm moves, the controller is in streaming mode), or None when it is free.
        Blocks for at most a few state periods."""
        ...


@runtime_checkable
class EnablesCold(Protocol):
    """An arm with an enable window that can be enabled without waiting it out (a cold start streams
    inside the window on purpose)."""

    def enable_cold(self) -> None:
        """Enable and return at once, inside the enable window. DeviceError when refused."""
        ...


@runtime_checkable
class WarmsUp(Protocol):
    """An arm that can prove it executes a stream before a run starts (every arm a run drives)."""

    def warm_up(
        self, q_hold: Sequence[float] | None = None, cmd_period_s: float = 0.01, timeout_s: float = 5.0
    ) -> float:
        """Stream the held pose until the controller executes the stream; returns the seconds it took.
        DeviceError when it does not within timeout_s, on a fault, or if the arm moves away."""
        ...


@runtime_checkable
class StopsAfterPartialLoss(Protocol):
    """An arm whose link has channels that can fail apart (a command channel beside the setpoint and state
    channels): a lost link may leave the channels a braked stop needs."""

    def open_stop_channel(self) -> str | None:
        """After a lost link: where the setpoint and state channels still answer, let setpoints and state
        reads through from now on (nothing else) and say over what, in a few words; else None."""
        ...


@runtime_checkable
class HasWatchdog(Protocol):
    """An arm with a lost-link watchdog on its state stream."""

    @property
    def silence_s(self) -> float:
        """No readable state frame for this long (s) is a lost link."""
        ...


@runtime_checkable
class HasStatePeriod(Protocol):
    """An arm that asked its controller for a state period."""

    @property
    def state_period_s(self) -> float:
        """The state period asked for (s); what the controller keeps is measured by a run."""
        ...


@runtime_checkable
class HasClock(Protocol):
    """An arm that may run on a clock of its own (a simulator in lock-step on a FakeClock)."""

    clock: Clock | None


@runtime_checkable
class ReportsStateColumns(Protocol):
    """An arm whose state frames carry more per-cycle values (StateFrame.extra) than the common fields."""

    @property
    def state_columns(self) -> Mapping[str, str]:
        """The CSV column of each extra value, in order, and its unit (or what a text holds)."""
        ...


def state_columns_of(arm: object) -> Mapping[str, str]:
    """The extra per-cycle columns of the arm's state frames (ReportsStateColumns), else none."""
    return arm.state_columns if isinstance(arm, ReportsStateColumns) else {}


@runtime_checkable
class PacedByDevice(Protocol):
    """An arm whose controller sets the pace: every servo_j waits for the controller's next state cycle and
    answers it (the controller's own cycle, its state frames carrying the controller's time), so a run
    streams without sleeping: tick k is the k-th state cycle, and a cycle the host missed shows as a gap
    of two cycles or more in the controller's time."""

    @property
    def cycle_s(self) -> float:
        """The controller's cycle (s): the only command period a run on it may use."""
        ...


@runtime_checkable
class RecordsSettings(Protocol):
    """An arm that set (or was told to waive) something on its controller that a run's CSV header must
    record: thresholds it set explicitly, a check the user switched off."""

    def device_settings(self) -> dict[str, Any]:
        """Those settings by name, JSON-ready."""
        ...


@runtime_checkable
class EchoesSetpoints(Protocol):
    """An arm whose every state frame carries the controller's echo of the setpoint it executes
    (StateFrame.setpoint) and the share of recent setpoints it received (StateFrame.success_rate): a run
    records both with each frame."""

    @property
    def echoes_setpoints(self) -> bool:
        """True when the frames carry them."""
        ...


def echoes_setpoints(arm: object) -> bool:
    """The arm's state frames carry the setpoint echo and the success rate (EchoesSetpoints)."""
    return isinstance(arm, EchoesSetpoints) and arm.echoes_setpoints is True


def device_settings_of(arm: object) -> dict[str, Any]:
    """The arm's own settings to record (RecordsSettings), else {}."""
    return dict(arm.device_settings()) if isinstance(arm, RecordsSettings) else {}


@runtime_checkable
class NamesCommands(Protocol):
    """An arm whose calls have names of their own (CommandNames)."""

    command_names: CommandNames


def command_names(arm: object) -> CommandNames:
    """The arm's names of its calls (NamesCommands), else the neutral ones."""
    return arm.command_names if isinstance(arm, NamesCommands) else NEUTRAL_NAMES


def clock_of(arm: object) -> Clock | None:
    """The clock `arm` runs on when it carries one (HasClock, its `clock` a Clock: a simulator in lock-step
    on a FakeClock), else None. A run on such an arm must take its time from this clock: on any other, the
    simulated arm would never move."""
    if not isinstance(arm, HasClock):
        return None
    clock = arm.clock
    return clock if isinstance(clock, Clock) else None


def device_cycle_of(arm: object) -> float | None:
    """The controller's cycle (s) when the arm is paced by its device (PacedByDevice) and says it as a
    positive number, else None (the run paces itself on its clock)."""
    if not isinstance(arm, PacedByDevice):
        return None
    cycle = _seconds(arm.cycle_s)
    return cycle if cycle is not None and cycle > 0 else None


def _seconds(value: object) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def watchdog_of(arm: object) -> float | None:
    """The arm's lost-link watchdog (s) when it has one (HasWatchdog) and it is a number, else None."""
    return _seconds(arm.silence_s) if isinstance(arm, HasWatchdog) else None


def state_period_of(arm: object) -> float | None:
    """The state period the arm asked for (s) when it says (HasStatePeriod) as a number, else None."""
    return _seconds(arm.state_period_s) if isinstance(arm, HasStatePeriod) else None


__all__ = [
    "Arm",
    "EnablesCold",
    "CommandNames",
    "ConnectionLost",
    "DeviceError",
    "EchoesSetpoints",
    "FAULT_CODE_COUNT",
    "Fault",
    "HEALTHY_CODES",
    "HasClock",
    "HasStatePeriod",
    "HasWatchdog",
    "JointRanges",
    "MotionState",
    "NEUTRAL_NAMES",
    "NamesCommands",
    "PacedByDevice",
    "RecordsSettings",
    "Reply",
    "ReportsJointRanges",
    "ReportsOwner",
    "ReportsStateColumns",
    "SETPOINT",
    "StateFrame",
    "WarmsUp",
    "clock_of",
    "command_names",
    "device_cycle_of",
    "device_settings_of",
    "echoes_setpoints",
    "fault_codes",
    "state_columns_of",
    "state_period_of",
    "watchdog_of",
]
