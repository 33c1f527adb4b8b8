import contextlib
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from servotool.clock import FakeClock
from servotool.devices.dynamixel import control_table as ct
from servotool.devices.dynamixel import protocol as p
from servotool.devices.dynamixel.profiles import MICRODUCK
from servotool.devices.dynamixel.sim import DxlSim
from servotool.devices.dynamixel.sim_params import DxlSimParams
from servotool.errors import ProtocolError

# Packets from the Protocol 2.0 description, with what they mean.
REFERENCE = [
    ("ff ff fd 00 01 03 00 01 19 4e", p.Packet(1, p.Instruction.PING)),
    ("ff ff fd 00 01 07 00 55 00 06 04 26 65 5d", p.Packet(1, p.STATUS, bytes([0, 0x06, 0x04, 0x26]))),
    ("ff ff fd 00 01 07 00 02 84 00 04 00 1d 15", p.Packet(1, p.Instruction.READ, bytes([0x84, 0, 4, 0]))),
]

settled = settings(derandomize=True, max_examples=150, deadline=None)


@pytest.mark.parametrize(("hexbytes", "packet"), REFERENCE)
def test_reference_packets_encode_and_decode(hexbytes, packet):
    raw = bytes.fromhex(hexbytes)
    assert p.encode_packet(packet.id, packet.instruction, packet.params) == raw
    assert p.decode_packet(raw) == packet


def test_byte_stuffing_inserts_fd_and_length_counts_it():
    params = bytes([0x74, 0x00, 0xFF, 0xFF, 0xFD, 0x00])
    raw = p.encode_packet(1, p.Instruction.WRITE, params)
    assert b"\xff\xff\xfd\xfd" in raw[7:]
    assert raw[5] | raw[6] << 8 == len(raw) - 7 == len(params) + 3 + 1
    assert p.decode_packet(raw).params == params


@settled
@given(st.integers(0, 0xFD), st.integers(0, 0xFF), st.binary(max_size=200))
def test_packet_round_trip(pid, inst, params):
    assert p.decode_packet(p.encode_packet(pid, inst, params)) == p.Packet(pid, inst, params)


@settled
@given(st.lists(st.tuples(st.binary(max_size=30), st.binary(max_size=40)), max_size=6), st.integers(1, 9))
def test_stream_parser_finds_every_packet_among_garbage(items, chunk):
    # garbage never contains a header here, so every packet must come out, whatever the chunking
    stream, want = b"", []
    for garbage, params in items:
        garbage = garbage.replace(b"\xff", b"\x00")
        stream += garbage + p.encode_packet(3, p.Instruction.WRITE, params)
        want.append(p.Packet(3, p.Instruction.WRITE, params))
    parser, got = p.PacketParser(), []
    for i in range(0, len(stream), chunk):
        got += parser.feed(stream[i : i + chunk])
    assert got == want


def test_corrupted_packet_is_skipped_and_the_next_one_kept():
    good = p.encode_packet(1, p.Instruction.PING)
    bad = bytearray(p.encode_packet(2, p.Instruction.READ, b"\x84\x00\x04\x00"))
    bad[-1] ^= 0x01
    parser = p.PacketParser()
    assert parser.feed(bytes(bad) + good) == [p.Packet(1, p.Instruction.PING)]
    assert parser.bad_packets >= 1


def test_a_truncated_packet_is_dropped_when_the_line_goes_quiet():
    parser = p.PacketParser()
    good = p.encode_packet(7, p.Instruction.PING)
    assert parser.feed(good[:6] + b"\xff\x00") == []  # the length field claims far more than comes
    assert parser.expire() == []
    assert parser.feed(good) == [p.Packet(7, p.Instruction.PING)]


@pytest.mark.parametrize(
    ("packet", "errnum"),
    [
        (p.Packet(1, 0x7E), p.ErrorNumber.INSTRUCTION),
        (p.Packet(1, p.STATUS, b"\x00"), p.ErrorNumber.INSTRUCTION),
        (p.Packet(1, p.Instruction.READ, b"\x84\x00\x04"), p.ErrorNumber.DATA_LENGTH),
        (p.Packet(1, p.Instruction.WRITE, b"\x40"), p.ErrorNumber.DATA_LENGTH),
        (
            p.Packet(0xFE, p.Instruction.SYNC_WRITE, b"\x74\x00\x04\x00\x0a\x00\x00"),
            p.ErrorNumber.DATA_LENGTH,
        ),
        (p.Packet(0xFE, p.Instruction.BULK_READ, b"\x0a\x84\x00\x04"), p.ErrorNumber.DATA_LENGTH),
        (p.Packet(0xFE, p.Instruction.BULK_WRITE, b"\x0a\x74\x00\x04\x00\x01"), p.ErrorNumber.DATA_LENGTH),
    ],
)
def test_malformed_instructions_raise_with_the_device_error_number(packet, errnum):
    with pytest.raises(p.DxlPacketError) as info:
        p.decode_instruction(packet)
    assert info.value.errnum == errnum and isinstance(info.value, ProtocolError)


def test_instructions_decode():
    sync = p.decode_instruction(p.Packet(0xFE, 0x82, b"\x7e\x00\x15\x00\x0a\x0b"))
    assert sync == p.SyncRead(126, 21, (10, 11))
    assert p.decode_instruction(
        p.Packet(0xFE, 0x92, b"\x0a\x84\x00\x04\x00\x1e\x46\x00\x01\x00")
    ) == p.BulkRead(((10, 132, 4), (30, 70, 1)))
    assert p.decode_instruction(p.Packet(0xFE, 0x83, b"\x40\x00\x01\x00\x0a\x01\x0b\x00")) == p.SyncWrite(
        64, 1, ((10, b"\x01"), (11, b"\x00"))
    )
    assert p.decode_status(p.Packet(5, p.STATUS, b"\x80\x20")) == p.Status(5, 0x80, b"\x20")
    assert p.decode_status(p.Packet(5, p.STATUS, b"\x80")).alert


# --- fuzz: 100,000 random and mutated packets ---------------------------------------------------------------

VALID = [
    p.encode_packet(10, p.Instruction.PING),
    p.encode_packet(11, p.Instruction.READ, b"\x84\x00\x04\x00"),
    p.encode_packet(12, p.Instruction.WRITE, b"\x74\x00\x00\x08\x00\x00"),
    p.encode_packet(0xFE, p.Instruction.SYNC_READ, bytes([126, 0, 21, 0, 10, 11, 12, 22, 30])),
    p.encode_packet(0xFE, p.Instruction.BULK_READ, bytes([10, 70, 0, 1, 0, 31, 126, 0, 21, 0])),
    p.encode_packet(0xFE, p.Instruction.SYNC_WRITE, bytes([116, 0, 4, 0, 10, 0, 8, 0, 0, 11, 0, 8, 0, 0])),
    p.encode_packet(13, p.Instruction.REBOOT),
    p.encode_packet(0xFE, p.Instruction.PING),
]


def _mutate(rng: random.Random, raw: bytes) -> bytes:
    data = bytearray(raw)
    for _ in range(rng.randint(1, 4)):
        op = rng.randrange(4)
        if op == 0 and data:
            data[rng.randrange(len(data))] = rng.randrange(256)
        elif op == 1:
            data.insert(rng.randrange(len(data) + 1), rng.randrange(256))
        elif op == 2 and data:
            del data[rng.randrange(len(data))]
        else:
            data = data[: rng.randrange(len(data) + 1)]
    return bytes(data)


def _reframed(rng: random.Random) -> bytes:
    """A packet with a valid CRC around random content: reaches the instruction decoder and the sim."""
    inst = rng.choice([*map(int, p.Instruction), p.STATUS, rng.randrange(256)])
    params = bytes(rng.randrange(256) for _ in range(rng.randrange(0, 24)))
    return p.encode_packet(rng.choice([10, 22, 30, 0xFE, rng.randrange(256)]), inst, params)


def _resync(parser, raw):
    got = parser.feed(raw)
    while parser.pending:
        got += parser.expire()
    return got


def _drive(sim, parser, chunk):
    for packet in parser.feed(chunk):
        with contextlib.suppress(p.DxlPacketError):
            p.decode_instruction(packet)
        sim.handle(packet)


@pytest.mark.slow
def test_fuzz_parser_decoder_and_sim_take_100k_packets_and_resynchronise():
    rng = random.Random(20261130)
    clock = FakeClock()
    sim = DxlSim(MICRODUCK, DxlSimParams(seed=1, silent=()), clock)
    parser = p.PacketParser()
    for i in range(100_000):
        kind = i % 4
        if kind == 0:
            chunk = bytes(rng.randrange(256) for _ in range(rng.randrange(1, 24)))
        elif kind == 3:
            chunk = _reframed(rng)
        else:
            chunk = _mutate(rng, rng.choice(VALID))
        with contextlib.suppress(p.DxlPacketError):
            p.decode_packet(chunk)
        _drive(sim, parser, chunk)
        if i % 5000 == 0:
            clock.advance(0.01)
        assert parser.pending <= p.MAX_LENGTH + 64
    # after all that, the line still works: a clean ping comes out once the line goes quiet
    packets = _resync(parser, p.encode_packet(10, p.Instruction.PING))
    packet = packets[-1]
    assert packet == p.Packet(10, p.Instruction.PING)
    status = p.decode_status(p.decode_packet(sim.handle(packet)))
    assert status.id == 10 and status.data[:2] == ct.encode_value(ct.MODEL_NUMBER, ct.MODEL_XL330_M288)


@settled
@given(st.binary(max_size=300))
def test_decoders_raise_only_their_protocol_error(data):
    with contextlib.suppress(p.DxlPacketError):
        p.decode_instruction(p.decode_packet(data))
    parser = p.PacketParser()
    parser.feed(data)
    assert _resync(parser, p.encode_packet(1, 1))[-1] == p.Packet(1, 1)


@settled
@given(st.sampled_from([10, 22, 30, 0xFE, 0, 200]), st.integers(0, 0xFF), st.binary(max_size=40))
def test_sim_answers_any_framed_packet_with_status_packets_only(pid, inst, params):
    sim = DxlSim(MICRODUCK, DxlSimParams(seed=2), FakeClock())
    out = sim.handle(p.Packet(pid, inst, params))
    parser = p.PacketParser()
    replies = parser.feed(out)
    assert parser.pending == 0 and parser.bad_packets == 0
    assert all(r.instruction == p.STATUS for r in replies)
