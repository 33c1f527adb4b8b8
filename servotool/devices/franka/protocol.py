"""libfranka's research interface at protocol version 10, as bytes: pure encode and decode, no I/O.

TCP (port 1337): every message is a header (command u32, command_id u32, size u32: header and payload)
then the command's payload; a reply repeats the command and its id. UDP: the robot sends a RobotState
every millisecond, the client answers with a RobotCommand carrying the message_id of the state it answers.
Everything is little-endian and packed. A frame that does not decode raises FrankaProtocolError, never
another exception.
"""

from __future__ import annotations

import math
import struct
from dataclasses import dataclass, field
from enum import IntEnum

from servotool.devices.franka.codes import N_ERRORS
from servotool.errors import ProtocolError

VERSION = 10
COMMAND_PORT = 1337


class FrankaProtocolError(ProtocolError):
    """Bytes that are not a research-interface message of this version."""


class Command(IntEnum):
    CONNECT = 0
    MOVE = 1
    STOP_MOVE = 2
    SET_COLLISION_BEHAVIOR = 3
    SET_JOINT_IMPEDANCE = 4
    SET_CARTESIAN_IMPEDANCE = 5
    SET_GUIDING_MODE = 6
    SET_EE_TO_K = 7
    SET_NE_TO_EE = 8
    SET_LOAD = 9
    AUTOMATIC_ERROR_RECOVERY = 10
    GET_ROBOT_MODEL = 11


class ControllerMode(IntEnum):  # of a Move request (u32)
    JOINT_IMPEDANCE = 0
    CARTESIAN_IMPEDANCE = 1
    EXTERNAL_CONTROLLER = 2


class MotionGeneratorMode(IntEnum):  # of a Move request (u32); the state's own enum differs (see below)
    JOINT_POSITION = 0
    JOINT_VELOCITY = 1
    CARTESIAN_POSITION = 2
    CARTESIAN_VELOCITY = 3
    NONE = 4


class StateMotionMode(IntEnum):  # RobotState.motion_generator_mode (u8)
    IDLE = 0
    JOINT_POSITION = 1
    JOINT_VELOCITY = 2
    CARTESIAN_POSITION = 3
    CARTESIAN_VELOCITY = 4
    NONE = 5


class ConnectStatus(IntEnum):
    SUCCESS = 0
    INCOMPATIBLE_LIBRARY_VERSION = 1


class MoveStatus(IntEnum):
    SUCCESS = 0
    MOTION_STARTED = 1
    PREEMPTED = 2
    PREEMPTED_DUE_TO_ACTIVATED_SAFETY_FUNCTIONS = 3
    COMMAND_REJECTED_DUE_TO_ACTIVATED_SAFETY_FUNCTIONS = 4
    COMMAND_NOT_POSSIBLE_REJECTED = 5
    START_AT_SINGULAR_POSE_REJECTED = 6
    INVALID_ARGUMENT_REJECTED = 7
    REFLEX_ABORTED = 8
    EMERGENCY_ABORTED = 9
    INPUT_ERROR_ABORTED = 10
    ABORTED = 11


class StopMoveStatus(IntEnum):
    SUCCESS = 0
    COMMAND_NOT_POSSIBLE_REJECTED = 1
    COMMAND_REJECTED_DUE_TO_ACTIVATED_SAFETY_FUNCTIONS = 2
    EMERGENCY_ABORTED = 3
    REFLEX_ABORTED = 4
    ABORTED = 5


class SetterStatus(IntEnum):  # SetCollisionBehavior, SetJointImpedance and the other setters
    SUCCESS = 0
    COMMAND_NOT_POSSIBLE_REJECTED = 1
    INVALID_ARGUMENT_REJECTED = 2
    COMMAND_REJECTED_DUE_TO_ACTIVATED_SAFETY_FUNCTIONS = 3


class RecoveryStatus(IntEnum):
    SUCCESS = 0
    COMMAND_NOT_POSSIBLE_REJECTED = 1
    COMMAND_REJECTED_DUE_TO_ACTIVATED_SAFETY_FUNCTIONS = 2
    MANUAL_ERROR_RECOVERY_REQUIRED_REJECTED = 3
    REFLEX_ABORTED = 4
    EMERGENCY_ABORTED = 5
    ABORTED = 6


_HEADER = struct.Struct("<III")
HEADER_SIZE = _HEADER.size


@dataclass(frozen=True)
class Header:
    command: int
    command_id: int
    size: int  # the whole message, header included


def encode_message(command: int, command_id: int, payload: bytes = b"") -> bytes:
    """One TCP message: the header (its size counts itself) and the payload."""
    return _HEADER.pack(int(command), command_id, HEADER_SIZE + len(payload)) + payload


def decode_header(data: bytes) -> Header:
    """The header at the start of data; FrankaProtocolError when short, of an unknown command or of a size
    smaller than a header."""
    if len(data) < HEADER_SIZE:
        raise FrankaProtocolError(f"header of {len(data)} bytes, want {HEADER_SIZE}")
    command, command_id, size = _HEADER.unpack_from(data)
    if command not in Command._value2member_map_:
        raise FrankaProtocolError(f"unknown command {command}")
    if size < HEADER_SIZE:
        raise FrankaProtocolError(f"message size {size} is smaller than its header")
    return Header(command, command_id, size)


def split_message(data: bytes) -> tuple[Header, bytes, bytes]:
    """(header, payload, rest) of the first whole message in data; FrankaProtocolError when not whole."""
    header = decode_header(data)
    if len(data) < header.size:
        raise FrankaProtocolError(f"message of {len(data)} bytes, its header says {header.size}")
    return header, bytes(data[HEADER_SIZE : header.size]), bytes(data[header.size :])


def _exact(payload: bytes, st: struct.Struct, what: str) -> tuple:
    if len(payload) != st.size:
        raise FrankaProtocolError(f"{what}: {len(payload)} bytes, want {st.size}")
    return st.unpack(payload)


def _status(value: int, enum: type[IntEnum], what: str) -> IntEnum:
    try:
        return enum(value)
    except ValueError:
        raise FrankaProtocolError(f"{what}: unknown status {value}") from None


# -- Connect -------------------------------------------------------------------------------------------

_CONNECT_REQ = struct.Struct("<HH")  # version, udp_port
_CONNECT_RES = struct.Struct("<BH")  # status, version


def encode_connect_request(udp_port: int, version: int = VERSION) -> bytes:
    return _CONNECT_REQ.pack(version, udp_port)


def decode_connect_request(payload: bytes) -> tuple[int, int]:
    """(version, udp_port) of a Connect request."""
    version, port = _exact(payload, _CONNECT_REQ, "Connect request")
    return int(version), int(port)


def encode_connect_response(status: ConnectStatus, version: int = VERSION) -> bytes:
    return _CONNECT_RES.pack(int(status), version)


def decode_connect_response(payload: bytes) -> tuple[ConnectStatus, int]:
    status, version = _exact(payload, _CONNECT_RES, "Connect response")
    return ConnectStatus(_status(status, ConnectStatus, "Connect response")), int(version)


def connect_status_for(version: int) -> ConnectStatus:
    """The robot's answer to a client of that version: only its own version connects."""
    return ConnectStatus.SUCCESS if version == VERSION else ConnectStatus.INCOMPATIBLE_LIBRARY_VERSION


# -- Move ----------------------------------------------------------------------------------------------

_MOVE_REQ = struct.Struct("<II3d3d?7d")


@dataclass(frozen=True)
class MoveRequest:
    controller_mode: ControllerMode
    motion_generator_mode: MotionGeneratorMode
    maximum_path_deviation: tuple[float, float, float]  # translation, rotation, elbow
    maximum_goal_pose_deviation: tuple[float, float, float]
    use_async_motion_generator: bool = False
    maximum_velocity: tuple[float, ...] = (0.0,) * 7


def encode_move_request(req: MoveRequest) -> bytes:
    return _MOVE_REQ.pack(
        int(req.controller_mode),
        int(req.motion_generator_mode),
        *req.maximum_path_deviation,
        *req.maximum_goal_pose_deviation,
        req.use_async_motion_generator,
        *req.maximum_velocity,
    )


def decode_move_request(payload: bytes) -> MoveRequest:
    v = _exact(payload, _MOVE_REQ, "Move request")
    try:
        controller, generator = ControllerMode(v[0]), MotionGeneratorMode(v[1])
    except ValueError as exc:
        raise FrankaProtocolError(f"Move request: {exc}") from None
    return MoveRequest(controller, generator, tuple(v[2:5]), tuple(v[5:8]), bool(v[8]), tuple(v[9:16]))


def encode_status(status: int) -> bytes:
    """The payload of every reply that carries a status only (Move, StopMove, the setters, recovery)."""
    return struct.pack("<B", int(status))


def decode_status(payload: bytes, enum: type[IntEnum]) -> IntEnum:
    if len(payload) != 1:
        raise FrankaProtocolError(f"{enum.__name__} reply: {len(payload)} bytes, want 1")
    return _status(payload[0], enum, enum.__name__)


# -- setters -------------------------------------------------------------------------------------------

_COLLISION = struct.Struct("<" + "7d" * 4 + "6d" * 4)
_IMPEDANCE = struct.Struct("<7d")


@dataclass(frozen=True)
class CollisionBehavior:
    """The eight threshold arrays, in their wire order: torques (Nm) per joint, forces (N, Nm) per axis."""

    lower_torque_acceleration: tuple[float, ...]
    upper_torque_acceleration: tuple[float, ...]
    lower_torque_nominal: tuple[float, ...]
    upper_torque_nominal: tuple[float, ...]
    lower_force_acceleration: tuple[float, ...]
    upper_force_acceleration: tuple[float, ...]
    lower_force_nominal: tuple[float, ...]
    upper_force_nominal: tuple[float, ...]


def encode_collision_behavior(cb: CollisionBehavior) -> bytes:
    values = [
        x
        for arr in (
            cb.lower_torque_acceleration,
            cb.upper_torque_acceleration,
            cb.lower_torque_nominal,
            cb.upper_torque_nominal,
            cb.lower_force_acceleration,
            cb.upper_force_acceleration,
            cb.lower_force_nominal,
            cb.upper_force_nominal,
        )
        for x in arr
    ]
    try:
        return _COLLISION.pack(*values)
    except struct.error as exc:
        raise FrankaProtocolError(f"SetCollisionBehavior: {exc}") from None


def decode_collision_behavior(payload: bytes) -> CollisionBehavior:
    v = _exact(payload, _COLLISION, "SetCollisionBehavior request")
    parts, at = [], 0
    for n in (7, 7, 7, 7, 6, 6, 6, 6):
        parts.append(tuple(v[at : at + n]))
        at += n
    return CollisionBehavior(*parts)


def encode_joint_impedance(k_theta: tuple[float, ...]) -> bytes:
    try:
        return _IMPEDANCE.pack(*k_theta)
    except struct.error as exc:
        raise FrankaProtocolError(f"SetJointImpedance: {exc}") from None


def decode_joint_impedance(payload: bytes) -> tuple[float, ...]:
    return tuple(_exact(payload, _IMPEDANCE, "SetJointImpedance request"))


# -- UDP: RobotState -----------------------------------------------------------------------------------

# the float fields of RobotState in wire order, with their counts
STATE_FLOATS: tuple[tuple[str, int], ...] = (
    ("O_T_EE", 16),
    ("O_T_EE_d", 16),
    ("F_T_EE", 16),
    ("EE_T_K", 16),
    ("F_T_NE", 16),
    ("NE_T_EE", 16),
    ("m_ee", 1),
    ("I_ee", 9),
    ("F_x_Cee", 3),
    ("m_load", 1),
    ("I_load", 9),
    ("F_x_Cload", 3),
    ("elbow", 2),
    ("elbow_d", 2),
    ("tau_J", 7),
    ("tau_J_d", 7),
    ("dtau_J", 7),
    ("q", 7),
    ("q_d", 7),
    ("dq", 7),
    ("dq_d", 7),
    ("ddq_d", 7),
    ("joint_contact", 7),
    ("cartesian_contact", 6),
    ("joint_collision", 7),
    ("cartesian_collision", 6),
    ("tau_ext_hat_filtered", 7),
    ("O_F_ext_hat_K", 6),
    ("K_F_ext_hat_K", 6),
    ("O_dP_EE_d", 6),
    ("O_ddP_O", 3),
    ("elbow_c", 2),
    ("delbow_c", 2),
    ("ddelbow_c", 2),
    ("O_T_EE_c", 16),
    ("O_dP_EE_c", 6),
    ("O_ddP_EE_c", 6),
    ("theta", 7),
    ("dtheta", 7),
    ("accelerometer_top", 18),
    ("accelerometer_bottom", 18),
)
_N_FLOATS = sum(n for _, n in STATE_FLOATS)
_STATE = struct.Struct(f"<Q{_N_FLOATS}fBB{N_ERRORS}?{N_ERRORS}?Bf")
STATE_SIZE = _STATE.size


@dataclass
class RobotState:
    """One state packet. floats: every float field by name (a tuple; m_ee and m_load too); errors and
    reflex_reason: the 41 flags in codes.ERROR_NAMES order; robot_mode: codes.ROBOT_MODES index."""

    message_id: int
    floats: dict[str, tuple[float, ...]] = field(default_factory=dict)
    motion_generator_mode: int = 0
    controller_mode: int = 0
    errors: tuple[bool, ...] = (False,) * N_ERRORS
    reflex_reason: tuple[bool, ...] = (False,) * N_ERRORS
    robot_mode: int = 1
    control_command_success_rate: float = 0.0

    def get(self, name: str) -> tuple[float, ...]:
        return self.floats.get(name, (0.0,) * dict(STATE_FLOATS)[name])


def encode_state(state: RobotState) -> bytes:
    values: list[float] = []
    for name, n in STATE_FLOATS:
        arr = state.get(name)
        if len(arr) != n:
            raise FrankaProtocolError(f"RobotState.{name}: {len(arr)} values, want {n}")
        values.extend(arr)
    return _STATE.pack(
        state.message_id,
        *values,
        state.motion_generator_mode,
        state.controller_mode,
        *state.errors,
        *state.reflex_reason,
        state.robot_mode,
        state.control_command_success_rate,
    )


def decode_state(data: bytes) -> RobotState:
    """A state packet; FrankaProtocolError for a packet of another size."""
    if len(data) != STATE_SIZE:
        raise FrankaProtocolError(f"RobotState of {len(data)} bytes, want {STATE_SIZE}")
    v = _STATE.unpack(data)
    floats, at = {}, 1
    for name, n in STATE_FLOATS:
        floats[name] = tuple(v[at : at + n])
        at += n
    mg, ctrl = v[at], v[at + 1]
    errors = tuple(bool(x) for x in v[at + 2 : at + 2 + N_ERRORS])
    reflex = tuple(bool(x) for x in v[at + 2 + N_ERRORS : at + 2 + 2 * N_ERRORS])
    mode, rate = v[at + 2 + 2 * N_ERRORS], v[at + 3 + 2 * N_ERRORS]
    return RobotState(v[0], floats, mg, ctrl, errors, reflex, mode, rate)


# -- UDP: RobotCommand ---------------------------------------------------------------------------------

_COMMAND = struct.Struct("<Q7d7d16d6d2d??7d?")
COMMAND_SIZE = _COMMAND.size


@dataclass(frozen=True)
class RobotCommand:
    """One command packet: message_id echoes the state it answers; q_c/dq_c the joint motion command."""

    message_id: int
    q_c: tuple[float, ...] = (0.0,) * 7
    dq_c: tuple[float, ...] = (0.0,) * 7
    O_T_EE_c: tuple[float, ...] = (0.0,) * 16
    O_dP_EE_c: tuple[float, ...] = (0.0,) * 6
    elbow_c: tuple[float, ...] = (0.0,) * 2
    valid_elbow: bool = False
    motion_generation_finished: bool = False
    tau_J_d: tuple[float, ...] = (0.0,) * 7
    torque_command_finished: bool = False


def encode_command(cmd: RobotCommand) -> bytes:
    try:
        return _COMMAND.pack(
            cmd.message_id,
            *cmd.q_c,
            *cmd.dq_c,
            *cmd.O_T_EE_c,
            *cmd.O_dP_EE_c,
            *cmd.elbow_c,
            cmd.valid_elbow,
            cmd.motion_generation_finished,
            *cmd.tau_J_d,
            cmd.torque_command_finished,
        )
    except struct.error as exc:
        raise FrankaProtocolError(f"RobotCommand: {exc}") from None


def decode_command(data: bytes) -> RobotCommand:
    """A command packet; FrankaProtocolError for another size or a joint value that is not finite."""
    if len(data) != COMMAND_SIZE:
        raise FrankaProtocolError(f"RobotCommand of {len(data)} bytes, want {COMMAND_SIZE}")
    v = _COMMAND.unpack(data)
    cmd = RobotCommand(
        v[0],
        tuple(v[1:8]),
        tuple(v[8:15]),
        tuple(v[15:31]),
        tuple(v[31:37]),
        tuple(v[37:39]),
        bool(v[39]),
        bool(v[40]),
        tuple(v[41:48]),
        bool(v[48]),
    )
    if not all(math.isfinite(x) for x in cmd.q_c + cmd.dq_c):
        raise FrankaProtocolError(f"RobotCommand {cmd.message_id}: a joint command is not finite")
    return cmd


# -- GetRobotModel -------------------------------------------------------------------------------------


def encode_robot_model_response(status: int, urdf: str) -> bytes:
    """The reply to GetRobotModel: a status byte, then the model's URDF text (the rest of the message)."""
    return struct.pack("<B", int(status)) + urdf.encode()


def decode_robot_model_response(payload: bytes) -> tuple[int, str]:
    if not payload:
        raise FrankaProtocolError("GetRobotModel reply: no status byte")
    try:
        return payload[0], payload[1:].decode()
    except UnicodeDecodeError as exc:
        raise FrankaProtocolError(f"GetRobotModel reply: {exc}") from None
