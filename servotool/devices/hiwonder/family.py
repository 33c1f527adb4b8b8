"""The Hiwonder-style board as the registry sees it: URL facts, lock keys, simulator names and parameters.

Pure: imports only the profile table and the pulse units. `open` and `probe` import the client.
"""

from __future__ import annotations

from typing import Any

from servotool.devices.family import BUS, BusArm, DeviceFacts, Family, SimParam
from servotool.devices.hiwonder import profiles
from servotool.devices.hiwonder.serve import SERVE
from servotool.devices.locks import serial_keys
from servotool.devices.url import DeviceURL, DeviceURLError
from servotool.readings import Readable

DEFAULT_PROFILE = "rosorin-arm"  # a real board's arm when the URL names no ?profile=
LIMITS_NODE = "rosorin_board_driver"
# a position read can sit past 0-1000 (a joint pushed beyond the end of its range reads on into the quarter
# turn the servo cannot be commanded to); 1500 pulses make a turn, so no real read is further out than this
READ_MARGIN = 250  # the board driver's ROS 2 node: its parameter file holds the limits


def _profile(parsed: DeviceURL) -> profiles.ArmProfile:
    name = parsed.params.get("profile") or (parsed.target if parsed.simulated else DEFAULT_PROFILE)
    try:
        return profiles.get_profile(name)
    except KeyError as exc:
        raise DeviceURLError(f"{parsed.raw}: {exc.args[0]}") from None


def _open(parsed: DeviceURL, **kwargs: Any) -> Any:
    from servotool.devices.hiwonder.client import open_url

    return open_url(parsed, **kwargs)


def facts(parsed: DeviceURL) -> DeviceFacts:
    """The board's arm profile (the `sim:` name or `?profile=`): its joints by servo id, the stored limits
    as their ranges (pulses), the claw as an optional servo."""
    from servotool.devices.hiwonder.units import PULSE_MAX, PULSE_MIN  # numpy: not for `--help`

    arm = _profile(parsed)
    ranges = tuple((float(lo), float(hi)) for lo, hi in (arm.stored_limits[i] for i in arm.joint_ids))
    names = tuple(arm.joint_names.get(i, f"servo {i}") for i in arm.joint_ids)
    profile = BusArm(
        arm.name,
        arm.joint_ids,
        arm.optional_ids,
        arm.poses,
        arm.reference_poses,
        arm.tuck_pose,
        arm.tuck_joints,
        arm.tuck_tolerance,
        arm.joint_names,
    )
    return DeviceFacts(
        parsed.raw,
        "hiwonder",
        BUS,
        arm.name,
        parsed.simulated,
        names,
        "pulse",
        ranges,
        joint_ids=arm.joint_ids,
        optional_ids=arm.optional_ids,
        position_range=(PULSE_MIN, PULSE_MAX),
        id_range=(0, 253),
        arm=profile,
        readable=Readable(default=(PULSE_MIN - READ_MARGIN, PULSE_MAX + READ_MARGIN), units="pulse"),
    )


def lock_keys(parsed: DeviceURL) -> list[str]:
    return [] if parsed.simulated else serial_keys(parsed.target)


def probe(port: str, baud: int, timeout_ms: int) -> list[int]:
    """Ids of the servos that answer a position read through a board on `port` (a read only: nothing
    moves; [] when none answers). OSError or ServotoolError when the port itself cannot be opened."""
    from servotool.devices.hiwonder.client import open_url
    from servotool.devices.url import parse_url
    from servotool.errors import ServotoolError

    bus = open_url(parse_url(f"hiwonder://{port}?baud={baud}&timeout_ms={timeout_ms}&retries=0"), probe=False)
    try:
        return [sid for sid in bus.ids if bus.read_position(sid) is not None]
    except (ServotoolError, OSError):
        return []
    finally:
        bus.close()


def sim_params() -> tuple[SimParam, ...]:
    from servotool.devices.hiwonder.sim_params import KNOWN_KEYS, PARAM_HELP

    return tuple(SimParam(key, PARAM_HELP[key]) for key in KNOWN_KEYS)


FAMILY = Family(
    name="hiwonder",
    title="Hiwonder-style servo board",
    kind=BUS,
    schemes=("hiwonder",),
    examples=("hiwonder:///dev/ttyAMA0",),
    network=False,
    sim_names=lambda: tuple(profiles.PROFILES),
    open=_open,
    facts=facts,
    lock_keys=lock_keys,
    probe=probe,
    probe_bauds=(1_000_000,),
    campaigns=frozenset({"sweep"}),
    sim_params=sim_params,
    serve=SERVE,
    limits_node=LIMITS_NODE,
    default_sim=DEFAULT_PROFILE,
)
