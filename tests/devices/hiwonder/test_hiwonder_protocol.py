import struct

import pytest
from hypothesis import given
from hypothesis import strategies as st

from servotool.devices.hiwonder import protocol as p

# Reference frames of the board protocol, with what each one means.
REFERENCE_FRAMES = [
    ("aa 55 05 07 01 e8 03 01 01 f4 01 f5", p.Move(1000, {1: 500})),
    ("aa 55 05 02 05 01 6f", p.ServoRequest(p.SubCommand.READ_POSITION, 1)),
    ("aa 55 05 08 03 06 01 02 03 04 05 0a e8", p.Stop((1, 2, 3, 4, 5, 10))),
    ("aa 55 05 02 0d 01 19", p.ServoRequest(p.SubCommand.READ_TORQUE, 1)),
    ("aa 55 05 02 0c 01 dd", p.ServoRequest(p.SubCommand.TORQUE_OFF, 1)),
]


def test_crc8_maxim_check_value():
    assert p.crc8_maxim(b"123456789") == 0xA1
    assert p.crc8_maxim(b"") == 0


@pytest.mark.parametrize(("hexbytes", "command"), REFERENCE_FRAMES)
def test_reference_frames_encode_and_decode(hexbytes, command):
    raw = bytes.fromhex(hexbytes)
    assert p.encode_command(command) == raw
    assert p.decode_command(p.decode_frame(raw)) == command


def test_helpers_build_the_reference_frames():
    assert p.move_frame({1: 500}, 1000).hex(" ") == REFERENCE_FRAMES[0][0]
    assert p.stop_frame([10, 5, 4, 3, 2, 1]).hex(" ") == REFERENCE_FRAMES[2][0]
    assert p.request_frame(p.SubCommand.TORQUE_OFF, 1).hex(" ") == REFERENCE_FRAMES[4][0]


def test_functions_enum():
    assert [f.value for f in p.Function] == list(range(12))
    assert p.Function.BUS_SERVO == 5


ids = st.integers(0, 253)  # 254 is the broadcast id: no host command addresses it
pulses = st.integers(0, 1000)


@pytest.mark.parametrize("sid", [254, 255, 256, -1])
def test_no_host_command_addresses_the_broadcast_id(sid):
    # Move({254: 500}) was encoded: every servo on the line would have moved to 500
    relax = p.ServoRequest(p.SubCommand.TORQUE_OFF, sid)
    read = p.ServoRequest(p.SubCommand.READ_POSITION, sid)
    for cmd in (p.Move(100, {2: 500, sid: 500}), p.Stop((1, sid)), relax, read):
        with pytest.raises(ValueError, match="broadcast"):
            p.encode_command(cmd)


@given(st.integers(0, 0xFFFF), st.dictionaries(ids, pulses, min_size=1, max_size=20))
def test_move_round_trip(duration, targets):
    cmd = p.Move(duration, targets)
    raw = p.encode_command(cmd)
    assert raw[:2] == b"\xaa\x55" and raw[2] == 5 and raw[3] == len(raw) - 5
    assert p.decode_command(p.decode_frame(raw)) == cmd


@given(st.lists(ids, min_size=1, max_size=40))
def test_stop_round_trip(servo_ids):
    cmd = p.Stop(tuple(servo_ids))
    assert p.decode_command(p.decode_frame(p.encode_command(cmd))) == cmd


@given(st.sampled_from([s for s in p.SubCommand if s not in (p.SubCommand.MOVE, p.SubCommand.STOP)]), ids)
def test_request_round_trip(sub, sid):
    cmd = p.ServoRequest(sub, sid)
    assert p.decode_command(p.decode_frame(p.encode_command(cmd))) == cmd


def _reply_values(sub):
    fmt = p.REPLY_FORMATS[sub]
    tail = fmt[4:]
    ranges = {"h": (-32768, 32767), "H": (0, 65535), "B": (0, 255), "b": (-128, 127)}
    vals = [st.integers(*ranges[c]) for c in tail]
    return st.tuples(*vals).map(lambda v: v[0] if len(v) == 1 else v)


@given(st.data())
def test_reply_round_trip(data):
    sub = data.draw(st.sampled_from(sorted(p.REPLY_FORMATS)))
    reply = p.ServoReply(
        data.draw(ids), p.SubCommand(sub), data.draw(st.integers(-128, 127)), data.draw(_reply_values(sub))
    )
    assert p.decode_reply(p.decode_frame(p.encode_reply(reply))) == reply


def test_position_reply_is_signed():
    raw = p.encode_reply(p.ServoReply(3, p.SubCommand.READ_POSITION, 0, -35))
    reply = p.decode_reply(p.decode_frame(raw))
    assert reply.value == -35 and reply.success
    raw = p.encode_reply(p.ServoReply(2, p.SubCommand.READ_LIMIT, 0, (80, 960)))
    limits = p.decode_reply(p.decode_frame(raw))
    assert limits.value == (80, 960)


@pytest.mark.parametrize("sub", sorted(p.EEPROM_WRITES))
def test_eeprom_writes_cannot_be_encoded(sub):
    assert sub not in {s.value for s in p.SubCommand}
    with pytest.raises(p.EepromWriteRefused, match="EEPROM"):
        p.encode_frame(p.Function.BUS_SERVO, bytes([sub, 1, 0, 0]))


def test_unknown_bus_servo_subcommands_are_not_encoded():
    with pytest.raises(p.EepromWriteRefused):
        p.encode_frame(p.Function.BUS_SERVO, bytes([0x40, 1]))
    with pytest.raises(p.EepromWriteRefused):
        p.encode_frame(p.Function.BUS_SERVO, b"")


def test_move_pulses_outside_range_are_refused():
    with pytest.raises(ValueError, match="outside 0-1000"):
        p.move_frame({2: 1001}, 40)
    with pytest.raises(ValueError):
        p.move_frame({2: -1}, 40)
    with pytest.raises(ValueError):
        p.move_frame({}, 40)


GOOD = bytes.fromhex("aa 55 05 07 01 e8 03 01 01 f4 01 f5")


@pytest.mark.parametrize(
    ("raw", "why"),
    [
        (GOOD[:-1] + bytes([GOOD[-1] ^ 1]), "bad CRC"),
        (GOOD[:6], "truncated"),
        (GOOD[:3], "truncated"),
        (b"\xab\x55" + GOOD[2:], "wrong header"),
        (GOOD + b"\x00", "length mismatch"),
        (b"", "wrong header"),
    ],
)
def test_corrupted_frames_raise_one_error(raw, why):
    with pytest.raises(p.BoardFrameError, match=why):
        p.decode_frame(raw)


def _frame(func, data):
    body = bytes([func, len(data)]) + data
    return b"\xaa\x55" + body + bytes([p.crc8_maxim(body)])


@pytest.mark.parametrize(
    "data",
    [
        bytes([0x10, 1, 5]),  # an EEPROM write arriving at the board is not a command it takes
        bytes([0x40, 1]),  # unknown sub-command
        bytes([0x01, 0xE8, 0x03, 2, 1, 0xF4, 0x01]),  # move for 2 servos carrying 1
        bytes([0x03, 3, 1, 2]),  # stop for 3 ids carrying 2
        bytes([0x05, 1, 2]),  # read with a stray byte
        b"",
    ],
)
def test_bad_commands_raise_frame_error(data):
    with pytest.raises(p.BoardFrameError):
        p.decode_command(p.decode_frame(_frame(5, data)))


def test_bad_replies_raise_frame_error():
    with pytest.raises(p.BoardFrameError, match="unknown"):
        p.decode_reply(p.decode_frame(_frame(5, bytes([1, 0x40, 0, 0]))))
    with pytest.raises(p.BoardFrameError, match="bytes"):
        p.decode_reply(p.decode_frame(_frame(5, struct.pack("<BBbh", 1, 5, 0, 500) + b"\x00")))
    with pytest.raises(p.BoardFrameError, match="function"):
        p.decode_reply(p.decode_frame(_frame(0, struct.pack("<BH", 4, 12000))))


garbage = st.binary(max_size=30).map(lambda b: bytes(x for x in b if x != 0xAA))
commands = st.one_of(
    st.builds(p.Move, st.integers(0, 0xFFFF), st.dictionaries(ids, pulses, min_size=1, max_size=6)),
    st.builds(lambda i: p.Stop(tuple(i)), st.lists(ids, min_size=1, max_size=8)),
    st.builds(p.ServoRequest, st.sampled_from([p.SubCommand.READ_POSITION, p.SubCommand.TORQUE_OFF]), ids),
)


@given(st.lists(st.tuples(garbage, commands), max_size=8), garbage, st.integers(1, 7))
def test_stream_parser_resyncs_on_garbage(items, tail, chunk):
    stream = b"".join(g + p.encode_command(c) for g, c in items) + tail
    parser = p.FrameParser()
    frames = []
    for i in range(0, len(stream), chunk):
        frames += parser.feed(stream[i : i + chunk])
    assert [p.decode_command(f) for f in frames] == [c for _, c in items]


def test_stream_parser_skips_a_corrupted_frame_and_keeps_the_next():
    bad = bytearray(GOOD)
    bad[-1] ^= 0xFF
    good2 = p.request_frame(p.SubCommand.READ_POSITION, 3)
    parser = p.FrameParser()
    frames = parser.feed(b"\x00\xaa" + bytes(bad) + good2)
    assert frames == [p.decode_frame(good2)]
    assert parser.bad_frames == 1
    assert isinstance(parser.last_error, p.BoardFrameError)


def test_stream_parser_holds_a_partial_frame_until_the_rest_arrives():
    parser = p.FrameParser()
    assert parser.feed(GOOD[:1]) == []
    assert parser.feed(GOOD[1:5]) == []
    assert parser.feed(GOOD[5:]) == [p.decode_frame(GOOD)]
    assert parser.pending == 0
