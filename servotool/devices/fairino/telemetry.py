"""A FAIRINO arm as the flight recorder's telemetry source (recorder.source.TelemetrySource).

`FairinoSource` turns the arm's state stream into sweeps of its six joints (measured q, the setpoint the
controller took, their gap) and reports the controller's fault latch (main_code, sub_code) as the status
word of one pseudo-axis, "controller", on every frame. Read only.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from servotool.devices.arm import StateFrame
from servotool.recorder import AxisKey, AxisSample, Sweep

CONTROLLER = "controller"


def fault_word(main_code: int, sub_code: int) -> int:
    """A FAIRINO fault latch as one status word: main_code in the high 16 bits, sub_code in the low."""
    return (int(main_code) << 16) | (int(sub_code) & 0xFFFF)


class FairinoSource:
    """A FAIRINO arm (devices.fairino.client.FairinoArm or anything with poll_states) as a telemetry source.

    Every state frame received since the last read is scanned for the fault latch, so a latch that lasts a
    single state period is still reported; the fast sweep is the newest frame.
    """

    status_every_frame = True

    sweep_rate_hz: float | None = None  # one sweep a frame

    def __init__(self, arm: Any) -> None:
        self.arm = arm
        self.url: str = arm.url
        self.simulated: bool = bool(arm.simulated)
        self.model: str = arm.model
        self._word = 0
        self._pending_fault: int | None = None

    def describe(self) -> dict[str, Any]:
        return {
            "url": self.url,
            "model": self.model,
            "simulated": self.simulated,
            "family": "fairino",
            "axes": [f"j{j + 1}" for j in range(int(self.arm.n_joints))],
            "status_axes": [CONTROLLER],
            "units": {
                "position": "deg",
                "target": "deg (the setpoint the controller took)",
                "gap": "deg",
                "velocity": "deg/s",
            },
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


def telemetry(arm: Any) -> FairinoSource:
    """The family's `telemetry` hook: an opened arm as the recorder's source."""
    return FairinoSource(arm)
