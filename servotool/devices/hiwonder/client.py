"""The bus-servo client: pyserial transport to a Hiwonder-style board (real, or the simulator on a pty).

URLs (query keys the client itself takes: baud, timeout_ms, retries, profile; a `sim:` URL passes every other
key to the simulator, see sim_params):

* ``hiwonder:///dev/ttyAMA0?baud=1000000`` a real board;
* ``sim:rosorin-arm[?obstacle_2=562&silent_10=1...]`` the simulator, started on a pty in a background thread
  and opened with this same client. Closing the client stops it. ``clock=sim`` runs it on simulated time:
  the bus's `clock` is a FakeClock the simulator follows in lock-step, so a run that keeps that clock takes
  no wall-clock time for its sleeps (``clock=host``, the default: real time).

Guarantees: each read waits at most timeout_ms per attempt (on a simulator, a reply it has sent is waited for
as a condition, so a loaded host never turns a live simulated servo silent) and is retried `retries` times (a
corrupted reply is retried at once); a servo that does not answer reads as None and is added to `silent`,
never an exception, so one silent servo never stops reads of the others. Only motion, hold and torque-off
commands and reads are ever written: the protocol module cannot encode EEPROM writes.
"""

from __future__ import annotations

import contextlib
import termios
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import serial

from servotool.clock import Clock, MonotonicClock
from servotool.devices import trace
from servotool.devices.bus import ServoRecord, port_problem, read_records
from servotool.devices.hiwonder import protocol as p
from servotool.devices.hiwonder.profiles import ArmProfile, get_profile
from servotool.devices.hiwonder.units import PULSE_MAX, PULSE_MIN
from servotool.devices.registry import DeviceURL, DeviceURLError
from servotool.devices.serial_family import SerialOpener
from servotool.devices.url import bounded
from servotool.errors import ConnectionLost, DeviceError
from servotool.io.sim_ptys import served_by

if TYPE_CHECKING:  # the simulator is loaded only for sim: URLs, never by a real client
    from servotool.devices.hiwonder.sim import BoardSim, PtyBoardServer

DEFAULT_BAUD = 1_000_000
DEFAULT_TIMEOUT_S = 0.1
DEFAULT_RETRIES = 2
CLIENT_KEYS = ("baud", "timeout_ms", "retries", "profile")
POLL_S = 0.005
# what a port that fails underneath raises: a vanished tty (an unplugged adapter, a simulator's pty closed)
# fails in pyserial's termios calls too, and termios.error is no OSError
LINK_ERRORS = (serial.SerialException, OSError, termios.error)
SIM_ANSWER_S = 2.0  # the longest a simulated board (and a reply it has sent) is waited for on a loaded host
_TRACE = trace.logger("hiwonder")  # frames at debug level (devices.trace)


@dataclass
class BusStats:
    frames_sent: int = 0
    replies: int = 0
    retries: int = 0
    timeouts: int = 0
    bad_frames: int = 0
    failed_reads: int = 0  # a reply with a non-zero ok byte
    skipped_bytes: int = 0  # bytes of line noise and broken frames the parser dropped while resyncing


@dataclass
class HiwonderBus:
    """A board's servo bus. Pulses are servo pulses (0-1000 commanded, reads are signed), durations ms."""

    port: Any
    url: str
    profile: ArmProfile
    simulated: bool = False
    timeout_s: float = DEFAULT_TIMEOUT_S
    retries: int = DEFAULT_RETRIES
    server: PtyBoardServer | None = None
    # the time base a run on this bus keeps: the host's, or the simulator's own (lock-step, `clock=sim`)
    clock: Clock = field(default_factory=MonotonicClock)
    silent: set[int] = field(default_factory=set)
    last_position: dict[int, int] = field(default_factory=dict)
    stats: BusStats = field(default_factory=BusStats)

    def __post_init__(self) -> None:
        self._lock = threading.RLock()
        self._parser = p.FrameParser()
        self._closed = False

    # --- identity ------------------------------------------------------------------------------------------

    @property
    def model(self) -> str:
        return self.profile.name

    @property
    def ids(self) -> tuple[int, ...]:
        return self.profile.ids

    @property
    def optional_ids(self) -> tuple[int, ...]:
        return self.profile.optional_ids

    @property
    def position_range(self) -> tuple[int, int]:
        return (PULSE_MIN, PULSE_MAX)

    @property
    def sim(self) -> BoardSim | None:
        """The simulated board behind a `sim:` URL (for inspection), else None."""
        return self.server.sim if self.server is not None else None

    # --- commands ------------------------------------------------------------------------------------------

    def _write(self, frame: bytes) -> None:
        if self._closed:
            raise DeviceError(f"{self.url}: bus is closed")
        try:
            if _TRACE.isEnabledFor(trace.DEBUG):
                trace.frame(_TRACE, "tx", frame)
            self.port.write(frame)
            self.port.flush()
        except LINK_ERRORS as exc:
            raise ConnectionLost(f"{self.url}: link lost ({port_problem(exc)})") from exc
        self.stats.frames_sent += 1

    def move(self, targets: Mapping[int, int], duration_ms: int) -> None:
        """Send one move frame: every servo to its pulse (0-1000) in duration_ms. ValueError if out of
        range."""
        frame = p.move_frame(targets, duration_ms)
        with self._lock:
            self._write(frame)

    def hold(self, ids: Iterable[int] | None = None) -> None:
        """Stop the servos where they are (all of the profile's servos by default); they keep torque on."""
        frame = p.stop_frame(self.ids if ids is None else ids)
        with self._lock:
            self._write(frame)

    def torque_on(self, servo_id: int) -> None:
        """Ask one servo to power its motor (0x0B). The HX-12H does not always take it; a move does."""
        frame = p.request_frame(p.SubCommand.TORQUE_ON, servo_id)
        with self._lock:
            self._write(frame)

    def torque_off(self, servo_id: int) -> None:
        """Switch one servo's motor off: a joint that carries weight drops."""
        frame = p.request_frame(p.SubCommand.TORQUE_OFF, servo_id)
        with self._lock:
            self._write(frame)

    # --- reads ---------------------------------------------------------------------------------------------

    def _drain(self) -> None:
        with contextlib.suppress(*LINK_ERRORS):  # a lost port fails the write that follows
            self.port.reset_input_buffer()
        self._parser.reset()

    def _sim_replies(self) -> int:
        return self.server.replies_sent if self.server is not None else 0

    def _reply_window(self, replies_before: int) -> float:
        """How long the reply to the frame just written is waited for: timeout_s, as on a real line. On a
        simulator, first (a condition, at most SIM_ANSWER_S) until it has taken every frame written so far;
        then SIM_ANSWER_S when it did send a reply (its bytes are on their way through the pty, however
        loaded the host), else timeout_s (a silent servo costs what it costs on a real line)."""
        server = self.server
        if server is None or not server.wait_done(self.stats.frames_sent, SIM_ANSWER_S):
            return self.timeout_s
        return SIM_ANSWER_S if server.replies_sent > replies_before else self.timeout_s

    def _await(self, sid: int, sub: p.SubCommand, deadline: float) -> p.ServoReply | None:
        """The reply to one request, None when none came by the deadline (or a corrupted frame came). Bytes
        already received are always read first: a late-scheduled caller never discards a reply it has."""
        bad_before = self._parser.bad_frames
        while True:
            try:
                # the port's own timeout is a short poll (set once at open): re-setting it per read would
                # reconfigure the tty every time
                chunk = self.port.read(max(1, self.port.in_waiting))
                if chunk and _TRACE.isEnabledFor(trace.DEBUG):
                    trace.frame(_TRACE, "rx", chunk)
            except LINK_ERRORS as exc:
                raise ConnectionLost(f"{self.url}: link lost ({port_problem(exc)})") from exc
            frames = self._parser.feed(chunk)
            self.stats.skipped_bytes = self._parser.skipped_bytes
            for frame in frames:
                if frame.func != p.Function.BUS_SERVO:
                    continue  # other board reports (battery, keys) are not ours
                try:
                    reply = p.decode_reply(frame)
                except p.BoardFrameError:
                    self.stats.bad_frames += 1
                    continue
                if reply.servo_id == sid and reply.sub == sub:
                    return reply
            if self._parser.bad_frames != bad_before:
                # a corrupted frame arrived: it was most likely our reply, so ask again now
                self.stats.bad_frames += self._parser.bad_frames - bad_before
                return None
            if time.monotonic() >= deadline:
                return None

    def _query(self, sub: p.SubCommand, sid: int) -> Any:
        frame = p.request_frame(sub, sid)
        with self._lock:
            for attempt in range(self.retries + 1):
                if attempt:
                    self.stats.retries += 1
                self._drain()
                before = self._sim_replies()
                self._write(frame)
                window = self._reply_window(before)
                reply = self._await(sid, sub, time.monotonic() + window)
                if reply is None:
                    self.stats.timeouts += 1
                    continue
                self.stats.replies += 1
                if not reply.success:
                    self.stats.failed_reads += 1
                    continue
                self.silent.discard(sid)
                return reply.value
            self.silent.add(sid)
            return None

    def answers(self) -> bool:
        """True as soon as any servo of the profile answers one position read (one attempt each): the board
        is there and relays. A harmless read; nothing is written but read requests."""
        saved, self.retries = self.retries, 0
        try:
            return any(self.read_position(sid) is not None for sid in self.ids)
        finally:
            self.retries = saved

    def sim_snapshot(self) -> dict[str, str]:
        """Simulated bus: sim URL parameters that start a new simulator where this one is now (every
        servo's position, and torque off where it is off); a real bus: empty."""
        sim = self.sim
        if sim is None:
            return {}
        out: dict[str, str] = {}
        for sid, pos in sim.positions().items():
            out[f"start_{sid}"] = f"{pos:.3f}"
            if not sim.servos[sid].torque and not sim.servos[sid].dead:
                out[f"torque_{sid}"] = "0"
        return out

    def read_position(self, servo_id: int) -> int | None:
        """Position in pulses (signed: a sagged joint can read below 0), None if the servo is silent."""
        value = self._query(p.SubCommand.READ_POSITION, servo_id)
        if value is not None:
            self.last_position[servo_id] = int(value)
        return value

    def read_voltage(self, servo_id: int) -> int | None:
        """Supply voltage at the servo in mV, None if silent."""
        return self._query(p.SubCommand.READ_VOLTAGE, servo_id)

    def read_temperature(self, servo_id: int) -> int | None:
        """Temperature in deg C, None if silent."""
        return self._query(p.SubCommand.READ_TEMPERATURE, servo_id)

    def read_torque(self, servo_id: int) -> bool | None:
        """True when the motor is powered (holding), None if silent."""
        value = self._query(p.SubCommand.READ_TORQUE, servo_id)
        return None if value is None else bool(value)

    def read_stored_limits(self, servo_id: int) -> tuple[int, int] | None:
        """The (lo, hi) angle limit held in the servo's EEPROM (read only), None if silent."""
        value = self._query(p.SubCommand.READ_LIMIT, servo_id)
        return None if value is None else (int(value[0]), int(value[1]))

    def read_pose(self, ids: Iterable[int] | None = None) -> dict[int, int | None]:
        """Positions of the given servos (all by default); silent ones are None."""
        return {sid: self.read_position(sid) for sid in (self.ids if ids is None else ids)}

    def read_all(self, ids: Iterable[int] | None = None) -> dict[int, ServoRecord]:
        """Position, voltage, temperature and torque of each servo (see devices.bus.read_records)."""
        return read_records(self, ids)

    def sync(self, timeout_s: float = 2.0) -> None:
        """Simulated bus: wait until the board has taken and answered every frame written so far (real bus:
        nothing to do). Raises DeviceError if the simulator falls behind by more than timeout_s."""
        server = self.server
        if server is None:
            return
        if not server.wait_done(self.stats.frames_sent, timeout_s):
            raise DeviceError(
                f"{self.url}: simulator took {server.done} of "
                f"{self.stats.frames_sent} frames within {timeout_s} s"
            )

    # --- lifetime ------------------------------------------------------------------------------------------

    def close(self) -> None:
        """Close the port, and stop the simulator behind a sim: URL (idempotent)."""
        if self._closed:
            return
        self._closed = True
        try:
            self.port.close()
        finally:
            if self.server is not None:
                self.server.close()

    def __enter__(self) -> HiwonderBus:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


class NoBoardAnswer(DeviceError):
    """The port opened but no board answered a read: nothing is connected, it is off, or the baud is wrong."""


def profile_for(parsed: DeviceURL) -> ArmProfile:
    """The arm profile a URL opens with, known without opening it (KeyError names the known ones)."""
    name = parsed.params.get("profile") or (parsed.target if parsed.simulated else "rosorin-arm")
    return get_profile(name)


def _number(params: dict[str, str], key: str, default: float, convert: Callable[[str], Any]) -> float:
    raw = params.pop(key, None)
    if raw is None:
        return default
    try:
        return float(convert(raw))
    except ValueError as exc:
        raise ValueError(f"{key}={raw!r}: {exc}") from None


def _client_options(params: dict[str, str], url: str) -> dict[str, Any]:
    """The client's own URL parameters, bounded (a NaN or infinite timeout would wait forever on a silent
    servo); DeviceURLError naming the parameter and its bounds, before the port is opened."""
    try:
        return {
            "baud": int(_number(params, "baud", DEFAULT_BAUD, bounded(1, 12_000_000, integer=True))),
            "timeout_s": _number(params, "timeout_ms", DEFAULT_TIMEOUT_S * 1e3, bounded(1, 1e4)) / 1e3,
            "retries": int(_number(params, "retries", DEFAULT_RETRIES, bounded(0, 100, integer=True))),
            "profile": params.pop("profile", None),
        }
    except ValueError as exc:
        raise DeviceURLError(f"device URL {url!r}: {exc}") from None


def _open_port(path: str, baud: int, url: str) -> Any:
    try:
        # a device path only: serial_for_url would also open spy://, socket://, loop:// ...
        return serial.Serial(path, baudrate=baud, timeout=POLL_S)
    except (serial.SerialException, OSError, ValueError) as exc:
        raise DeviceError(f"cannot open {url} ({port_problem(exc)})") from exc


class _BoardOpener(SerialOpener[HiwonderBus]):
    """The board's opener on the serial-family skeleton (devices.serial_family)."""

    client_keys = CLIENT_KEYS
    example = "hiwonder:///dev/ttyUSB0"

    def options(self, params: dict[str, str], parsed: DeviceURL, kwargs: dict[str, Any]) -> dict[str, Any]:
        opts = _client_options(params, parsed.raw)
        opts["timeout_s"] = kwargs.get("timeout_s", opts["timeout_s"])
        opts["retries"] = kwargs.get("retries", opts["retries"])
        return opts

    def profile(self, parsed: DeviceURL, opts: dict[str, Any]) -> ArmProfile:
        try:
            return get_profile(opts["profile"] or (parsed.target if parsed.simulated else "rosorin-arm"))
        except KeyError as exc:
            raise DeviceURLError(str(exc.args[0])) from None

    def start_sim(self, profile: Any, params: dict[str, str], clock: Any) -> Any:
        from servotool.devices.hiwonder.sim import start_sim

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
    ) -> HiwonderBus:
        port = _open_port(path, opts["baud"], parsed.raw)
        bus = HiwonderBus(
            port,
            parsed.raw,
            profile,
            simulated=simulated,
            timeout_s=opts["timeout_s"],
            retries=opts["retries"],
            server=server,
        )
        if server is not None and isinstance(clock, Clock):  # a whole Clock: runs on this bus keep it
            bus.clock = clock
        return bus

    def verify(
        self, bus: HiwonderBus, parsed: DeviceURL, opts: dict[str, Any], profile: Any, kwargs: dict[str, Any]
    ) -> None:
        if kwargs.get("probe", True) and not bus.answers():
            raise NoBoardAnswer(
                f"no board answered on {parsed.target} (no servo of {profile.name} answered "
                f"a position read at {opts['baud']} baud: check power, cable and baud)"
            )

    def served(self, path: str) -> bool:
        # `servotool sim hiwonder` serving this pty: a simulator all the same, announced and recorded as one
        return served_by(path) is not None


_OPENER = _BoardOpener()


def open_url(parsed: DeviceURL, **kwargs: Any) -> HiwonderBus:
    """Open a bus from a parsed URL. kwargs: clock (the simulator's time base: any object with now()),
    timeout_s, retries (override the URL), probe (default True: a real port where no servo answers one
    position read raises NoBoardAnswer, exit 3, instead of returning a bus that reads all silent)."""
    return _OPENER.open(parsed, **kwargs)
