"""Open a device from its URL, the way pyserial's serial_for_url does.

| URL                                      | backend                                         |
|------------------------------------------|-------------------------------------------------|
| sim:fr3, sim:fr20, sim:simmachine[?k=v]  | embedded FAIRINO simulator + the real client    |
| fairino://HOST[?transport=udp|rpc]       | a real FAIRINO controller                       |
| sim:rosorin-arm[?k=v]                    | embedded bus-servo board simulator on a pty     |
| hiwonder:///dev/ttyX[?baud=1000000]      | a real Hiwonder-style STM32 board               |
| sim:microduck[?k=v]                      | embedded Dynamixel bus simulator on a pty       |
| dxl:///dev/ttyX[?baud=1000000&ids=10-14] | a real Dynamixel Protocol 2.0 bus               |

A real address that fails raises; nothing ever falls back to a simulator.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qsl, urlsplit


class DeviceURLError(ValueError):
    """The URL names no known device, or its parameters are malformed."""


@dataclass(frozen=True)
class DeviceURL:
    """A parsed device URL: scheme ("sim", "fairino", "hiwonder"), target (host, path or profile), params."""

    raw: str
    scheme: str
    target: str
    params: dict[str, str] = field(default_factory=dict)

    @property
    def simulated(self) -> bool:
        return self.scheme == "sim"


def parse_url(url: str) -> DeviceURL:
    """Split a device URL; raises DeviceURLError with the reason when it cannot be read."""
    if not url or ":" not in url:
        raise DeviceURLError(f"device URL {url!r} has no scheme (try sim:fr3 or fairino://192.168.58.2)")
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    if scheme == "sim":
        target = (parts.path or parts.netloc).strip("/")
    elif parts.netloc and not parts.path:
        target = parts.netloc
    elif parts.netloc:
        target = parts.netloc + parts.path
    else:
        target = parts.path
    try:
        params = dict(parse_qsl(parts.query, keep_blank_values=True, strict_parsing=bool(parts.query)))
    except ValueError as exc:
        raise DeviceURLError(f"device URL {url!r}: malformed parameters ({exc})") from None
    if not target:
        raise DeviceURLError(f"device URL {url!r} names no host, port or profile")
    if scheme != "sim" and parts.netloc and ":" in parts.netloc.rsplit("]", 1)[-1]:
        raise DeviceURLError(
            f"device URL {url!r}: put ports in the query "
            "(e.g. ?rpc_port=20003&cnde_port=20005&udp_port=20007), not after the host"
        )
    return DeviceURL(raw=url, scheme=scheme, target=target, params=params)


# kind -> {scheme or "sim:<profile>" -> "module:function"}; modules load lazily so that a missing optional
# dependency (dynamixel-sdk) only matters for the URLs that need it.
_OPENERS: dict[str, dict[str, str]] = {
    "arm": {
        "fairino": "servotool.devices.fairino.client:open_url",
        "sim:fr3": "servotool.devices.fairino.client:open_url",
        "sim:fr20": "servotool.devices.fairino.client:open_url",
        "sim:simmachine": "servotool.devices.fairino.client:open_url",
    },
    "bus": {
        "hiwonder": "servotool.devices.hiwonder.client:open_url",
        "sim:rosorin-arm": "servotool.devices.hiwonder.client:open_url",
        "dxl": "servotool.devices.dynamixel:open_url",
        "sim:microduck": "servotool.devices.dynamixel:open_url",
    },
}


def known_urls(kind: str) -> list[str]:
    return sorted(_OPENERS.get(kind, {}))


def _opener(kind: str, parsed: DeviceURL) -> Callable[..., Any]:
    table = _OPENERS.get(kind, {})
    key = f"sim:{parsed.target}" if parsed.simulated else parsed.scheme
    spec = table.get(key)
    if spec is None:
        choices = ", ".join(known_urls(kind))
        raise DeviceURLError(f"{parsed.raw!r} is not a known {kind} URL (known: {choices})")
    module, func = spec.split(":")
    return getattr(importlib.import_module(module), func)


def open_arm(url: str, **kwargs: Any) -> Any:
    """Open a streaming arm (devices.arm.Arm) from its URL."""
    parsed = parse_url(url)
    return _opener("arm", parsed)(parsed, **kwargs)


def open_bus(url: str, **kwargs: Any) -> Any:
    """Open a servo bus from its URL."""
    parsed = parse_url(url)
    return _opener("bus", parsed)(parsed, **kwargs)
