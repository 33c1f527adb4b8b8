"""Arm profiles for bus-servo boards: which servo ids make the arm, their stored limits and named poses.

The `rosorin-arm` profile is a 5-joint arm plus a claw of HX-12H servos. The stored limits are the values the
servos hold in EEPROM (read with sub-command 0x32) and the poses are the owner's named poses, all in pulses.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field


@dataclass(frozen=True)
class ArmProfile:
    """What is known about one arm model.

    joint_ids: servos whose position must be known before anything moves (a silent one refuses).
    optional_ids: servos that may go silent without stopping the arm (carried at their last known pulse).
    stored_limits: (lo, hi) pulses per servo as held in the servo's EEPROM; the simulator caps motion there.
    poses: named poses, {name: {id: pulse}}. `reference_poses` name poses that are not command targets.
    tuck_pose: the one pose torque may be switched off in (the arm rests on itself), checked on `tuck_joints`
    within `tuck_tolerance` pulses. (The pose named "rest" is the default holding pose, with torque on.)
    """

    name: str
    joint_ids: tuple[int, ...]
    optional_ids: tuple[int, ...]
    stored_limits: Mapping[int, tuple[int, int]]
    poses: Mapping[str, Mapping[int, int]]
    start_pose: str
    tuck_pose: str
    tuck_joints: tuple[int, ...]
    tuck_tolerance: int
    reference_poses: tuple[str, ...] = ()
    joint_names: Mapping[int, str] = field(default_factory=dict)
    voltage_mv: Mapping[int, int] = field(default_factory=dict)
    temperature_c: Mapping[int, int] = field(default_factory=dict)
    # pulses/s each joint drifts with torque off (sign = direction), and where it comes to rest
    sag_speed: Mapping[int, float] = field(default_factory=dict)
    sag_stop: Mapping[int, int] = field(default_factory=dict)
    # the simulator's obstacles: pulses a joint cannot pass (it stalls there under load), per servo
    obstacles: Mapping[int, tuple[int, ...]] = field(default_factory=dict)

    @property
    def ids(self) -> tuple[int, ...]:
        return self.joint_ids + self.optional_ids


ROSORIN_ARM = ArmProfile(
    name="rosorin-arm",
    joint_ids=(1, 2, 3, 4, 5),
    optional_ids=(10,),
    stored_limits={1: (10, 990), 2: (80, 960), 3: (10, 990), 4: (0, 1000), 5: (10, 990), 10: (110, 670)},
    poses={
        "rest": {1: 500, 2: 776, 3: 211, 4: 161, 5: 500, 10: 499},
        "fold": {1: 500, 2: 860, 3: 45, 4: 178, 5: 500, 10: 499},
        # tuck is where the upper arm rests on the joint-2 servo with torque off; joint 2 cannot be driven
        # past its stored 960, so it is a reference and pretuck is the reachable approach to it
        "tuck": {1: 500, 2: 980, 3: 48, 4: 133, 5: 499, 10: 629},
        "pretuck": {1: 500, 2: 960, 3: 48, 4: 133, 5: 499, 10: 629},
        "drive": {1: 500, 2: 793, 3: 51, 4: 160, 5: 499, 10: 499},
    },
    start_pose="rest",
    tuck_pose="tuck",
    tuck_joints=(2, 3, 4),
    tuck_tolerance=25,
    reference_poses=("tuck",),
    joint_names={1: "base", 2: "shoulder", 3: "elbow", 4: "wrist", 5: "claw rotate", 10: "claw"},
    voltage_mv={1: 12600, 2: 12500, 3: 12550, 4: 12700, 5: 12650, 10: 12600},
    temperature_c={1: 34, 2: 38, 3: 42, 4: 36, 5: 31, 10: 30},
    # after a power cut: shoulder 776 -> 658, elbow down to -21..-35, wrist 161 -> 223
    sag_speed={2: -12.0, 3: -25.0, 4: 6.0},
    sag_stop={2: 658, 3: -35, 4: 223},
    # one obstacle in the simulator by default, so a limit sweep shows a stall: the base cannot turn past
    # 880 (`obstacle_1=` in the URL removes it)
    obstacles={1: (880,)},
)

PROFILES: Mapping[str, ArmProfile] = {ROSORIN_ARM.name: ROSORIN_ARM}


def get_profile(name: str) -> ArmProfile:
    """The named profile; KeyError names the known ones."""
    try:
        return PROFILES[name]
    except KeyError:
        raise KeyError(f"unknown arm profile {name!r} (known: {', '.join(sorted(PROFILES))})") from None
