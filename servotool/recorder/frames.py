"""What the recorder is fed: sweeps of telemetry (one group of axes read together) and status answers.

Units are the device's own (the capture header names them): on a servo bus positions are pulses,
currents mA, voltages V, temperatures deg C; on an arm positions are degrees and its controller's error
codes may ride in `Sweep.codes`. Times are seconds on the host monotonic clock of the loop that feeds
the recorder.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

AxisKey = int | str  # a servo id on a bus; a name ("controller") for a whole-arm fault word
# the order of an axis's values in a capture line (the header repeats it as "axis_fields")
AXIS_FIELDS = ("position", "target", "gap", "current", "velocity", "voltage", "temperature")


@dataclass(frozen=True, slots=True)
class AxisSample:
    """One axis as read in one sweep; None where the device does not report that field."""

    position: float | None = None
    target: float | None = None  # where the axis is told to be (profile or setpoint), same unit as position
    current: float | None = None
    velocity: float | None = None
    voltage: float | None = None
    temperature: float | None = None

    @property
    def gap(self) -> float | None:
        """target - position: how far the axis trails what it is told (None when either is unknown)."""
        if self.position is None or self.target is None:
            return None
        return self.target - self.position

    def as_row(self) -> list[float | None]:
        """The values in AXIS_FIELDS order (a compact capture line: names once, in the header)."""
        return [
            self.position,
            self.target,
            self.gap,
            self.current,
            self.velocity,
            self.voltage,
            self.temperature,
        ]


@dataclass(frozen=True, slots=True)
class Sweep:
    """One read of a group of axes, stamped when it was received. An axis that did not answer maps to None.

    codes: device-wide values read with the sweep (an arm controller's fault codes), else None.
    state: device-wide state of that cycle in the device's own names and units (the robot's clock, its
    mode, its error flags by name), JSON values; None when the device reports none.
    """

    t: float
    group: str
    axes: Mapping[AxisKey, AxisSample | None]
    codes: Mapping[str, int] | None = None
    state: Mapping[str, Any] | None = None

    def as_json(self, t_ref: float) -> dict[str, Any]:
        out: dict[str, Any] = {
            "t": round(self.t - t_ref, 6),
            "group": self.group,
            "axes": {str(k): (None if s is None else s.as_row()) for k, s in self.axes.items()},
        }
        if self.codes is not None:
            out["codes"] = dict(self.codes)
        if self.state is not None:
            out["state"] = dict(self.state)
        return out


@dataclass(frozen=True)
class FramePlan:
    """What the host should read this frame, besides its own leg sweep.

    status: read the hardware-error status of every axis (then call `on_status`).
    context: read the slow groups (the neck) for the context ring (then `on_sweep`); optional.
    """

    status: bool = False
    context: bool = False


@dataclass(frozen=True)
class RecorderEvent:
    """Something the recorder noticed, for the log and the live view (t: monotonic s)."""

    t: float
    kind: str  # baseline-latch, still-latched, latch, join, more-bits, recovered, capture-open,
    # capture-ready, capture-limit, disabled
    axis: AxisKey | None
    bits: int
    text: str

    def as_json(self, t_ref: float) -> dict[str, Any]:
        return {
            "t": round(self.t - t_ref, 6),
            "kind": self.kind,
            "axis": self.axis,
            "bits": self.bits,
            "text": self.text,
        }
