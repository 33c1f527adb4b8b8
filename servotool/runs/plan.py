"""What a run that moves a device would do, known from its settings alone, before anything opens.

A command prints it under --dry-run (and then opens nothing), and prints its estimated duration before a
long run starts. Runs never print: the plan is data, and its `lines` are the text a command shows.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any


def duration_text(seconds: float) -> str:
    """A duration as people read it: 850 ms, 12.3 s, 4 min 55 s, 1 h 02 min."""
    if seconds < 1.0:
        return f"{seconds * 1e3:.0f} ms"
    if seconds < 60.0:
        return f"{seconds:.1f} s"
    whole = round(seconds)
    if whole < 3600:
        return f"{whole // 60} min {whole % 60:02d} s"
    return f"{whole // 3600} h {whole % 3600 // 60:02d} min"


@dataclass(frozen=True)
class MotionPlan:
    """A run's plan: what moves (joints), how far (motion), how fast (speeds) and for how long.

    duration_s is the estimate of the motion itself; `at_most` says it is an upper bound (a sweep that
    stops at a stall, a move whose start is read only once the bus opens); `extra` names what it leaves
    out (a warm-up before the stream)."""

    what: str
    joints: str
    motion: str
    speeds: str
    duration_s: float
    at_most: bool = False
    extra: str = ""

    def estimate(self) -> str:
        """'estimated 7.8 s (plus the warm-up)' or 'estimated at most 8 min 20 s'."""
        if self.duration_s <= 0:
            return "estimated: at once (nothing is streamed)"
        bound = "at most " if self.at_most else ""
        extra = f" ({self.extra})" if self.extra else ""
        return f"estimated {bound}{duration_text(self.duration_s)}{extra}"

    def lines(self) -> list[str]:
        """The plan as short lines, one fact each (joints, motion, speeds, duration)."""
        return [
            f"plan: {self.what}",
            f"  joints: {self.joints}",
            f"  motion: {self.motion}",
            f"  speeds: {self.speeds}",
            f"  duration: {self.estimate()}",
        ]

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "duration_s": round(self.duration_s, 3)}
