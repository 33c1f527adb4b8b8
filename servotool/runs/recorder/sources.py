"""Telemetry sources of the record loop: a device client seen as sweeps and hardware-error answers.

`TelemetrySource` is what runs/recorder/loop.py needs of a device: a fast sweep (the legs of a servo bus,
the joints of an arm), an optional context sweep (the neck), and one status read across every axis. A
source reads only: nothing here commands motion, switches torque, writes EEPROM or sends REBOOT.

`FairinoSource` turns a FAIRINO arm's state stream into sweeps of its six joints (measured q, the setpoint
the controller took, their gap) and reports the controller's fault latch (main_code, sub_code) as the status
word of one pseudo-axis, "controller", on every frame.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

from servotool.devices.arm import StateFrame
from servotool.devices.url import asks_simulated_time
from servotool.errors import DeviceError, Refused
from servotool.recorder import AxisKey, AxisSample, Sweep

CONTROLLER = "controller"


class StatusUnsupported(DeviceError):
    """The device cannot report hardware errors: recording is disabled for this connection."""


class TelemetrySource(Protocol):
    """A device read by the record loop (see the module docstring)."""

    url: str
    simulated: bool
    model: str
    status_every_frame: bool  # the status rides with every frame (no separate poll)

    def describe(self) -> dict[str, Any]:
        """Device facts for the capture header: url, model, simulated, axes, units."""
        ...

    def read_fast(self) -> Sweep | None:
        """The fast sweep of this frame, None when nothing new was read."""
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


def fault_word(main_code: int, sub_code: int) -> int:
    """A FAIRINO fault latch as one status word: main_code in the high 16 bits, sub_code in the low."""
    return (int(main_code) << 16) | (int(sub_code) & 0xFFFF)


class FairinoSource:
    """A FAIRINO arm (devices.fairino.client.FairinoArm or anything with poll_states) as a telemetry source.

    Every state frame received since the last read is scanned for the fault latch, so a latch that lasts a
    single state period is still reported; the fast sweep is the newest frame.
    """

    status_every_frame = True

    def __init__(self, arm: Any) -> None:
        self.arm = arm
        self.url: str = arm.url
        self.simulated: bool = bool(arm.simulated)
        self.model: str = arm.model
        self._word = 0
        self._pending_fault: int | None = None

    def describe(self) -> dict[str, Any]:
        return {
            "url": self.url, "model": self.model, "simulated": self.simulated, "family": "fairino",
            "axes": [f"j{j + 1}" for j in range(int(self.arm.n_joints))],
            "status_axes": [CONTROLLER],
            "units": {"position": "deg", "target": "deg (the setpoint the controller took)", "gap": "deg",
                      "velocity": "deg/s"},
            "status_word": "main_code << 16 | sub_code",
        }

    def _sweep(self, frame: StateFrame) -> Sweep:
        setpoint = frame.setpoint
        axes: dict[AxisKey, AxisSample | None] = {
            f"j{j + 1}": AxisSample(position=q, target=None if setpoint is None else setpoint[j])
            for j, q in enumerate(frame.q)
        }
        return Sweep(frame.t, "arm", axes, {"main_code": frame.main_code, "sub_code": frame.sub_code})

    def read_fast(self) -> Sweep | None:
        frames = self.arm.poll_states()
        if not frames:
            return None
        for frame in frames:
            word = fault_word(frame.main_code, frame.sub_code)
            if word and self._pending_fault is None:
                self._pending_fault = word
            self._word = word
        return self._sweep(frames[-1])

    def read_context(self) -> Sweep | None:
        return None

    def read_status(self) -> Mapping[AxisKey, int | None]:
        # a latch seen in any frame of the batch is reported first; its clearing comes with the next read
        word = self._pending_fault if self._pending_fault is not None else self._word
        self._pending_fault = None
        return {CONTROLLER: word}

    def close(self) -> None:
        self.arm.close()


def _sample(telemetry: Any) -> AxisSample | None:
    if not telemetry.answered:
        return None
    return AxisSample(
        position=telemetry.position, target=telemetry.position_trajectory, current=telemetry.current_ma,
        velocity=telemetry.velocity_rpm, voltage=telemetry.voltage_v, temperature=telemetry.temperature_c,
    )


class DynamixelSource:
    """A Dynamixel bus (devices.dynamixel DxlBus: read_telemetry, read_hardware_errors, groups) as a source.

    Fast sweep: one sync read of the telemetry span (126-146) over every group but the context groups (the
    legs); context sweep: the same over the context groups (the neck); status: one sync read of Hardware
    Error Status (70) over every axis. A bus without groups sweeps all its axes fast and has no context.
    """

    status_every_frame = False

    def __init__(self, bus: Any, context_groups: tuple[str, ...] = ("neck",)) -> None:
        self.bus = bus
        self.url: str = bus.url
        self.simulated: bool = bool(bus.simulated)
        self.model: str = bus.model
        groups: Mapping[str, tuple[int, ...]] = getattr(bus, "groups", {"all": tuple(bus.ids)})
        self.fast_ids = tuple(i for g, ids in groups.items() if g not in context_groups for i in ids)
        self.context_ids = tuple(i for g, ids in groups.items() if g in context_groups for i in ids)
        self.context_group = context_groups[0] if context_groups else "context"
        self.operating_modes = self._read_modes()

    def _read_modes(self) -> dict[str, str | None]:
        """Each axis's Operating Mode by name, read once (read only) when the source opens; None where the
        servo did not answer. A wheel (velocity mode) turns by design: its captures must say so."""
        reader = getattr(self.bus, "read_operating_modes", None)
        if reader is None:
            return {}
        from servotool.devices.dynamixel.control_table import describe_operating_mode

        modes = reader(self.fast_ids + self.context_ids)
        return {str(sid): None if m is None else describe_operating_mode(m) for sid, m in modes.items()}

    def describe(self) -> dict[str, Any]:
        return {
            "url": self.url, "model": self.model, "simulated": self.simulated, "family": "dynamixel",
            "axes": list(self.fast_ids + self.context_ids), "fast_axes": list(self.fast_ids),
            "context_axes": list(self.context_ids),
            "units": {"position": "pulse (4096 a turn)", "target": "pulse (Position Trajectory)",
                      "gap": "pulse", "current": "mA", "velocity": "rpm", "voltage": "V",
                      "temperature": "deg C"},
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
        reader = getattr(self.bus, "read_hardware_errors", None)
        if reader is None:
            raise StatusUnsupported(f"{self.url}: this bus cannot read Hardware Error Status")
        return dict(reader().status)

    def close(self) -> None:
        self.bus.close()


def open_source(url: str, kind: str, clock: Any) -> TelemetrySource:
    """Open `url` as a bus ("bus": a Dynamixel bus) or an arm ("arm": a FAIRINO controller) for recording.

    A bus that cannot sweep telemetry (not a Dynamixel bus) is closed again and refused (Refused, exit 2):
    the recorder needs the telemetry span and Hardware Error Status; so is an arm or a bus in simulated
    time (clock=sim). DeviceURLError for a bad URL;
    DeviceError when the device cannot be reached.
    """
    from servotool.devices.registry import open_arm, open_bus

    # refused before anything opens: the recorder watches in real time
    if asks_simulated_time(url):
        raise Refused("the recorder watches in real time; a simulator in simulated time (clock=sim) only "
                      "moves under a run")
    if kind == "arm":
        return FairinoSource(open_arm(url, now=clock.now))
    bus = open_bus(url, clock=clock)
    if not hasattr(bus, "read_telemetry"):
        bus.close()
        raise Refused("the recorder needs a Dynamixel bus (dxl://PORT or sim:microduck) "
                      "or a FAIRINO arm (--robot)")
    return DynamixelSource(bus)
