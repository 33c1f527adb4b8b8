"""The FAIRINO decoders against random and mutated bytes: only the family's ProtocolError subclass escapes
(CndeFrameError for the state stream, UdpFrameError for command frames), never IndexError, struct.error,
UnicodeError, OverflowError or a ValueError of int()/float(); the stream splitter never raises at all.

Two sources: hypothesis for structure (frames whose fields are each drawn, length fields that lie), and a
seeded numpy generator making 100,000 mutations of valid frames per protocol (bit flips, truncations, lying
length fields, inserted and replaced garbage, spliced frames, pure noise).
"""

from __future__ import annotations

import contextlib
import struct

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from servotool.devices.fairino import protocol as p
from servotool.devices.fairino.fields import FieldType
from servotool.devices.fairino.stream import OPTIONAL_FIELDS, REQUIRED_FIELDS

N_MUTATIONS = 100_000
SEED = 20261130
LAYOUT = p.StateLayout.from_names(REQUIRED_FIELDS + OPTIONAL_FIELDS)
SETTINGS = settings(max_examples=200, derandomize=True, deadline=None, database=None)


def decode_cnde(buf: bytes) -> None:
    """Everything a client or the simulator does with one CNDE frame's bytes; CndeFrameError is the only
    way to fail."""
    try:
        frame = p.decode_frame(buf)
        decode_payload(frame)
    except p.CndeFrameError:
        pass


def decode_payload(frame: p.CndeFrame) -> None:
    if frame.type == p.FrameType.OUTPUT_CONFIG:
        p.decode_output_config(frame.data)
    elif frame.type == p.FrameType.MESSAGE:
        _status, text = p.decode_message(frame.data)
        types = text.split(",")
        p.StateLayout.from_types([f"f{i}" for i in range(len(types))], types).size  # noqa: B018
    elif frame.type == p.FrameType.OUTPUT_DATA:
        LAYOUT.unpack(frame.data)


def decode_udp(buf: bytes) -> None:
    """Everything the simulator (and a client reading replies) does with one UDP datagram."""
    try:
        frame = p.decode_udp(buf)
        if frame.cmd_id == p.CmdId.SERVO_J:
            p.decode_servoj(frame.content)
    except p.UdpFrameError:
        pass


# --- valid frames to mutate -------------------------------------------------------------------------------


def valid_cnde(rng: np.random.Generator) -> list[bytes]:
    out = []
    for k in range(64):
        values = {name: rng.normal(size=6) * 90 for name in ("actual_joint_pos", "last_servoJ_target")}
        values |= {"main_code": int(rng.integers(0, 3)), "servoJ_cmd_num": int(rng.integers(0, 2**31))}
        out.append(p.encode_frame(p.FrameType.OUTPUT_DATA, LAYOUT.pack(values), k))
    names = list(REQUIRED_FIELDS + OPTIONAL_FIELDS)
    out.append(p.encode_frame(p.FrameType.OUTPUT_CONFIG, p.encode_output_config(8, names)))
    out.append(p.encode_frame(p.FrameType.MESSAGE, p.encode_config_reply(names)))
    out.append(p.encode_frame(p.FrameType.MESSAGE, p.encode_config_reply([*names, "nope"])))
    out += [p.encode_frame(t) for t in (p.FrameType.START, p.FrameType.STOP, p.FrameType.GET_VERSION)]
    return out


def valid_udp(rng: np.random.Generator) -> list[bytes]:
    out = []
    for k in range(64):
        cmd = p.ServoJCommand(tuple(float(x) for x in rng.normal(size=6) * 90), cmd_t=0.01)
        out.append(p.encode_udp(k, p.CmdId.SERVO_J, p.encode_servoj(cmd, braces=bool(k % 2))))
    out.append(p.encode_udp(1, p.CmdId.SERVO_MOVE_START, "ServoMoveStart()"))
    out.append(p.encode_udp(2, p.CmdId.SERVO_MOVE_END, "ServoMoveEnd()"))
    out.append(p.encode_udp(3, p.CmdId.SERVO_J, "0"))  # a reply frame
    return out


def mutate(frame: bytes, op: int, rng: np.random.Generator) -> bytes:
    """One of eight mutations of a valid frame."""
    data = bytearray(frame)
    at = int(rng.integers(0, len(data) + 1))
    if op == 0 and data:  # flip one to three bits
        for _ in range(int(rng.integers(1, 4))):
            i = int(rng.integers(0, len(data)))
            data[i] ^= 1 << int(rng.integers(0, 8))
    elif op == 1:  # truncate
        del data[at:]
    elif op == 2:  # a length field that lies: CNDE u16 at 4, UDP third number
        if data[:2] == p.HEAD and len(data) >= 6:
            data[4:6] = struct.pack("<H", int(rng.integers(0, 65536)))
        else:
            parts = bytes(data).split(b"III")
            if len(parts) > 3:
                parts[3] = str(int(rng.integers(0, 10**6))).encode() * int(rng.integers(1, 600))
                data = bytearray(b"III".join(parts))
    elif op == 3:  # insert garbage
        data[at:at] = rng.bytes(int(rng.integers(1, 16)))
    elif op == 4:  # drop bytes
        del data[at : at + int(rng.integers(1, 8))]
    elif op == 5:  # overwrite a run with garbage
        n = int(rng.integers(1, 16))
        data[at : at + n] = rng.bytes(n)
    elif op == 6:  # two frames spliced
        cut = int(rng.integers(0, len(data) + 1))
        data = data[:cut] + data
    else:  # noise of a frame's size
        data = bytearray(rng.bytes(int(rng.integers(0, 2 * len(frame) + 1))))
    return bytes(data)


def mutations(pool: list[bytes], seed: int, n: int = N_MUTATIONS):
    rng = np.random.default_rng(seed)
    picks = rng.integers(0, len(pool), size=n)
    ops = rng.integers(0, 8, size=n)
    for k in range(n):
        yield mutate(pool[picks[k]], int(ops[k]), rng)


# --- the seeded 100k runs ---------------------------------------------------------------------------------


@pytest.mark.slow
def test_cnde_decoders_take_100k_mutated_frames():
    rng = np.random.default_rng(SEED)
    pool = valid_cnde(rng)
    splitter = p.FrameSplitter()
    decoded = 0
    for buf in mutations(pool, SEED + 1):
        decode_cnde(buf)
        for frame in splitter.feed(buf):  # the stream reader: never raises, resynchronises
            decoded += 1
            with contextlib.suppress(p.CndeFrameError):
                decode_payload(frame)
    assert decoded > N_MUTATIONS // 4  # the splitter keeps finding frames through the garbage
    assert splitter.pending <= p.MAX_DATA + p.OVERHEAD


@pytest.mark.slow
def test_udp_decoders_take_100k_mutated_frames():
    rng = np.random.default_rng(SEED + 2)
    for buf in mutations(valid_udp(rng), SEED + 3):
        decode_udp(buf)


def test_a_good_frame_after_garbage_is_found():
    good = valid_cnde(np.random.default_rng(1))[0]
    splitter = p.FrameSplitter()
    frames = splitter.feed(b"\x5a\x5a\x00\x04\xff\xff" + np.random.default_rng(2).bytes(300) + good)
    assert frames and frames[-1] == p.decode_frame(good)


# --- hypothesis: structure ---------------------------------------------------------------------------------


@SETTINGS
@given(st.binary(max_size=6000))
def test_arbitrary_bytes(buf):
    decode_cnde(buf)
    decode_udp(buf)
    p.FrameSplitter().feed(buf)


@SETTINGS
@given(
    count=st.integers(0, 255),
    ftype=st.integers(0, 255),
    length=st.integers(0, 65535),
    data=st.binary(max_size=4200),
    tail=st.sampled_from([p.TAIL, b"\xa5", b"", b"\x00\x00"]),
)
def test_cnde_frames_with_lying_fields(count, ftype, length, data, tail):
    buf = struct.pack("<2sBBH", p.HEAD, count, ftype, length) + data + tail
    decode_cnde(buf)
    p.FrameSplitter().feed(buf)


@SETTINGS
@given(st.lists(st.text(max_size=12), max_size=8), st.integers(0, 70000))
def test_output_config_and_type_lists(names, period):
    data = struct.pack("<H", period % 65536) + ",".join(names).encode("utf-8", "surrogatepass")
    decode_cnde(p.encode_frame(p.FrameType.OUTPUT_CONFIG, data[: p.MAX_DATA]))
    text = ",".join(names).encode("utf-8", "replace")[:4000]
    decode_cnde(p.encode_frame(p.FrameType.MESSAGE, b"\x00" + text))


@SETTINGS
@given(st.text(max_size=30) | st.sampled_from([f"DOUBLE_{n}" for n in (0, 1, 6, 513, 99999, 10**6)]))
def test_field_types_refuse_with_value_error_only(text):
    try:
        ftype = FieldType.parse(text)
    except ValueError:
        return
    assert 1 <= ftype.count <= 9999 and ftype.size <= 8 * 9999


def _udp_field():
    return st.text(max_size=8) | st.integers(-5, 10**12).map(str) | st.just("9" * 5000)


@SETTINGS
@given(_udp_field(), _udp_field(), _udp_field(), st.text(max_size=200), st.booleans())
def test_udp_frames_with_lying_fields(count, cmd, length, content, tail):
    text = f"/f/bIII{count}III{cmd}III{length}III{content}" + ("III/b/f" if tail else "")
    decode_udp(text.encode("utf-8", "surrogatepass"))


_number = st.floats(allow_nan=True, allow_infinity=True).map(repr) | st.text(max_size=6) | st.just("1e999")


@SETTINGS
@given(st.lists(_number, max_size=20), st.booleans())
def test_servoj_content(numbers, braces):
    inner = ",".join(numbers)
    content = f"ServoJ({{{inner}}})" if braces else f"ServoJ({inner})"
    try:
        frame = p.encode_udp(0, p.CmdId.SERVO_J, content)
    except p.UdpFrameError:  # the encoder refuses what it cannot send, with the family's error too
        frame = f"/f/bIII0III376III{len(content)}III{content}III/b/f".encode("utf-8", "surrogatepass")
    decode_udp(frame)
