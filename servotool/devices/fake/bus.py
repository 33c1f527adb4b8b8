"""An in-process servo bus: the `Bus` protocol with no board behind it, exact on a FakeClock.

Servos 1..N, each at START_POSITION when opened, torque on. A move takes each servo from where it is now to
its target in a straight line over the move's duration; a hold (or a torque change) stops it where it is.
Positions are read on the bus's clock (a FakeClock with `?clock=sim`: lock-step, no wall-clock wait), rounded
to whole units.

It checks what it is sent as a real bus does (known servo ids, whole positions within position_range,
durations within 0-65535 ms: ValueError, never clamped), and keeps a real bus's failure modes at hand:

* a silent servo (`silent`, `?silent=2,3`): never answers (reads None) and does not move;
* a lost link: `lose(reason)`, or `lose_after` (`?lose_after=N`: once N commands are taken): every later
  command raises ConnectionLost and every read answers None (the last known positions stay in
  `last_position`).

Nothing here can write what a servo keeps (limits, ids, offsets): there is no such call.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from servotool.clock import Clock, MonotonicClock
from servotool.devices.fake.params import POSITION_RANGE, START_POSITION, BusParams
from servotool.errors import ConnectionLost, DeviceError

VOLTAGE_MV = 12000
TEMPERATURE_C = 30
MAX_DURATION_MS = 65535


@dataclass
class _Motion:
    """One servo's straight-line motion: from p0 at t0 to p1 at t1 (p0 == p1: at rest)."""

    t0: float
    p0: float
    t1: float
    p1: float
    torque: bool = True

    def at(self, t: float) -> float:
        if t >= self.t1 or self.t1 <= self.t0:
            return self.p1
        if t <= self.t0:
            return self.p0
        return self.p0 + (self.p1 - self.p0) * (t - self.t0) / (self.t1 - self.t0)

    def rest(self, t: float) -> None:
        p = self.at(t)
        self.t0 = self.t1 = t
        self.p0 = self.p1 = p


class FakeBus:
    """A bus of position servos computed in-process; see the module docstring."""

    def __init__(
        self,
        clock: Clock | None = None,
        *,
        url: str = "sim:fake-bus",
        servos: int = 4,
        silent: Iterable[int] = (),
        lose_after: int | None = None,
    ) -> None:
        self.clock: Clock = clock if clock is not None else MonotonicClock()
        self._url = url
        self._ids = tuple(range(1, int(servos) + 1))
        self.silent = set(silent)
        self.lose_after = lose_after
        self.commands = 0  # commands taken
        self.lost: str | None = None
        self.last_position: dict[int, int] = {}
        self._closed = False
        now = self.clock.now()
        start = float(START_POSITION)
        self._servos = {sid: _Motion(now, start, now, start) for sid in self._ids}
        self._lose_when_due()

    # -- identity --------------------------------------------------------------------------------------------

    @property
    def url(self) -> str:
        return self._url

    @property
    def simulated(self) -> bool:
        return True

    @property
    def model(self) -> str:
        return "fake-bus"

    @property
    def ids(self) -> tuple[int, ...]:
        return self._ids

    @property
    def optional_ids(self) -> tuple[int, ...]:
        return ()

    @property
    def position_range(self) -> tuple[int, int]:
        return POSITION_RANGE

    # -- failures --------------------------------------------------------------------------------------------

    def lose(self, reason: str = "link lost (simulated)") -> None:
        """Fault injection: the link goes down; every later command raises ConnectionLost(reason)."""
        if self.lost is None:
            self.lost = f"{self._url}: {reason}"

    def _command(self) -> float:
        """Count one command; the clock reading it is taken at. DeviceError on a closed bus, ConnectionLost
        once the link is lost."""
        if self._closed:
            raise DeviceError(f"{self._url}: bus is closed")
        if self.lost is not None:
            raise ConnectionLost(self.lost)
        self.commands += 1
        self._lose_when_due()  # this command is taken; the link is down for the next call
        return self.clock.now()

    def _lose_when_due(self) -> None:
        if self.lose_after is not None and self.commands >= self.lose_after:
            self.lose(f"link lost after {self.lose_after} commands (simulated)")

    def _known(self, ids: Iterable[int]) -> list[int]:
        out = [int(sid) for sid in ids]
        stray = [sid for sid in out if sid not in self._servos]
        if stray:
            raise ValueError(
                f"no servo {', '.join(map(str, stray))} on {self._url} (servos "
                f"{self._ids[0]}-{self._ids[-1]})"
            )
        return out

    # -- commands --------------------------------------------------------------------------------------------

    def move(self, targets: Mapping[int, int], duration_ms: int) -> None:
        """Every servo of `targets` to its position within duration_ms (a silent one does not move).
        ValueError, before anything moves, for an unknown id, a position that is not a whole number within
        position_range, or a duration outside 0-65535 ms."""
        if not targets:
            raise ValueError("move with no targets")
        self._known(targets)
        lo, hi = POSITION_RANGE
        for sid, pos in targets.items():
            if isinstance(pos, bool) or not isinstance(pos, int) or not lo <= pos <= hi:
                raise ValueError(f"servo {sid} position {pos!r} outside {lo}-{hi} (whole units)")
        if (
            isinstance(duration_ms, bool)
            or not isinstance(duration_ms, int)
            or not 0 <= duration_ms <= MAX_DURATION_MS
        ):
            raise ValueError(f"move duration {duration_ms!r} ms outside 0-{MAX_DURATION_MS}")
        now = self._command()
        for sid, pos in targets.items():
            if sid in self.silent:
                continue
            m = self._servos[sid]
            p = m.at(now)
            m.t0, m.p0, m.t1, m.p1, m.torque = now, p, now + duration_ms / 1000.0, float(pos), True

    def hold(self, ids: Iterable[int] | None = None) -> None:
        """Stop the servos where they are (all by default); they keep (or get) torque on."""
        chosen = self._known(self._ids if ids is None else ids)
        now = self._command()
        for sid in chosen:
            if sid not in self.silent:
                self._servos[sid].rest(now)
                self._servos[sid].torque = True

    def torque_on(self, servo_id: int) -> None:
        self._torque(servo_id, True)

    def torque_off(self, servo_id: int) -> None:
        self._torque(servo_id, False)

    def _torque(self, servo_id: int, on: bool) -> None:
        (sid,) = self._known([servo_id])
        now = self._command()
        if sid not in self.silent:
            self._servos[sid].rest(now)  # no load on a fake joint: it stays where it is either way
            self._servos[sid].torque = on

    # -- reads -----------------------------------------------------------------------------------------------

    def _answers(self, servo_id: int) -> bool:
        if self._closed:
            raise DeviceError(f"{self._url}: bus is closed")
        return self.lost is None and servo_id in self._servos and servo_id not in self.silent

    def read_position(self, servo_id: int) -> int | None:
        if not self._answers(servo_id):
            return None
        pos = int(math.floor(self._servos[servo_id].at(self.clock.now()) + 0.5))
        self.last_position[servo_id] = pos
        return pos

    def read_voltage(self, servo_id: int) -> int | None:
        return VOLTAGE_MV if self._answers(servo_id) else None

    def read_temperature(self, servo_id: int) -> int | None:
        return TEMPERATURE_C if self._answers(servo_id) else None

    def read_torque(self, servo_id: int) -> bool | None:
        return self._servos[servo_id].torque if self._answers(servo_id) else None

    def read_stored_limits(self, servo_id: int) -> tuple[int, int] | None:
        return POSITION_RANGE if self._answers(servo_id) else None

    def read_pose(self, ids: Iterable[int] | None = None) -> dict[int, int | None]:
        return {sid: self.read_position(sid) for sid in (self._ids if ids is None else ids)}

    def sync(self, timeout_s: float = 2.0) -> None:
        """Nothing to wait for: the fake takes every command as it is made."""

    def close(self) -> None:
        self._closed = True

    def __enter__(self) -> FakeBus:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def open_fake_bus(url: str, params: BusParams, clock: Clock | None, **kwargs: object) -> FakeBus:
    """The fake bus of a parsed URL, on `clock` (a FakeClock: lock-step; None: the host's time). The serial
    keywords a caller may pass (timeout_s, retries, probe) mean nothing here and are taken as given."""
    stray = sorted(set(kwargs) - {"timeout_s", "retries", "probe"})
    if stray:
        raise TypeError(f"unexpected keyword(s) for the fake bus: {', '.join(stray)}")
    return FakeBus(clock, url=url, servos=params.servos, silent=params.silent, lose_after=params.lose_after)


__all__ = ["FakeBus", "open_fake_bus"]
