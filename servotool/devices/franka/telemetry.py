"""A Franka arm as the flight recorder's telemetry source (recorder.source.TelemetrySource).

The robot sends its state every millisecond. `FrankaSource` reads every one of them (read_once, in a thread
of its own: the record loop runs at ~30 Hz) and hands them to the loop in batches, one sweep per cycle: the
seven joints (q, the echoed command q_d, dq, tau_J) and the cycle's robot time, robot_mode, success rate and
error flags by name. Its status is three pseudo-axes: `current_errors` and `last_motion_errors` (bit n: flag
n of codes.ERROR_NAMES) and `robot_mode` (1 while it is Reflex), so a new flag or a reflex opens a capture.

Read only: nothing here starts a motion, sends a command or asks for an error recovery.
"""

from __future__ import annotations

import contextlib
import sys
import threading
from collections import deque
from collections.abc import Mapping, Sequence
from typing import Any

from servotool.devices.arm import StateFrame
from servotool.devices.franka import codes
from servotool.errors import DeviceError
from servotool.recorder import AxisKey, AxisSample, Sweep

CURRENT_ERRORS = "current_errors"
LAST_MOTION_ERRORS = "last_motion_errors"
ROBOT_MODE = "robot_mode"
STATUS_AXES = (CURRENT_ERRORS, LAST_MOTION_ERRORS, ROBOT_MODE)
CYCLE_HZ = 1000.0
# cycles held for the loop between two frames: a loop stalled this long (a capture being written) loses
# the oldest first, and the count says so
PENDING_MAX = 5000
# the interpreter's thread switch interval while recording: the reader must get the lock back within a
# cycle when the loop thread computes (writing a capture), or the robot's states in between are lost
SWITCH_INTERVAL_S = 0.0002
JOIN_TIMEOUT_S = 2.0


def error_word(names: Sequence[str]) -> int:
    """Error flags as one status word: bit n set for flag n of codes.ERROR_NAMES."""
    word = 0
    for name in names:
        word |= 1 << codes.ERROR_INDEX[name]
    return word


def word_names(word: int) -> tuple[str, ...]:
    """The flag names of a status word (the inverse of error_word)."""
    return tuple(name for n, name in enumerate(codes.ERROR_NAMES) if word >> n & 1)


def _names(extra: Mapping[str, float | str], key: str) -> list[str]:
    return str(extra.get(key, "")).split()


def status_of(frame: StateFrame) -> dict[AxisKey, int]:
    """The status words of one state frame."""
    extra = frame.extra or {}
    return {
        CURRENT_ERRORS: error_word(_names(extra, CURRENT_ERRORS)),
        LAST_MOTION_ERRORS: error_word(_names(extra, LAST_MOTION_ERRORS)),
        ROBOT_MODE: int(extra.get(ROBOT_MODE) == "Reflex"),
    }


def sweep_of(frame: StateFrame) -> Sweep:
    """One cycle as a sweep: the joints in degrees (tau_J in Nm in the current slot), the cycle's state."""
    extra = frame.extra or {}
    n = len(frame.q)
    axes: dict[AxisKey, AxisSample | None] = {
        f"j{j + 1}": AxisSample(
            position=frame.q[j],
            target=None if frame.setpoint is None else frame.setpoint[j],
            current=_float(extra.get(f"tau_J{j + 1}")),
            velocity=None if frame.qd is None else frame.qd[j],
        )
        for j in range(n)
    }
    state = {
        "time_s": frame.device_time_s,
        ROBOT_MODE: extra.get(ROBOT_MODE),
        "control_command_success_rate": frame.success_rate,
        CURRENT_ERRORS: _names(extra, CURRENT_ERRORS),
        LAST_MOTION_ERRORS: _names(extra, LAST_MOTION_ERRORS),
    }
    return Sweep(frame.t, "arm", axes, state=state)


def _float(value: Any) -> float | None:
    return None if value is None else float(value)


class FrankaSource:
    """A Franka arm (devices.franka.client.FrankaArm, or anything with poll_states and close) read every
    cycle by a thread of its own; see the module's docstring. A flag that is set and cleared between two
    frames is still reported: each status read answers the first non-zero word since the last one."""

    status_every_frame = True
    sweep_rate_hz: float | None = CYCLE_HZ

    def __init__(self, arm: Any) -> None:
        self.arm = arm
        self.url: str = arm.url
        self.simulated: bool = bool(arm.simulated)
        self.model: str = arm.model
        self.n_joints = int(arm.n_joints)
        self.dropped = 0  # cycles lost because the loop did not take them in time
        self._pending: deque[Sweep] = deque()
        self._words: dict[AxisKey, int] = dict.fromkeys(STATUS_AXES, 0)
        self._first: dict[AxisKey, int] = {}
        self._error: str | None = None
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._closed = False
        self._switch = sys.getswitchinterval()
        sys.setswitchinterval(min(self._switch, SWITCH_INTERVAL_S))
        self._thread = threading.Thread(target=self._read_forever, name="franka-telemetry", daemon=True)
        self._thread.start()

    def describe(self) -> dict[str, Any]:
        return {
            "url": self.url,
            "model": self.model,
            "simulated": self.simulated,
            "family": "franka",
            "axes": [f"j{j + 1}" for j in range(self.n_joints)],
            "status_axes": list(STATUS_AXES),
            "cycle_hz": CYCLE_HZ,
            "units": {
                "position": "deg (q)",
                "target": "deg (q_d, the command the robot echoes)",
                "gap": "deg",
                "current": "Nm (tau_J, the measured joint torque)",
                "velocity": "deg/s (dq)",
                "time_s": "s (the robot's own clock)",
            },
            "status_word": "current_errors, last_motion_errors: bit n is flag n of libfranka's errors; "
            "robot_mode: 1 while Reflex",
            "status_bits": {
                CURRENT_ERRORS: list(codes.ERROR_NAMES),
                LAST_MOTION_ERRORS: list(codes.ERROR_NAMES),
                ROBOT_MODE: ["Reflex"],
            },
        }

    def _read_forever(self) -> None:
        while not self._stop.is_set():
            try:
                frames = self.arm.poll_states()
            except Exception as exc:  # the link is gone: the loop reports it from its next read
                self._error = str(exc) or type(exc).__name__
                return
            if not frames:  # a closed arm reads nothing: no busy loop while the source closes
                self._stop.wait(1.0 / CYCLE_HZ)
                continue
            with self._lock:
                for frame in frames:
                    self._take(frame)

    def _take(self, frame: StateFrame) -> None:
        if len(self._pending) >= PENDING_MAX:
            self._pending.popleft()
            self.dropped += 1
        self._pending.append(sweep_of(frame))
        for axis, word in status_of(frame).items():
            if word and axis not in self._first:
                self._first[axis] = word
            self._words[axis] = word

    def read_fast(self) -> list[Sweep]:
        with self._lock:
            out = list(self._pending)
            self._pending.clear()
        if not out and self._error is not None:
            raise DeviceError(f"{self.url}: {self._error}")
        return out

    def read_context(self) -> Sweep | None:
        return None

    def read_status(self) -> Mapping[AxisKey, int | None]:
        with self._lock:
            answers = {axis: self._first.get(axis, word) for axis, word in self._words.items()}
            self._first.clear()
        return answers

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self._stop.set()
        self._thread.join(JOIN_TIMEOUT_S)
        with contextlib.suppress(Exception):
            self.arm.close()
        sys.setswitchinterval(self._switch)


def telemetry(arm: Any) -> FrankaSource:
    """The family's `telemetry` hook: an opened arm as the recorder's source."""
    return FrankaSource(arm)
