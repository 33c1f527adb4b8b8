"""Limits per servo and direction from a recorded sweep CSV (the rows `servotool sweep` writes).

Per (joint, direction): the ticks before the stop give the stall (analysis.sweep.find_stall), the `stop` row
the position the joint was held at, and the limit sits `inside` pulses back from it
(analysis.sweep.limit_from_stop). A sweep that ends without a stop row has no limit.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, cast

import numpy as np

from servotool.analysis.recording import RecordingError, Table, label_codes, number_column
from servotool.analysis.sweep import direction_sign, find_stall, limit_from_stop

DEFAULT_INSIDE = 10  # pulses, when the header does not say
# what a position read-back can hold: an int16 on the wire (a sagging servo reads a little below 0, so the
# 0..1000 range of a move is no bound on a read)
READ_RANGE = (-(2**15), 2**15 - 1)
MAX_INSIDE = 200  # pulses: the widest margin a sweep sets (its --inside is checked against 0..MAX_INSIDE)


def config_inside(config: dict[str, Any]) -> int:
    """The margin (pulses) a sweep set its limits inside its stops, from its header config: DEFAULT_INSIDE
    when absent. RecordingError for a value no sweep could have set (not a whole number in 0..MAX_INSIDE):
    a limit beyond the stop, or a billion pulses from it, is no limit the rows hold."""
    value = config.get("inside")
    if value is None:
        return DEFAULT_INSIDE
    if (
        isinstance(value, bool)
        or not isinstance(value, (int, float))
        or value != int(value)
        or not 0 <= value <= MAX_INSIDE
    ):
        raise RecordingError(
            f"config inside {json.dumps(value, default=str)} is not a margin in pulses "
            f"(a whole number in 0..{MAX_INSIDE})"
        )
    return int(value)


@dataclass
class SweepLimit:
    """One joint in one direction: where it stopped and the limit that implies (None when it did not)."""

    joint: int
    direction: str
    ticks: int
    stall_t: float | None
    stop: int | None
    limit: int | None
    verdict: str
    left_out: int = (
        0  # read-backs no servo could report (past the file's readable span): not in the stall test
    )


@dataclass
class SweepFileResult:
    """Every sweep of one file."""

    speed: float
    inside: int
    sweeps: list[SweepLimit] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def rows(self, base: dict[str, Any]) -> list[dict[str, Any]]:
        """Rows of the tidy table (kind "sweep"), each starting from `base` (device, file, ...)."""
        out = []
        for i, s in enumerate(self.sweeps):
            out.append(
                dict(base, joint=s.joint, kind="sweep", index=i, direction=s.direction, speed=self.speed,
                     size=float(s.limit) if s.limit is not None else math.nan, L_ms=math.nan,
                     ci95_low_ms=math.nan, ci95_high_ms=math.nan, tau_ms=math.nan, rejects=0, faults=0,
                     verdict=s.verdict)
            )  # fmt: skip
        return out


def _column(table: Table, name: str) -> np.ndarray:
    """A number column as float64 (NaN where a cell is empty or no number); refused when missing."""
    if name not in table.columns:
        raise RecordingError(f"no '{name}' column")
    return number_column(table, name)


def _labels(table: Table, name: str) -> np.ndarray:
    """A text column as one str per row, "" where empty; refused when missing."""
    if name not in table.columns:
        raise RecordingError(f"no '{name}' column")
    codes, labels = label_codes(table, name)
    return np.array([*labels, ""], dtype=object)[codes]  # code -1 (empty) reads the last: ""


def _one_sweep(
    joint: int,
    direction: str,
    t: np.ndarray,
    ev: np.ndarray,
    cmd: np.ndarray,
    read: np.ndarray,
    cfg: SweepFileResult,
    interrupted: str | None = None,
    readable: tuple[float, float] = READ_RANGE,
) -> SweepLimit:
    sign = direction_sign(direction)
    ticks = ev == "cmd"
    # a state row answers the cmd row before it: pair each command with the next read-back
    ct, cc = t[ticks], cmd[ticks]
    st, rd = t[ev == "state"], read[ev == "state"]
    idx = np.searchsorted(st, ct, side="left")
    r_lo, r_hi = readable
    # a read-back no servo could report (a damaged cell, a crafted file) is left out, as a silent one is
    sane = np.isfinite(rd) & (rd >= r_lo) & (rd <= r_hi)
    left_out = int(np.count_nonzero(np.isfinite(rd) & ~sane))
    paired = [None if i >= len(rd) or not sane[i] else int(rd[i]) for i in idx]
    # find_stall skips ticks whose read-back is None (a silent servo), as the live sweep does
    reads = cast(Sequence[float], paired)
    stall = find_stall(ct.tolist(), cc.tolist(), reads, sign, cfg.speed) if len(ct) else None
    stops = read[(ev == "stop") & np.isfinite(read)]
    stop = int(stops[0]) if len(stops) else None
    lo, hi = max(READ_RANGE[0], r_lo), min(READ_RANGE[1], r_hi)
    odd = stop is not None and not lo <= stop <= hi  # a damaged cell: no servo reads it
    limit = (
        limit_from_stop(stop, sign, cfg.inside)
        if stop is not None and not odd and interrupted is None
        else None
    )
    if odd:
        verdict = f"stop read {float(stops[0]):g} outside what a servo reads ({lo}..{hi}): no limit"
        stop = None
    elif interrupted is not None:
        # a stop the run was interrupted at says where the joint was, not where it can go
        where = "" if stop is None else f" at {stop}"
        verdict = f"interrupted ({interrupted}){where}: sweep did not complete, no limit"
    elif stop is None:
        verdict = "no stop recorded: no limit"
    elif stall is not None:
        verdict = f"stalled at {paired[stall]} (t = {float(ct[stall]):.2f} s), limit {limit}"
    else:
        verdict = f"stopped at {stop}, limit {limit}"
    if left_out:
        verdict += f"; {left_out} impossible read-back(s) left out"
    return SweepLimit(joint, direction, int(ticks.sum()), float(ct[stall]) if stall is not None else None,
                      stop, limit, verdict, left_out)  # fmt: skip


def analyze_sweep_file(
    config: dict[str, Any],
    table: Table,
    interrupted: str | None = None,
    readable: tuple[float, float] = READ_RANGE,
) -> SweepFileResult:
    """Limits per (joint, direction) of one sweep file, in the order the sweeps ran. `interrupted`: the end
    line's reason when the file was not closed complete; the sweep the run ended in then gets no limit (its
    stop is where the run was cut, not a limit). `readable`: the span a servo's read-back can be in (the
    file header's, else what the wire carries); one beyond it is left out of the stall test and counted
    (`SweepLimit.left_out`). Raises RecordingError when the rows lack the sweep columns
    (t, event, joint, direction, cmd, read)."""
    t = _column(table, "t")
    ev = _labels(table, "event")
    joint = _column(table, "joint")
    direction = _labels(table, "direction")
    cmd = _column(table, "cmd")
    read = _column(table, "read")
    speed = float(config.get("speed") or math.nan)
    res = SweepFileResult(speed=speed, inside=config_inside(config))
    ok = np.isfinite(t) & np.isfinite(joint)
    order = np.flatnonzero(ok)[np.argsort(t[ok], kind="stable")]
    seen: list[tuple[int, str]] = []
    for i in order.tolist():
        key = (int(joint[i]), str(direction[i]))
        if key not in seen and key[1] in ("up", "down"):
            seen.append(key)
    for n, (j, d) in enumerate(seen):
        sel = order[(joint[order] == j) & (direction[order] == d)]
        cut = interrupted if n == len(seen) - 1 else None
        res.sweeps.append(_one_sweep(j, d, t[sel], ev[sel], cmd[sel], read[sel], res, cut, readable))
    if not res.sweeps:
        raise RecordingError("no sweep rows (joint and direction up/down)")
    return res
