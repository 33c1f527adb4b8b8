"""Open a device from its URL, the way pyserial's serial_for_url does, and find the family behind a URL.

Each family is one folder, `devices/<family>/`, whose `family.py` exports its `Family` (devices.family: the
contract of every hook). FAMILY_MODULES lists them; a family module imports nothing optional, so a missing
optional dependency (dynamixel-sdk, pylibfranka) only matters when one of that family's URLs is opened.

A real address that fails raises; nothing ever falls back to a simulator.
"""

from __future__ import annotations

import dataclasses
import functools
import importlib
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, cast

from servotool.devices.family import ARM, BUS, DeviceFacts, Family
from servotool.devices.url import SIM_SCHEME, DeviceURL, DeviceURLError, NoSchemeError, parse_url

if TYPE_CHECKING:
    from servotool.devices.arm import Arm
    from servotool.devices.bus import Bus

FAMILY_MODULES: tuple[str, ...] = (
    "servotool.devices.fairino.family",
    "servotool.devices.hiwonder.family",
    "servotool.devices.dynamixel.family",
    "servotool.devices.franka.family",
    "servotool.devices.fake.family",
    "servotool.devices.fake.bus_family",
)


def _family(module: str) -> Family:
    return cast(Family, importlib.import_module(module).FAMILY)


FAMILIES: tuple[Family, ...] = tuple(_family(m) for m in FAMILY_MODULES)


@functools.cache
def sim_names(family: Family) -> tuple[str, ...]:
    """The family's simulator profile names (`sim:<name>`); empty when its profile table cannot be
    imported (then none of its sim: URLs open, and the others are unaffected)."""
    try:
        return tuple(str(name) for name in family.sim_names())
    except ImportError:
        return ()


def family_named(name: str) -> Family:
    """The family of that name; KeyError names the known ones."""
    for fam in FAMILIES:
        if fam.name == name:
            return fam
    raise KeyError(f"unknown device family {name!r} (known: {', '.join(f.name for f in FAMILIES)})")


def _family_for(url: str | None, family: str | None) -> Family | None:
    """The family named, else the one that opens the URL; None when neither says."""
    if family:
        try:
            return family_named(family)
        except KeyError:
            return None
    if url:
        try:
            return family_of(parse_url(url))
        except DeviceURLError:
            return None
    return None


def status_names(bits: int, *, url: str | None = None, family: str | None = None) -> str:
    """The names of a status word's set bits (a latch the recorder saw), by the device's family (named, or
    the one that opens `url`); "" when it names none."""
    fam = _family_for(url, family)
    return fam.describe_status(int(bits)) if fam is not None and fam.describe_status and bits else ""


def fault_names(codes: tuple[int, ...], *, url: str | None = None, family: str | None = None) -> str:
    """The name of a recorded fault by its codes, by the device's family; "" when it names none."""
    fam = _family_for(url, family)
    return fam.describe_fault(tuple(int(c) for c in codes)) if fam is not None and fam.describe_fault else ""


def _kind_hint(text: str, kind: str | None) -> str:
    """The URLs of the kind a text with no scheme may have meant: a device path (`/dev/ttyUSB0`) with each
    serial family's scheme in front, a host with each network family's, then every form the kind opens."""
    fams = _families(kind)
    if text.startswith("/"):
        meant = [f"{scheme}://{text}" for fam in fams if fam.kind == BUS for scheme in fam.schemes]
    else:
        meant = [f"{scheme}://{text}" for fam in fams if fam.kind == ARM for scheme in fam.schemes]
    forms = ", ".join(known_urls(kind) if kind else known_urls(ARM) + known_urls(BUS))
    guess = f"for this {'port' if text.startswith('/') else 'host'}: {' or '.join(meant)}; " if meant else ""
    return f"{guess}{_a(kind or 'device')} URL is one of: {forms}"


def check_url(url: str, kind: str | None) -> DeviceURL:
    """The URL read for a command that opens a device of `kind` (ARM or BUS; None: either): DeviceURLError
    when it cannot be read, naming the URLs of that kind (a bus command suggests bus URLs, an arm command arm
    URLs), or when it opens a device of the other kind."""
    try:
        parsed = parse_url(url)
    except NoSchemeError as exc:
        raise DeviceURLError(f"device URL {exc.text!r} has no scheme; {_kind_hint(exc.text, kind)}") from None
    family_of(parsed, kind)
    return parsed


def url_facts(url: str, kind: str | None = None) -> DeviceFacts:
    """What the URL's family knows of the device from the URL alone (nothing is opened). DeviceURLError
    for a URL that names no known device (of `kind`, when given) or parameters its family refuses. The
    family's limits node is carried on the facts (one definition: `Family.limits_node`)."""
    parsed = check_url(url, kind)
    family = family_of(parsed, kind)
    return dataclasses.replace(family.facts(parsed), limits_node=family.limits_node or None)


def lock_keys(url: str) -> list[str]:
    """The host-wide lock keys a run on this URL must hold ([] for an embedded simulator). DeviceURLError
    for a URL whose scheme no family registers: an unknown device is refused, never left unlocked."""
    parsed = parse_url(url)
    fam = family_of(parsed)
    keys = fam.lock_keys(parsed)
    if not keys and not parsed.simulated:
        raise DeviceURLError(f"{url!r}: the {fam.name} family gave no lock key for a real device")
    return keys


def _families(kind: str | None) -> list[Family]:
    return [f for f in FAMILIES if kind is None or f.kind == kind]


def family_urls(family: Family) -> list[str]:
    """Every URL form a family opens: `scheme://` for its real devices, `sim:<profile>` for its simulators."""
    return [f"{scheme}://" for scheme in family.schemes] + [f"{SIM_SCHEME}:{n}" for n in sim_names(family)]


def known_urls(kind: str) -> list[str]:
    """Every URL form a kind accepts: `scheme://...` for real devices and `sim:<profile>` for simulators."""
    return sorted(url for fam in _families(kind) for url in family_urls(fam))


def default_url(kind: str) -> str:
    """The simulator a command of this kind opens when given no device: the first family of the kind that
    names one (`sim:<name>`). KeyError when none does."""
    for fam in _families(kind):
        if fam.default_sim:
            return f"{SIM_SCHEME}:{fam.default_sim}"
    raise KeyError(f"no {kind} family names a default simulator")


# the devices a command opens when neither its option, its environment variable nor the config file names
# one: simulators, so that every command runs with no hardware
DEFAULT_ARM_URL = default_url(ARM)
DEFAULT_BUS_URL = default_url(BUS)


def sim_urls(kind: str) -> list[str]:
    """The `sim:` URLs of every family of the kind, family by family in registry order."""
    return [f"{SIM_SCHEME}:{name}" for fam in _families(kind) for name in sim_names(fam)]


def _a(kind: str) -> str:
    return f"an {kind}" if kind[:1] in "aeiou" else f"a {kind}"


def family_of(parsed: DeviceURL, kind: str | None = None) -> Family:
    """The family that opens a URL (of the given kind, or any). Raises DeviceURLError naming the known
    URLs, or saying which kind the URL opens when it belongs to another one."""
    for fam in _families(None):
        if (parsed.simulated and parsed.target in sim_names(fam)) or parsed.scheme in fam.schemes:
            if kind is not None and fam.kind != kind:
                raise DeviceURLError(
                    f"{parsed.raw!r} opens {_a(fam.kind)} ({fam.name}), not {_a(kind)} "
                    f"({_a(kind)} URL is one of: {', '.join(known_urls(kind))})"
                )
            return fam
    what = kind or "device"
    choices = ", ".join(known_urls(kind) if kind else known_urls(ARM) + known_urls(BUS))
    raise DeviceURLError(f"{parsed.raw!r} is not a known {what} URL (known: {choices})")


def _opener(kind: str, parsed: DeviceURL) -> Callable[..., Any]:
    return family_of(parsed, kind).open


def open_arm(url: str, **kwargs: Any) -> Arm:
    """Open a streaming arm from its URL. Raises DeviceURLError (before anything is opened) for a URL it
    cannot read, DeviceError when the device does not answer."""
    parsed = check_url(url, ARM)
    return cast("Arm", _opener(ARM, parsed)(parsed, **kwargs))


def open_bus(url: str, **kwargs: Any) -> Bus:
    """Open a servo bus from its URL. Raises DeviceURLError (before anything is opened) for a URL it cannot
    read, DeviceError when the device does not answer."""
    parsed = check_url(url, BUS)
    return cast("Bus", _opener(BUS, parsed)(parsed, **kwargs))


__all__ = [
    "ARM",
    "BUS",
    "DEFAULT_ARM_URL",
    "fault_names",
    "status_names",
    "DEFAULT_BUS_URL",
    "FAMILIES",
    "check_url",
    "DeviceFacts",
    "DeviceURL",
    "DeviceURLError",
    "Family",
    "default_url",
    "family_named",
    "family_urls",
    "family_of",
    "known_urls",
    "lock_keys",
    "open_arm",
    "open_bus",
    "parse_url",
    "sim_names",
    "sim_urls",
    "url_facts",
]
