"""Fixtures and streaming/measuring functions shared by the FAIRINO tests (they come through `fx`).

`open_sim(url, lockstep=True)` opens the embedded simulator in lock-step on a FakeClock of its own (the arm's
`clock`): the streaming functions below then sleep on that clock, so what a test measures is simulated time
and does not depend on the load on the machine. Without lockstep they run in real time."""

from __future__ import annotations

import bisect
import time
import types
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import pytest

from servotool.clock import Clock, FakeClock, MonotonicClock
from servotool.devices.arm import Reply, StateFrame
from servotool.devices.registry import open_arm

PERIOD = 0.01
# a loaded test host can starve a simulator's state stream past the client's 100 ms link-loss rule; tests give
# the watchdog slack unless they set silence_ms themselves (test_fairino_client asserts the rule itself)
SLACK = "silence_ms=2000"


@dataclass
class Record:
    """What a streaming loop sent and saw: send times (s), setpoints, replies and state frames."""

    sent_t: list[float] = field(default_factory=list)
    sent_q: list[tuple[float, ...]] = field(default_factory=list)
    replies: list[Reply] = field(default_factory=list)
    states: list[StateFrame] = field(default_factory=list)

    def codes(self) -> list[int]:
        return [r.errcode for r in self.replies]

    def late_ticks(self, period: float = PERIOD) -> int:
        """Sends that went out more than half a period after their deadline (a starved host)."""
        if not self.sent_t:
            return 0
        t0 = self.sent_t[0]
        return sum(1 for k, t in enumerate(self.sent_t) if t - (t0 + k * period) > period / 2)


def _clock(arm) -> Clock | None:
    return getattr(arm, "clock", None)


def stream(
    arm,
    setpoints: Sequence[Sequence[float]],
    period: float = PERIOD,
    rec: Record | None = None,
    clock: Clock | None = None,
) -> Record:
    """Send each setpoint on an absolute deadline (sleep, then spin the last ms, like runs/ does), stamping
    each send before it goes out; collects replies (returned or asynchronous) and state frames. The clock is
    the arm's own in lock-step, else the host's."""
    rec = rec or Record()
    clock = clock or _clock(arm) or MonotonicClock()
    start = clock.now()
    for k, q in enumerate(setpoints):
        clock.sleep_until(start + k * period)
        rec.sent_t.append(clock.now())
        rec.sent_q.append(tuple(q))
        reply = arm.servo_j(q, period)
        if reply is not None:
            rec.replies.append(reply)
        rec.replies.extend(arm.replies())
        rec.states.extend(arm.poll_states())
    return rec


def collect(arm, seconds: float, rec: Record) -> Record:
    """Keep polling (without sending) for a while (on the arm's clock in lock-step)."""
    clock = _clock(arm) or MonotonicClock(spin_s=0.0)
    end = clock.now() + seconds
    while clock.now() < end:
        clock.sleep(0.005)
        rec.replies.extend(arm.replies())
        rec.states.extend(arm.poll_states())
    rec.replies.extend(arm.replies())
    rec.states.extend(arm.poll_states())
    return rec


def hold(q: Sequence[float], n: int) -> list[tuple[float, ...]]:
    return [tuple(q)] * n


def trapezoid(
    q0: Sequence[float],
    joint: int,
    speed: float,
    cruise_s: float,
    ramp_s: float = 0.2,
    period: float = PERIOD,
) -> list[tuple[float, ...]]:
    """Setpoints of a velocity trapezoid on one joint: speed rises linearly over ramp_s (v/20 per tick at
    10 ms and 200 ms), cruises, falls. Never a velocity discontinuity."""
    n_ramp = round(ramp_s / period)
    n_cruise = round(cruise_s / period)
    vels = [speed * (k + 1) / n_ramp for k in range(n_ramp)] + [speed] * n_cruise
    vels += [speed * (n_ramp - 1 - k) / n_ramp for k in range(n_ramp)]
    out, x = [], float(q0[joint])
    for v in vels:
        x += v * period
        q = list(q0)
        q[joint] = x
        out.append(tuple(q))
    return out


def measured_lag(rec: Record, joint: int, lo: float, hi: float) -> list[float]:
    """For every state frame whose joint value lies in (lo, hi) on a monotonic rising ramp: its receive time
    minus the time the commanded stream passed that value (linear between sends)."""
    xs = [q[joint] for q in rec.sent_q]
    ts = rec.sent_t
    lags = []
    for f in rec.states:
        m = f.q[joint]
        if not lo < m < hi:
            continue
        i = bisect.bisect_left(xs, m)
        if i == 0 or i >= len(xs) or xs[i] == xs[i - 1]:
            continue
        a = (m - xs[i - 1]) / (xs[i] - xs[i - 1])
        lags.append(f.t - (ts[i - 1] + a * (ts[i] - ts[i - 1])))
    return lags


def wait_until(
    cond: Callable[[], bool], timeout: float, step: float = 0.002, clock: Clock | None = None
) -> bool:
    """Poll `cond` every `step` until it holds (True) or `timeout` passed (False), on `clock` (a lock-step
    arm's, so time moves while waiting) or on the host's."""
    clock = clock or MonotonicClock(spin_s=0.0)
    end = clock.now() + timeout
    while clock.now() < end:
        if cond():
            return True
        clock.sleep(step)
    return cond()


@pytest.fixture
def fx():
    """The functions above, as one namespace."""
    return types.SimpleNamespace(
        PERIOD=PERIOD,
        Record=Record,
        stream=stream,
        collect=collect,
        hold=hold,
        trapezoid=trapezoid,
        measured_lag=measured_lag,
        wait_until=wait_until,
    )


@pytest.fixture
def open_sim():
    """Open sim: URLs with the real client; everything opened is closed after. In real time it stamps on
    perf_counter, with the link watchdog's slack; with lockstep=True on a FakeClock of its own (arm.clock),
    where the 100 ms rule holds as it is (simulated time)."""
    arms = []

    def _open(url: str, lockstep: bool = False, **kwargs):
        if lockstep:
            arm = open_arm(url, clock=FakeClock(), **kwargs)
            arms.append(arm)
            return arm
        if "silence_ms" not in url:
            url += ("&" if "?" in url else "?") + SLACK
        arm = open_arm(url, now=time.perf_counter, **kwargs)
        arms.append(arm)
        return arm

    yield _open
    for arm in arms:
        arm.close()
