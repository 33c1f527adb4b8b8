"""Before and after a stream: bring the arm to a held, executing stream; end the servo mode afterwards.

These are the `open/prepare` and `finish` stages of the run skeleton (runs/arm/run.py); the streaming loop
itself is runs/arm/stream.py.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from servotool.clock import Clock
from servotool.devices.arm import Arm, DeviceError, StateFrame, WarmsUp, command_names, state_period_of
from servotool.errors import ConnectionLost, Refused
from servotool.readings import sig
from servotool.runs.readable import device_readable


class RunRefused(Refused, ValueError):
    """A run that would be unsafe or cannot be done as asked; nothing was moved. The message says why."""


@dataclass
class Prepared:
    """The arm is enabled, in servo mode and executing a stream that holds `pose` (deg)."""

    pose: np.ndarray
    warm_up_s: float
    state_period_s: float = math.nan  # the state period measured while preparing (see state_period)
    notes: list[str] = field(default_factory=list)


def wait_for_state(
    arm: Arm, clock: Clock, timeout_s: float = 2.0, seen: list[list[float]] | None = None
) -> StateFrame:
    """The newest state frame whose pose the arm can report (servotool.readings: a frame past it is a bad
    frame, never a start pose, a warm-up target or a preflight's), waiting up to timeout_s for one;
    DeviceError when none comes. The receive times of the frames each poll read are appended to `seen`, one
    list per poll."""
    readable = device_readable(arm.url)
    deadline = clock.now() + timeout_s
    bad: StateFrame | None = None
    while True:
        frames = arm.poll_states()
        if seen is not None:
            seen.append([f.t for f in frames])
        st = arm.latest_state()
        if st is not None and readable.first_bad(list(st.q)[: arm.n_joints]) is None:
            return st
        bad = st if st is not None else bad
        if clock.now() >= deadline:
            if bad is not None:
                j = readable.first_bad(list(bad.q)[: arm.n_joints]) or 0
                raise DeviceError(
                    f"no state frame from {arm.url} within {timeout_s:g} s with a pose it can report "
                    f"(q{j + 1} = {sig(bad.q[j])})"
                )
            raise DeviceError(f"no state frame from {arm.url} within {timeout_s:g} s")
        clock.sleep(0.005)


def prepare(arm: Arm, clock: Clock, period_s: float, warmup_timeout_s: float = 10.0) -> Prepared:
    """Enable, enter servo mode and warm up: stream the measured pose until the controller executes it.

    A run must start only once the controller executes what it is sent: a stream that starts inside the
    enable window (commands answered 101, dropped) leaves a gap between the setpoints and the arm that the
    controller then closes in one jump. A fault still latched from an earlier run is reset first (and said).
    Raises DeviceError when the controller does not take the stream within warmup_timeout_s.
    """
    notes: list[str] = []
    seen: list[list[float]] = []  # the frames' receive times, per poll: the state period is measured on them
    names = command_names(arm)
    st = wait_for_state(arm, clock, seen=seen)
    if st.fault is not None:
        code = arm.reset_faults()
        notes.append(
            f"reset a fault latched before the run ({st.fault.name}), {names.reset_faults} answered {code}"
        )
    arm.enable()
    code = arm.servo_start()
    if code not in (0, None):
        notes.append(f"{names.servo_start} answered {code}")
    pose = np.asarray(wait_for_state(arm, clock, seen=seen).q, dtype=float)[: arm.n_joints]
    t0 = clock.now()
    if not isinstance(arm, WarmsUp):
        raise DeviceError(f"{arm.url}: this backend has no warm-up, so a run cannot be started safely")
    arm.warm_up([float(x) for x in pose], period_s, warmup_timeout_s)
    seen.append([f.t for f in arm.poll_states()])
    period = state_period(seen, state_period_of(arm))
    return Prepared(pose=pose, warm_up_s=clock.now() - t0, state_period_s=period, notes=notes)


def state_period(polls: list[list[float]], nominal: float | None = None) -> float:
    """The state period (s): the median interval between consecutive frames of one poll (an interval across
    two polls may hold a gap), over the newest 200 intervals; else `nominal` (the period the client asked
    for), else NaN. A slow stream leaves a short warm-up too few frames of its own: the enable window's
    count too."""
    diffs = [b - a for times in polls for a, b in zip(times, times[1:], strict=False)][-200:]
    if len(diffs) >= 2:
        return float(np.median(diffs))
    if nominal is not None and 0 < nominal < math.inf:
        return float(nominal)
    return math.nan


@dataclass
class Ending:
    """How ending the servo mode (and disabling, unless keep) went: `confirmed` when every call was
    answered 0 (or the backend answers nothing); `unconfirmed` names each call that was not, one item each;
    `notes` as finish() returns them; `lost`: the lost link a call reported (its message), else None;
    `servo_unconfirmed` / `disable_unconfirmed`: which of the two calls was not confirmed."""

    notes: list[str] = field(default_factory=list)
    unconfirmed: list[str] = field(default_factory=list)
    lost: str | None = None
    servo_unconfirmed: bool = False
    disable_unconfirmed: bool = False

    @property
    def confirmed(self) -> bool:
        return not self.unconfirmed


def end_servo(arm: Arm, keep: bool) -> Ending:
    """End servo mode and, unless keep, disable the robot: each call tried once, whatever the one before
    raised (a lost link, or an answer the client cannot read). Never raises."""
    out = Ending()
    names = command_names(arm)

    def failed(what: str, exc: Exception) -> None:
        out.notes.append(f"{what} failed: {_failure(exc)}")
        out.unconfirmed.append(_failure(exc).removeprefix(f"{arm.url}: "))
        if isinstance(exc, ConnectionLost) and out.lost is None:
            out.lost = str(exc)

    try:
        code = arm.servo_end()
        if code not in (0, None):
            out.notes.append(f"{names.servo_end} answered {code}")
            out.unconfirmed.append(f"{names.servo_end} answered {code}")
            out.servo_unconfirmed = True
    except Exception as exc:  # the last way out: nothing may skip the disable below
        failed(names.servo_end, exc)
        out.servo_unconfirmed = True
    if not keep:
        try:
            code = arm.disable()
            if code not in (0, None):
                out.unconfirmed.append(f"{names.disable} answered {code}")
                out.disable_unconfirmed = True
        except Exception as exc:  # a cleanup reports, never raises
            failed("disable", exc)
            out.disable_unconfirmed = True
    return out


def finish(arm: Arm, keep: bool) -> list[str]:
    """End servo mode and, unless keep, disable the robot. Never raises: returns what went wrong. The
    disable is tried whatever ending servo mode raised (a lost link, or an answer the client cannot read)."""
    return end_servo(arm, keep).notes


def _failure(exc: Exception) -> str:
    """A device error as its message; anything else with its type, as it is no device's own word."""
    return str(exc) if isinstance(exc, (DeviceError, OSError)) else f"{type(exc).__name__}: {exc}"
