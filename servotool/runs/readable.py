"""What a reading of a run's device can be, from its URL's family facts (servotool.readings has the check)."""

from __future__ import annotations

from servotool.devices.family import readable
from servotool.devices.registry import DeviceURLError, url_facts
from servotool.readings import Readable


def device_readable(url: str) -> Readable:
    """What a position reading of the device at `url` can be: its family's fact; the physical bound alone
    for a URL the registry knows no family of (a test double)."""
    try:
        return readable(url_facts(url))
    except DeviceURLError:
        return Readable()


__all__ = ["device_readable"]
