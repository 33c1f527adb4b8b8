"""A DYNAMIXEL bus as the flight recorder's telemetry source (recorder.source.TelemetrySource).

Fast sweep: one sync read of the telemetry span (126-146) over every group but the context groups (the
legs); context sweep: the same over the context groups (the neck); status: one sync read of Hardware Error
Status (70) over every axis. A bus without groups sweeps all its axes fast and has no context. Read only:
no torque switch, no EEPROM write, no REBOOT.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from servotool.devices.dynamixel.client import AxisTelemetry, DxlBus
from servotool.devices.dynamixel.control_table import describe_operating_mode
from servotool.recorder import AxisKey, AxisSample, Sweep


def _sample(telemetry: AxisTelemetry) -> AxisSample | None:
    if not telemetry.answered:
        return None
    return AxisSample(
        position=telemetry.position,
        target=telemetry.position_trajectory,
        current=telemetry.current_ma,
        velocity=telemetry.velocity_rpm,
        voltage=telemetry.voltage_v,
        temperature=telemetry.temperature_c,
    )


class DynamixelSource:
    """A Dynamixel bus (DxlBus: read_telemetry, read_hardware_errors, groups) as a telemetry source."""

    status_every_frame = False

    sweep_rate_hz: float | None = None  # one sweep a frame

    def __init__(self, bus: DxlBus, context_groups: tuple[str, ...] = ("neck",)) -> None:
        self.bus = bus
        self.url: str = bus.url
        self.simulated: bool = bool(bus.simulated)
        self.model: str = bus.model
        groups: Mapping[str, tuple[int, ...]] = bus.groups
        self.fast_ids = tuple(i for g, ids in groups.items() if g not in context_groups for i in ids)
        self.context_ids = tuple(i for g, ids in groups.items() if g in context_groups for i in ids)
        self.context_group = context_groups[0] if context_groups else "context"
        self.operating_modes = self._read_modes()

    def _read_modes(self) -> dict[str, str | None]:
        """Each axis's Operating Mode by name, read once (read only) when the source opens; None where the
        servo did not answer. A wheel (velocity mode) turns by design: its captures must say so."""
        modes = self.bus.read_operating_modes(self.fast_ids + self.context_ids)
        return {str(sid): None if m is None else describe_operating_mode(m) for sid, m in modes.items()}

    def describe(self) -> dict[str, Any]:
        return {
            "url": self.url,
            "model": self.model,
            "simulated": self.simulated,
            "family": "dynamixel",
            "axes": list(self.fast_ids + self.context_ids),
            "fast_axes": list(self.fast_ids),
            "context_axes": list(self.context_ids),
            "units": {
                "position": "pulse (4096 a turn)",
                "target": "pulse (Position Trajectory)",
                "gap": "pulse",
                "current": "mA",
                "velocity": "rpm",
                "voltage": "V",
                "temperature": "deg C",
            },
            "status_word": "Hardware Error Status (70): bit 0 voltage, 2 overheating, 3 encoder, "
            "4 electrical shock, 5 overload",
            "operating_modes": self.operating_modes,
        }

    def _sweep(self, ids: tuple[int, ...], group: str) -> Sweep | None:
        if not ids:
            return None
        frame = self.bus.read_telemetry(ids)
        axes: dict[AxisKey, AxisSample | None] = {sid: _sample(a) for sid, a in frame.axes.items()}
        return Sweep(frame.t, group, axes)

    def read_fast(self) -> Sweep | None:
        return self._sweep(self.fast_ids, "legs")

    def read_context(self) -> Sweep | None:
        return self._sweep(self.context_ids, self.context_group)

    def read_status(self) -> Mapping[AxisKey, int | None]:
        return {sid: bits for sid, bits in self.bus.read_hardware_errors().status.items()}

    def close(self) -> None:
        self.bus.close()


def telemetry(bus: DxlBus) -> DynamixelSource:
    """The family's `telemetry` hook: an opened bus as the recorder's source."""
    return DynamixelSource(bus)
