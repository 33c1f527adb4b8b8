"""What a reading from a device can be, and the one check every frame passes before anything uses it.

A device reports positions in a known range: a bus's servos a span of whole units, an arm's joints their
ranges (in degrees) plus what a joint can be pushed past them. A value outside that range is no reading of a
real device (a reply whose checksum happened to match, a decoder fed the wrong bytes): it is a bad frame,
counted and left out of every stall test, limit, guard check and fit. `PHYSICAL_BOUND` holds for every
position whatever the device: beyond it a number is no angle and no servo unit at all.

Pure Python (no numpy): every layer imports it, `servotool --help` included.
"""

from __future__ import annotations

import contextlib
import functools
import json
import math
import numbers
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

# no position a device reports, in degrees or servo units, is this large (1e6 deg is 2,800 turns)
PHYSICAL_BOUND = 1e6
# how far past its soft range an arm's joint may be read (pushed by hand, a stop overshoot), in its units
ARM_MARGIN_DEG = 30.0

Span = tuple[float, float]


def sig(value: object, digits: int = 4) -> str:
    """A number in `digits` significant digits (`1e+300`, `-0.1235`, `412`), never a thousand of them;
    anything that is not a number is shown as it is."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        return str(value)
    try:
        x = float(value)
    except OverflowError:  # an integer beyond any float (its decimal text can be refused too): its size
        n = int(value) if isinstance(value, numbers.Integral) else 0
        return f"~{'-' if n < 0 else ''}1e+{int(abs(n).bit_length() * math.log10(2))}"
    if not math.isfinite(x):
        return str(x)
    if x == int(x) and abs(x) < 1e6:
        return str(int(x))  # a whole servo unit reads as it came (15496, not 1.55e+04)
    return f"{x:.{digits}g}"


def fixed(value: object, places: int = 3, digits: int = 4) -> str:
    """`places` decimals for an ordinary number (`4.000`), `sig` for a huge one (`1e+300`), so that a
    message keeps its usual look and never grows past a few digits."""
    if isinstance(value, numbers.Real) and not isinstance(value, bool):
        with contextlib.suppress(OverflowError):
            x = float(value)
            if math.isfinite(x) and abs(x) < 1e6:
                return f"{x:.{places}f}"
    return sig(value, digits)


@dataclass(frozen=True)
class Readable:
    """The range a reading can be in, in `units`: `spans[i]` (lo, hi) for channel i (an arm's joint), and
    `default` for any channel past them (every servo of a bus); both inside +-PHYSICAL_BOUND. `admits` is
    the check: a finite number inside its channel's range."""

    spans: tuple[Span, ...] = ()
    default: Span = (-PHYSICAL_BOUND, PHYSICAL_BOUND)
    units: str = ""

    def span(self, channel: int = -1) -> Span:
        """The (lo, hi) a reading of `channel` can be in (-1: the default, any servo of a bus)."""
        lo, hi = self.spans[channel] if 0 <= channel < len(self.spans) else self.default
        return max(float(lo), -PHYSICAL_BOUND), min(float(hi), PHYSICAL_BOUND)

    def admits(self, value: object, channel: int = -1) -> bool:
        """True when `value` can be a reading of `channel`: a finite number inside its range."""
        if isinstance(value, bool) or not isinstance(value, numbers.Real):
            return False
        try:
            x = float(value)
        except OverflowError:  # an int beyond any float
            return False
        lo, hi = self.span(channel)
        return math.isfinite(x) and lo <= x <= hi

    @functools.cached_property
    def _bounds(self) -> tuple[Span, ...]:
        return tuple(self.span(i) for i in range(len(self.spans)))

    def first_bad(self, values: Sequence[object]) -> int | None:
        """The channel of the first value no device could report, None when every one can be a reading."""
        bounds = self._bounds
        for i, v in enumerate(values):
            # a float inside its channel's span is a reading (the span is finite: NaN and inf are not); a
            # state frame of a 1 kHz stream is checked so, without admits' general checks
            if type(v) is float and i < len(bounds) and bounds[i][0] <= v <= bounds[i][1]:
                continue
            if not self.admits(v, i):
                return i
        return None


# the recording header key that holds a run's readable spans, per joint ([[lo, hi], ...], in its units)
HEADER_KEY = "readable"


def header_spans(readable: Readable) -> list[list[float]]:
    """The spans as a recording's header holds them (HEADER_KEY)."""
    return [[lo, hi] for lo, hi in (readable.span(i) for i in range(len(readable.spans)))]


def from_header(text: object) -> Readable:
    """The Readable a recording's header states (HEADER_KEY's JSON text); the physical bound alone when
    it states none or something that is no list of finite [lo, hi] pairs (a file from before, a damaged
    one): a reader never refuses a file for it."""
    try:
        value: Any = json.loads(text) if isinstance(text, str) else text
        spans = tuple((float(lo), float(hi)) for lo, hi in value)
    except (TypeError, ValueError, RecursionError):
        return Readable()
    if not all(math.isfinite(lo) and math.isfinite(hi) and lo <= hi for lo, hi in spans):
        return Readable()
    return Readable(spans)


def padded(spans: Sequence[Span], margin: float) -> tuple[Span, ...]:
    """Each span widened by `margin` on both sides (what a device reading can be beyond its soft range)."""
    return tuple((float(lo) - margin, float(hi) + margin) for lo, hi in spans)


@dataclass
class BadFrames:
    """Bad frames met by a run: how many, and the first few, as `what` and the value (for the verdict)."""

    count: int = 0
    examples: list[str] = field(default_factory=list)
    keep: int = 3

    def add(self, what: str, value: object) -> None:
        self.count += 1
        shown = f"{what} = {sig(value)}"
        if len(self.examples) < self.keep and shown not in self.examples:
            self.examples.append(shown)

    def note(self) -> str | None:
        """The verdict's line ("N bad frames left out: ..."), None when there were none."""
        if not self.count:
            return None
        plural = "" if self.count == 1 else "s"
        return f"{self.count} bad frame{plural} left out (impossible readings: {', '.join(self.examples)})"


__all__ = [
    "HEADER_KEY",
    "from_header",
    "header_spans",
    "fixed",
    "ARM_MARGIN_DEG",
    "PHYSICAL_BOUND",
    "BadFrames",
    "Readable",
    "Span",
    "padded",
    "sig",
]
