"""DYNAMIXEL buses as the registry sees them: URL facts, lock keys, simulator names and parameters.

Pure: imports only the profile and control tables (no dynamixel-sdk). `open` and `probe` import the client.
"""

from __future__ import annotations

from typing import Any

from servotool.devices.dynamixel import control_table as ct
from servotool.devices.dynamixel import profiles
from servotool.devices.dynamixel.serve import SERVE
from servotool.devices.family import BUS, DeviceFacts, Family, SimParam
from servotool.devices.locks import serial_keys
from servotool.devices.url import DeviceURL, DeviceURLError


def _open(parsed: DeviceURL, **kwargs: Any) -> Any:
    from servotool.devices.dynamixel.client import open_url

    return open_url(parsed, **kwargs)


def facts(parsed: DeviceURL) -> DeviceFacts:
    """A `sim:` URL's robot profile, or a real bus's `?profile=`; a real bus that names none has no joints
    known before it is scanned. Positions are pulses of one turn (position control mode)."""
    name = parsed.params.get("profile") or (parsed.target if parsed.simulated else "")
    ids: tuple[int, ...] = ()
    if name:
        try:
            ids = profiles.get_profile(name).ids
        except KeyError as exc:
            raise DeviceURLError(f"{parsed.raw}: {exc.args[0]}") from None
    lo, hi = ct.POSITION_RANGE
    return DeviceFacts(
        parsed.raw,
        "dynamixel",
        BUS,
        name,
        parsed.simulated,
        tuple(f"servo {i}" for i in ids),
        "pulse",
        tuple((float(lo), float(hi)) for _ in ids),
        joint_ids=ids,
        position_range=ct.POSITION_RANGE,
        id_range=(0, ct.MAX_ID),
    )


def lock_keys(parsed: DeviceURL) -> list[str]:
    return [] if parsed.simulated else serial_keys(parsed.target)


def probe(port: str, baud: int, timeout_ms: int) -> list[int]:
    """Ids answering a broadcast PING on `port` at `baud` (read only; the SDK's own answer limit)."""
    from servotool.devices.dynamixel.client import probe as ping

    return ping(port, baud)


def _telemetry(bus: Any) -> Any:
    from servotool.devices.dynamixel.telemetry import telemetry

    return telemetry(bus)


def sim_params() -> tuple[SimParam, ...]:
    from servotool.devices.dynamixel.sim_params import KNOWN_KEYS, PARAM_HELP

    return tuple(SimParam(key, PARAM_HELP[key]) for key in KNOWN_KEYS)


def _status(bits: int) -> str:
    """The Hardware Error Status bits by name, lower case: "overload, overheating"."""
    return "" if not bits else ct.describe_hardware_error(bits).lower().replace("_", " ").replace("|", ", ")


FAMILY = Family(
    name="dynamixel",
    title="DYNAMIXEL Protocol 2.0 bus",
    kind=BUS,
    schemes=("dxl",),
    examples=("dxl:///dev/ttyUSB0?ids=1-6",),
    network=False,
    sim_names=lambda: tuple(profiles.PROFILES),
    open=_open,
    facts=facts,
    lock_keys=lock_keys,
    probe=probe,
    probe_bauds=(57600, 1_000_000),
    telemetry=_telemetry,
    campaigns=frozenset(),
    sim_params=sim_params,
    serve=SERVE,
    docs="dynamixel.md",
    client_packages=("dynamixel-sdk",),
    describe_status=_status,
)
