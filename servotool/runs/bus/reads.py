"""Every position a run reads from a bus, checked against what the bus can report before anything uses it.

A reply can pass its checksum and still carry a value no servo could report (15496 from a servo that reads
0-1000). Such a read is a bad frame: counted, left out, and read again, so that it never becomes a stall, a
limit, a pose check or a move's start. What a read can be is the family's fact (`DeviceFacts.readable`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from servotool.devices.bus import Bus
from servotool.readings import BadFrames, Readable
from servotool.runs.readable import device_readable

# a bad read is read again at most this many times: a servo that answers nothing else is silent to the run
READ_TRIES = 3


def bus_readable(bus: Bus) -> Readable:
    """What a position read of the bus can be: its family's fact, the physical bound when its URL is none
    the registry knows (a test double)."""
    return device_readable(bus.url)


class CheckedReads:
    """Position reads of one run through one check. `position(sid)` is a read the run may use: a value
    the servo can report, or None when it did not answer (or answered only impossible values, READ_TRIES
    times in a row). `bad` counts the bad frames left out and keeps the first few for the verdict;
    `on_bad(sid, value)` is told of each one as it comes (to record it)."""

    def __init__(
        self,
        bus: Bus,
        what: Readable | None = None,
        tries: int = READ_TRIES,
        on_bad: Callable[[int, int], None] | None = None,
    ) -> None:
        self.bus = bus
        self.on_bad = on_bad
        self.readable = bus_readable(bus) if what is None else what
        self.tries = max(1, int(tries))
        self.bad = BadFrames()

    def position(self, sid: int) -> int | None:
        """The servo's position, checked; bad frames are counted and read again."""
        for _ in range(self.tries):
            value = self.bus.read_position(sid)
            if value is None or self.readable.admits(value):
                return value
            self.bad.add(f"servo {sid} position", value)
            if self.on_bad is not None:
                self.on_bad(sid, value)
        return None

    def pose(self, ids: Iterable[int]) -> dict[int, int | None]:
        """Checked positions of the given servos (None: silent)."""
        return {sid: self.position(sid) for sid in ids}


__all__ = ["READ_TRIES", "CheckedReads", "bus_readable"]
