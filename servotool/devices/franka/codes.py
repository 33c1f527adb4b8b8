"""The robot's own vocabulary, in one table each: robot_mode by its wire value and the 41 error flags.

ERROR_NAMES is in wire order (the index of a flag in RobotState.errors and reflex_reason) and spells each flag
as libfranka's Errors attribute does, so a state read through pylibfranka and one decoded here name a reflex
the same way. A caller mapping these onto another vocabulary maps from here only.
"""

from __future__ import annotations

from collections.abc import Sequence

ROBOT_MODES = ("Other", "Idle", "Move", "Guiding", "Reflex", "UserStopped", "AutomaticErrorRecovery")
MODE = {name: n for n, name in enumerate(ROBOT_MODES)}

ERROR_NAMES: tuple[str, ...] = (
    "joint_position_limits_violation",
    "cartesian_position_limits_violation",
    "self_collision_avoidance_violation",
    "joint_velocity_violation",
    "cartesian_velocity_violation",
    "force_control_safety_violation",
    "joint_reflex",
    "cartesian_reflex",
    "max_goal_pose_deviation_violation",
    "max_path_pose_deviation_violation",
    "cartesian_velocity_profile_safety_violation",
    "joint_position_motion_generator_start_pose_invalid",
    "joint_motion_generator_position_limits_violation",
    "joint_motion_generator_velocity_limits_violation",
    "joint_motion_generator_velocity_discontinuity",
    "joint_motion_generator_acceleration_discontinuity",
    "cartesian_position_motion_generator_start_pose_invalid",
    "cartesian_motion_generator_elbow_limit_violation",
    "cartesian_motion_generator_velocity_limits_violation",
    "cartesian_motion_generator_velocity_discontinuity",
    "cartesian_motion_generator_acceleration_discontinuity",
    "cartesian_motion_generator_elbow_sign_inconsistent",
    "cartesian_motion_generator_start_elbow_invalid",
    "force_controller_desired_force_tolerance_violation",
    "start_elbow_sign_inconsistent",
    "communication_constraints_violation",
    "power_limit_violation",
    "cartesian_motion_generator_joint_position_limits_violation",
    "cartesian_motion_generator_joint_velocity_limits_violation",
    "cartesian_motion_generator_joint_velocity_discontinuity",
    "cartesian_motion_generator_joint_acceleration_discontinuity",
    "cartesian_position_motion_generator_invalid_frame",
    "controller_torque_discontinuity",
    "joint_p2p_insufficient_torque_for_planning",
    "tau_j_range_violation",
    "instability_detected",
    "joint_move_in_wrong_direction",
    "cartesian_spline_motion_generator_violation",
    "joint_via_motion_generator_planning_joint_limit_violation",
    "base_acceleration_initialization_timeout",
    "base_acceleration_invalid_reading",
)
N_ERRORS = len(ERROR_NAMES)
ERROR_INDEX = {name: n for n, name in enumerate(ERROR_NAMES)}


def mode_name(value: int) -> str:
    """robot_mode's name; "Other" for a value the table does not know (a newer controller)."""
    return ROBOT_MODES[value] if 0 <= value < len(ROBOT_MODES) else "Other"


def flag_names(flags: Sequence[bool]) -> tuple[str, ...]:
    """The names of the set flags, in wire order."""
    return tuple(name for name, on in zip(ERROR_NAMES, flags, strict=False) if on)


def flags_of(names: Sequence[str]) -> tuple[bool, ...]:
    """The 41 flags with those names set; KeyError for a name libfranka does not have."""
    on = {ERROR_INDEX[n] for n in names}
    return tuple(n in on for n in range(N_ERRORS))


# robot_mode as the arm vocabulary says it (devices.arm.MotionState values), one place to map
MOTION_STATE_OF_MODE = {
    "Other": "unknown",
    "Idle": "stopped",
    "Move": "moving",
    "Guiding": "hand_guided",
    "Reflex": "protective_stop",
    "UserStopped": "emergency_stop",
    "AutomaticErrorRecovery": "recovering",
}
