"""The report of a folder: its files, problems and the lag runs combined per (device, simulated, joint,
transport) group only: never across devices, never a simulated run with a real one."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from servotool.analysis.lag import CombinedLag, LagResult, combine_lag
from servotool.runs.offline.discovery import Problem
from servotool.runs.offline.per_file import (
    FileAnalysis,
    GroupKey,
    SweepAnalysis,
    is_lag_measurement,
)


@dataclass
class CombinedGroup:
    """The combined lag fit of one group of ramp files."""

    key: GroupKey
    combined: CombinedLag
    files: list[str]

    def to_dict(self) -> dict[str, Any]:
        return {**self.key.as_dict(), **self.combined.to_dict(), "files": list(self.files)}


@dataclass
class AnalyzeReport:
    files: list[FileAnalysis] = field(default_factory=list)  # lag and step runs
    problems: list[Problem] = field(default_factory=list)
    groups: list[CombinedGroup] = field(default_factory=list)
    sweeps: list[SweepAnalysis] = field(default_factory=list)

    @property
    def analysed(self) -> list[FileAnalysis | SweepAnalysis]:
        """Every analysed file, lag and step runs first, then sweeps."""
        return [*self.files, *self.sweeps]

    @property
    def combined(self) -> CombinedLag | None:
        """The one combined fit when every lag file belongs to one group (the key of old reports)."""
        return self.groups[0].combined if len(self.groups) == 1 and not self._split() else None

    def _split(self) -> bool:
        keys = {f.key for f in self.files if isinstance(f.result, LagResult)}
        return len(keys) > 1

    def strict_failures(self) -> list[tuple[str, list[str]]]:
        """(file, what it holds) for every file --strict refuses."""
        out = []
        for f in self.analysed:
            bad = [name for name, on in f.flags().items() if on]
            if bad:
                out.append((str(f.path), bad))
        return out

    def table(self) -> list[dict[str, Any]]:
        """Rows of the tidy table (TABLE_COLUMNS), file by file."""
        return [row for f in self.analysed for row in f.rows]

    def to_dict(self, encoded: bool = False) -> dict[str, Any]:
        """The report's JSON form; with encoded, each file whose to_dict was encoded ahead is that
        JsonText (the same value, spliced into a compact document as it is)."""
        combined = self.combined
        return {
            "files": [f.encoded if encoded and f.encoded else f.to_dict() for f in self.analysed],
            "combined_lag": combined.to_dict() if combined is not None else None,
            "combined_lags": [g.to_dict() for g in self.groups],
            "problems": [{"file": p.path, "reason": p.reason} for p in self.problems],
        }


def combine_groups(files: Sequence[FileAnalysis]) -> list[CombinedGroup]:
    """One combined lag fit per GroupKey holding two or more ramp files, in order of first appearance.
    A ramp that is no lag measurement stays out (its own result is kept): one streamed from a disabled
    robot (`cold_start`, a runaway on purpose) or one during which the controller latched a fault."""
    groups: dict[GroupKey, list[FileAnalysis]] = {}
    for f in files:
        if isinstance(f.result, LagResult) and is_lag_measurement(f):
            groups.setdefault(f.key, []).append(f)
    out = []
    for key, members in groups.items():
        if len(members) >= 2:
            results = [m.result for m in members if isinstance(m.result, LagResult)]
            out.append(CombinedGroup(key, combine_lag(results), [str(m.path) for m in members]))
    return out
