"""What a position servo bus offers the layers above it (runs/bus/servo.py, runs/bus/sweep.py and cli/).

Each bus family implements `Bus`, and the small capability protocols below where its servos have them
(runs test them with isinstance, never by probing attributes). Positions are whole servo units (the
family's facts name them and give the range), durations milliseconds, voltages mV, temperatures deg C.
Every read returns None when the servo does not answer (never raises for one silent servo); commands raise
`servotool.errors.DeviceError` when the link itself fails. A bus is a context manager: `with` closes it.

Nothing in this protocol can write servo EEPROM: limits are read only, ids and offsets are never set.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from errno import EACCES, EPERM
from typing import Any, Protocol, runtime_checkable

from servotool.clock import Clock, MonotonicClock


@dataclass(frozen=True)
class ServoRecord:
    """One servo's state as read: None where the servo did not answer."""

    servo_id: int
    position: int | None
    voltage_mv: int | None = None
    temperature_c: int | None = None
    torque: bool | None = None
    mode: int | None = None  # Operating Mode where the bus has one (where the bus has modes), else None
    mode_name: str | None = None  # its name: "position", "velocity", ...

    @property
    def silent(self) -> bool:
        return self.position is None


@runtime_checkable
class Bus(Protocol):
    """A bus of position servos. Methods block at most for the backend's documented read timeout."""

    @property
    def url(self) -> str:
        """The device URL it was opened with."""
        ...

    @property
    def simulated(self) -> bool:
        """True when a simulator answers (announced loudly by the CLI)."""
        ...

    @property
    def model(self) -> str:
        """Profile or model name (the `sim:` profile, or the model the URL names)."""
        ...

    @property
    def ids(self) -> tuple[int, ...]:
        """Every servo id of the arm, joints first."""
        ...

    @property
    def optional_ids(self) -> tuple[int, ...]:
        """Servos that may go silent without stopping the arm (a claw); the others are joints."""
        ...

    @property
    def position_range(self) -> tuple[int, int]:
        """(lo, hi) of any position command the bus accepts, in servo units."""
        ...

    @property
    def last_position(self) -> Mapping[int, int]:
        """The last position each servo answered with (a silent servo keeps its last known one)."""
        ...

    def read_position(self, servo_id: int) -> int | None:
        """Position in servo units (signed), None if silent."""
        ...

    def read_voltage(self, servo_id: int) -> int | None:
        """Supply at the servo in mV, None if silent."""
        ...

    def read_temperature(self, servo_id: int) -> int | None:
        """Temperature in deg C, None if silent."""
        ...

    def read_torque(self, servo_id: int) -> bool | None:
        """True when the motor is powered (holding), None if silent."""
        ...

    def read_stored_limits(self, servo_id: int) -> tuple[int, int] | None:
        """The (lo, hi) position limit held in the servo (read only), None if silent."""
        ...

    def read_pose(self, ids: Iterable[int] | None = None) -> dict[int, int | None]:
        """Positions of the given servos (all by default); silent ones are None."""
        ...

    def move(self, targets: Mapping[int, int], duration_ms: int) -> None:
        """Every servo of `targets` to its position within duration_ms. ValueError outside position_range."""
        ...

    def hold(self, ids: Iterable[int] | None = None) -> None:
        """Stop the servos where they are (all by default); they keep torque on."""
        ...

    def torque_on(self, servo_id: int) -> None:
        """Power one servo's motor (it holds where it is)."""
        ...

    def torque_off(self, servo_id: int) -> None:
        """Switch one servo's motor off: a joint that carries weight drops."""
        ...

    def sync(self, timeout_s: float = 2.0) -> None:
        """Simulated bus: wait until the device has taken every frame written so far (real bus: no-op)."""
        ...

    def close(self) -> None:
        """Close the link (and stop a simulator behind it); idempotent."""
        ...

    def __enter__(self) -> Bus:
        """The bus itself."""
        ...

    def __exit__(self, *exc: Any) -> None:
        """Close the bus (see close)."""
        ...


@runtime_checkable
class ClockedBus(Protocol):
    """A bus that keeps a time base of its own: a `clock=sim` simulator runs on a FakeClock it follows in
    lock-step, so a run on the bus must keep that clock."""

    @property
    def clock(self) -> Clock:
        """The time base a run on this bus keeps."""
        ...


@runtime_checkable
class SimSnapshotBus(Protocol):
    """A bus whose simulator can say where it is, as `sim:` URL parameters (a simulated arm's pose is kept
    from one command to the next)."""

    def sim_snapshot(self) -> dict[str, str]:
        """The simulator's state as URL parameters ({} on a real bus)."""
        ...


@runtime_checkable
class CountingBus(Protocol):
    """A bus whose link counts what it went through (frames, replies, retries, timeouts, bad frames)."""

    @property
    def stats(self) -> Any:
        """The link's counters: a dataclass of whole numbers."""
        ...


@runtime_checkable
class LatchingBus(Protocol):
    """A bus whose servos latch hardware errors: a latched servo keeps its torque off until a
    REBOOT, so a goal sent to it goes nowhere."""

    def hardware_latches(self, ids: Iterable[int]) -> dict[int, str]:
        """Servos among `ids` that answer with a latched hardware error, each with its bits in words
        ("0x20 OVERLOAD"). Read only; a silent servo is not in it."""
        ...


@runtime_checkable
class TorqueGatedBus(Protocol):
    """A bus whose servos take a goal without moving while their torque is off; a board whose move frame
    powers the servo is not one."""

    def unpowered(self, ids: Iterable[int]) -> list[int]:
        """Servos among `ids` that answer with torque off. Read only; a silent servo is not in it."""
        ...


@runtime_checkable
class PoseAtOnceBus(Protocol):
    """A bus that reads the positions of many servos in one exchange (a sync read): a silent servo costs
    one timeout for all of them, so a move can read every moving servo after each frame."""

    def read_pose_at_once(self, ids: Iterable[int]) -> dict[int, int | None]:
        """Positions of `ids` in one exchange (None where a servo did not answer); last_position kept."""
        ...


@runtime_checkable
class GoalKeepingBus(Protocol):
    """A bus whose servos keep the last goal they took while they do not answer (the line lost, the servo
    still powered): one that answers again goes on to that goal unless it is overwritten first."""

    def overwrite_goal(self, servo_id: int) -> int | None:
        """If the servo answers: its goal set to the position it reads now, in RAM (never EEPROM), and that
        position returned once the servo acknowledged the write; None while it does not answer."""
        ...


@runtime_checkable
class ModeCheckedBus(Protocol):
    """A bus whose servos have an Operating Mode: servotool powers and moves only those in
    position control mode."""

    def require_position_mode(self, ids: Iterable[int]) -> None:
        """Refused (nothing written) unless every servo among `ids` answers in position control mode. Read
        only: the mode is never changed."""
        ...

    def read_operating_modes(self, ids: Iterable[int] | None = None) -> dict[int, int | None]:
        """Each servo's Operating Mode (all by default), None where it did not answer. Read only."""
        ...

    def mode_name(self, mode: int) -> str:
        """What a mode value is called ("position", "velocity", ...; "unknown" for none the servos have)."""
        ...


def read_records(bus: Bus, ids: Iterable[int] | None = None) -> dict[int, ServoRecord]:
    """Position, voltage, temperature and torque of each servo (all by default), and its Operating Mode on a
    bus that has one (one read for all that answered). A servo that does not answer its position read is not
    asked the rest (it is silent) and reads as all None. Read only."""
    out: dict[int, ServoRecord] = {}
    for sid in bus.ids if ids is None else ids:
        pos = bus.read_position(sid)
        if pos is None:
            out[sid] = ServoRecord(sid, None)
            continue
        out[sid] = ServoRecord(
            sid, pos, bus.read_voltage(sid), bus.read_temperature(sid), bus.read_torque(sid)
        )
    if isinstance(bus, ModeCheckedBus):
        modes = bus.read_operating_modes([sid for sid, r in out.items() if not r.silent])
        for sid, mode in modes.items():
            if mode is not None:
                out[sid] = dataclasses.replace(out[sid], mode=mode, mode_name=bus.mode_name(mode))
    return out


def bus_clock(bus: Bus) -> Clock:
    """The time base a run on this bus keeps: the bus's own when it has one (a `clock=sim` simulator runs on
    a FakeClock it follows in lock-step), else the host's."""
    clock = bus.clock if isinstance(bus, ClockedBus) else None
    return clock if isinstance(clock, Clock) else MonotonicClock()


# a serial port's device node belongs to the dialout group on most Linux systems
DIALOUT_HINT = ": add yourself to the dialout group: sudo usermod -aG dialout $USER, then log in again"


def port_problem(exc: BaseException) -> str:
    """Why a serial port could not be opened or failed, in a few words: the system's reason for an error
    that carries an errno ("No such file or directory", "Permission denied"; pyserial wraps it in a sentence
    that names the port and the errno twice), else the error's own text. A permission error says what to do
    about it (the dialout group)."""
    errno = getattr(exc, "errno", None)
    if errno is None and len(exc.args) == 2 and isinstance(exc.args[0], int):
        errno = exc.args[0]  # termios.error (a vanished tty) carries (errno, text) without an errno field
    if isinstance(errno, int) and errno > 0:
        return os.strerror(errno) + (DIALOUT_HINT if errno in (EACCES, EPERM) else "")
    text = str(exc) or type(exc).__name__
    # pyserial's "could not open port ...: [Errno 13] Permission denied" may come without an errno field
    return text + (DIALOUT_HINT if "Permission denied" in text else "")
