"""Open a device from its URL, the way pyserial's serial_for_url does.

| URL                                      | family    | what it opens                                   |
|------------------------------------------|-----------|-------------------------------------------------|
| sim:fr3, sim:fr20, sim:simmachine[?k=v]  | fairino   | embedded FAIRINO simulator + the real client    |
| fairino://HOST[?transport=udp|rpc]       | fairino   | a real FAIRINO controller                       |
| sim:rosorin-arm[?k=v]                    | hiwonder  | embedded bus-servo board simulator on a pty     |
| hiwonder:///dev/ttyX[?baud=1000000]      | hiwonder  | a real Hiwonder-style STM32 board               |
| sim:microduck[?k=v]                      | dynamixel | embedded Dynamixel bus simulator on a pty       |
| dxl:///dev/ttyX[?baud=1000000&ids=10-14] | dynamixel | a real Dynamixel Protocol 2.0 bus (dynamixel-sdk)|

Each family is one `Family` entry in FAMILIES: its kind (arm or bus), its real-device schemes, its opener
(and, where the real client must not know its simulator, the opener of its `sim:` URLs) and where its
simulator profile names live. The `sim:` names are the family's own profile table (one
list, not two). Modules are imported only when a URL needs them, so a missing optional dependency
(dynamixel-sdk) only matters for that family's URLs; a profile table must therefore live in a module that
imports nothing optional.

A real address that fails raises; nothing ever falls back to a simulator.
"""

from __future__ import annotations

import functools
import importlib
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

from servotool.devices.url import SIM_SCHEME, DeviceURL, DeviceURLError, parse_url

if TYPE_CHECKING:
    from servotool.devices.arm import Arm
    from servotool.devices.bus import Bus

ARM = "arm"
BUS = "bus"


@dataclass(frozen=True)
class Family:
    """One device family as the registry sees it.

    kind: ARM or BUS; schemes: the URL schemes of its real devices; opener: "module:function" called as
    `function(parsed_url, **kwargs)`; profiles: "module:attribute" naming its simulator profiles (a mapping
    or an iterable of names, or a function returning one), in a module free of optional dependencies;
    sim_opener: the opener of its `sim:` URLs when it is not `opener`.
    """

    name: str
    kind: str
    schemes: tuple[str, ...]
    opener: str
    profiles: str
    sim_opener: str | None = None


FAMILIES: tuple[Family, ...] = (
    Family("fairino", ARM, ("fairino",), "servotool.devices.fairino.client:open_url",
           "servotool.devices.fairino.profiles:PROFILES", "servotool.devices.fairino.sim:open_url"),
    Family("hiwonder", BUS, ("hiwonder",), "servotool.devices.hiwonder.client:open_url",
           "servotool.devices.hiwonder.profiles:PROFILES"),
    Family("dynamixel", BUS, ("dxl",), "servotool.devices.dynamixel:open_url",
           "servotool.devices.dynamixel.profiles:PROFILES"),
)


def _load(spec: str) -> Any:
    module, _, attr = spec.partition(":")
    return getattr(importlib.import_module(module), attr)


@functools.cache
def sim_names(family: Family) -> tuple[str, ...]:
    """The family's simulator profile names (`sim:<name>`); empty when its profile table cannot be
    imported (then none of its sim: URLs open, and the others are unaffected)."""
    try:
        table = _load(family.profiles)
    except ImportError:
        return ()
    if callable(table):
        table = table()
    return tuple(str(name) for name in cast(Iterable[Any], table))


def _families(kind: str | None) -> list[Family]:
    return [f for f in FAMILIES if kind is None or f.kind == kind]


def known_urls(kind: str) -> list[str]:
    """Every URL form a kind accepts: `scheme://...` for real devices and `sim:<profile>` for simulators."""
    out: list[str] = []
    for fam in _families(kind):
        out += [f"{scheme}://" for scheme in fam.schemes]
        out += [f"{SIM_SCHEME}:{name}" for name in sim_names(fam)]
    return sorted(out)


def _a(kind: str) -> str:
    return f"an {kind}" if kind[:1] in "aeiou" else f"a {kind}"


def family_of(parsed: DeviceURL, kind: str | None = None) -> Family:
    """The family that opens a URL (of the given kind, or any). Raises DeviceURLError naming the known
    URLs, or saying which kind the URL opens when it belongs to another one."""
    for fam in _families(None):
        if (parsed.simulated and parsed.target in sim_names(fam)) or parsed.scheme in fam.schemes:
            if kind is not None and fam.kind != kind:
                raise DeviceURLError(f"{parsed.raw!r} opens {_a(fam.kind)} ({fam.name}), not {_a(kind)}")
            return fam
    what = kind or "device"
    choices = ", ".join(known_urls(kind) if kind else known_urls(ARM) + known_urls(BUS))
    raise DeviceURLError(f"{parsed.raw!r} is not a known {what} URL (known: {choices})")


def _opener(kind: str, parsed: DeviceURL) -> Callable[..., Any]:
    fam = family_of(parsed, kind)
    spec = fam.sim_opener if parsed.simulated and fam.sim_opener else fam.opener
    return cast(Callable[..., Any], _load(spec))


def open_arm(url: str, **kwargs: Any) -> Arm:
    """Open a streaming arm from its URL. Raises DeviceURLError (before anything is opened) for a URL it
    cannot read, DeviceError when the device does not answer."""
    parsed = parse_url(url)
    return cast("Arm", _opener(ARM, parsed)(parsed, **kwargs))


def open_bus(url: str, **kwargs: Any) -> Bus:
    """Open a servo bus from its URL. Raises DeviceURLError (before anything is opened) for a URL it cannot
    read, DeviceError when the device does not answer."""
    parsed = parse_url(url)
    return cast("Bus", _opener(BUS, parsed)(parsed, **kwargs))


__all__ = [
    "ARM",
    "BUS",
    "FAMILIES",
    "DeviceURL",
    "DeviceURLError",
    "Family",
    "family_of",
    "known_urls",
    "open_arm",
    "open_bus",
    "parse_url",
    "sim_names",
]
