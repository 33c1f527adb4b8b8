"""The DYNAMIXEL bus client: dynamixel-sdk (PortHandler, PacketHandler 2.0, GroupSyncRead/Write) on a serial
port, a real one or the simulator's pty.

URLs (query keys the client takes: baud, ids, profile, latency_ms; a `sim:` URL passes every other key to
the simulator). latency_ms is the serial adapter's latency (dynamixel-sdk's 16 ms by default; 1 suits an
FTDI adapter set to 1 ms): an answer that has not come 2 x latency_ms + 2 ms after its bytes' time is
given up.

* ``dxl:///dev/ttyUSB0?baud=1000000&ids=10-14,20-24,30-33`` a real bus (ids as lists and ranges; without
  ids, the profile's, else whoever answers a broadcast ping at open);
* ``sim:microduck[?overload=12@5.0&silent=22&seed=3]`` the simulator, started on a pty in a background
  thread and opened with this same client; closing the client stops it. ``clock=sim`` runs it on simulated
  time: the bus's `clock` is a FakeClock the simulator follows in lock-step (``clock=host``, the default:
  real time).

Guarantees:
* one silent or garbled servo never raises: sweeps return a per-axis "no answer" marker (`answered=False`,
  values None) and carry on with the others; a missed status packet costs at most one packet timeout
  (2 x latency_ms + 2 ms plus the bytes' time) per sweep;
* `ConnectionLost` (a `DeviceError`, exit 3) only when the port itself fails (unplugged, closed);
* nothing writes the EEPROM area (addresses below 64): every write goes through one check that refuses it
  before a byte is sent, whatever the caller asks;
* REBOOT is sent only by `reboot()`, which nothing in servotool's recording path calls.
"""

from __future__ import annotations

import contextlib
import math
import re
import select
import termios
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import serial
from dynamixel_sdk import (
    COMM_RX_TIMEOUT,
    COMM_SUCCESS,
    GroupSyncRead,
    GroupSyncWrite,
    PacketHandler,
    PortHandler,
)

from servotool.clock import Clock, MonotonicClock
from servotool.devices import trace
from servotool.devices.bus import Bus, port_problem
from servotool.devices.dynamixel import control_table as ct
from servotool.devices.dynamixel.control_table import MAX_ID
from servotool.devices.dynamixel.profiles import DxlProfile, get_profile
from servotool.devices.dynamixel.sim import DxlSim, PtyDxlServer, start_sim
from servotool.devices.registry import DeviceURL, DeviceURLError
from servotool.devices.serial_family import SerialOpener
from servotool.errors import ConnectionLost, DeviceError, Refused
from servotool.io.sim_ptys import served_by

DEFAULT_BAUD = 1_000_000
CLIENT_KEYS = ("baud", "ids", "profile", "latency_ms")
DEFAULT_LATENCY_MS = 16.0  # dynamixel-sdk's latency timer: a missing answer is given up after 2x this + 2 ms
POLL_S = 0.0005  # how long an empty read waits for bytes instead of spinning
SIM_ANSWER_S = 2.0  # the longest a simulated bus is waited for before dynamixel-sdk's own timeout starts
PKT_ID, PKT_ERROR, PKT_DATA = 4, 8, 9  # offsets in a status packet as dynamixel-sdk returns it


class DxlWriteRefused(Refused, ValueError):
    """A write servotool never sends: an EEPROM address, a read-only field, or a value out of range."""


class DxlModeRefused(Refused):
    """A servo of the command is not in position control mode (or did not answer the mode read): nothing was
    written to any servo of the command (exit 2)."""


class DxlSdkError(DeviceError):
    """dynamixel-sdk could not send an instruction (port busy or packet refused) although the port is up."""


# --- what a sweep returns -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class AxisTelemetry:
    """One servo's telemetry span (126-146) from one sweep. All values None when it did not answer.

    current_ma: Present Current (mA, signed); velocity_rpm / velocity_trajectory_rpm: rev/min (signed);
    position / position_trajectory: pulses (4096 a turn); gap = position_trajectory - position (pulses, the
    lag behind the servo's own profile, rising under load); voltage_v: Present Input Voltage (V);
    temperature_c: deg C; alert: the status packet's Alert bit (a hardware error is latched).
    """

    axis: int
    answered: bool
    current_ma: float | None = None
    velocity_rpm: float | None = None
    position: int | None = None
    velocity_trajectory_rpm: float | None = None
    position_trajectory: int | None = None
    gap: int | None = None
    voltage_v: float | None = None
    temperature_c: int | None = None
    alert: bool | None = None


@dataclass(frozen=True)
class TelemetryFrame:
    """One sweep of the telemetry span across axes. t_sent / t: host clock when the sync read was sent and
    when its last answer arrived (or the wait ended), seconds on the Clock given to the bus."""

    t_sent: float
    t: float
    axes: Mapping[int, AxisTelemetry]

    @property
    def silent(self) -> tuple[int, ...]:
        """Axes that did not answer this sweep."""
        return tuple(sid for sid, a in self.axes.items() if not a.answered)

    def __getitem__(self, axis: int) -> AxisTelemetry:
        return self.axes[axis]


@dataclass(frozen=True)
class ErrorSweep:
    """One read of Hardware Error Status (70) across axes: bits per axis, None where the axis did not
    answer (silence is no evidence of recovery)."""

    t_sent: float
    t: float
    status: Mapping[int, int | None]

    @property
    def latched(self) -> dict[int, int]:
        """Axes that answered with a non-zero status, and their bits."""
        return {sid: bits for sid, bits in self.status.items() if bits}

    @property
    def silent(self) -> tuple[int, ...]:
        return tuple(sid for sid, bits in self.status.items() if bits is None)


@dataclass
class DxlBusStats:
    packets_sent: int = 0
    answers: int = 0
    no_answer: int = 0  # an expected status packet that never came (or came garbled)
    corrupt: int = 0  # status packets dynamixel-sdk rejected (CRC, truncated)
    refused: int = 0  # answers with a non-zero error number


_TRACE = trace.logger("dynamixel")  # the SDK's packets at debug level (devices.trace)


class _Port(PortHandler):
    """dynamixel-sdk's PortHandler, counting packets written and waiting briefly for bytes instead of
    spinning (dynamixel-sdk polls a non-blocking port in a tight loop)."""

    def __init__(self, port_name: str, latency_ms: float = DEFAULT_LATENCY_MS) -> None:
        super().__init__(port_name)
        self.packets_written = 0
        self.after_write: Callable[[], None] | None = None
        self.latency_ms = latency_ms

    def setPacketTimeout(self, packet_length: int) -> None:  # noqa: N802
        # dynamixel-sdk's formula with the latency timer per port instead of its module constant
        self.packet_start_time = self.getCurrentTime()
        self.packet_timeout = self.tx_time_per_byte * packet_length + 2.0 * self.latency_ms + 2.0

    def writePort(self, packet: Any) -> int:  # noqa: N802 (dynamixel-sdk's name)
        if _TRACE.isEnabledFor(trace.DEBUG):
            trace.frame(_TRACE, "tx", packet)
        written = int(super().writePort(packet))
        self.packets_written += 1
        if self.after_write is not None:
            self.after_write()
        return written

    def readPort(self, length: int) -> bytes:  # noqa: N802
        data = bytes(self.ser.read(length))
        if data and _TRACE.isEnabledFor(trace.DEBUG):
            trace.frame(_TRACE, "rx", data)
        if not data:
            fileno = getattr(self.ser, "fileno", None)
            if fileno is not None:
                select.select([fileno()], [], [], POLL_S)
        return data


def _data(packet: list[int], length: int) -> bytes | None:
    data = bytes(packet[PKT_DATA : PKT_DATA + length])
    return data if len(data) == length else None


class DxlBus:
    """A DYNAMIXEL Protocol 2.0 bus. Positions are pulses (0-4095 a turn), currents mA, voltages V."""

    def __init__(
        self,
        port: _Port,
        url: str,
        ids: Iterable[int],
        *,
        profile: DxlProfile | None = None,
        simulated: bool = False,
        server: PtyDxlServer | None = None,
        clock: Clock | None = None,
    ) -> None:
        self._port = port
        self._ph = PacketHandler(2.0)
        self._url = url
        self._ids = tuple(ids)
        self.profile = profile
        self._simulated = simulated
        self.server = server
        self.clock: Clock = clock or MonotonicClock()
        self.stats = DxlBusStats()
        self.silent: set[int] = set()
        self._last_position: dict[int, int] = {}
        self._position_mode: set[int] = set()  # servos read in position control mode (EEPROM: it stays)
        self._lock = threading.RLock()
        self._closed = False
        if server is not None:
            # the simulator shares the host's cores with the caller: its answers are waited for as a
            # condition (it has written them) before dynamixel-sdk's packet timeout starts, so a loaded
            # machine cannot turn a slow simulator thread into a silent servo
            port.after_write = self._await_sim

    # --- identity -------------------------------------------------------------------------------------------

    @property
    def url(self) -> str:
        return self._url

    @property
    def simulated(self) -> bool:
        return self._simulated

    @property
    def model(self) -> str:
        return self.profile.name if self.profile is not None else "dynamixel"

    @property
    def ids(self) -> tuple[int, ...]:
        return self._ids

    @property
    def optional_ids(self) -> tuple[int, ...]:
        return ()

    @property
    def groups(self) -> Mapping[str, tuple[int, ...]]:
        """Limb name -> ids from the profile (one group "all" without a profile)."""
        return self.profile.groups if self.profile is not None else {"all": self._ids}

    @property
    def position_range(self) -> tuple[int, int]:
        return ct.POSITION_RANGE

    @property
    def last_position(self) -> Mapping[int, int]:
        return self._last_position

    @property
    def sim(self) -> DxlSim | None:
        """The simulated bus behind a `sim:` URL (for fault injection and inspection), else None."""
        return self.server.sim if self.server is not None else None

    # --- transport ------------------------------------------------------------------------------------------

    @contextlib.contextmanager
    def _link(self) -> Iterator[None]:
        """Hold the bus; a port that fails underneath becomes ConnectionLost."""
        if self._closed:
            raise ConnectionLost(f"{self._url}: bus is closed")
        with self._lock:
            try:
                yield
            except (serial.SerialException, OSError, termios.error) as exc:
                # a vanished tty fails in pyserial's termios calls too
                self._port.is_using = False
                raise ConnectionLost(f"{self._url}: port lost ({port_problem(exc)})") from exc
            finally:
                self.stats.packets_sent = self._port.packets_written

    def _answer(self, sid: int, result: int, error: int) -> bool:
        """Book one unicast exchange; True when the servo answered without an error number."""
        if result != COMM_SUCCESS:
            self.stats.no_answer += 1
            self.silent.add(sid)
            return False
        self.stats.answers += 1
        self.silent.discard(sid)
        if error & 0x7F:
            self.stats.refused += 1
            return False
        return True

    def _collect(self, ids: tuple[int, ...], length: int) -> dict[int, tuple[int, bytes]]:
        """Status packets after a sync read, by id, until every id answered or the line stays quiet for one
        packet timeout. A garbled packet is skipped and the wait goes on for the rest."""
        pending = set(ids)
        out: dict[int, tuple[int, bytes]] = {}
        for _ in range(2 * len(ids) + 2):
            if not pending:
                break
            self._port.setPacketTimeout(length + 11)
            packet, result = self._ph.rxPacket(self._port, False)
            if result == COMM_RX_TIMEOUT:
                break
            if result != COMM_SUCCESS:
                self.stats.corrupt += 1
                continue
            sid = packet[PKT_ID]
            data = _data(packet, length)
            if sid in pending and data is not None:
                pending.discard(sid)
                out[sid] = (packet[PKT_ERROR], data)
        self._port.is_using = False
        self.stats.answers += len(out)
        self.stats.no_answer += len(pending)
        self.silent.difference_update(out)
        self.silent.update(pending)
        return out

    def _sync_read(
        self, ids: Iterable[int] | None, address: int, length: int
    ) -> tuple[float, float, tuple[int, ...], dict[int, tuple[int, bytes]]]:
        axes = tuple(self._ids if ids is None else ids)
        if not axes:
            now = self.clock.now()
            return now, now, axes, {}
        group = GroupSyncRead(self._port, self._ph, address, length)
        for sid in axes:
            group.addParam(sid)
        with self._link():
            t_sent = self.clock.now()
            result = group.txPacket()
            if result != COMM_SUCCESS:
                raise DxlSdkError(f"{self._url}: sync read not sent ({self._ph.getTxRxResult(result)})")
            answers = self._collect(axes, length)
            return t_sent, self.clock.now(), axes, answers

    # --- sweeps ---------------------------------------------------------------------------------------------

    def read_telemetry(self, ids: Iterable[int] | None = None) -> TelemetryFrame:
        """One sync read of the telemetry span (126-146, 21 bytes) across axes (all by default)."""
        t_sent, t, axes, answers = self._sync_read(ids, ct.TELEMETRY_START, ct.TELEMETRY_LENGTH)
        out: dict[int, AxisTelemetry] = {}
        for sid in axes:
            got = answers.get(sid)
            out[sid] = AxisTelemetry(sid, False) if got is None else _telemetry(sid, *got)
            if got is not None and out[sid].position is not None:
                self._last_position[sid] = int(out[sid].position or 0)
        return TelemetryFrame(t_sent, t, out)

    def read_hardware_errors(self, ids: Iterable[int] | None = None) -> ErrorSweep:
        """One sync read of Hardware Error Status (70, one byte) across axes (all by default)."""
        t_sent, t, axes, answers = self._sync_read(ids, ct.HARDWARE_ERROR_STATUS.address, 1)
        return ErrorSweep(t_sent, t, {sid: answers[sid][1][0] if sid in answers else None for sid in axes})

    def hardware_latches(self, ids: Iterable[int]) -> dict[int, str]:
        """Servos among `ids` answering with a non-zero Hardware Error Status, bits as "0x20 OVERLOAD"."""
        latched = self.read_hardware_errors(tuple(ids)).latched
        return {sid: f"0x{bits:02x} {ct.describe_hardware_error(bits)}" for sid, bits in latched.items()}

    def read_operating_modes(self, ids: Iterable[int] | None = None) -> dict[int, int | None]:
        """Operating Mode (11, EEPROM) of each servo (all by default), one sync read; None where a servo did
        not answer. Read only."""
        _, _, axes, answers = self._sync_read(ids, ct.OPERATING_MODE.address, 1)
        return {sid: answers[sid][1][0] if sid in answers else None for sid in axes}

    @staticmethod
    def mode_name(mode: int) -> str:
        """What an Operating Mode value is called ("position", "velocity", ...; "unknown" otherwise)."""
        return ct.OPERATING_MODES.get(mode, "unknown")

    def check_position_mode(self, ids: Iterable[int]) -> list[int]:
        """Read the Operating Mode of the servos among `ids` not yet seen in position control mode (3), and
        return those that did not answer. DxlModeRefused, naming every servo and its mode, when one answers
        in another mode: in velocity or PWM mode a servo turns at its Goal Velocity / Goal PWM as soon as
        torque is on, and in the multi-turn modes positions are not 0-4095. Read only: the mode is EEPROM,
        which servotool never writes."""
        unseen = [sid for sid in dict.fromkeys(ids) if sid not in self._position_mode]
        if not unseen:
            return []
        modes = self.read_operating_modes(unseen)
        self._position_mode.update(sid for sid, m in modes.items() if m == ct.POSITION_MODE)
        wrong = {sid: m for sid, m in modes.items() if m is not None and m != ct.POSITION_MODE}
        if wrong:
            named = ", ".join(
                f"servo {sid} in {ct.describe_operating_mode(m)} mode" for sid, m in wrong.items()
            )
            raise DxlModeRefused(
                f"{named}: servotool powers and moves servos in position (3) mode only "
                "and never changes the mode (EEPROM); nothing was written to any servo"
            )
        return [sid for sid, m in modes.items() if m is None]

    def require_position_mode(self, ids: Iterable[int]) -> None:
        """check_position_mode, with a servo that did not answer refused too (its mode is unknown)."""
        silent = self.check_position_mode(ids)
        if silent:
            raise DxlModeRefused(
                f"servo {', '.join(map(str, silent))} not answering the Operating Mode "
                "read: mode unknown, nothing was written to any servo (check the cable)"
            )

    def _gate(self, reg: ct.Register, values: Mapping[int, int]) -> None:
        """A goal, or Torque Enable on, goes only to servos read in position mode (check_position_mode)."""
        if reg in ct.GOALS or (reg is ct.TORQUE_ENABLE and any(values.values())):
            self.require_position_mode(sid for sid, v in values.items() if reg in ct.GOALS or v)

    # --- single registers -----------------------------------------------------------------------------------

    def read(self, axis: int, field_: str | int | ct.Register) -> int | None:
        """One field of one servo (any area: reads are harmless), None when it does not answer."""
        reg = field_ if isinstance(field_, ct.Register) else ct.register(field_)
        with self._link():
            data, result, error = self._ph.readTxRx(self._port, axis, reg.address, reg.size)
        if not self._answer(axis, result, error) or len(data) != reg.size:
            return None
        return ct.decode_value(reg, bytes(data))

    def _checked(self, field_: str | int | ct.Register, value: int) -> tuple[ct.Register, bytes]:
        reg = field_ if isinstance(field_, ct.Register) else ct.register(field_)
        if reg.address < ct.RAM_START:
            raise DxlWriteRefused(
                f"{reg.name} ({reg.address}) is in the EEPROM area: servotool never writes servo EEPROM"
            )
        if not reg.writable:
            raise DxlWriteRefused(f"{reg.name} ({reg.address}) is read-only")
        try:
            return reg, ct.encode_value(reg, value)
        except ValueError as exc:
            raise DxlWriteRefused(str(exc)) from None

    @staticmethod
    def _addressable(ids: Iterable[int]) -> None:
        """DxlWriteRefused unless every id is one servo's (0-MAX_ID): 254 is the broadcast id, and a write
        or REBOOT sent to it reaches every servo on the line."""
        bad = [sid for sid in ids if type(sid) is not int or not 0 <= sid <= MAX_ID]
        if bad:
            raise DxlWriteRefused(
                f"servo id {', '.join(map(str, bad))} outside 0-{MAX_ID} (254 is the "
                "broadcast id): nothing sent"
            )

    def write(self, axis: int, field_: str | int | ct.Register, value: int) -> bool:
        """Write one RAM field of one servo and wait for its answer. True when accepted; False when it did
        not answer or answered with an error. DxlWriteRefused (nothing sent) for an id outside 0-MAX_ID
        (the broadcast id), an EEPROM address, a read-only field or a value that does not fit."""
        self._addressable((axis,))
        reg, raw = self._checked(field_, value)
        self._gate(reg, {axis: value})
        with self._link():
            result, error = self._ph.writeTxRx(self._port, axis, reg.address, reg.size, list(raw))
        return self._answer(axis, result, error)

    def write_many(self, field_: str | int | ct.Register, values: Mapping[int, int]) -> None:
        """One SYNC WRITE of a RAM field to several servos (no answers come back). DxlWriteRefused as
        write()."""
        self._addressable(values)
        checked = {sid: self._checked(field_, v) for sid, v in values.items()}
        if not checked:
            return
        reg = next(iter(checked.values()))[0]
        self._gate(reg, values)
        group = GroupSyncWrite(self._port, self._ph, reg.address, reg.size)
        for sid, (_, raw) in checked.items():
            group.addParam(sid, list(raw))
        with self._link():
            result = group.txPacket()
        if result != COMM_SUCCESS:
            raise DxlSdkError(f"{self._url}: sync write not sent ({self._ph.getTxRxResult(result)})")

    def set_torque(self, ids: Iterable[int] | None, on: bool) -> dict[int, bool]:
        """Torque Enable on or off, servo by servo with their answers: True where accepted (a servo with a
        latched hardware error refuses torque on until rebooted)."""
        axes = tuple(self._ids if ids is None else ids)
        self._addressable(axes)  # all refused before the first is switched
        if on:
            self.require_position_mode(axes)
        return {sid: self.write(sid, ct.TORQUE_ENABLE, int(on)) for sid in axes}

    def write_goals(self, goals: Mapping[int, int]) -> None:
        """Goal Position (pulses) for several servos in one SYNC WRITE. DxlWriteRefused, with nothing sent,
        when a goal is outside position_range."""
        lo, hi = self.position_range
        bad = {sid: g for sid, g in goals.items() if not lo <= g <= hi}
        if bad:
            raise DxlWriteRefused(f"goal position outside {lo}-{hi} pulses: {bad}")
        self.write_many(ct.GOAL_POSITION, goals)

    # --- discovery and recovery -----------------------------------------------------------------------------

    def ping(self, axis: int) -> int | None:
        """The servo's model number, None when it does not answer."""
        with self._link():
            model, result, error = self._ph.ping(self._port, axis)
        return int(model) if self._answer(axis, result, 0) else None

    def scan(self, ids: Iterable[int] | None = None) -> dict[int, int]:
        """Ping each id (the bus's by default); id -> model number of those that answer."""
        found = {sid: self.ping(sid) for sid in (self._ids if ids is None else ids)}
        return {sid: m for sid, m in found.items() if m is not None}

    def broadcast_ping(self) -> dict[int, int]:
        """Every servo on the line, by one broadcast PING: id -> model number (takes ~0.8 s at 1 Mbaud)."""
        with self._link():
            found, _result = self._ph.broadcastPing(self._port)
        return {int(sid): int(info[0]) for sid, info in found.items()}

    def reboot(self, axis: int) -> bool:
        """Send REBOOT to one servo: clears its hardware-error latch, torque comes back off. Only an explicit
        recovery decision calls this; True when the servo acknowledged. DxlWriteRefused (nothing sent) for
        an id outside 0-MAX_ID: a broadcast REBOOT would drop every servo's torque."""
        self._addressable((axis,))
        with self._link():
            result, error = self._ph.reboot(self._port, axis)
        return self._answer(axis, result, error)

    # --- the Bus protocol -----------------------------------------------------------------------------------

    def read_position(self, servo_id: int) -> int | None:
        value = self.read(servo_id, ct.PRESENT_POSITION)
        if value is not None:
            self._last_position[servo_id] = value
        return value

    def read_voltage(self, servo_id: int) -> int | None:
        value = self.read(servo_id, ct.PRESENT_INPUT_VOLTAGE)
        return None if value is None else value * 100

    def read_temperature(self, servo_id: int) -> int | None:
        return self.read(servo_id, ct.PRESENT_TEMPERATURE)

    def read_torque(self, servo_id: int) -> bool | None:
        value = self.read(servo_id, ct.TORQUE_ENABLE)
        return None if value is None else bool(value)

    def read_stored_limits(self, servo_id: int) -> tuple[int, int] | None:
        """(Min, Max) Position Limit held in EEPROM (read only), None if silent."""
        lo = self.read(servo_id, ct.MIN_POSITION_LIMIT)
        hi = self.read(servo_id, ct.MAX_POSITION_LIMIT) if lo is not None else None
        return None if lo is None or hi is None else (lo, hi)

    def read_pose(self, ids: Iterable[int] | None = None) -> dict[int, int | None]:
        """Present Position of each servo (all by default) in one sync read: a silent servo costs one
        packet timeout for the whole read, so a move can read its servos every period."""
        reg = ct.PRESENT_POSITION
        _, _, axes, answers = self._sync_read(ids, reg.address, reg.size)
        out: dict[int, int | None] = {}
        for sid in axes:
            got = answers.get(sid)
            out[sid] = None if got is None else ct.decode_value(reg, got[1])
            if out[sid] is not None:
                self._last_position[sid] = int(out[sid] or 0)
        return out

    def move(self, targets: Mapping[int, int], duration_ms: int) -> None:
        """Every servo of targets to its goal, arriving after about duration_ms: Profile Velocity is set per
        servo from its last known position, then the goals go out in one SYNC WRITE. DxlWriteRefused (a
        ValueError's kin: nothing sent) for a goal outside position_range or a negative duration."""
        self._addressable(targets)
        lo, hi = self.position_range
        if duration_ms < 0 or any(not lo <= g <= hi for g in targets.values()):
            raise DxlWriteRefused(
                f"move refused: goals must be {lo}-{hi} pulses and duration >= 0 "
                f"(got {dict(targets)}, {duration_ms} ms)"
            )
        self.require_position_mode(targets)  # before Profile Velocity: nothing written when refused
        unknown = [sid for sid in targets if sid not in self._last_position]
        if unknown:
            self.read_pose(unknown)
        speeds = {}
        for sid, goal in targets.items():
            start = self._last_position.get(sid, goal)
            speed = abs(goal - start) / (duration_ms / 1000.0) if duration_ms else 0.0
            speeds[sid] = 0 if speed == 0 else max(1, math.ceil(speed / ct.PULSES_PER_S_PER_UNIT))
        self.write_many(ct.PROFILE_VELOCITY, speeds)
        self.write_goals(targets)

    def hold(self, ids: Iterable[int] | None = None) -> None:
        """Goal = present position for each servo that answers, then Torque Enable on for each: a servo with
        torque off (as an X series powers up) takes a goal without moving, and holds nothing. A servo with a
        hardware error latched refuses torque on (hardware_latches names it). Every servo's Operating Mode
        is read first: DxlModeRefused, with nothing written, when one is not in position mode (see
        check_position_mode); one that does not answer that read is left out, as a silent one is."""
        axes = tuple(self._ids if ids is None else ids)
        unknown = set(self.check_position_mode(axes))
        pose = self.read_pose([sid for sid in axes if sid not in unknown])
        goals = {sid: pos for sid, pos in pose.items() if pos is not None}
        self.write_goals(goals)
        for sid in goals:
            self.write(sid, ct.TORQUE_ENABLE, 1)

    def read_pose_at_once(self, ids: Iterable[int]) -> dict[int, int | None]:
        """Present Position of `ids` in one sync read (PoseAtOnceBus): read_pose, which is one already."""
        return self.read_pose(ids)

    def overwrite_goal(self, servo_id: int) -> int | None:
        """Goal Position (RAM) = Present Position for one servo, if it answers: a servo that took goals
        while its answers were lost (or held on a stalled line) goes no further. The position written,
        once the servo acknowledged it; None when it does not answer either exchange."""
        pos = self.read_position(servo_id)
        if pos is None or not self.write(servo_id, ct.GOAL_POSITION, pos):
            return None
        return pos

    def unpowered(self, ids: Iterable[int]) -> list[int]:
        """Servos among `ids` that answer with Torque Enable off: a goal sent to them goes nowhere. Read only;
        a silent servo is not in it."""
        return [sid for sid in ids if self.read_torque(sid) is False]

    def torque_on(self, servo_id: int) -> None:
        self.write(servo_id, ct.TORQUE_ENABLE, 1)

    def torque_off(self, servo_id: int) -> None:
        self.write(servo_id, ct.TORQUE_ENABLE, 0)

    def _sim_caught_up(self, timeout_s: float) -> bool:
        server = self.server
        return server is None or server.wait_done(self._port.packets_written, timeout_s)

    def _await_sim(self) -> None:
        # past the deadline the packet timeout of dynamixel-sdk decides, as on a real line
        self._sim_caught_up(SIM_ANSWER_S)

    def sync(self, timeout_s: float = 2.0) -> None:
        """Simulated bus: wait until the simulator has taken and answered every packet written so far (real
        bus: no-op). DeviceError if it falls behind by more than timeout_s."""
        if not self._sim_caught_up(timeout_s):
            raise DeviceError(
                f"{self._url}: simulator answered {getattr(self.server, 'done', 0)} of "
                f"{self._port.packets_written} packets within {timeout_s} s"
            )

    # --- lifetime -------------------------------------------------------------------------------------------

    def close(self) -> None:
        """Close the port, and stop the simulator behind a sim: URL (idempotent)."""
        if self._closed:
            return
        self._closed = True
        try:
            with contextlib.suppress(serial.SerialException, OSError, AttributeError):
                self._port.closePort()
        finally:
            if self.server is not None:
                self.server.close()

    def __enter__(self) -> DxlBus:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _as_bus(bus: DxlBus) -> Bus:
    return bus  # mypy checks here that DxlBus satisfies the Bus protocol


def _telemetry(sid: int, error: int, data: bytes) -> AxisTelemetry:
    def field_(reg: ct.Register) -> int:
        off = reg.address - ct.TELEMETRY_START
        return ct.decode_value(reg, data[off : off + reg.size])

    position, trajectory = field_(ct.PRESENT_POSITION), field_(ct.POSITION_TRAJECTORY)
    return AxisTelemetry(
        axis=sid,
        answered=True,
        current_ma=float(field_(ct.PRESENT_CURRENT)),
        velocity_rpm=field_(ct.PRESENT_VELOCITY) * ct.RPM_PER_UNIT,
        position=position,
        velocity_trajectory_rpm=field_(ct.VELOCITY_TRAJECTORY) * ct.RPM_PER_UNIT,
        position_trajectory=trajectory,
        gap=trajectory - position,
        voltage_v=field_(ct.PRESENT_INPUT_VOLTAGE) * 0.1,
        temperature_c=field_(ct.PRESENT_TEMPERATURE),
        alert=bool(error & 0x80),
    )


# --- opening ------------------------------------------------------------------------------------------------


_DIGITS = re.compile(r"[0-9]+")


def parse_ids(text: str) -> tuple[int, ...]:
    """ "10-14,20,30-33" -> (10, 11, 12, 13, 14, 20, 30, 31, 32, 33). ValueError for anything else, ids
    outside 0-252 or repeats."""
    out: list[int] = []
    for part in text.split(","):
        part = part.strip()
        if not part:
            continue
        lo, sep, hi = part.partition("-")
        # int() alone also reads "10_1" (101) and non-ASCII digits: only plain decimal digits count
        if not all(_DIGITS.fullmatch(x.strip()) for x in ((lo, hi) if sep else (lo,))):
            raise ValueError(f"ids {text!r}: {part!r} is not an id or a range of ids (plain digits: 10-14)")
        first, last = int(lo), int(hi) if sep else int(lo)
        if not 0 <= first <= last <= MAX_ID:
            raise ValueError(f"id range {part!r} is not within 0-{MAX_ID} (low-high)")
        out.extend(range(first, last + 1))
    if not out or len(set(out)) != len(out):
        raise ValueError(f"ids {text!r}: want a list like 10-14,20-24 without repeats")
    return tuple(out)


def _open_port(path: str, baud: int, url: str, latency_ms: float = DEFAULT_LATENCY_MS) -> _Port:
    port = _Port(path, latency_ms)
    try:
        ok = port.openPort() and port.setBaudRate(baud)
    except (serial.SerialException, OSError, ValueError) as exc:
        raise ConnectionLost(f"cannot open {url} ({port_problem(exc)})") from exc
    if not ok:
        with contextlib.suppress(Exception):
            port.closePort()
        raise DeviceURLError(f"device URL {url!r}: baud {baud} is not one dynamixel-sdk can set")
    return port


def _baud(text: str) -> int:
    """A baud rate dynamixel-sdk can set (its own list), checked before the port opens: the SDK opens the
    port at 57600 baud first and only then finds a rate it cannot set. ValueError otherwise."""
    baud = int(text) if _DIGITS.fullmatch(text.strip()) else -1
    if baud <= 0 or PortHandler("").getCFlagBaud(baud) <= 0:  # a PortHandler opens nothing until openPort
        raise ValueError(f"baud={text!r} is not a rate dynamixel-sdk can set (e.g. 57600, 1000000, 4000000)")
    return baud


def _client_options(params: dict[str, str], url: str) -> dict[str, Any]:
    try:
        ids = params.pop("ids", None)
        latency = float(params.pop("latency_ms", DEFAULT_LATENCY_MS))
        if not 0 < latency <= 1000:
            raise ValueError(f"latency_ms={latency:g}: want 0 < latency_ms <= 1000")
        return {
            "baud": _baud(params.pop("baud", str(DEFAULT_BAUD))),
            "ids": parse_ids(ids) if ids else None,
            "profile": params.pop("profile", None),
            "latency_ms": latency,
        }
    except ValueError as exc:
        raise DeviceURLError(f"device URL {url!r}: {exc}") from None


def _profile(name: str | None) -> DxlProfile | None:
    try:
        return get_profile(name) if name else None
    except KeyError as exc:
        raise DeviceURLError(str(exc.args[0])) from None


class _DxlOpener(SerialOpener[DxlBus]):
    """The DYNAMIXEL bus's opener on the serial-family skeleton (devices.serial_family)."""

    client_keys = CLIENT_KEYS
    example = "dxl:///dev/ttyUSB0"

    def options(self, params: dict[str, str], parsed: DeviceURL, kwargs: dict[str, Any]) -> dict[str, Any]:
        return _client_options(params, parsed.raw)

    def profile(self, parsed: DeviceURL, opts: dict[str, Any]) -> DxlProfile | None:
        return _profile(opts["profile"] or (parsed.target if parsed.simulated else None))

    def start_sim(self, profile: Any, params: dict[str, str], clock: Any) -> Any:
        return start_sim(profile, params, clock=clock)

    def connect(
        self,
        path: str,
        parsed: DeviceURL,
        opts: dict[str, Any],
        profile: Any,
        *,
        simulated: bool,
        server: Any,
        clock: Any,
    ) -> DxlBus:
        port = _open_port(path, opts["baud"], parsed.raw, opts["latency_ms"])
        return DxlBus(
            port,
            parsed.raw,
            opts["ids"] or (profile.ids if profile else ()),
            profile=profile,
            simulated=simulated,
            server=server,
            clock=clock,
        )

    def verify(
        self, bus: DxlBus, parsed: DeviceURL, opts: dict[str, Any], profile: Any, kwargs: dict[str, Any]
    ) -> None:
        if bus.ids:
            return
        found = bus.broadcast_ping()
        if not found:
            raise DeviceError(f"{parsed.raw}: no servo answered a broadcast ping at {opts['baud']} baud")
        bus._ids = tuple(sorted(found))

    def served(self, path: str) -> bool:
        # `servotool sim dynamixel` serving this pty: a simulator all the same, announced and recorded as one
        return served_by(path) is not None


_OPENER = _DxlOpener()


def open_url(parsed: DeviceURL, **kwargs: Any) -> DxlBus:
    """Open a bus from a parsed URL. kwargs: clock (a Clock: frame stamps, and the simulator's time base;
    a FakeClock is attached to the bus for lock-step)."""
    return _OPENER.open(parsed, **kwargs)


def probe(port: str, baud: int = DEFAULT_BAUD) -> list[int]:
    """Ids answering a broadcast PING on a serial port (sorted; empty when none). ConnectionLost when the
    port cannot be opened. Sends nothing but the ping."""
    handle = _open_port(port, baud, f"dxl://{port}")
    bus = DxlBus(handle, f"dxl://{port}?baud={baud}", ())
    try:
        return sorted(bus.broadcast_ping())
    finally:
        bus.close()
