"""The recorder's settings, validated before any device opens.

Defaults are the budget of the flight-recorder design: a fast ring of 240 leg sweeps (about 8 s at a nominal
30 Hz), a context ring of 36 entries on its own 1 s timer (30 before a trigger, up to 4 in the tail, the
trigger entry and a spare), a hardware-error status poll about once a second that waits at most two frames
for a frame without a leg sweep, a 2 s tail after detection that joining axes can extend to 4 s at most.
Both rings are bounded by count, not time: a slower loop covers more seconds with fewer details.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Any

from servotool.errors import SettingsError


@dataclass(frozen=True)
class RecorderSettings:
    """fast_len / context_len: ring sizes (entries); context_period_s: the context timer;
    status_period_s: the status poll interval (0: the status arrives with every frame, no deferral);
    max_defer_frames: frames a due poll may wait for a frame without a leg sweep; tail_s: what is kept after
    a detection; max_tail_s: how far joining axes may extend it (from the first detection);
    max_captures: captures per connection (a brownout that latches again and again stalls the loop only
    this many times); context_groups: sweep groups kept only as the pending context entry (the neck);
    enabled: False switches recording off (the recorder then asks for nothing and keeps nothing)."""

    fast_len: int = 240
    context_len: int = 36
    context_period_s: float = 1.0
    status_period_s: float = 1.0
    max_defer_frames: int = 2
    tail_s: float = 2.0
    max_tail_s: float = 4.0
    max_captures: int = 5
    context_groups: tuple[str, ...] = ("neck",)
    nominal_rate_hz: float = 30.0
    event_log_len: int = 256
    enabled: bool = True
    extra: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for name in ("fast_len", "context_len", "max_captures", "event_log_len"):
            if int(getattr(self, name)) < 1:
                raise SettingsError(f"recorder {name} must be at least 1, not {getattr(self, name)}")
        if self.max_defer_frames < 0:
            raise SettingsError("recorder max_defer_frames must be >= 0")
        for name in ("context_period_s", "tail_s", "nominal_rate_hz"):
            value = float(getattr(self, name))
            if not (math.isfinite(value) and value > 0):
                raise SettingsError(f"recorder {name} must be a finite number > 0, not {value}")
        if not (math.isfinite(self.status_period_s) and self.status_period_s >= 0):
            raise SettingsError("recorder status_period_s must be a finite number >= 0")
        if not (math.isfinite(self.max_tail_s) and self.max_tail_s >= self.tail_s):
            raise SettingsError(f"recorder max_tail_s ({self.max_tail_s}) must be >= tail_s ({self.tail_s})")

    @property
    def fast_span_s(self) -> float:
        """Seconds the fast ring covers when full at the nominal rate."""
        return self.fast_len / self.nominal_rate_hz

    @property
    def context_span_s(self) -> float:
        """Seconds the context ring covers when full at its nominal period."""
        return self.context_len * self.context_period_s

    def worst_detection_delay_s(self) -> float:
        """Nominal poll-to-detection bound: one poll interval, one frame to notice, the deferred frames."""
        return self.status_period_s + (1 + self.max_defer_frames) / self.nominal_rate_hz

    def as_json(self) -> dict[str, Any]:
        out = asdict(self)
        out["context_groups"] = list(self.context_groups)
        return out
