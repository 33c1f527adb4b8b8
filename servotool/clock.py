"""Clocks: one host monotonic time base for runs and simulators, and a fake one for tests.

Every timestamp of a run comes from one Clock. `MonotonicClock.sleep_until` sleeps to shortly before the
deadline and spins the rest, so a periodic loop written as `deadline = start + k * period` keeps its phase:
errors never accumulate into drift the way `sleep(period)` in a loop does.

`FakeClock` only moves when slept on or advanced, so tests never wait on the wall clock. It serves both as the
fake run clock and as the lock-step time base of a simulator: before time moves on it calls its barrier (for
example a client's `sync`, which waits until the simulated device has taken every frame written so far), then
every `on_advance` listener, so each command is applied at the simulated time it was sent. A simulator that
must act at instants of its own (a state frame every 8 ms) names them with `wake_at`: an advance then stops
at each such instant on its way, so whatever happens there is stamped with that instant, not the end of the
sleep.

The bottom of the package: devices, runs and the recorder all import it; it imports nothing of servotool.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Protocol, runtime_checkable


@runtime_checkable
class Clock(Protocol):
    """What a run, a recorder or a simulator needs of time (seconds, monotonic, arbitrary origin)."""

    def now(self) -> float:
        """Seconds on a monotonic time base (arbitrary origin)."""
        ...

    def sleep_until(self, deadline: float) -> float:
        """Return once now() >= deadline (immediately if it already is); returns now()."""
        ...

    def sleep(self, seconds: float) -> float:
        """Wait the given duration (non-positive: no wait); returns now()."""
        ...


class MonotonicClock:
    """time.perf_counter based clock that waits on absolute deadlines.

    spin_s: how long before a deadline the coarse sleep ends and busy-waiting takes over (default 1 ms,
    above the usual Linux timer slack); set 0 to never spin (lower CPU, larger jitter).
    """

    def __init__(self, spin_s: float = 0.001) -> None:
        self.spin_s = max(0.0, float(spin_s))

    def now(self) -> float:
        return time.perf_counter()

    def sleep_until(self, deadline: float) -> float:
        now = time.perf_counter()
        coarse = deadline - now - self.spin_s
        if coarse > 0:
            time.sleep(coarse)
        now = time.perf_counter()
        while now < deadline:
            now = time.perf_counter()
        return now

    def sleep(self, seconds: float) -> float:
        return self.sleep_until(time.perf_counter() + seconds)


class FakeClock:
    """A clock that only moves when told to: sleeping advances it instantly, so tests never wait.

    Guarantees: now() never decreases; a non-positive advance changes nothing and calls nobody. An advance
    moves in steps: to each wake-up instant (see `wake_at`) strictly inside it, then to its end; at each step
    the barrier (if attached) runs first, then every `on_advance(t)` listener with the new time.
    """

    def __init__(self, start: float = 0.0) -> None:
        self._t = float(start)
        self._listeners: list[Callable[[float], object]] = []
        self._barrier: Callable[[], object] | None = None
        self._wakers: list[Callable[[], float | None]] = []

    def now(self) -> float:
        return self._t

    def attach(self, barrier: Callable[[], object]) -> None:
        """Run `barrier()` before time moves on (a lock-step simulator waits for its device here)."""
        self._barrier = barrier

    def on_advance(self, callback: Callable[[float], object]) -> None:
        self._listeners.append(callback)

    def wake_at(self, next_wake: Callable[[], float | None]) -> None:
        """Stop every advance at the instant `next_wake()` names (None: none), asked afresh at each step."""
        self._wakers.append(next_wake)

    def _next_step(self, end: float) -> float:
        step = end
        for waker in list(self._wakers):
            at = waker()
            if at is not None and self._t < at < step:
                step = at
        return step

    def advance(self, seconds: float) -> float:
        if seconds <= 0:
            return self._t
        end = self._t + seconds
        while True:
            step = self._next_step(end)
            if self._barrier is not None:
                self._barrier()
            self._t = step
            for cb in list(self._listeners):
                cb(self._t)
            if step >= end:
                return self._t

    def sleep_until(self, deadline: float) -> float:
        return self.advance(deadline - self._t)

    def sleep(self, seconds: float) -> float:
        return self.advance(seconds)


class DeviceTime:
    """A FakeClock moved by a device's own time (a lock-step simulator that says how far its time went).

    `follow(device_t)` advances the clock to the device's time (its first reading is mapped to the clock's
    reading then), so that a run's timeline is the device's. The clock never goes back: when it was slept
    past the device's time (a wait while the device sent nothing), the later readings are shifted on by
    that much.
    """

    def __init__(self, clock: FakeClock) -> None:
        self.clock = clock
        self._offset: float | None = None

    def follow(self, device_t: float) -> float:
        """Advance the clock to `device_t` on its time base; returns its reading."""
        now = self.clock.now()
        if self._offset is None:
            self._offset = now - device_t
        t = device_t + self._offset
        if t < now:
            self._offset += now - t
            return now
        return self.clock.advance(t - now)
