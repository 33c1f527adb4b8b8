"""Telemetry sources of the record loop: a device opened from its URL and turned into a source by its
family's `telemetry` hook (devices.family). The source protocol itself is recorder.source.TelemetrySource;
a source reads only: nothing here commands motion, switches torque, writes EEPROM or sends REBOOT.
"""

from __future__ import annotations

from typing import Any

from servotool.devices.registry import FAMILIES, family_of, family_urls, parse_url
from servotool.devices.url import asks_simulated_time
from servotool.errors import Refused
from servotool.recorder.source import StatusUnsupported, TelemetrySource


def recordable_urls() -> list[str]:
    """Every URL form of the families the recorder can read (those with a `telemetry` hook), sorted."""
    return sorted(url for fam in FAMILIES if fam.telemetry is not None for url in family_urls(fam))


def open_source(url: str, kind: str, clock: Any) -> TelemetrySource:
    """Open `url` as a bus ("bus") or an arm ("arm") for recording, through its family's telemetry hook.

    Refused (exit 2) before anything opens: a URL whose family has no telemetry hook (one line naming the
    recordable URLs), and a simulator in simulated time (clock=sim). DeviceURLError for a bad URL;
    DeviceError when the device cannot be reached.
    """
    from servotool.devices.registry import open_arm, open_bus

    # refused before anything opens: the recorder watches in real time
    if asks_simulated_time(url):
        raise Refused(
            "the recorder watches in real time; a simulator in simulated time (clock=sim) only "
            "moves under a run"
        )
    fam = family_of(parse_url(url), kind)
    hook = fam.telemetry
    if hook is None:
        raise Refused(
            f"the recorder cannot read {url} ({fam.title}); recordable: {', '.join(recordable_urls())}"
        )
    device: Any = open_arm(url, now=clock.now) if kind == "arm" else open_bus(url, clock=clock)
    try:
        source: TelemetrySource = hook(device)
        return source
    except BaseException:
        device.close()
        raise


__all__ = ["StatusUnsupported", "TelemetrySource", "open_source", "recordable_urls"]
