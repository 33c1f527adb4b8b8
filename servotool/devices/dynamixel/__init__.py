"""DYNAMIXEL Protocol 2.0 buses (X series): control table, packets, the dynamixel-sdk client and a simulator.

`PROFILES` names the robots the simulator knows (`sim:<name>`); `open_url` opens `dxl://` and `sim:` URLs and
`probe(port, baud)` lists the ids answering a broadcast ping (dynamixel-sdk is imported only when they run).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from servotool.devices.dynamixel.profiles import PROFILES

if TYPE_CHECKING:
    from servotool.devices.dynamixel.client import DxlBus
    from servotool.devices.registry import DeviceURL

SCHEMES = ("dxl",)


def open_url(parsed: DeviceURL, **kwargs: Any) -> DxlBus:
    """Open a bus from a parsed device URL (see client.open_url)."""
    from servotool.devices.dynamixel.client import open_url as _open

    return _open(parsed, **kwargs)


def probe(port: str, baud: int = 1_000_000) -> list[int]:
    """Ids answering a broadcast PING on a serial port, sorted (see client.probe)."""
    from servotool.devices.dynamixel.client import probe as _probe

    return _probe(port, baud)


__all__ = ["PROFILES", "SCHEMES", "open_url", "probe"]
