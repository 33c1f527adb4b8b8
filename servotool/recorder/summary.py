"""Reading a capture back: per-axis time series and a summary of each axis around the trigger. Pure.

Windows (seconds from the first detection, t = 0): the lead-up is every fast sample before the last clean
answer (`last_clean_t`, or 1 s before detection when unknown); the incident is from there to the end of the
tail. For each field (current, gap, temperature) the summary gives the lead-up's median, the incident's
extreme (largest magnitude) and its change; a clue for where to look, not a diagnosis.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from servotool.recorder.frames import AXIS_FIELDS

FIELDS = ("current", "gap", "temperature")
UNKNOWN_CLEAN_S = -1.0


@dataclass
class FieldSummary:
    """One field of one axis: lead-up median, incident extreme (by magnitude), extreme - median."""

    before: float | None
    extreme: float | None

    @property
    def change(self) -> float | None:
        if self.before is None or self.extreme is None:
            return None
        return self.extreme - self.before


@dataclass
class AxisSummary:
    axis: str
    trigger: bool
    bits: int | None
    silent_samples: int
    fields: dict[str, FieldSummary] = field(default_factory=dict)


def series(
    samples: Sequence[Mapping[str, Any]],
    axis: str,
    name: str,
    ring: str = "fast",
    fields: Sequence[str] = AXIS_FIELDS,
) -> tuple[list[float], list[float]]:
    """(t, value) of one field of one axis, from one ring (context entries: their leg or neck sweep);
    samples where the axis was silent or the field unknown are left out. `fields`: the header's
    axis_fields (the order of an axis's values in a line)."""
    k = list(fields).index(name)
    ts: list[float] = []
    vs: list[float] = []
    for s in samples:
        if s.get("ring") != ring:
            continue
        sweeps = [s] if ring == "fast" else [x for x in (s.get("legs"), s.get("neck")) if x]
        for sw in sweeps:
            a = (sw.get("axes") or {}).get(axis)
            value = None if a is None or k >= len(a) else a[k]
            if value is not None and sw.get("t") is not None:
                ts.append(float(sw["t"]))
                vs.append(float(value))
    return ts, vs


def axes_of(samples: Sequence[Mapping[str, Any]]) -> list[str]:
    """Every axis named in the capture's samples, in first-seen order."""
    seen: dict[str, None] = {}
    for s in samples:
        for sw in [s] if s.get("ring") == "fast" else [s.get("legs"), s.get("neck")]:
            for axis in (sw or {}).get("axes") or {}:
                seen.setdefault(str(axis), None)
    return list(seen)


def split_time(header: Mapping[str, Any]) -> float:
    """Where the lead-up ends: the aggregated last clean answer, else 1 s before detection."""
    clean = header.get("last_clean_t")
    return float(clean) if isinstance(clean, (int, float)) and math.isfinite(clean) else UNKNOWN_CLEAN_S


def _field(ts: list[float], vs: list[float], split: float) -> FieldSummary:
    before = [v for t, v in zip(ts, vs, strict=True) if t < split]
    during = [v for t, v in zip(ts, vs, strict=True) if t >= split]
    return FieldSummary(
        statistics.median(before) if before else None, max(during, key=abs) if during else None
    )


def summarize(header: Mapping[str, Any], samples: Sequence[Mapping[str, Any]]) -> list[AxisSummary]:
    """One summary per axis: trigger axes first, then by the largest current change."""
    split = split_time(header)
    fields = header.get("axis_fields") or AXIS_FIELDS
    bits = {str(t["axis"]): t.get("bits") for t in header.get("trigger") or []}
    out = []
    for axis in axes_of(samples):
        silent = sum(
            1
            for s in samples
            if s.get("ring") == "fast" and axis in (s.get("axes") or {}) and s["axes"][axis] is None
        )
        summary = AxisSummary(axis, axis in bits, bits.get(axis), silent)
        for name in FIELDS:
            ts, vs = series(samples, axis, name, fields=fields)
            if not vs:
                ts, vs = series(samples, axis, name, ring="context", fields=fields)
            summary.fields[name] = _field(ts, vs, split)
        out.append(summary)

    def rank(s: AxisSummary) -> tuple[bool, float, float]:
        # trigger axes first, then the largest current change (an arm without currents: the largest gap)
        cur, gap = s.fields["current"].change, s.fields["gap"].change
        return (not s.trigger, -abs(cur) if cur is not None else 0.0, -abs(gap) if gap is not None else 0.0)

    return sorted(out, key=rank)


def value(header: Mapping[str, Any], sweep: Mapping[str, Any], axis: str, name: str) -> float | None:
    """One field of one axis in one sweep line (None: silent axis or unknown field)."""
    a = (sweep.get("axes") or {}).get(axis)
    k = list(header.get("axis_fields") or AXIS_FIELDS).index(name)
    return None if a is None or k >= len(a) else a[k]
