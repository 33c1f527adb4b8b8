from __future__ import annotations

import contextlib
import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from servotool.devices.fairino import codes
from servotool.devices.fairino import protocol as p
from servotool.devices.fairino.fields import (
    FIELDS,
    SDK_DEFAULT_FIELDS,
    SDK_DEFAULT_FRAME_BYTES,
    FieldType,
    field_type,
)

frame_types = st.integers(min_value=0, max_value=255)
counts = st.integers(min_value=0, max_value=255)
payloads = st.binary(max_size=600)


@given(frame_types, counts, payloads)
def test_cnde_frame_round_trip(ftype, count, data):
    raw = p.encode_frame(ftype, data, count)
    assert raw[:2] == b"\x5a\x5a" and raw[-2:] == b"\xa5\xa5"
    assert len(raw) == len(data) + 8
    assert struct.unpack_from("<H", raw, 4)[0] == len(data)
    assert p.decode_frame(raw) == p.CndeFrame(ftype, data, count)


def test_cnde_frame_limits():
    assert p.decode_frame(p.encode_frame(4, bytes(4096))).data == bytes(4096)
    with pytest.raises(p.FairinoFrameError):
        p.encode_frame(4, bytes(4097))
    with pytest.raises(p.FairinoFrameError):
        p.encode_frame(4, b"", count=256)


@given(frame_types, counts, payloads, st.data())
def test_cnde_truncated_frames_raise(ftype, count, data, draw):
    raw = p.encode_frame(ftype, data, count)
    cut = draw.draw(st.integers(min_value=0, max_value=len(raw) - 1))
    with pytest.raises(p.FairinoFrameError):
        p.decode_frame(raw[:cut])


@given(frame_types, counts, payloads, st.data())
def test_cnde_corrupted_frames_raise(ftype, count, data, draw):
    raw = bytearray(p.encode_frame(ftype, data, count))
    where = draw.draw(st.sampled_from(["head", "tail", "length", "extra"]))
    if where == "head":
        raw[draw.draw(st.integers(0, 1))] ^= draw.draw(st.integers(1, 255))
    elif where == "tail":
        raw[len(raw) - 1 - draw.draw(st.integers(0, 1))] ^= draw.draw(st.integers(1, 255))
    elif where == "length":
        new_len = draw.draw(st.integers(0, 0xFFFF).filter(lambda n: n != len(data)))
        raw[4:6] = struct.pack("<H", new_len)
    else:
        raw += draw.draw(st.binary(min_size=1, max_size=8))
    with pytest.raises(p.FairinoFrameError):
        p.decode_frame(bytes(raw))


@given(st.binary(max_size=300))
def test_cnde_decoding_garbage_raises_only_frame_error(raw):
    try:
        frame = p.decode_frame(raw)
    except p.FairinoFrameError:
        return
    assert p.encode_frame(frame.type, frame.data, frame.count) == raw


def _frames_strategy():
    return st.lists(st.tuples(frame_types, counts, st.binary(max_size=200)), max_size=8)


@settings(max_examples=150)
@given(_frames_strategy(), st.data())
def test_splitter_recovers_frames_across_any_chunking_and_garbage(frames, draw):
    # garbage without 0x5A cannot fake a frame head; every real frame must come through intact
    garbage = st.binary(max_size=12).map(lambda b: bytes(x for x in b if x != 0x5A))
    stream = b""
    for ftype, count, data in frames:
        stream += draw.draw(garbage) + p.encode_frame(ftype, data, count)
    stream += draw.draw(garbage)
    cuts = sorted(draw.draw(st.lists(st.integers(0, len(stream)), max_size=10)))
    splitter = p.FrameSplitter()
    got = []
    prev = 0
    for c in [*cuts, len(stream)]:
        got += splitter.feed(stream[prev:c])
        prev = c
    assert got == [p.CndeFrame(t, d, c) for t, c, d in frames]


def test_splitter_resyncs_after_a_fake_head():
    good = p.encode_frame(4, b"abc", 7)
    fake = b"\x5a\x5a\x01\x04\x05\x00xx"  # announces 5 data bytes, no tail where it should be
    splitter = p.FrameSplitter()
    assert splitter.feed(fake + good + good) == [p.CndeFrame(4, b"abc", 7)] * 2
    assert splitter.bad_frames >= 1 and splitter.skipped_bytes >= len(fake)


def test_splitter_rejects_oversized_length_and_keeps_going():
    bad = b"\x5a\x5a\x00\x04\xff\xff"
    good = p.encode_frame(6, b"\x00ok", 1)
    assert p.FrameSplitter().feed(bad + good) == [p.CndeFrame(6, b"\x00ok", 1)]


def test_splitter_keeps_a_split_head():
    good = p.encode_frame(2)
    splitter = p.FrameSplitter()
    assert splitter.feed(b"zz" + good[:1]) == []
    assert splitter.feed(good[1:]) == [p.CndeFrame(2, b"", 0)]


# --- configuration, messages, layouts ------------------------------------------------------------------


@given(st.integers(0, 0xFFFF), st.lists(st.sampled_from(sorted(FIELDS)), min_size=1, max_size=10))
def test_output_config_round_trip(period, names):
    assert p.decode_output_config(p.encode_output_config(period, names)) == (period, names)


def test_config_reply_lists_types_and_not_found():
    status, text = p.decode_message(p.encode_config_reply(["robot_state", "main_code", "bogus"]))
    assert status != p.MessageStatus.OK
    assert text == "UINT8,INT32,NOT_FOUND"
    status, text = p.decode_message(p.encode_config_reply(["robot_state", "robot_state", "main_code"]))
    assert (status, text) == (0, "UINT8,UINT8,INT32")


def test_bad_config_and_message_raise():
    with pytest.raises(p.FairinoFrameError):
        p.decode_output_config(b"\x08")
    with pytest.raises(p.FairinoFrameError):
        p.decode_output_config(b"\x08\x00\xff\xfe")
    with pytest.raises(p.FairinoFrameError):
        p.decode_message(b"")


def test_field_table_types():
    for name, text in FIELDS.items():
        ft = FieldType.parse(text)
        assert str(ft) == text, name
    assert field_type("actual_joint_pos").size == 48
    assert field_type("robot_time") == FieldType("INT32", 7, True)
    assert field_type("timestamp_us").size == 8
    for name in (
        "actual_joint_vel",
        "main_code",
        "sub_code",
        "robot_state",
        "rbt_enable_state",
        "last_servoJ_target",
        "servoJ_cmd_num",
    ):
        assert name in FIELDS
    with pytest.raises(ValueError):
        FieldType.parse("QUAD")
    with pytest.raises(ValueError):
        FieldType.parse("DOUBLE_0")


def test_sdk_default_subscription_matches_its_frame_size():
    assert SDK_DEFAULT_FIELDS[0] == "program_state" and SDK_DEFAULT_FIELDS[-1] == "last_servoJ_target"
    layout = p.StateLayout.from_names(SDK_DEFAULT_FIELDS)
    assert layout.size == SDK_DEFAULT_FRAME_BYTES == 1318
    # composite entries travel as their wire types
    assert FIELDS["std_AI0_box"] == FIELDS["std_AI1_box"] == "DOUBLE"
    assert FIELDS["weld_break_off_state"] == FIELDS["weld_arc_state"] == "UINT8"


def _value(ft: FieldType):
    if ft.is_float:
        scalar = st.floats(allow_nan=False, allow_infinity=False, width=32 if ft.base == "FLOAT" else 64)
    else:
        size = ft.size // ft.count * 8
        lo, hi = (0, 2**size - 1) if ft.base.startswith("U") else (-(2 ** (size - 1)), 2 ** (size - 1) - 1)
        scalar = st.integers(lo, hi)
    if ft.count == 1 and not ft.array:
        return scalar
    return st.lists(scalar, min_size=ft.count, max_size=ft.count).map(tuple)


@settings(max_examples=60)
@given(st.lists(st.sampled_from(sorted(FIELDS)), min_size=1, max_size=12, unique=True), st.data())
def test_state_layout_round_trip(names, draw):
    layout = p.StateLayout.from_names(names)
    values = {n: draw.draw(_value(t)) for n, t in zip(layout.names, layout.types, strict=True)}
    data = layout.pack(values)
    assert len(data) == layout.size == sum(field_type(n).size for n in names)
    assert layout.unpack(data) == values
    with pytest.raises(p.FairinoFrameError):
        layout.unpack(data + b"\x00")
    with pytest.raises(p.FairinoFrameError):
        layout.unpack(data[:-1])


def test_state_layout_defaults_wraps_and_errors():
    layout = p.StateLayout.from_types(["servoJ_cmd_num", "actual_joint_pos"], ["INT32", "DOUBLE_6"])
    out = layout.unpack(layout.pack({"servoJ_cmd_num": 2**31}))
    assert out == {"servoJ_cmd_num": -(2**31), "actual_joint_pos": (0.0,) * 6}
    with pytest.raises(KeyError, match="bogus"):
        p.StateLayout.from_names(["main_code", "bogus"])
    with pytest.raises(p.FairinoFrameError):
        p.StateLayout.from_types(["a", "b"], ["INT32"])
    with pytest.raises(p.FairinoFrameError):
        p.StateLayout.from_types(["a"], ["NOT_FOUND"])


# --- UDP --------------------------------------------------------------------------------------------------

contents = st.text(st.characters(min_codepoint=32, max_codepoint=126), max_size=120).filter(
    lambda s: "III" not in s and not s.startswith("I") and not s.endswith("I")
)


@given(st.integers(0, 65535), st.integers(0, 10_000), contents)
def test_udp_round_trip(count, cmd_id, content):
    raw = p.encode_udp(count, cmd_id, content)
    assert raw.startswith(b"/f/bIII") and raw.endswith(b"III/b/f")
    assert p.decode_udp(raw) == p.UdpFrame(count, cmd_id, content)


def test_udp_exact_bytes():
    assert p.encode_udp(3, 689, "ServoMoveStart()") == b"/f/bIII3III689III16IIIServoMoveStart()III/b/f"


@pytest.mark.parametrize(
    "raw",
    [
        b"/f/bIII3III689III16IIIServoMoveStart()III/b",  # truncated tail
        b"f/bIII3III689III16IIIServoMoveStart()III/b/f",  # bad head
        b"/f/bIII3III689III15IIIServoMoveStart()III/b/f",  # wrong length
        b"/f/bIIIxIII689III16IIIServoMoveStart()III/b/f",  # not a number
        b"/f/bIII3III689IIIServoMoveStart()III/b/f",  # missing field
        b"/f/bIII70000III689III16IIIServoMoveStart()III/b/f",  # count over 65535
        b"/f/bIII3III689III2III\xff\xfeIII/b/f",  # not ASCII
    ],
)
def test_udp_corrupted_frames_raise(raw):
    with pytest.raises(p.FairinoFrameError):
        p.decode_udp(raw)


@given(st.binary(max_size=200))
def test_udp_garbage_raises_only_frame_error(raw):
    with contextlib.suppress(p.FairinoFrameError):
        p.decode_udp(raw)


def test_udp_encode_refuses_bad_input():
    with pytest.raises(p.FairinoFrameError):
        p.encode_udp(65536, 376, "x")
    with pytest.raises(p.FairinoFrameError):
        p.encode_udp(1, 376, "aIIIb")


finite = st.floats(min_value=-1e5, max_value=1e5, allow_nan=False)


@given(
    st.lists(finite, min_size=6, max_size=6),
    st.lists(finite, min_size=4, max_size=4),
    st.floats(0.001, 0.1),
    st.integers(0, 1000),
    st.booleans(),
)
def test_servoj_content_round_trip_both_forms(joints, axes, cmd_t, ident, braces):
    cmd = p.ServoJCommand(tuple(joints), tuple(axes), cmd_t=cmd_t, id=ident)
    text = p.encode_servoj(cmd, braces=braces)
    assert ("{" in text) == braces
    back = p.decode_servoj(text)
    assert back.joints == pytest.approx(cmd.joints, abs=5e-5)
    assert back.axes == pytest.approx(cmd.axes, abs=5e-5)
    assert back.cmd_t == pytest.approx(round(cmd_t, 4), abs=5e-5)
    assert back.id == ident


def test_servoj_sdk_text_forms():
    flat = (
        "ServoJ(1.0000,2.0000,3.0000,4.0000,5.0000,6.0000,0.0000,0.0000,0.0000,0.0000,"
        "0.0000,0.0000,0.0080,0.0000,0.0000,0)"
    )
    braced = "ServoJ({1,2,3,4,5,6},{0,0,0,0},0,0,0.008,0,0,0)"
    for text in (flat, braced):
        cmd = p.decode_servoj(text)
        assert cmd.joints == (1, 2, 3, 4, 5, 6) and cmd.cmd_t == 0.008
    assert p.encode_servoj(p.decode_servoj(flat)) == flat


@pytest.mark.parametrize(
    "text",
    [
        "ServoJ(1,2,3)",
        "MoveJ(1,2,3,4,5,6,0,0,0,0,0,0,0.008,0,0,0)",
        "ServoJ(1,2,3,4,5,x,0,0,0,0,0,0,0.008,0,0,0)",
        "ServoJ(1,2,3,4,5,nan,0,0,0,0,0,0,0.008,0,0,0)",
        "ServoJ(1,2,3,4,5,6,0,0,0,0,0,0,0.008,0,0,0",
    ],
)
def test_servoj_bad_content_raises(text):
    with pytest.raises(p.FairinoFrameError):
        p.decode_servoj(text)


# --- codes ------------------------------------------------------------------------------------------------


def test_error_and_fault_tables():
    assert [codes.ErrCode[n] for n in ("OK", "FAILED", "NOT_ENABLED", "NOT_CONNECTED")] == [0, 14, 101, -4]
    assert {3, 4, 29, 99} <= {int(c) for c in codes.ErrCode}
    assert [codes.speed_limit_fault(a) for a in range(6)] == [(1, 23 + a) for a in range(6)]
    assert codes.RUNAWAY_FAULT == (1, 32) and codes.FAULTS[(1, 32)].confirmed
    assert not codes.FAULTS[(1, 23)].confirmed
    assert "axis 1" in codes.describe_fault(1, 23) and "unconfirmed" in codes.describe_fault(1, 23)
    assert codes.describe_fault(0, 0) == "no fault"
    assert "not in the table" in codes.describe_fault(7, 7)
    assert "101" in codes.describe_errcode(101)
    with pytest.raises(ValueError):
        codes.speed_limit_fault(6)
