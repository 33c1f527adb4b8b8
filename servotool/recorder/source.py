"""What the flight recorder reads of a device: `TelemetrySource`, implemented by each recordable family.

A family's `telemetry(device)` hook (devices.family) turns an opened device into a source; the record loop
(runs/recorder/loop.py) reads it. A source reads only: nothing here commands motion, switches torque,
writes EEPROM or sends REBOOT.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from servotool.errors import DeviceError
from servotool.recorder.frames import AxisKey, Sweep


class StatusUnsupported(DeviceError):
    """The device cannot report hardware errors: recording is disabled for this connection."""


class TelemetrySource(Protocol):
    """A device read by the record loop: a fast sweep (the legs of a servo bus, the joints of an arm), an
    optional context sweep (the neck), and one status read across every axis."""

    url: str
    simulated: bool
    model: str
    status_every_frame: bool  # the status rides with every frame (no separate poll)
    # fast sweeps a second when the device streams its own cycles faster than the loop reads (a 1 kHz arm:
    # every cycle is a sweep, handed over in batches); None: one sweep a frame. The fast ring is sized to
    # keep the same seconds of lead-up either way.
    sweep_rate_hz: float | None

    def describe(self) -> dict[str, Any]:
        """Device facts for the capture header: url, model, simulated, family, axes, units."""
        ...

    def read_fast(self) -> Sweep | Sequence[Sweep] | None:
        """The fast sweep of this frame, None when nothing new was read; a device with `sweep_rate_hz`
        hands over every sweep since the last frame, oldest first (empty when none came)."""
        ...

    def read_context(self) -> Sweep | None:
        """The slow group's sweep (the neck), None when the device has none."""
        ...

    def read_status(self) -> Mapping[AxisKey, int | None]:
        """Hardware-error bits of every axis (None: no answer). StatusUnsupported when it cannot."""
        ...

    def close(self) -> None:
        """Disconnect (idempotent, never raises)."""
        ...


__all__ = ["StatusUnsupported", "TelemetrySource"]
