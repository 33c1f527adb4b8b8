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


def run_frames(
    rec: FlightRecorder,
    clock: FakeClock,
    seconds: float,
    status: Script = healthy,
    leg_sweep_every: int = 1,
    published: list | None = None,
) -> list:
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


class ScriptedSource:
    """A 14-axis bus whose telemetry and hardware-error answers follow a script of time (a FakeClock).

    overload: axis -> time its current starts rising (2.5 s ramp), latching Overload at the end;
    latched_at_start: axes latched before the connection; silent: axes that never answer.
    """

    status_every_frame = False

    sweep_rate_hz: float | None = None  # one sweep a frame
    url = "scripted:microduck"
    simulated = True
    model = "scripted"

    def __init__(
        self,
        clock: FakeClock,
        overload: dict[int, float] | None = None,
        latched_at_start: tuple[int, ...] = (),
        silent: tuple[int, ...] = (),
        lose_at: float | None = None,
    ) -> None:
        self.clock = clock
        self.overload = overload or {}
        self.latched_at_start = latched_at_start
        self.silent = silent
        self.lose_at = lose_at
        self.closed = False
        self.status_reads = 0

    def describe(self) -> dict:
        return {"url": self.url, "model": self.model, "simulated": True, "units": {"current": "mA"}}

    def _current(self, axis: int, t: float) -> float:
        start = self.overload.get(axis)
        if start is None or t < start:
            return 100.0
        return 100.0 + 1200.0 * min(1.0, (t - start) / 2.5)

    def _check(self) -> float:
        t = self.clock.now()
        if self.lose_at is not None and t >= self.lose_at:
            from servotool.errors import ConnectionLost

            raise ConnectionLost("scripted bus went away")
        return t

    def read_fast(self) -> Sweep:
        t = self._check()
        axes = {
            a: None if a in self.silent else AxisSample(2048.0, 2050.0, self._current(a, t), 0.0, 5.0, 31.0)
            for a in LEGS
        }
        return Sweep(t, "legs", axes)

    def read_context(self) -> Sweep:
        return neck_sweep(self._check())

    def bits(self, axis: int, t: float) -> int | None:
        if axis in self.silent:
            return None
        if axis in self.latched_at_start:
            return 0x20
        start = self.overload.get(axis)
        return 0x20 if start is not None and t >= start + 2.5 else 0

    def read_status(self) -> dict[int, int | None]:
        t = self._check()
        self.status_reads += 1
        return {a: self.bits(a, t) for a in AXES}

    def close(self) -> None:
        self.closed = True
