"""DYNAMIXEL Protocol 2.0 buses (X series): control table, packets, the dynamixel-sdk client and a simulator.

`PROFILES` names the robots the simulator knows (`sim:<name>`); `open_url` opens `dxl://` and `sim:` URLs
(dynamixel-sdk is imported only then).
"""

from __future__ import annotations

from typing import Any

from servotool.devices.dynamixel.profiles import PROFILES

SCHEMES = ("dxl",)


def open_url(parsed: Any, **kwargs: Any) -> Any:
    """Open a bus from a parsed device URL (see client.open_url)."""
    from servotool.devices.dynamixel.client import open_url as _open

    return _open(parsed, **kwargs)


__all__ = ["PROFILES", "SCHEMES", "open_url"]
