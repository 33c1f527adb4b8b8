"""DYNAMIXEL Protocol 2.0 packets as bytes <-> dataclasses (the simulator's side of the wire).

Packet: ``FF FF FD 00 | id | length u16 LE | instruction | params | crc16 LE``; `length` counts instruction,
params and CRC after byte stuffing (an ``FD`` is inserted after every ``FF FF FD`` in the body). The CRC
(poly 0x8005) and the stuffing are dynamixel-sdk's own helpers, so both ends of our links share one
implementation; the host side of servotool talks through dynamixel-sdk itself.

Decoders raise only `DxlPacketError`; `PacketParser` never raises, counts what it skips and resynchronises on
the next header.
"""

from __future__ import annotations

import enum
import struct
from dataclasses import dataclass, field

from dynamixel_sdk import Protocol2PacketHandler

from servotool.errors import ProtocolError

HEADER = b"\xff\xff\xfd\x00"
BROADCAST_ID = 0xFE
MAX_LENGTH = 1024  # the longest packet dynamixel-sdk builds or accepts
STATUS = 0x55

_SDK = Protocol2PacketHandler()


class Instruction(enum.IntEnum):
    PING = 0x01
    READ = 0x02
    WRITE = 0x03
    REG_WRITE = 0x04
    ACTION = 0x05
    FACTORY_RESET = 0x06
    REBOOT = 0x08
    CLEAR = 0x10
    SYNC_READ = 0x82
    SYNC_WRITE = 0x83
    BULK_READ = 0x92
    BULK_WRITE = 0x93


class ErrorNumber(enum.IntEnum):
    """The low 7 bits of a status packet's error byte (bit 7 is the hardware Alert)."""

    NONE = 0
    RESULT_FAIL = 1
    INSTRUCTION = 2
    CRC = 3
    DATA_RANGE = 4
    DATA_LENGTH = 5
    DATA_LIMIT = 6
    ACCESS = 7


ALERT = 0x80


class DxlPacketError(ProtocolError):
    """Bytes that are not a valid Protocol 2.0 packet or instruction. `errnum` is the status error a device
    would answer with (INSTRUCTION for an unknown instruction, DATA_LENGTH for malformed parameters)."""

    def __init__(self, message: str, errnum: ErrorNumber = ErrorNumber.DATA_LENGTH) -> None:
        super().__init__(message)
        self.errnum = errnum


@dataclass(frozen=True)
class Packet:
    """A packet with stuffing removed: id, instruction byte, parameters."""

    id: int
    instruction: int
    params: bytes = b""


def crc16(data: bytes) -> int:
    """CRC-16 (poly 0x8005, init 0, MSB first) as dynamixel-sdk computes it."""
    return int(_SDK.updateCRC(0, data, len(data)))


def encode_packet(packet_id: int, instruction: int, params: bytes = b"") -> bytes:
    """The wire bytes of one packet (stuffed, CRC appended). DxlPacketError when it would be too long."""
    if not 0 <= packet_id <= 0xFF or not 0 <= instruction <= 0xFF:
        raise DxlPacketError(f"id {packet_id} / instruction {instruction} out of byte range")
    length = len(params) + 3
    raw = [*HEADER, packet_id, length & 0xFF, length >> 8, instruction, *params, 0, 0]
    # the sdk's stuffing works in a fixed 1024-byte buffer: worst case grows a packet by a third
    if len(raw) + len(raw) // 3 + 1 > MAX_LENGTH:
        raise DxlPacketError(f"packet of {len(raw)} bytes may exceed {MAX_LENGTH} once stuffed")
    raw = _SDK.addStuffing(raw)
    total = (raw[5] | raw[6] << 8) + 7
    crc = crc16(bytes(raw[: total - 2]))
    raw[total - 2], raw[total - 1] = crc & 0xFF, crc >> 8
    return bytes(raw[:total])


def encode_status(packet_id: int, error: int, data: bytes = b"") -> bytes:
    """A status packet: instruction 0x55, the error byte, then the data."""
    return encode_packet(packet_id, STATUS, bytes([error & 0xFF]) + bytes(data))


def _unstuff(body: bytes) -> bytes:
    return body.replace(b"\xff\xff\xfd\xfd", b"\xff\xff\xfd")


def decode_packet(raw: bytes) -> Packet:
    """One whole packet (header through CRC) -> Packet. DxlPacketError on any inconsistency."""
    if len(raw) < 10 or raw[:4] != HEADER:
        raise DxlPacketError(f"not a packet: {raw[:12].hex(' ')}")
    length = raw[5] | raw[6] << 8
    if length < 3 or len(raw) != length + 7:
        raise DxlPacketError(f"length field {length} does not match {len(raw)} bytes")
    crc = raw[-2] | raw[-1] << 8
    if crc16(raw[:-2]) != crc:
        raise DxlPacketError("CRC mismatch", ErrorNumber.CRC)
    body = _unstuff(raw[7:-2])
    return Packet(raw[4], body[0], bytes(body[1:]))


def _header_prefix(buf: bytearray) -> int:
    """Length of the longest tail of buf that could begin a header (kept for the next feed)."""
    for n in (3, 2, 1):
        if buf[-n:] == HEADER[:n]:
            return n
    return 0


@dataclass
class PacketParser:
    """Cuts a byte stream into packets. Never raises: bad packets are counted and skipped, and the parser
    resynchronises on the next header. The buffer never holds more than one maximal packet plus a feed."""

    bad_packets: int = 0
    skipped_bytes: int = 0
    _buf: bytearray = field(default_factory=bytearray)

    def reset(self) -> None:
        self._buf.clear()

    @property
    def pending(self) -> int:
        return len(self._buf)

    def expire(self) -> list[Packet]:
        """The line went quiet inside a packet: drop that packet's header and parse what follows it."""
        start = self._buf.find(HEADER)
        if start < 0:
            self.skipped_bytes += len(self._buf)
            self._buf.clear()
            return []
        self.bad_packets += 1
        self.skipped_bytes += start + 1
        del self._buf[: start + 1]
        return self.feed(b"")

    def feed(self, data: bytes) -> list[Packet]:
        self._buf.extend(data)
        out: list[Packet] = []
        while True:
            start = self._buf.find(HEADER)
            if start < 0:
                keep = _header_prefix(self._buf)
                self.skipped_bytes += len(self._buf) - keep
                del self._buf[: len(self._buf) - keep]
                return out
            if start:
                self.skipped_bytes += start
                del self._buf[:start]
            if len(self._buf) < 7:
                return out
            length = self._buf[5] | self._buf[6] << 8
            if length < 3 or length + 7 > MAX_LENGTH:
                self._drop_header()
                continue
            if len(self._buf) < length + 7:
                return out
            try:
                out.append(decode_packet(bytes(self._buf[: length + 7])))
            except DxlPacketError:
                self._drop_header()
                continue
            del self._buf[: length + 7]

    def _drop_header(self) -> None:
        self.bad_packets += 1
        self.skipped_bytes += 1
        del self._buf[:1]


# --- instructions ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Ping:
    pass


@dataclass(frozen=True)
class Read:
    address: int
    length: int


@dataclass(frozen=True)
class Write:
    address: int
    data: bytes
    registered: bool = False  # REG_WRITE: held until ACTION


@dataclass(frozen=True)
class Action:
    pass


@dataclass(frozen=True)
class Reboot:
    pass


@dataclass(frozen=True)
class FactoryReset:
    option: int


@dataclass(frozen=True)
class Clear:
    params: bytes


@dataclass(frozen=True)
class SyncRead:
    address: int
    length: int
    ids: tuple[int, ...]


@dataclass(frozen=True)
class SyncWrite:
    address: int
    length: int
    data: tuple[tuple[int, bytes], ...]


@dataclass(frozen=True)
class BulkRead:
    entries: tuple[tuple[int, int, int], ...]  # (id, address, length)


@dataclass(frozen=True)
class BulkWrite:
    entries: tuple[tuple[int, int, bytes], ...]  # (id, address, data)


Command = (
    Ping | Read | Write | Action | Reboot | FactoryReset | Clear | SyncRead | SyncWrite | BulkRead | BulkWrite
)


def _need(params: bytes, n: int, what: str, exact: bool = True) -> None:
    if len(params) < n or (exact and len(params) != n):
        raise DxlPacketError(f"{what}: {len(params)} parameter bytes, expected {n}")


def _sync(params: bytes, read: bool) -> SyncRead | SyncWrite:
    _need(params, 4, "sync read" if read else "sync write", exact=False)
    address, length = struct.unpack_from("<HH", params)
    rest = params[4:]
    if read:
        return SyncRead(address, length, tuple(rest))
    if length == 0 or len(rest) % (length + 1):
        raise DxlPacketError(f"sync write: {len(rest)} bytes do not split into (id + {length}) blocks")
    step = length + 1
    return SyncWrite(
        address, length, tuple((rest[i], bytes(rest[i + 1 : i + step])) for i in range(0, len(rest), step))
    )


def _bulk_read(params: bytes) -> BulkRead:
    if len(params) % 5:
        raise DxlPacketError(f"bulk read: {len(params)} bytes do not split into 5-byte blocks")
    return BulkRead(tuple(struct.unpack_from("<BHH", params, i) for i in range(0, len(params), 5)))


def _bulk_write(params: bytes) -> BulkWrite:
    entries: list[tuple[int, int, bytes]] = []
    i = 0
    while i < len(params):
        if len(params) - i < 5:
            raise DxlPacketError("bulk write: truncated block header")
        sid, address, length = struct.unpack_from("<BHH", params, i)
        if len(params) - i - 5 < length:
            raise DxlPacketError("bulk write: truncated block data")
        entries.append((sid, address, bytes(params[i + 5 : i + 5 + length])))
        i += 5 + length
    return BulkWrite(tuple(entries))


def decode_instruction(packet: Packet) -> Command:
    """The instruction a packet carries. DxlPacketError (errnum INSTRUCTION) for a status packet or an
    unknown instruction, (errnum DATA_LENGTH) for parameters of the wrong size."""
    inst, params = packet.instruction, packet.params
    if inst == Instruction.PING:
        return Ping()
    if inst in (Instruction.READ, Instruction.WRITE, Instruction.REG_WRITE):
        _need(
            params,
            4 if inst == Instruction.READ else 2,
            Instruction(inst).name,
            exact=inst == Instruction.READ,
        )
        (address,) = struct.unpack_from("<H", params)
        if inst == Instruction.READ:
            return Read(address, struct.unpack_from("<H", params, 2)[0])
        return Write(address, bytes(params[2:]), registered=inst == Instruction.REG_WRITE)
    if inst in (Instruction.ACTION, Instruction.REBOOT):
        return Action() if inst == Instruction.ACTION else Reboot()
    if inst == Instruction.FACTORY_RESET:
        _need(params, 1, "factory reset")
        return FactoryReset(params[0])
    if inst == Instruction.CLEAR:
        return Clear(bytes(params))
    if inst in (Instruction.SYNC_READ, Instruction.SYNC_WRITE):
        return _sync(params, read=inst == Instruction.SYNC_READ)
    if inst == Instruction.BULK_READ:
        return _bulk_read(params)
    if inst == Instruction.BULK_WRITE:
        return _bulk_write(params)
    raise DxlPacketError(f"unknown instruction 0x{inst:02x}", ErrorNumber.INSTRUCTION)


@dataclass(frozen=True)
class Status:
    """A decoded status packet: the error byte split into its Alert bit and error number, then the data."""

    id: int
    error: int
    data: bytes

    @property
    def alert(self) -> bool:
        return bool(self.error & ALERT)

    @property
    def errnum(self) -> int:
        return self.error & 0x7F


def decode_status(packet: Packet) -> Status:
    """A status packet's fields. DxlPacketError if it is not one."""
    if packet.instruction != STATUS or not packet.params:
        raise DxlPacketError(
            f"not a status packet (instruction 0x{packet.instruction:02x})", ErrorNumber.INSTRUCTION
        )
    return Status(packet.id, packet.params[0], bytes(packet.params[1:]))
