"""Which axes of a recorded device answer: a device where no axis answers for LOST_AFTER_S is lost (the
recording ends `connection-lost`, exit 3), and an axis that stops answering for LOST_FRAMES frames or more,
or answers again after it, is said in a warning. An axis answers a frame when its sweep or its status
read has a value for it."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from servotool.errors import ConnectionLost
from servotool.recorder import AxisKey

LOST_AFTER_S = 1.0  # no axis answering for this long: the device is lost
LOST_FRAMES = 3  # frames in a row an axis may miss before its silence is news (one lost answer is not)


class DeviceSilent(ConnectionLost):
    """No axis of the recorded device has answered for LOST_AFTER_S (exit 3)."""


def _named(axes: Iterable[AxisKey]) -> str:
    return ", ".join(map(str, axes))


def _axes(axes: list[AxisKey], one: str, many: str) -> str:
    """ "axis 22 <one>" or "axes 10, 11 <many>"."""
    return f"axis {axes[0]} {one}" if len(axes) == 1 else f"axes {_named(axes)} {many}"


@dataclass
class Silence:
    """What each axis answered so far (times on the loop's clock)."""

    t0: float
    misses: dict[AxisKey, int] = field(default_factory=dict)
    since: dict[AxisKey, float] = field(default_factory=dict)  # first missed frame of a silence
    told: set[AxisKey] = field(default_factory=set)  # silences already in a warning
    answered: set[AxisKey] = field(default_factory=set)  # every axis that answered once
    last_answer: float | None = None  # any axis
    axes: dict[AxisKey, None] = field(default_factory=dict)  # every axis read so far, in order

    def frame(self, now: float, answers: Mapping[AxisKey, bool]) -> list[str]:
        """Book one frame's answers ({axis: answered}); the warnings it brings (one line for the axes that
        went silent together, one for those that answered again). DeviceSilent when no axis has answered
        for LOST_AFTER_S (and LOST_FRAMES frames)."""
        back = {axis: now - self.since[axis] for axis, ok in answers.items() if ok and axis in self.told}
        quiet: list[AxisKey] = []
        for axis, ok in answers.items():
            self.axes.setdefault(axis, None)
            if ok:
                self.answered.add(axis)
                self.misses[axis] = 0
                self.since.pop(axis, None)
                self.told.discard(axis)
                continue
            self.misses[axis] = self.misses.get(axis, 0) + 1
            self.since.setdefault(axis, now)
            if self.misses[axis] >= LOST_FRAMES and axis not in self.told:
                self.told.add(axis)
                quiet.append(axis)
        if any(answers.values()):
            self.last_answer = now
        quiet_since = self.t0 if self.last_answer is None else self.last_answer
        frames = min(self.misses.get(axis, 0) for axis in answers) if answers else 0
        if answers and now - quiet_since >= LOST_AFTER_S and frames >= LOST_FRAMES:
            raise DeviceSilent(self._lost_text(now))
        return self._quiet_text(quiet) + [
            _axes(axes, "answered", "answered") + f" again after {gap:.2f} s without an answer"
            for gap, axes in _by_value(back).items()
        ]

    def _quiet_text(self, quiet: list[AxisKey]) -> list[str]:
        out = []
        fresh = [axis for axis in quiet if axis not in self.answered]
        if fresh:
            out.append(_axes(fresh, "has", "have") + " not answered since the recording started")
        for t, axes in _by_value({a: self.since[a] - self.t0 for a in quiet if a in self.answered}).items():
            out.append(_axes(axes, "stopped", "stopped") + f" answering {t:.2f} s into the recording")
        return out

    def _lost_text(self, now: float) -> str:
        axes = _named(self.axes)
        if self.last_answer is None:
            return (
                f"no axis answered in {now - self.t0:.2f} s (axes {axes} not answering): the device is "
                "lost (check its power, cable and ids)"
            )
        return (
            f"no axis answered for {now - self.last_answer:.2f} s, from {self.last_answer - self.t0:.2f} s "
            f"into the recording (axes {axes} not answering): the device is lost"
        )


def _by_value(values: Mapping[AxisKey, float]) -> dict[float, list[AxisKey]]:
    """Axes grouped by their value rounded to 10 ms (the axes of one silence in one line)."""
    out: dict[float, list[AxisKey]] = {}
    for axis, v in values.items():
        out.setdefault(round(v, 2), []).append(axis)
    return out
