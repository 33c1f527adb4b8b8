"""Robot profiles for DYNAMIXEL buses: which ids make the robot, grouped by limb, and what they carry.

`microduck` is a small legged robot of 14 XL330-M288 at 1 Mbaud: right leg ids 10-14, left leg 20-24, neck
and head 30-33. The legs carry the body (a standing load per joint), the neck only the head.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from servotool.devices.dynamixel.control_table import MODEL_XL330_M288


@dataclass(frozen=True)
class DxlProfile:
    """What is known about one robot.

    groups: limb name -> servo ids, in bus order (the recorder sweeps legs and neck separately).
    load_ma: the standing load each joint carries with torque on (mA of holding current).
    start_position: pulses each joint starts at (2048, the middle of one turn, where not given).
    start_torque: whether torque is on when the bus is first seen (a robot already standing).
    """

    name: str
    groups: Mapping[str, tuple[int, ...]]
    model_number: int = MODEL_XL330_M288
    baud: int = 1_000_000
    load_ma: Mapping[int, float] = field(default_factory=dict)
    start_position: Mapping[int, int] = field(default_factory=dict)
    start_torque: bool = True

    @property
    def ids(self) -> tuple[int, ...]:
        return tuple(sid for ids in self.groups.values() for sid in ids)


def _legs(first: int) -> dict[int, float]:
    # hip yaw, hip roll, hip pitch, knee, ankle: the pitch joints hold the body
    return dict(zip(range(first, first + 5), (25.0, 60.0, 110.0, 150.0, 90.0), strict=True))


MICRODUCK = DxlProfile(
    name="microduck",
    groups={"right_leg": (10, 11, 12, 13, 14), "left_leg": (20, 21, 22, 23, 24), "neck": (30, 31, 32, 33)},
    load_ma={**_legs(10), **_legs(20), 30: 30.0, 31: 45.0, 32: 25.0, 33: 10.0},
)

PROFILES: dict[str, DxlProfile] = {MICRODUCK.name: MICRODUCK}


def get_profile(name: str) -> DxlProfile:
    """The profile of that name. KeyError names the known ones."""
    try:
        return PROFILES[name]
    except KeyError:
        raise KeyError(f"unknown Dynamixel profile {name!r} (known: {', '.join(PROFILES)})") from None
