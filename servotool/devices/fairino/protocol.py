"""FAIRINO wire formats, bytes <-> values, with no I/O.

CNDE (TCP state stream, port 20005)::

    5A 5A | count u8 | type u8 | len u16 LE | data[len] | A5 A5        (len <= 4096)

UDP command frames (port 20007), ASCII::

    /f/bIII{count}III{cmdID}III{len(content)}III{content}III/b/f

Every decoder raises only the family's ProtocolError subclass for input it cannot read: CndeFrameError for
the state stream, UdpFrameError for command frames (both FairinoFrameError); callers count and skip such
frames. No other exception escapes a decoder, whatever the bytes (tests/devices/fairino fuzz them).
"""

from __future__ import annotations

import re
import struct
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from enum import IntEnum
from functools import cached_property
from typing import Any

from servotool.devices.fairino.fields import FIELDS, SDK_DEFAULT_FIELDS, FieldType
from servotool.errors import ProtocolError

__all__ = [
    "FIELDS",
    "SDK_DEFAULT_FIELDS",
    "CmdId",
    "CndeFrame",
    "CndeFrameError",
    "FairinoFrameError",
    "UdpFrameError",
    "FrameSplitter",
    "FrameType",
    "ServoJCommand",
    "StateLayout",
    "UdpFrame",
    "config_reply_types",
    "decode_frame",
    "decode_message",
    "decode_output_config",
    "decode_servoj",
    "decode_udp",
    "encode_config_reply",
    "encode_frame",
    "encode_message",
    "encode_output_config",
    "encode_servoj",
    "encode_udp",
]

HEAD = b"\x5a\x5a"
TAIL = b"\xa5\xa5"
MAX_DATA = 4096
OVERHEAD = 8  # head 2 + count 1 + type 1 + len 2 + tail 2
NOT_FOUND = "NOT_FOUND"


class FairinoFrameError(ProtocolError):
    """A FAIRINO frame that cannot be decoded: truncated, bad head/tail, wrong length, garbage."""


class CndeFrameError(FairinoFrameError):
    """A CNDE (state stream) frame or payload that cannot be decoded."""


class UdpFrameError(FairinoFrameError):
    """A UDP command frame, or the ServoJ text inside one, that cannot be decoded."""


class FrameType(IntEnum):
    INPUT_CONFIG = 0x00
    OUTPUT_CONFIG = 0x01
    START = 0x02
    STOP = 0x03
    OUTPUT_DATA = 0x04
    INPUT_DATA = 0x05
    MESSAGE = 0x06
    SET_VERSION = 0x07
    GET_VERSION = 0x08


class MessageStatus(IntEnum):
    """Status byte of a message frame: 0 is success (all the vendor SDK tests); other values unconfirmed."""

    OK = 0
    ERROR = 1
    FAULT = 4


@dataclass(frozen=True)
class CndeFrame:
    type: int
    data: bytes = b""
    count: int = 0


_HDR = struct.Struct("<2sBBH")


def encode_frame(ftype: int, data: bytes = b"", count: int = 0) -> bytes:
    """One CNDE frame. Raises CndeFrameError for data over 4096 bytes or count/type outside 0..255."""
    if len(data) > MAX_DATA:
        raise CndeFrameError(f"CNDE data of {len(data)} bytes exceeds {MAX_DATA}")
    if not (0 <= count <= 255 and 0 <= int(ftype) <= 255):
        raise CndeFrameError(f"CNDE count {count} or type {ftype} outside 0..255")
    return _HDR.pack(HEAD, count, int(ftype), len(data)) + bytes(data) + TAIL


def decode_frame(buf: bytes) -> CndeFrame:
    """Decode exactly one CNDE frame occupying all of `buf`; raises CndeFrameError otherwise."""
    buf = bytes(buf)
    if len(buf) < OVERHEAD:
        raise CndeFrameError(f"CNDE frame truncated: {len(buf)} bytes, at least {OVERHEAD} needed")
    head, count, ftype, length = _HDR.unpack_from(buf)
    if head != HEAD:
        raise CndeFrameError(f"CNDE frame head {head.hex()} is not 5a5a")
    if length > MAX_DATA:
        raise CndeFrameError(f"CNDE length {length} exceeds {MAX_DATA}")
    if len(buf) != length + OVERHEAD:
        raise CndeFrameError(f"CNDE length field says {length} data bytes, frame holds {len(buf) - OVERHEAD}")
    if buf[-2:] != TAIL:
        raise CndeFrameError(f"CNDE frame tail {buf[-2:].hex()} is not a5a5")
    return CndeFrame(ftype, buf[6 : 6 + length], count)


class FrameSplitter:
    """Cut a TCP byte stream into CNDE frames, resynchronising on garbage.

    `feed(chunk)` returns the complete frames found so far. Bytes that cannot start a valid frame are skipped
    and counted in `skipped_bytes`; `bad_frames` counts candidate frames rejected for a bad length or tail.
    """

    def __init__(self) -> None:
        self._buf = bytearray()
        self.skipped_bytes = 0
        self.bad_frames = 0

    def feed(self, chunk: bytes) -> list[CndeFrame]:
        self._buf += chunk
        out: list[CndeFrame] = []
        buf = self._buf
        while True:
            start = buf.find(HEAD)
            if start < 0:
                # keep a trailing 5A: it may be the first half of the next head
                keep = 1 if buf[-1:] == HEAD[:1] else 0
                self.skipped_bytes += len(buf) - keep
                del buf[: len(buf) - keep]
                break
            if start:
                self.skipped_bytes += start
                del buf[:start]
            if len(buf) < 6:
                break
            length = buf[4] | (buf[5] << 8)
            if length > MAX_DATA:
                self._reject(buf)
                continue
            end = length + OVERHEAD
            if len(buf) < end:
                break
            if buf[end - 2 : end] != TAIL:
                self._reject(buf)
                continue
            out.append(CndeFrame(buf[3], bytes(buf[6 : 6 + length]), buf[2]))
            del buf[:end]
        return out

    def _reject(self, buf: bytearray) -> None:
        # skip one byte of the false head and search again
        self.bad_frames += 1
        self.skipped_bytes += 1
        del buf[:1]

    @property
    def pending(self) -> int:
        return len(self._buf)


# --- output configuration and messages ----------------------------------------------------------------------


def encode_output_config(period_ms: int, names: Sequence[str]) -> bytes:
    """Data of an OUTPUT_CONFIG frame: period u16 LE (ms) then comma-separated field names."""
    if not 0 <= period_ms <= 0xFFFF:
        raise CndeFrameError(f"period {period_ms} ms does not fit u16")
    return struct.pack("<H", period_ms) + ",".join(names).encode("ascii")


def decode_output_config(data: bytes) -> tuple[int, list[str]]:
    """(period_ms, names) of an OUTPUT_CONFIG frame's data; CndeFrameError on short or non-ASCII data."""
    if len(data) < 2:
        raise CndeFrameError("output config shorter than its period field")
    (period,) = struct.unpack_from("<H", data)
    try:
        text = bytes(data[2:]).decode("ascii")
    except UnicodeDecodeError as exc:
        raise CndeFrameError(f"output config names are not ASCII ({exc})") from None
    names = [n.strip() for n in text.split(",") if n.strip()]
    return period, names


def encode_message(status: int, text: str = "") -> bytes:
    """Data of a MESSAGE frame: status u8 then ASCII text."""
    return bytes([int(status) & 0xFF]) + text.encode("ascii", "replace")


def decode_message(data: bytes) -> tuple[int, str]:
    if not data:
        raise CndeFrameError("message frame without a status byte")
    return data[0], bytes(data[1:]).decode("ascii", "replace")


def config_reply_types(names: Iterable[str], table: Mapping[str, str] = FIELDS) -> list[str]:
    """The type list a controller answers a configuration with: one type per name, NOT_FOUND where unknown."""
    return [table.get(n, NOT_FOUND) for n in names]


def encode_config_reply(names: Iterable[str], table: Mapping[str, str] = FIELDS) -> bytes:
    """MESSAGE data answering an OUTPUT_CONFIG: status OK when every name is known, ERROR otherwise."""
    types = config_reply_types(names, table)
    status = MessageStatus.ERROR if NOT_FOUND in types else MessageStatus.OK
    return encode_message(status, ",".join(types))


# --- state data layout --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class StateLayout:
    """The packing of OUTPUT_DATA frames for one configuration: names and wire types in configured order."""

    names: tuple[str, ...]
    types: tuple[FieldType, ...]

    @classmethod
    def from_names(cls, names: Sequence[str], table: Mapping[str, str] = FIELDS) -> StateLayout:
        """Layout of known field names; raises KeyError naming the first unknown one."""
        missing = [n for n in names if n not in table]
        if missing:
            raise KeyError(f"unknown CNDE field(s): {', '.join(missing)}")
        return cls(tuple(names), tuple(FieldType.parse(table[n]) for n in names))

    @classmethod
    def from_types(cls, names: Sequence[str], types: Sequence[str]) -> StateLayout:
        """Layout from a configuration reply's type list; raises CndeFrameError on a bad count or type."""
        if len(names) != len(types):
            raise CndeFrameError(f"{len(names)} field names but {len(types)} types in the reply")
        try:
            parsed = tuple(FieldType.parse(t) for t in types)
        except ValueError as exc:
            raise CndeFrameError(str(exc)) from None
        size = sum(t.size for t in parsed)
        if size > MAX_DATA:
            raise CndeFrameError(f"the reply's types need {size} bytes a frame, over the {MAX_DATA} limit")
        return cls(tuple(names), parsed)

    @cached_property
    def _struct(self) -> struct.Struct:
        return struct.Struct("<" + "".join(t.code for t in self.types))

    @property
    def size(self) -> int:
        return self._struct.size

    def pack(self, values: Mapping[str, Any]) -> bytes:
        """Pack the configured fields; a field missing from `values` is sent as zeros."""
        flat: list[Any] = []
        for name, ftype in zip(self.names, self.types, strict=True):
            v = values.get(name)
            if ftype.count == 1 and not ftype.array:
                flat.append(_coerce(v if v is not None else 0, ftype))
            else:
                seq = list(v) if v is not None else []
                seq = (seq + [0] * ftype.count)[: ftype.count]
                flat.extend(_coerce(x, ftype) for x in seq)
        return self._struct.pack(*flat)

    def unpack(self, data: bytes) -> dict[str, Any]:
        """Values by name (scalars as numbers, arrays as tuples); raises CndeFrameError on a size mismatch."""
        if len(data) != self.size:
            raise CndeFrameError(f"state data of {len(data)} bytes, layout needs {self.size}")
        flat = self._struct.unpack(data)
        out: dict[str, Any] = {}
        i = 0
        for name, ftype in zip(self.names, self.types, strict=True):
            if ftype.count == 1 and not ftype.array:
                out[name] = flat[i]
            else:
                out[name] = tuple(flat[i : i + ftype.count])
            i += ftype.count
        return out


def _coerce(v: Any, ftype: FieldType) -> Any:
    if ftype.is_float:
        return float(v)
    iv = int(v)
    # wrap into the type's range, the way a C integer would, instead of failing on a counter overflow
    bits = 8 * (ftype.size // ftype.count)
    if ftype.base.startswith("U"):
        return iv & ((1 << bits) - 1)
    iv &= (1 << bits) - 1
    return iv - (1 << bits) if iv >= 1 << (bits - 1) else iv


# --- UDP command frames -------------------------------------------------------------------------------------


class CmdId(IntEnum):
    SERVO_J = 376
    SERVO_MOVE_START = 689
    SERVO_MOVE_END = 690


@dataclass(frozen=True)
class UdpFrame:
    count: int
    cmd_id: int
    content: str


_UDP_HEAD = "/f/b"
_UDP_TAIL = "/b/f"
_SEP = "III"


def encode_udp(count: int, cmd_id: int, content: str) -> bytes:
    """One UDP command frame; raises UdpFrameError for a count outside 0..65535, or content holding 'III' or
    anything but ASCII."""
    if not 0 <= count <= 0xFFFF:
        raise UdpFrameError(f"UDP count {count} outside 0..65535")
    if _SEP in content:
        raise UdpFrameError("UDP content must not contain 'III'")
    if not content.isascii():
        raise UdpFrameError("UDP content must be ASCII")
    text = f"{_UDP_HEAD}{_SEP}{count}{_SEP}{cmd_id}{_SEP}{len(content)}{_SEP}{content}{_SEP}{_UDP_TAIL}"
    return text.encode("ascii")


def _is_number(text: str) -> bool:
    return 0 < len(text) <= 9 and text.isascii() and text.isdigit()


def decode_udp(data: bytes) -> UdpFrame:
    """Decode one UDP frame; raises UdpFrameError on bad head/tail, field count, numbers or content length."""
    try:
        text = bytes(data).decode("ascii")
    except UnicodeDecodeError:
        raise UdpFrameError("UDP frame is not ASCII") from None
    if not (text.startswith(_UDP_HEAD + _SEP) and text.endswith(_SEP + _UDP_TAIL)):
        raise UdpFrameError("UDP frame lacks /f/bIII head or III/b/f tail")
    body = text[len(_UDP_HEAD) + len(_SEP) : -(len(_SEP) + len(_UDP_TAIL))]
    parts = body.split(_SEP)
    if len(parts) != 4:
        raise UdpFrameError(f"UDP frame has {len(parts)} fields, 4 expected (count, cmd, len, content)")
    count_s, cmd_s, len_s, content = parts
    # a bounded digit count: int() of thousands of digits is slow, and refused past 4300 digits
    if not all(_is_number(x) for x in (count_s, cmd_s, len_s)):
        raise UdpFrameError("UDP count, command id and length must be decimal numbers of at most 9 digits")
    count, cmd_id, length = int(count_s), int(cmd_s), int(len_s)
    if count > 0xFFFF:
        raise UdpFrameError(f"UDP count {count} outside 0..65535")
    if length != len(content):
        raise UdpFrameError(f"UDP length field says {length}, content has {len(content)}")
    return UdpFrame(count, cmd_id, content)


@dataclass(frozen=True)
class ServoJCommand:
    """One ServoJ: joints (deg), external axes, then acc, vel, cmd_t (s), filter_t, gain, id."""

    joints: tuple[float, ...]
    axes: tuple[float, ...] = (0.0, 0.0, 0.0, 0.0)
    acc: float = 0.0
    vel: float = 0.0
    cmd_t: float = 0.008
    filter_t: float = 0.0
    gain: float = 0.0
    id: int = 0


def encode_servoj(cmd: ServoJCommand, braces: bool = False) -> str:
    """ServoJ content text: the Python-SDK form (flat, {:.4f}) or with braces around the arrays (C++ SDK)."""
    j = ",".join(f"{x:.4f}" for x in cmd.joints)
    a = ",".join(f"{x:.4f}" for x in cmd.axes)
    if braces:
        j, a = "{" + j + "}", "{" + a + "}"
    tail = ",".join(f"{x:.4f}" for x in (cmd.acc, cmd.vel, cmd.cmd_t, cmd.filter_t, cmd.gain))
    return f"ServoJ({j},{a},{tail},{int(cmd.id)})"


_SERVOJ_RE = re.compile(r"^\s*ServoJ\s*\((.*)\)\s*$", re.DOTALL)


def decode_servoj(content: str) -> ServoJCommand:
    """Read ServoJ content in either form: 6 joints, 4 axes, acc, vel, cmdT, filterT, gain, id (16 values)."""
    m = _SERVOJ_RE.match(content)
    if not m:
        raise UdpFrameError(f"not a ServoJ command: {content[:40]!r}")
    flat = m.group(1).replace("{", "").replace("}", "")
    try:
        nums = [float(x) for x in flat.split(",")]
    except ValueError:
        raise UdpFrameError(f"ServoJ arguments are not all numbers: {content[:60]!r}") from None
    if len(nums) != 16:
        raise UdpFrameError(f"ServoJ has {len(nums)} numbers, 16 expected")
    if not all(x == x and abs(x) != float("inf") for x in nums):
        raise UdpFrameError("ServoJ holds a non-finite number")
    return ServoJCommand(
        joints=tuple(nums[0:6]),
        axes=tuple(nums[6:10]),
        acc=nums[10],
        vel=nums[11],
        cmd_t=nums[12],
        filter_t=nums[13],
        gain=nums[14],
        id=int(nums[15]),
    )
