"""Limit mapping by slow sweeps: stall detection, the limit a stop implies, merging found limits. Pure math.

A sweep drives one joint's command away from its start at a constant speed (pulses/s) toward the servo's
stored limit and reads the position back every tick. The joint has hit something when its read-back stops
advancing while the command moves on.

Stall criterion (all pulses and seconds; `dir` is +1 sweeping up, -1 sweeping down):

    lead(t)     = dir * (cmd(t) - read(t))           how far the command is ahead of the joint
    progress(t) = dir * (read(t) - read(t - W))      how far the joint advanced over the last W seconds
    stall(t)   <=> W seconds of history exist  and  lead(t) > K  and  progress(t) < E

    K = lead_min + speed * follow_s                  the normal following lag of a free joint, plus a margin
    E = max(progress_min, progress_frac * speed * W) a fraction of what a free joint advances in W

A free joint follows the command a few pulses behind (its own interpolation and lag: about speed * 0.1 s), so
its lead stays under K and its progress near speed * W; read noise of +-1 pulse moves progress by at most 2. A
stalled joint's lead grows by `speed` every second and its progress drops to the noise. Both conditions are
required, so a slow free joint (little progress, little lead) and a joint still catching up (large lead, good
progress) are not stalls. With the defaults (W 0.5 s, follow 0.15 s, lead_min 6, progress 30 % or 2) a 25
pulses/s sweep is called stalled about 0.5 s after contact, with the command about 12 pulses past the contact
point.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

DIRECTIONS = {"up": 1, "down": -1}

STOP_STALL = "stalled"
STOP_STORED = "reached stored limit"
STOP_ABORT = "aborted by key"
STOP_AT_LIMIT = "started at stored limit"
STOP_SILENT = "servo went silent"

# stops that say where the joint can go, so a limit can be set inside them
LIMIT_REASONS = (STOP_STALL, STOP_STORED, STOP_AT_LIMIT)


def direction_sign(direction: str) -> int:
    try:
        return DIRECTIONS[direction]
    except KeyError:
        raise ValueError(f"direction {direction!r}: want up or down") from None


@dataclass(frozen=True)
class StallCriterion:
    """Parameters of the stall test (see module doc)."""

    window_s: float = 0.5
    follow_s: float = 0.15
    lead_min: float = 6.0
    progress_frac: float = 0.3
    progress_min: float = 2.0

    def lead_threshold(self, speed: float) -> float:
        """K, pulses."""
        return self.lead_min + abs(speed) * self.follow_s

    def progress_threshold(self, speed: float) -> float:
        """E, pulses."""
        return max(self.progress_min, self.progress_frac * abs(speed) * self.window_s)


class StallDetector:
    """Feed it (t, command, read-back) each tick; `update` returns True at the first tick that is a stall."""

    def __init__(self, direction: int, speed: float, criterion: StallCriterion | None = None) -> None:
        if direction not in (1, -1):
            raise ValueError(f"direction must be +1 or -1, got {direction}")
        if speed <= 0:
            raise ValueError(f"speed must be > 0 pulses/s, got {speed}")
        self.direction = direction
        self.criterion = criterion or StallCriterion()
        self.K = self.criterion.lead_threshold(speed)
        self.E = self.criterion.progress_threshold(speed)
        self._hist: deque[tuple[float, float]] = deque()
        self.lead: float | None = None
        self.progress: float | None = None

    def update(self, t: float, cmd: float, read: float) -> bool:
        window = self.criterion.window_s
        self._hist.append((t, read))
        # keep exactly one sample at or before t - W: the reference the progress is measured from
        while len(self._hist) >= 2 and self._hist[1][0] <= t - window:
            self._hist.popleft()
        self.lead = self.direction * (cmd - read)
        t_ref, r_ref = self._hist[0]
        if t_ref > t - window:
            self.progress = None
            return False
        self.progress = self.direction * (read - r_ref)
        return self.lead > self.K and self.progress < self.E


def find_stall(
    t: Sequence[float],
    cmd: Sequence[float],
    read: Sequence[float],
    direction: int,
    speed: float,
    criterion: StallCriterion | None = None,
) -> int | None:
    """Index of the first stalled sample of a recorded sweep, or None (samples with read None are skipped)."""
    det = StallDetector(direction, speed, criterion)
    for i, (ti, ci, ri) in enumerate(zip(t, cmd, read, strict=True)):
        if ri is None:
            continue
        if det.update(float(ti), float(ci), float(ri)):
            return i
    return None


def limit_from_stop(stop: int, direction: int, inside: int) -> int:
    """The limit `inside` pulses back from a stop, on the start side of it."""
    return int(stop) - direction * int(inside)


@dataclass
class SweepResult:
    """One sweep of one joint in one direction: the raw ticks, how it ended, and the limit it implies.

    t (s from run start), cmd (commanded pulse), read (read-back pulse, None when silent) per tick.
    stop: position read back after the hold; limit: stop moved `inside` pulses toward the start (None when the
    sweep ended without a usable stop). bound: the stored limit the command never passes.
    """

    joint: int
    direction: str
    speed: float
    inside: int
    start: int
    bound: int
    stored: tuple[int, int]
    t: list[float] = field(default_factory=list)
    cmd: list[int] = field(default_factory=list)
    read: list[int | None] = field(default_factory=list)
    reason: str = ""
    stop: int | None = None
    stop_t: float | None = None
    limit: int | None = None
    returned_to: int | None = None
    lead_threshold: float | None = None
    progress_threshold: float | None = None
    notes: list[str] = field(default_factory=list)

    @property
    def sign(self) -> int:
        return direction_sign(self.direction)

    @property
    def max_command_past_stop(self) -> int | None:
        """How far the command went beyond the stop (pulses), a measure of how hard the joint was pushed."""
        if self.stop is None or not self.cmd:
            return None
        far = max(self.cmd) if self.sign > 0 else min(self.cmd)
        return self.sign * (far - self.stop)

    def as_dict(self) -> dict:
        return {
            "joint": self.joint,
            "direction": self.direction,
            "speed": self.speed,
            "inside": self.inside,
            "start": self.start,
            "bound": self.bound,
            "stored": list(self.stored),
            "reason": self.reason,
            "stop": self.stop,
            "stop_t": self.stop_t,
            "limit": self.limit,
            "returned_to": self.returned_to,
            "lead_threshold": self.lead_threshold,
            "progress_threshold": self.progress_threshold,
            "notes": list(self.notes),
            "ticks": {"t": list(self.t), "cmd": list(self.cmd), "read": list(self.read)},
        }


@dataclass(frozen=True)
class FoundLimit:
    """A joint's limits after a sweep run, and where each bound came from ("sweep", "file", "stored")."""

    joint: int
    lo: int
    hi: int
    lo_source: str
    hi_source: str
    lo_detail: str = ""
    hi_detail: str = ""


def merge_found(
    results: Sequence[SweepResult],
    existing: Mapping[int, tuple[int, int]],
    stored: Mapping[int, tuple[int, int]],
) -> dict[int, FoundLimit]:
    """Limits per swept joint: each bound from its sweep when the sweep gave one, else the existing configured
    limit, else the stored limit. Raises ValueError when a joint's bounds cross (lo >= hi)."""
    out: dict[int, FoundLimit] = {}
    for joint in dict.fromkeys(r.joint for r in results):
        base = existing.get(joint) or stored.get(joint)
        if base is None:
            raise ValueError(f"joint {joint}: no stored or configured limit to start from")
        src = "file" if joint in existing else "stored"
        lo, hi, lo_src, hi_src, lo_det, hi_det = int(base[0]), int(base[1]), src, src, "", ""
        for r in results:
            if r.joint != joint or r.limit is None or r.reason not in LIMIT_REASONS:
                continue
            detail = f"{r.reason} at {r.stop}, {r.inside} inside"
            if r.sign < 0:
                lo, lo_src, lo_det = r.limit, "sweep", detail
            else:
                hi, hi_src, hi_det = r.limit, "sweep", detail
        if lo >= hi:
            raise ValueError(
                f"joint {joint}: found limits cross ([{lo}, {hi}]): the stops are too close together"
            )
        out[joint] = FoundLimit(joint, lo, hi, lo_src, hi_src, lo_det, hi_det)
    return out
