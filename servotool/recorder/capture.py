"""Capture assembly: an open incident window, and the finished capture (a header and its sample lines).

Pure data: io/captures.py writes a `Capture` as JSONL, one header line then one line per sample. All sample
times are offsets in seconds from the first detection on the host monotonic clock (`t_ref_monotonic` in the
header); the wall clock only names the file (`id`, `wall_time`).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

from servotool import full_version
from servotool.recorder.frames import AXIS_FIELDS, AxisKey, RecorderEvent, Sweep
from servotool.recorder.settings import RecorderSettings

FORMAT_NAME = "servotool-capture"
FORMAT_VERSION = 1


@dataclass(frozen=True)
class ContextEntry:
    """One context-ring entry: the newest leg sweep, the pending neck sweep and the known latches at t."""

    t: float
    legs: Sweep | None
    neck: Sweep | None
    latches: Mapping[AxisKey, int]
    trigger: bool = False

    def as_json(self, t_ref: float) -> dict[str, Any]:
        return {
            "ring": "context",
            "t": round(self.t - t_ref, 6),
            "trigger": self.trigger,
            "latches": {str(k): v for k, v in self.latches.items()},
            "legs": None if self.legs is None else self.legs.as_json(t_ref),
            "neck": None if self.neck is None else self.neck.as_json(t_ref),
        }


@dataclass
class TriggerAxis:
    """One axis of a capture: its latch bits, its last zero answer (None: none this connection) and when
    the host saw the latch."""

    axis: AxisKey
    bits: int
    last_clean_t: float | None
    detected_t: float


@dataclass
class OpenCapture:
    """An incident window: opened at the first detection, closed once `window_end` has passed."""

    detected_t: float
    wall_time: float
    window_end: float
    axes: list[TriggerAxis] = field(default_factory=list)

    def join(self, axis: TriggerAxis, settings: RecorderSettings) -> None:
        """Add an axis detected while the window is open; the tail grows to cover it, up to max_tail_s."""
        self.axes.append(axis)
        self.window_end = min(
            max(self.window_end, axis.detected_t + settings.tail_s), self.detected_t + settings.max_tail_s
        )


@dataclass(frozen=True)
class Capture:
    """A finished capture: `header` (JSON object) and `samples` (JSON objects, oldest first per ring)."""

    header: dict[str, Any]
    samples: list[dict[str, Any]]

    @property
    def name(self) -> str:
        """The published file name (a wall-clock id, then the trigger axes)."""
        return f"{self.header['id']}.jsonl"


ID_PREFIX = "capture_"


def wall_id(wall_time: float, axes: Iterable[AxisKey]) -> str:
    """A sortable id from the wall clock (UTC, ms) and the trigger axes, safe in a file name."""
    stamp = datetime.fromtimestamp(wall_time, timezone.utc).strftime("%Y%m%dT%H%M%S.%f")[:-3]
    names = "-".join(str(a) for a in axes)
    return f"{ID_PREFIX}{stamp}Z_axis-{names}"


def capture_stamp(capture_id: str) -> str:
    """The UTC time part of a capture id (`20261201T032748.564Z`): what a list shows in place of the whole
    id, whose axes it shows in a column of their own. An id of another form comes back whole."""
    if not capture_id.startswith(ID_PREFIX):
        return capture_id
    return capture_id[len(ID_PREFIX) :].split("_", 1)[0]


def _off(t: float | None, ref: float) -> float | None:
    return None if t is None else round(t - ref, 6)


def _aggregate_clean(axes: list[TriggerAxis]) -> float | None:
    # the earliest clean time of the trigger axes: [last_clean_t, last detection] then brackets every
    # axis's latch instant; unknown for one axis makes the aggregate unknown
    cleans = [a.last_clean_t for a in axes]
    if any(c is None for c in cleans):
        return None
    return min(c for c in cleans if c is not None)


def silent_axes(sweeps: Iterable[Sweep], ref: float) -> dict[str, dict[str, Any]]:
    """The axes that did not answer in some of `sweeps` (those read with them, each group on its own):
    axis -> {sweeps: how many it was silent in, of: how many it was read in, last_answer_t: its newest
    answer (s from ref; None: none in these sweeps)}. An axis that always answered is not in it."""
    silent: dict[AxisKey, int] = {}
    read: dict[AxisKey, int] = {}
    answered: dict[AxisKey, float] = {}
    for sweep in sweeps:
        for axis, sample in sweep.axes.items():
            read[axis] = read.get(axis, 0) + 1
            if sample is None:
                silent[axis] = silent.get(axis, 0) + 1
            else:
                answered[axis] = max(answered.get(axis, -math.inf), sweep.t)
    return {
        str(axis): {"sweeps": n, "of": read[axis], "last_answer_t": _off(answered.get(axis), ref)}
        for axis, n in silent.items()
    }


def _sweeps_of(fast: Iterable[Sweep], context: Iterable[ContextEntry]) -> list[Sweep]:
    """Every sweep a capture holds, once each (a context entry repeats the newest legs and neck sweeps)."""
    seen: dict[int, Sweep] = {id(s): s for s in fast}
    for entry in context:
        for sweep in (entry.legs, entry.neck):
            if sweep is not None:
                seen.setdefault(id(sweep), sweep)
    return list(seen.values())


def assemble(
    open_cap: OpenCapture,
    fast: Iterable[Sweep],
    context: Iterable[ContextEntry],
    events: Iterable[RecorderEvent],
    *,
    now: float,
    end: str,
    torque_off: bool | None,
    settings: RecorderSettings,
    device: Mapping[str, Any],
) -> Capture:
    """Freeze the rings into a capture. `end` says why it closed ("tail-complete", "disconnect"); the header
    states the tail that was actually observed, never the planned one as if it had been."""
    ref = open_cap.detected_t
    fast, context = list(fast), list(context)
    fast_lines = [{"ring": "fast", **s.as_json(ref)} for s in fast]
    ctx_lines = [c.as_json(ref) for c in context]
    times = [line["t"] for line in fast_lines + ctx_lines]
    first = min(times, default=math.nan)
    last = max(times, default=math.nan)
    fast_first = fast_lines[0]["t"] if fast_lines else None
    header: dict[str, Any] = {
        "format": FORMAT_NAME,
        "version": FORMAT_VERSION,
        "tool": f"servotool {full_version()}",  # which servotool wrote it, to the commit
        "id": wall_id(open_cap.wall_time, [a.axis for a in open_cap.axes]),
        "wall_time": datetime.fromtimestamp(open_cap.wall_time, timezone.utc).isoformat(),
        "t_ref_monotonic": ref,
        "time_base": "t: seconds from the first detection on the host monotonic clock",
        "device": dict(device),
        "axis_fields": list(AXIS_FIELDS),
        "trigger_axes": [a.axis for a in open_cap.axes],
        "trigger": [
            {
                "axis": a.axis,
                "bits": a.bits,
                "last_clean_t": _off(a.last_clean_t, ref),
                "detected_t": _off(a.detected_t, ref),
            }
            for a in open_cap.axes
        ],
        "detected_t": 0.0,
        "last_clean_t": _off(_aggregate_clean(open_cap.axes), ref),
        "tail_planned_s": round(open_cap.window_end - ref, 6),
        "tail_observed_s": None if math.isnan(last) else max(0.0, last),
        "tail_complete": end == "tail-complete",
        "closed_t": round(now - ref, 6),
        "end": end,
        "torque_off": torque_off,
        "lead_up_s": None if fast_first is None else -fast_first,
        "first_t": None if math.isnan(first) else first,
        "counts": {"fast": len(fast_lines), "context": len(ctx_lines)},
        "silent_axes": silent_axes(_sweeps_of(fast, context), ref),
        "events": [e.as_json(ref) for e in events if math.isnan(first) or e.t - ref >= first],
        "settings": settings.as_json(),
    }
    return Capture(header=header, samples=fast_lines + ctx_lines)
