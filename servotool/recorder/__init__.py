"""The servo flight recorder core: bounded telemetry rings, hardware-error latch tracking, capture assembly.

Pure: fed telemetry frames and the time, it returns what to publish; files are written by io/, devices are
read by runs/. `FlightRecorder` is the facade a control loop embeds.
"""

from servotool.recorder.capture import Capture, ContextEntry
from servotool.recorder.core import FlightRecorder
from servotool.recorder.frames import AxisKey, AxisSample, FramePlan, RecorderEvent, Sweep
from servotool.recorder.settings import RecorderSettings

__all__ = [
    "AxisKey",
    "AxisSample",
    "Capture",
    "ContextEntry",
    "FlightRecorder",
    "FramePlan",
    "RecorderEvent",
    "RecorderSettings",
    "Sweep",
]
