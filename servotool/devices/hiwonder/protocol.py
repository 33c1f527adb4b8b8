"""Hiwonder-style STM32 board protocol: pure bytes <-> dataclasses, no I/O.

Frame: ``AA 55 | func u8 | len u8 | data[len] | crc8``. The CRC is CRC-8/MAXIM (reflected polynomial 0x8C,
init 0, no final xor) over func, len and data. Function 5 relays bus-servo commands; the first data byte is
the servo sub-command. Host -> board frames are *commands*; board -> host function-5 frames are *replies*
whose data starts with the servo id, then the sub-command, then an ok byte (0 = success), then the value.

Guarantees:

* EEPROM writes (sub-commands 0x10 set id, 0x20 set offset, 0x24 save offset, 0x30 set angle limit, 0x34,
  0x38) cannot be encoded: there is no command type for them, and `encode_frame` / `encode_command` raise
  `EepromWriteRefused` for any function-5 frame whose first byte is one of them. Any other function-5
  sub-command not listed in `SubCommand` is refused too.
* Every decoder raises `BoardFrameError` (and only that) on a bad frame: wrong header, truncated, length
  mismatch, bad CRC, unknown sub-command, wrong payload size.
* Move pulses are refused outside PULSE_MIN..PULSE_MAX (0-1000) at encoding time, so no out-of-range position
  can reach the wire from this module.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from enum import IntEnum

from servotool.devices.hiwonder.units import PULSE_MAX, PULSE_MIN
from servotool.errors import ProtocolError, Refused

HEADER = b"\xaa\x55"
MAX_DATA = 255
# header + func + len + crc
FRAME_OVERHEAD = 5


class Function(IntEnum):
    """Board functions (the byte after the header)."""

    SYS = 0  # battery voltage and system reports
    LED = 1
    BUZZER = 2
    MOTOR = 3
    PWM_SERVO = 4
    BUS_SERVO = 5
    KEY = 6
    IMU = 7
    GAMEPAD = 8
    SBUS = 9
    OLED = 10
    RGB = 11


class SubCommand(IntEnum):
    """Bus-servo sub-commands servotool may send (function 5, first data byte). All are RAM-only or reads."""

    MOVE = 0x01
    STOP = 0x03  # stop where you are and hold
    READ_POSITION = 0x05
    READ_VOLTAGE = 0x07
    READ_TEMPERATURE = 0x09
    TORQUE_ON = 0x0B
    TORQUE_OFF = 0x0C
    READ_TORQUE = 0x0D
    READ_ID = 0x12
    READ_OFFSET = 0x22
    READ_LIMIT = 0x32


# Sub-commands that write the servo's EEPROM. Never encoded; listed only so that refusals can name them.
EEPROM_WRITES: Mapping[int, str] = {
    0x10: "set id",
    0x20: "set offset",
    0x24: "save offset",
    0x30: "set angle limit",
    0x34: "EEPROM write 0x34",
    0x38: "EEPROM write 0x38",
}


class BoardFrameError(ProtocolError):
    """A board frame could not be decoded (header, length, CRC, sub-command or payload size). Callers count
    and skip."""


class EepromWriteRefused(Refused, ValueError):
    """Something tried to build a frame that would write servo EEPROM (or an unknown function-5
    sub-command)."""


def _crc_table() -> tuple[int, ...]:
    table = []
    for byte in range(256):
        crc = byte
        for _ in range(8):
            crc = (crc >> 1) ^ 0x8C if crc & 1 else crc >> 1
        table.append(crc)
    return tuple(table)


_CRC_TABLE = _crc_table()


def crc8_maxim(data: bytes | bytearray | memoryview) -> int:
    """CRC-8/MAXIM (Dallas 1-Wire): reflected poly 0x8C, init 0, no final xor. crc8_maxim(b"123456789") ==
    0xA1."""
    crc = 0
    for byte in bytes(data):
        crc = _CRC_TABLE[crc ^ byte]
    return crc


@dataclass(frozen=True)
class Frame:
    """One board frame: the function byte and its data (without header, length and CRC)."""

    func: int
    data: bytes


def _pack(func: int, data: bytes) -> bytes:
    if not 0 <= func <= 0xFF:
        raise ValueError(f"function byte {func} out of range 0-255")
    if len(data) > MAX_DATA:
        raise ValueError(f"frame data of {len(data)} bytes exceeds {MAX_DATA}")
    body = bytes([func, len(data)]) + bytes(data)
    return HEADER + body + bytes([crc8_maxim(body)])


def _check_outgoing_sub(sub: int) -> None:
    if sub in EEPROM_WRITES:
        raise EepromWriteRefused(
            f"bus-servo sub-command 0x{sub:02X} ({EEPROM_WRITES[sub]}) writes servo EEPROM: "
            "servotool never sends it"
        )
    if sub not in SubCommand._value2member_map_:
        raise EepromWriteRefused(f"bus-servo sub-command 0x{sub:02X} is not one servotool knows how to send")


def encode_frame(func: int, data: bytes) -> bytes:
    """Build one host -> board frame. A function-5 frame must start with a known, non-EEPROM sub-command."""
    data = bytes(data)
    if func == Function.BUS_SERVO:
        if not data:
            raise EepromWriteRefused("bus-servo frame without a sub-command")
        _check_outgoing_sub(data[0])
    return _pack(func, data)


def decode_frame(raw: bytes | bytearray) -> Frame:
    """Decode exactly one frame. Raises BoardFrameError on any defect (header, truncation, length, CRC)."""
    raw = bytes(raw)
    if len(raw) < 2 or raw[:2] != HEADER:
        raise BoardFrameError(f"wrong header {raw[:2].hex(' ') or '(empty)'} (want aa 55)")
    if len(raw) < FRAME_OVERHEAD:
        raise BoardFrameError(f"truncated frame: {len(raw)} bytes")
    n = raw[3]
    want = n + FRAME_OVERHEAD
    if len(raw) < want:
        raise BoardFrameError(f"truncated frame: {len(raw)} bytes, length byte says {want}")
    if len(raw) > want:
        raise BoardFrameError(f"length mismatch: {len(raw)} bytes, length byte says {want}")
    body = raw[2:-1]
    crc = crc8_maxim(body)
    if crc != raw[-1]:
        raise BoardFrameError(f"bad CRC 0x{raw[-1]:02X} (computed 0x{crc:02X})")
    return Frame(func=raw[2], data=raw[4:-1])


class FrameParser:
    """Streaming decoder: feed it bytes in any chunking, get whole frames back.

    Bytes before a header are skipped. A candidate frame with a bad CRC is dropped one byte at a time, so that
    a false header inside garbage never swallows the real frame behind it. `bad_frames` counts CRC failures,
    `skipped_bytes` counts bytes discarded while resyncing.
    """

    def __init__(self) -> None:
        self._buf = bytearray()
        self.bad_frames = 0
        self.skipped_bytes = 0
        self.last_error: BoardFrameError | None = None

    def reset(self) -> None:
        """Forget any partial frame (after a timeout the rest of it is not coming)."""
        self.skipped_bytes += len(self._buf)
        self._buf.clear()

    @property
    def pending(self) -> int:
        return len(self._buf)

    def feed(self, data: bytes | bytearray) -> list[Frame]:
        self._buf.extend(data)
        out: list[Frame] = []
        buf = self._buf
        while True:
            start = buf.find(HEADER)
            if start < 0:
                # keep a trailing 0xAA: it may be the first half of the next header
                keep = 1 if buf[-1:] == HEADER[:1] else 0
                self.skipped_bytes += len(buf) - keep
                del buf[: len(buf) - keep]
                return out
            if start:
                self.skipped_bytes += start
                del buf[:start]
            if len(buf) < FRAME_OVERHEAD:
                return out
            want = buf[3] + FRAME_OVERHEAD
            if len(buf) < want:
                return out
            try:
                out.append(decode_frame(buf[:want]))
            except BoardFrameError as exc:
                self.bad_frames += 1
                self.last_error = exc
                self.skipped_bytes += 1
                del buf[:1]
                continue
            del buf[:want]


# --- host -> board: commands -------------------------------------------------------------------------------


BROADCAST_ID = 0xFE  # every bus servo obeys it: a move, hold or torque switch sent to it reaches them all
MAX_SERVO_ID = 0xFD


def _check_id(sid: int) -> int:
    """A single servo's id (0-253), as every host command addresses; ValueError for the broadcast id 254,
    255 and anything else."""
    if not 0 <= int(sid) <= MAX_SERVO_ID:
        raise ValueError(f"servo id {sid} out of range 0-{MAX_SERVO_ID} ({BROADCAST_ID} is the broadcast id)")
    return int(sid)


@dataclass(frozen=True)
class Move:
    """Move each servo id to its pulse within duration_ms. Pulses 0-1000, duration 0-65535 ms."""

    duration_ms: int
    targets: Mapping[int, int] = field(default_factory=dict)
    SUB = SubCommand.MOVE

    def payload(self) -> bytes:
        if not 0 <= int(self.duration_ms) <= 0xFFFF:
            raise ValueError(f"move duration {self.duration_ms} ms out of range 0-65535")
        if not self.targets:
            raise ValueError("move with no targets")
        out = struct.pack("<BHB", self.SUB, int(self.duration_ms), len(self.targets))
        for sid, pulse in sorted(self.targets.items()):
            if not PULSE_MIN <= int(pulse) <= PULSE_MAX:
                raise ValueError(f"servo {sid} pulse {pulse} outside {PULSE_MIN}-{PULSE_MAX}")
            out += struct.pack("<BH", _check_id(sid), int(pulse))
        return out


@dataclass(frozen=True)
class Stop:
    """Stop the listed servos where they are; they hold that position with torque on."""

    ids: tuple[int, ...]
    SUB = SubCommand.STOP

    def payload(self) -> bytes:
        if not self.ids:
            raise ValueError("stop with no servo ids")
        return bytes([self.SUB, len(self.ids), *(_check_id(i) for i in self.ids)])


@dataclass(frozen=True)
class ServoRequest:
    """A single-servo command: one of the reads, torque on or torque off (payload: sub-command, id)."""

    sub: SubCommand
    servo_id: int

    def payload(self) -> bytes:
        if self.sub in (SubCommand.MOVE, SubCommand.STOP):
            raise ValueError(f"{self.sub.name} is not a single-servo request")
        return bytes([self.sub, _check_id(self.servo_id)])


Command = Move | Stop | ServoRequest

READ_SUBS = (
    SubCommand.READ_POSITION,
    SubCommand.READ_VOLTAGE,
    SubCommand.READ_TEMPERATURE,
    SubCommand.READ_TORQUE,
    SubCommand.READ_ID,
    SubCommand.READ_OFFSET,
    SubCommand.READ_LIMIT,
)


def encode_command(cmd: Command) -> bytes:
    """The function-5 frame of one command (EEPROM sub-commands are refused by encode_frame)."""
    return encode_frame(Function.BUS_SERVO, cmd.payload())


def move_frame(targets: Mapping[int, int], duration_ms: int) -> bytes:
    return encode_command(Move(int(duration_ms), {int(k): int(v) for k, v in targets.items()}))


def stop_frame(ids: Iterable[int]) -> bytes:
    return encode_command(Stop(tuple(sorted(int(i) for i in ids))))


def request_frame(sub: SubCommand, servo_id: int) -> bytes:
    return encode_command(ServoRequest(SubCommand(sub), servo_id))


def decode_command(frame: Frame) -> Command:
    """Decode a host -> board function-5 frame (the simulator's side). Raises BoardFrameError on anything
    else."""
    if frame.func != Function.BUS_SERVO:
        raise BoardFrameError(f"function {frame.func} is not the bus servo (5)")
    data = frame.data
    if not data:
        raise BoardFrameError("bus-servo frame without a sub-command")
    sub = data[0]
    if sub == SubCommand.MOVE:
        if len(data) < 4:
            raise BoardFrameError(f"move frame too short: {len(data)} bytes")
        _, duration, n = struct.unpack_from("<BHB", data)
        if len(data) != 4 + 3 * n:
            raise BoardFrameError(f"move frame for {n} servos has {len(data)} bytes (want {4 + 3 * n})")
        targets = {}
        for k in range(n):
            sid, pulse = struct.unpack_from("<BH", data, 4 + 3 * k)
            targets[sid] = pulse
        return Move(duration, targets)
    if sub == SubCommand.STOP:
        if len(data) < 2 or len(data) != 2 + data[1]:
            count = data[1] if len(data) > 1 else "?"
            raise BoardFrameError(f"stop frame has {len(data)} bytes for {count} ids")
        return Stop(tuple(data[2:]))
    if sub in SubCommand._value2member_map_:
        if len(data) != 2:
            raise BoardFrameError(f"sub-command 0x{sub:02X} frame has {len(data)} bytes (want 2)")
        return ServoRequest(SubCommand(sub), data[1])
    raise BoardFrameError(f"unknown bus-servo sub-command 0x{sub:02X}")


# --- board -> host: replies ---------------------------------------------------------------------------------

# sub-command -> struct of the reply payload (id, sub-command, ok, value...)
REPLY_FORMATS: Mapping[int, str] = {
    SubCommand.READ_POSITION: "<BBbh",  # int16: negative after a sag
    SubCommand.READ_VOLTAGE: "<BBbH",  # mV
    SubCommand.READ_TEMPERATURE: "<BBbB",  # deg C
    SubCommand.READ_TORQUE: "<BBbb",  # 1 on, 0 off
    SubCommand.READ_ID: "<BBbB",
    SubCommand.READ_OFFSET: "<BBbb",
    SubCommand.READ_LIMIT: "<BBbHH",  # stored lo, hi
}


@dataclass(frozen=True)
class ServoReply:
    """A read's answer: which servo, which read, ok (0 = success) and the value(s)."""

    servo_id: int
    sub: SubCommand
    ok: int
    value: int | tuple[int, int]

    @property
    def success(self) -> bool:
        return self.ok == 0


def encode_reply(reply: ServoReply) -> bytes:
    """The board's function-5 reply frame (the simulator's side)."""
    fmt = REPLY_FORMATS.get(int(reply.sub))
    if fmt is None:
        raise ValueError(f"sub-command 0x{int(reply.sub):02X} has no reply")
    values = reply.value if isinstance(reply.value, tuple) else (reply.value,)
    return _pack(Function.BUS_SERVO, struct.pack(fmt, reply.servo_id, int(reply.sub), reply.ok, *values))


def decode_reply(frame: Frame) -> ServoReply:
    """Decode a board -> host function-5 reply. Raises BoardFrameError on a wrong function, sub-command or
    size."""
    if frame.func != Function.BUS_SERVO:
        raise BoardFrameError(f"function {frame.func} is not the bus servo (5)")
    data = frame.data
    if len(data) < 2:
        raise BoardFrameError(f"bus-servo reply too short: {len(data)} bytes")
    fmt = REPLY_FORMATS.get(data[1])
    if fmt is None:
        raise BoardFrameError(f"unknown bus-servo reply sub-command 0x{data[1]:02X}")
    if len(data) != struct.calcsize(fmt):
        raise BoardFrameError(f"reply to 0x{data[1]:02X} has {len(data)} bytes (want {struct.calcsize(fmt)})")
    sid, sub, ok, *values = struct.unpack(fmt, data)
    value: int | tuple[int, int] = values[0] if len(values) == 1 else (values[0], values[1])
    return ServoReply(sid, SubCommand(sub), ok, value)
