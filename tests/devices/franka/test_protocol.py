"""The research-interface codec: round trips of every message the joint position path uses, fuzzed frames."""

from __future__ import annotations

import contextlib

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
