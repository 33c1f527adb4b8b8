"""The research-interface codec: round trips of every message the joint position path uses, fuzzed frames."""

from __future__ import annotations

import contextlib
import math
import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from servotool.devices.franka import codes
from servotool.devices.franka import protocol as p

finite = st.floats(allow_nan=False, allow_infinity=False, width=64)
f32 = st.floats(allow_nan=False, allow_infinity=False, width=32)


def test_header_round_trip_and_size_counts_the_header():
    msg = p.encode_message(p.Command.CONNECT, 7, p.encode_connect_request(5000))
    header, payload, rest = p.split_message(msg + b"xy")
    assert (header.command, header.command_id, header.size) == (p.Command.CONNECT, 7, 16)
    assert p.decode_connect_request(payload) == (p.VERSION, 5000) and rest == b"xy"


def test_connect_checks_the_version():
    assert p.connect_status_for(10) is p.ConnectStatus.SUCCESS
    assert p.connect_status_for(9) is p.ConnectStatus.INCOMPATIBLE_LIBRARY_VERSION
    reply = p.encode_connect_response(p.ConnectStatus.SUCCESS)
    assert p.decode_connect_response(reply) == (p.ConnectStatus.SUCCESS, 10)


def test_move_round_trip():
    req = p.MoveRequest(
        p.ControllerMode.JOINT_IMPEDANCE,
        p.MotionGeneratorMode.JOINT_POSITION,
        (10.0, 3.12, 2 * 3.12),
        (10.0, 3.12, 2 * 3.12),
    )
    assert p.decode_move_request(p.encode_move_request(req)) == req
    status = p.MoveStatus.REFLEX_ABORTED
    assert p.decode_status(p.encode_status(status), p.MoveStatus) is status


def test_setters_round_trip():
    torques = [tuple(float(i + n) for i in range(7)) for n in range(4)]
    forces = [tuple(float(i - n) for i in range(6)) for n in range(4)]
    cb = p.CollisionBehavior(*torques, *forces)
    assert p.decode_collision_behavior(p.encode_collision_behavior(cb)) == cb
    k = (3000.0, 3000.0, 3000.0, 2500.0, 2500.0, 2000.0, 2000.0)
    assert p.decode_joint_impedance(p.encode_joint_impedance(k)) == k
    with pytest.raises(p.FrankaProtocolError):
        p.encode_joint_impedance(k[:6])


@settings(max_examples=50, deadline=None)
@given(
    st.integers(0, 2**64 - 1),
    st.lists(f32, min_size=7, max_size=7),
    st.floats(0, 1, width=32),
    st.lists(st.sampled_from(codes.ERROR_NAMES), max_size=3),
    st.integers(0, 6),
)
def test_state_round_trip(mid, q, rate, errors, mode):
    state = p.RobotState(
        mid,
        {"q": tuple(q), "q_d": tuple(q)},
        errors=codes.flags_of(errors),
        robot_mode=mode,
        control_command_success_rate=rate,
    )
    back = p.decode_state(p.encode_state(state))
    assert back.message_id == mid and back.get("q") == tuple(q) and back.get("q_d") == tuple(q)
    assert set(codes.flag_names(back.errors)) == set(errors) and back.robot_mode == mode
    assert back.control_command_success_rate == rate and back.get("tau_J") == (0.0,) * 7


@settings(max_examples=50, deadline=None)
@given(st.integers(0, 2**64 - 1), st.lists(finite, min_size=7, max_size=7), st.booleans())
def test_command_round_trip(mid, q, finished):
    cmd = p.RobotCommand(mid, tuple(q), motion_generation_finished=finished)
    assert p.decode_command(p.encode_command(cmd)) == cmd


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=1500))
def test_garbled_frames_raise_the_named_error_only(data):
    for decode in (
        p.decode_state,
        p.decode_command,
        p.split_message,
        p.decode_connect_request,
        p.decode_move_request,
        p.decode_collision_behavior,
        p.decode_joint_impedance,
    ):
        with contextlib.suppress(p.FrankaProtocolError):
            decode(data)


@settings(max_examples=100, deadline=None)
@given(st.integers(0, p.COMMAND_SIZE - 1))
def test_a_truncated_command_is_refused(n):
    data = p.encode_command(p.RobotCommand(1))
    with pytest.raises(p.FrankaProtocolError):
        p.decode_command(data[:n])


def test_a_non_finite_joint_command_is_refused():
    with pytest.raises(p.FrankaProtocolError, match="not finite"):
        p.decode_command(p.encode_command(p.RobotCommand(1, (float("nan"),) + (0.0,) * 6)))


def test_the_reflex_table_names_every_flag_as_the_bindings_do():
    assert codes.N_ERRORS == 41 and len(set(codes.ERROR_NAMES)) == 41
    assert (
        codes.ERROR_NAMES[codes.ERROR_INDEX["communication_constraints_violation"]]
        == "communication_constraints_violation"
    )
    assert codes.mode_name(4) == "Reflex" and codes.mode_name(99) == "Other"
    pylibfranka = pytest.importorskip("pylibfranka", reason="servotool[franka] is not installed")
    assert set(codes.ERROR_NAMES) == {a for a in dir(pylibfranka.Errors) if not a.startswith("_")}


# -- every field, every size, a byte stream cut anywhere ------------------------------------------------

flags = st.lists(st.booleans(), min_size=codes.N_ERRORS, max_size=codes.N_ERRORS).map(tuple)


@st.composite
def robot_states(draw: st.DrawFn) -> p.RobotState:
    # hundreds of floats: drawn from a seeded generator (single precision, as the wire holds them)
    rnd = draw(st.randoms(use_true_random=False))
    scale = draw(st.sampled_from([1e-3, 1.0, 1e6, 1e30]))
    floats = {
        name: struct.unpack(f"<{n}f", struct.pack(f"<{n}f", *(rnd.uniform(-scale, scale) for _ in range(n))))
        for name, n in p.STATE_FLOATS
    }
    return p.RobotState(
        draw(st.integers(0, 2**64 - 1)),
        floats,
        motion_generator_mode=draw(st.integers(0, 255)),
        controller_mode=draw(st.integers(0, 255)),
        errors=draw(flags),
        reflex_reason=draw(flags),
        robot_mode=draw(st.integers(0, 255)),
        control_command_success_rate=draw(f32),
    )


@settings(max_examples=30, deadline=None)
@given(robot_states())
def test_every_field_of_a_state_round_trips(state):
    data = p.encode_state(state)
    assert len(data) == p.STATE_SIZE
    back = p.decode_state(data)
    assert back.floats == state.floats
    assert (back.errors, back.reflex_reason) == (state.errors, state.reflex_reason)
    assert (back.motion_generator_mode, back.controller_mode, back.robot_mode) == (
        state.motion_generator_mode,
        state.controller_mode,
        state.robot_mode,
    )
    assert back.message_id == state.message_id
    assert back.control_command_success_rate == state.control_command_success_rate
    assert p.encode_state(back) == data


@settings(max_examples=100, deadline=None)
@given(st.binary(min_size=p.STATE_SIZE, max_size=p.STATE_SIZE))
def test_any_state_sized_packet_decodes_and_re_encodes_stably(data):
    # a robot state has no invalid bytes (a flag is any non-zero byte): one re-encoding normalises it
    once = p.encode_state(p.decode_state(data))
    assert p.encode_state(p.decode_state(once)) == once
    assert codes.mode_name(p.decode_state(data).robot_mode) in codes.ROBOT_MODES


@settings(max_examples=200, deadline=None)
@given(st.binary(min_size=p.COMMAND_SIZE, max_size=p.COMMAND_SIZE))
def test_a_command_sized_packet_is_a_finite_command_or_refused(data):
    try:
        cmd = p.decode_command(data)
    except p.FrankaProtocolError as exc:
        assert "not finite" in str(exc)
        return
    assert all(math.isfinite(x) for x in cmd.q_c + cmd.dq_c)
    once = p.encode_command(cmd)  # the fields the joint path does not read may hold anything, NaN too
    assert p.encode_command(p.decode_command(once)) == once


@settings(max_examples=100, deadline=None)
@given(st.lists(finite, min_size=7, max_size=7), st.integers(0, p.COMMAND_SIZE * 8 - 1))
def test_a_flipped_bit_in_a_command_never_escapes_the_codec(q, bit):
    data = bytearray(p.encode_command(p.RobotCommand(5, tuple(q))))
    data[bit // 8] ^= 1 << (bit % 8)
    with contextlib.suppress(p.FrankaProtocolError):
        cmd = p.decode_command(bytes(data))
        assert len(cmd.q_c) == 7 and all(math.isfinite(x) for x in cmd.q_c)


messages = st.tuples(st.sampled_from(list(p.Command)), st.integers(0, 2**32 - 1), st.binary(max_size=300))


@settings(max_examples=100, deadline=None)
@given(st.lists(messages, min_size=1, max_size=6), st.lists(st.integers(1, 64), min_size=1, max_size=40))
def test_a_tcp_stream_cut_anywhere_gives_back_every_message(sent, cuts):
    stream = b"".join(p.encode_message(c, cid, payload) for c, cid, payload in sent)
    got, buf, at, k = [], b"", 0, 0
    while at < len(stream):  # the receiver's loop: whole messages out of whatever arrived
        n = cuts[k % len(cuts)]
        buf, at, k = buf + stream[at : at + n], at + n, k + 1
        while len(buf) >= p.HEADER_SIZE and len(buf) >= p.decode_header(buf).size:
            header, payload, buf = p.split_message(buf)
            got.append((p.Command(header.command), header.command_id, payload))
    assert got == [(c, cid, payload) for c, cid, payload in sent] and buf == b""


@settings(max_examples=200, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(0, 2**32 - 1), st.integers(0, 2**32 - 1))
def test_a_header_is_a_known_command_of_a_sane_size_or_refused(command, command_id, size):
    data = struct.pack("<III", command, command_id, size)
    try:
        header = p.decode_header(data)
    except p.FrankaProtocolError:
        assert command not in set(p.Command) or size < p.HEADER_SIZE
        return
    assert header == p.Header(command, command_id, size) and size >= p.HEADER_SIZE


@settings(max_examples=50, deadline=None)
@given(st.integers(0, 2**16 - 1), st.integers(0, 2**16 - 1), st.sampled_from(list(p.ConnectStatus)))
def test_connect_round_trips_for_any_port_and_version(port, version, status):
    assert p.decode_connect_request(p.encode_connect_request(port, version)) == (version, port)
    assert p.decode_connect_response(p.encode_connect_response(status, version)) == (status, version)


@pytest.mark.parametrize(
    "enum", [p.MoveStatus, p.StopMoveStatus, p.SetterStatus, p.RecoveryStatus, p.ConnectStatus]
)
def test_a_status_byte_outside_its_table_is_refused(enum):
    for value in range(256):
        payload = struct.pack("<B", value)
        if value in set(enum):
            assert p.decode_status(payload, enum) == value
        else:
            with pytest.raises(p.FrankaProtocolError, match="unknown status"):
                p.decode_status(payload, enum)


@settings(max_examples=50, deadline=None)
@given(
    st.sampled_from(list(p.ControllerMode)),
    st.sampled_from(list(p.MotionGeneratorMode)),
    st.lists(finite, min_size=13, max_size=13),
    st.booleans(),
)
def test_any_move_request_round_trips(controller, generator, values, use_async):
    req = p.MoveRequest(
        controller, generator, tuple(values[:3]), tuple(values[3:6]), use_async, tuple(values[6:])
    )
    assert p.decode_move_request(p.encode_move_request(req)) == req


@settings(max_examples=50, deadline=None)
@given(st.integers(0, 255), st.text(max_size=200))
def test_the_robot_model_reply_round_trips_and_refuses_broken_text(status, urdf):
    assert p.decode_robot_model_response(p.encode_robot_model_response(status, urdf)) == (status, urdf)
    with pytest.raises(p.FrankaProtocolError):
        p.decode_robot_model_response(bytes([status]) + b"\xff\xfe" + urdf.encode())
    with pytest.raises(p.FrankaProtocolError):
        p.decode_robot_model_response(b"")
