"""The fake arm as the registry sees it (`sim:fake-arm`): URL facts, lock keys, simulator name and parameters.

The fake bus is the folder's other family (bus_family.py): a Family has one kind. Pure: imports only the
parameter table; `open` imports the device.
"""

from __future__ import annotations

from typing import Any

from servotool.devices.fake import params
from servotool.devices.family import ARM, DeviceFacts, Family, MotionCaps
from servotool.devices.url import DeviceURL, DeviceURLError, sim_clock

NAME = "fake-arm"

# the bounds of every arm run's defaults: the fake has no runaway of its own to calibrate caps on
MOTION = MotionCaps(
    cmd_period_s=0.01,
    v_max=130.0,
    a_max=500.0,
    j_max=10000.0,
    a_cap=2000.0,
    a_probe_cap=20000.0,
    shapers=("accel", "otg"),
)


def _own(parsed: DeviceURL) -> None:
    if not parsed.simulated or parsed.target != NAME:
        raise DeviceURLError(f"{parsed.raw!r} is not a fake arm URL (sim:{NAME})")


def facts(parsed: DeviceURL) -> DeviceFacts:
    """The joints, ranges and speed limits the URL sets up; DeviceURLError for a parameter it refuses."""
    _own(parsed)
    p = params.arm_params(parsed)
    names = tuple(f"J{j + 1}" for j in range(p.joints))
    return DeviceFacts(
        parsed.raw,
        NAME,
        ARM,
        NAME,
        True,
        names,
        "deg",
        (params.JOINT_RANGE,) * p.joints,
        (params.JOINT_SPEED_LIMIT,) * p.joints,
        motion=MOTION,
    )


def _open(parsed: DeviceURL, **kwargs: Any) -> Any:
    """A FakeArm: every parameter checked first (DeviceURLError); `clock=sim` or a caller's FakeClock runs
    it in lock-step, another caller's clock stamps its frames (devices.url.sim_clock)."""
    _own(parsed)
    p = params.arm_params(parsed)
    clock = sim_clock(dict(parsed.params), parsed.raw, kwargs.pop("clock", None))
    from servotool.devices.fake.arm import open_fake_arm

    return open_fake_arm(parsed.raw, p, clock, **kwargs)


def lock_keys(parsed: DeviceURL) -> list[str]:
    return []  # in-process: every open is its own device


FAMILY = Family(
    name=NAME,
    title="in-process fake arm",
    kind=ARM,
    schemes=(),
    examples=(),
    network=False,
    sim_names=lambda: (NAME,),
    open=_open,
    facts=facts,
    lock_keys=lock_keys,
    campaigns=frozenset({"lag", "step"}),
    sim_params=lambda: params.help_of(params.ARM_SPEC),
)
