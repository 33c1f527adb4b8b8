"""The CNDE state fields: their names on the wire and the types the controller sends them as.

A field type is a base type (`UINT8`, `INT32`, `DOUBLE`, ...) optionally followed by `_N` for an array of N,
e.g. `DOUBLE_6`. Values are little-endian with no padding. The table holds the fields servotool reads plus
every field of the vendor Python SDK's default subscription (`SDK_DEFAULT_FIELDS`), so that SDK can connect to
the simulator. A real controller is asked only for fields of the vendor's table (`VENDOR_FIELDS`); the
simulator's own fields (`SIM_FIELDS`) are asked of the simulator alone. Types are those that travel on the
wire, which for some fields differ from the SDK's own struct (analog values travel as DOUBLE, the robot clock
as INT32_7).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# base type -> (size in bytes, struct code)
BASE_TYPES: dict[str, tuple[int, str]] = {
    "UINT8": (1, "B"),
    "INT8": (1, "b"),
    "UINT16": (2, "H"),
    "INT16": (2, "h"),
    "UINT32": (4, "I"),
    "INT32": (4, "i"),
    "UINT64": (8, "Q"),
    "INT64": (8, "q"),
    "FLOAT": (4, "f"),
    "DOUBLE": (8, "d"),
}

# at most 4 digits of count: a frame holds at most 4096 bytes
_TYPE_RE = re.compile(r"^([A-Z0-9]+?)(?:_(\d{1,4}))?$", re.ASCII)


@dataclass(frozen=True)
class FieldType:
    """One wire type: `base` from BASE_TYPES and `count` elements (1 = a scalar, decoded as a number)."""

    base: str
    count: int = 1
    array: bool = False  # True when written as BASE_N (a tuple even when N == 1)

    @classmethod
    def parse(cls, text: str) -> FieldType:
        """Read `DOUBLE` or `DOUBLE_6`; raises ValueError for an unknown base type or a zero count."""
        m = _TYPE_RE.match(text.strip())
        if not m or m.group(1) not in BASE_TYPES:
            raise ValueError(f"unknown CNDE type {text!r}")
        if m.group(2) is None:
            return cls(m.group(1))
        count = int(m.group(2))
        if count < 1:
            raise ValueError(f"CNDE type {text!r} has no elements")
        return cls(m.group(1), count, True)

    @property
    def size(self) -> int:
        return BASE_TYPES[self.base][0] * self.count

    @property
    def code(self) -> str:
        """struct format code(s) without byte-order prefix, e.g. '6d'."""
        c = BASE_TYPES[self.base][1]
        return f"{self.count}{c}" if self.count > 1 else c

    @property
    def is_float(self) -> bool:
        return self.base in ("FLOAT", "DOUBLE")

    def __str__(self) -> str:
        return f"{self.base}_{self.count}" if self.array else self.base


# name on the wire -> wire type, as read from the vendor SDK's CNDE table (V3.9.6) and the CNDE docs, then
# the simulator's own fields (SIM_FIELDS), which a real controller does not have.
FIELDS: dict[str, str] = {
    "program_state": "UINT8",
    "robot_state": "UINT8",
    "main_code": "INT32",
    "sub_code": "INT32",
    "robot_mode": "UINT8",
    "actual_joint_pos": "DOUBLE_6",
    "actual_TCP_pos": "DOUBLE_6",
    "actual_flange_pos": "DOUBLE_6",
    "actual_joint_vel": "DOUBLE_6",
    "actual_joint_acc": "DOUBLE_6",
    "target_TCP_cmpvel": "DOUBLE_2",
    "target_TCP_vel": "DOUBLE_6",
    "actual_TCP_cmpvel": "DOUBLE_2",
    "actual_TCP_vel": "DOUBLE_6",
    "actual_joint_torque": "DOUBLE_6",
    "tool_id": "INT32",
    "wobj_id": "INT32",
    "cfg_DO_box": "UINT8",
    "std_DO_box": "UINT8",
    "cfg_DO_tool": "UINT8",
    "cfg_DI_box": "UINT8",
    "std_DI_box": "UINT8",
    "cfg_DI_tool": "UINT8",
    "std_AI0_box": "DOUBLE",
    "std_AI1_box": "DOUBLE",
    "std_AI_tool": "DOUBLE",
    "ft_sensor_raw_data": "DOUBLE_6",
    "ft_sensor_data": "DOUBLE_6",
    "ft_sensor_active": "UINT8",
    "emergency_stop": "UINT8",
    "motion_done": "INT32",
    "gripper_motion_done": "UINT8",
    "motion_queue_len": "INT32",
    "collision_state": "UINT8",
    "trajectory_pnum": "INT32",
    "safety_stop0_state": "UINT8",
    "safety_stop1_state": "UINT8",
    "gripper_fault_id": "UINT8",
    "gripper_fault": "INT32",
    "gripper_active": "INT32",
    "gripper_position": "UINT8",
    "gripper_speed": "INT32",
    "gripper_current": "INT32",
    "gripper_temp": "INT32",
    "gripper_voltage": "INT32",
    "aux_axis_state": "UINT8_25",
    "exaxis_status": "UINT8_116",
    "ext_DI_state": "UINT8_16",
    "ext_DO_state": "UINT8_16",
    "ext_AI_state": "INT32_4",
    "ext_AO_state": "INT32_4",
    "rbt_enable_state": "INT32",
    "joint_driver_torque": "DOUBLE_6",
    "actual_joint_temp": "DOUBLE_6",
    "robot_time": "INT32_7",
    "software_upgrade_state": "INT32",
    "end_lua_err_code": "INT32",
    "std_AO0_box": "DOUBLE",
    "std_AO1_box": "DOUBLE",
    "std_AO_tool": "DOUBLE",
    "rotating_gripper_num": "DOUBLE",
    "rotating_gripper_speed": "UINT8",
    "rotating_gripper_tor": "UINT8",
    "weld_break_off_state": "UINT8",
    "weld_arc_state": "UINT8",
    "target_joint_torque": "DOUBLE_6",
    "smarttool_state": "UINT32",
    "wide_voltage_ctrl_box_temp": "DOUBLE",
    "wide_voltage_ctrl_box_fan_current": "INT32",
    "tool_coord": "DOUBLE_6",
    "wobj_coord": "DOUBLE_6",
    "exTool_coord": "DOUBLE_6",
    "exAxis_coord": "DOUBLE_6",
    "payload": "DOUBLE",
    "pay_cog": "DOUBLE_3",
    "last_servoJ_target": "DOUBLE_6",
    # in the SDK's table, beyond its default subscription
    "servoJ_cmd_num": "INT32",
    "target_joint_pos": "DOUBLE_6",
    # in the CNDE docs: `servo_state` is the state of an auxiliary servo drive (bit 0 enabled, bit 1
    # moving, ...), not servo mode
    "target_joint_vel": "DOUBLE_6",
    "udp_cmd_state": "INT32",
    "servo_state": "INT32",
    # simulator only (a real controller answers NOT_FOUND): its microsecond clock, and 1 while in servo mode
    "timestamp_us": "UINT64",
    "sim_servo_mode": "UINT8",
}

# the fields only the simulator streams: a client asks them of a simulator alone
SIM_FIELDS: tuple[str, ...] = ("timestamp_us", "sim_servo_mode")

# The vendor Python SDK's default subscription, in its order (73 entries in its table; three of them are pairs
# that travel as two names each, hence 76 names). It refuses the connection if any is NOT_FOUND.
SDK_DEFAULT_FIELDS: tuple[str, ...] = tuple(list(FIELDS)[: list(FIELDS).index("last_servoJ_target") + 1])

# The fields of the vendor SDK's CNDE table: all a real controller is asked for.
VENDOR_FIELDS: tuple[str, ...] = (*SDK_DEFAULT_FIELDS, "servoJ_cmd_num", "target_joint_pos")

# The size of one SDK default data frame's payload, as the SDK documents it.
SDK_DEFAULT_FRAME_BYTES = 1318


def field_type(name: str) -> FieldType:
    """The wire type of a known field; raises KeyError for a name the table does not hold."""
    return FieldType.parse(FIELDS[name])
