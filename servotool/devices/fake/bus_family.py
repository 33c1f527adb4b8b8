"""The fake bus as the registry sees it (`sim:fake-bus`): URL facts, lock keys, simulator name and parameters.

Pure: imports only the parameter table; `open` imports the device.
"""

from __future__ import annotations

from typing import Any

from servotool.devices.fake import params
from servotool.devices.family import BUS, DeviceFacts, Family
from servotool.devices.url import DeviceURL, DeviceURLError, sim_clock

NAME = "fake-bus"


def _own(parsed: DeviceURL) -> None:
    if not parsed.simulated or parsed.target != NAME:
        raise DeviceURLError(f"{parsed.raw!r} is not a fake bus URL (sim:{NAME})")


def facts(parsed: DeviceURL) -> DeviceFacts:
    """Servos 1..N as joints, each over the whole position range; DeviceURLError for a parameter it
    refuses."""
    _own(parsed)
    p = params.bus_params(parsed)
    ids = tuple(range(1, p.servos + 1))
    lo, hi = params.POSITION_RANGE
    return DeviceFacts(
        parsed.raw,
        NAME,
        BUS,
        NAME,
        True,
        tuple(f"servo {i}" for i in ids),
        "unit",
        tuple((float(lo), float(hi)) for _ in ids),
        joint_ids=ids,
        position_range=params.POSITION_RANGE,
        id_range=(1, params.MAX_SERVOS),
    )


def _open(parsed: DeviceURL, **kwargs: Any) -> Any:
    """A FakeBus: every parameter checked first (DeviceURLError); `clock=sim` or a caller's FakeClock runs
    it in lock-step (devices.url.sim_clock)."""
    _own(parsed)
    p = params.bus_params(parsed)
    clock = sim_clock(dict(parsed.params), parsed.raw, kwargs.pop("clock", None))
    from servotool.devices.fake.bus import open_fake_bus

    return open_fake_bus(parsed.raw, p, clock, **kwargs)


def lock_keys(parsed: DeviceURL) -> list[str]:
    return []  # in-process: every open is its own device


FAMILY = Family(
    name=NAME,
    title="in-process fake servo bus",
    kind=BUS,
    schemes=(),
    examples=(),
    network=False,
    sim_names=lambda: (NAME,),
    open=_open,
    facts=facts,
    lock_keys=lock_keys,
    sim_params=lambda: params.help_of(params.BUS_SPEC),
)
