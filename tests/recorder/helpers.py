"""Scripted telemetry for the recorder core: a loop at 30 Hz on a FakeClock, status answers from a script."""

from __future__ import annotations

from collections.abc import Callable, Mapping

from servotool.clock import FakeClock
from servotool.recorder import AxisSample, FlightRecorder, Sweep

LEGS = (10, 11, 12, 13, 14, 20, 21, 22, 23, 24)
NECK = (30, 31, 32, 33)
AXES = LEGS + NECK
PERIOD = 1 / 30


def leg_sweep(t: float, current: float = 100.0) -> Sweep:
    return Sweep(t, "legs", {a: AxisSample(2048.0, 2050.0, current, 0.0, 5.0, 31.0) for a in LEGS})


def neck_sweep(t: float) -> Sweep:
    return Sweep(t, "neck", {a: AxisSample(2048.0, 2048.0, 20.0, 0.0, 5.0, 30.0) for a in NECK})


Script = Callable[[float], Mapping[int, int | None]]


def healthy(_t: float) -> dict[int, int | None]:
    return {a: 0 for a in AXES}


def run_frames(rec: FlightRecorder, clock: FakeClock, seconds: float, status: Script = healthy,
               leg_sweep_every: int = 1, published: list | None = None) -> list:
    """Drive the recorder frame by frame for `seconds`; return the captures it handed back."""
    out = published if published is not None else []
    n = round(seconds / PERIOD)
    for k in range(n):
        now = clock.now()
        legs = k % leg_sweep_every == 0
        plan = rec.plan(now, leg_sweep=legs)
        if legs:
            rec.on_sweep(leg_sweep(now))
        if plan.context:
            rec.on_sweep(neck_sweep(now))
        if plan.status:
            rec.on_status(now, status(now))
        out.extend(rec.after_goal_write(now))
        clock.advance(PERIOD)
    return out
