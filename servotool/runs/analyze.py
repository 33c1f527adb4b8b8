"""Recompute a run's results from its CSV alone: find the files, recognise each run, analyse it.

The live commands call `analyze_file` on the CSV they have just written, so what they report and what
`servotool analyze` reports for the same file are the same computation on the same data.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from servotool.analysis.lag import CombinedLag, LagResult, analyze_lag, combine_lag
from servotool.analysis.recording import Recording, RecordingError, recording_from_frame
from servotool.analysis.step import StepResult, analyze_step
from servotool.io.csvlog import CsvFormatError, CsvMeta, read_csv

MODES = ("ramp", "step")


class NotAnalyzable(ValueError):
    """A file that cannot be analysed here; the message names it and says why."""


@dataclass
class FileAnalysis:
    """One analysed recording: its header facts and the result of its mode's analysis."""

    path: Path
    meta: CsvMeta
    recording: Recording
    result: LagResult | StepResult

    @property
    def mode(self) -> str:
        return self.meta.mode

    def to_dict(self) -> dict[str, Any]:
        """The JSON form shared by the live commands and `analyze` (what makes them comparable)."""
        m = self.meta
        return {
            "file": str(self.path),
            "mode": m.mode,
            "device": m.device,
            "simulated": m.simulated,
            "created": m.created,
            "command": m.command,
            "realtime": m.extra.get("realtime", ""),
            "complete": m.complete,
            "end_reason": m.end_reason,
            "config": m.config,
            "result": self.result.to_dict(),
        }


def _cfg(meta: CsvMeta, key: str, default: Any) -> Any:
    value = meta.config.get(key, default)
    return default if value is None else value


def analyze_file(path: str | Path) -> FileAnalysis:
    """Read one servotool-csv file and analyse it according to its header's mode.

    An interrupted file is analysed up to where it ends (meta.complete is False, meta.end_reason says why).
    Raises NotAnalyzable (a ValueError) naming the file for a foreign, damaged or unsupported file.
    """
    path = Path(path)
    try:
        meta, df = read_csv(path)
    except CsvFormatError as exc:
        raise NotAnalyzable(str(exc)) from None
    if meta.mode not in MODES:
        what = f"mode {meta.mode!r}" if meta.mode else "no mode in its config"
        raise NotAnalyzable(f"{path}: not a lag or step run ({what}); analyze reads modes {', '.join(MODES)}")
    try:
        rec = recording_from_frame(df)
        joint = int(_cfg(meta, "joint", 0))
        period = float(_cfg(meta, "cmd_period_s", 0.01))
        if meta.mode == "ramp":
            result: LagResult | StepResult = analyze_lag(
                rec,
                joint=joint,
                cmd_period_s=period,
                a_max=float(_cfg(meta, "a_max", 500.0)),
                v_max=float(_cfg(meta, "v_max", 130.0)),
            )
        else:
            margin, lag = meta.config.get("guard_margin_deg"), meta.config.get("guard_lag_s")
            result = analyze_step(
                rec,
                joint=joint,
                cmd_period_s=period,
                shaped=bool(_cfg(meta, "shaped", True)),
                guard_margin_deg=float(margin) if margin is not None else None,
                guard_lag_s=float(lag) if lag is not None else None,
            )
    except (RecordingError, ValueError, TypeError, KeyError) as exc:
        raise NotAnalyzable(f"{path}: cannot be analysed: {exc}") from None
    return FileAnalysis(path=path, meta=meta, recording=rec, result=result)


@dataclass
class Problem:
    path: str
    reason: str


@dataclass
class AnalyzeReport:
    files: list[FileAnalysis] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)
    combined: CombinedLag | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "files": [f.to_dict() for f in self.files],
            "combined_lag": self.combined.to_dict() if self.combined is not None else None,
            "problems": [{"file": p.path, "reason": p.reason} for p in self.problems],
        }


def analyze_written(path: Path) -> tuple[FileAnalysis | None, str | None]:
    """Analyse the CSV a live run has just written: (analysis, None), or (None, why) when it holds too little
    to analyse (a run cut off before its first pass, say). The recording itself is kept either way."""
    try:
        return analyze_file(path), None
    except ValueError as exc:
        return None, str(exc)


def find_csv_files(paths: Iterable[str | Path]) -> tuple[list[Path], list[Problem]]:
    """Files named directly, plus every *.csv under the folders named (recursively, sorted)."""
    found: list[Path] = []
    problems: list[Problem] = []
    seen: set[Path] = set()
    for raw in paths:
        p = Path(raw)
        if p.is_dir():
            items = sorted(x for x in p.rglob("*") if x.is_file() and x.suffix.lower() == ".csv")
            if not items:
                problems.append(Problem(str(p), "folder holds no .csv file"))
        elif p.is_file():
            items = [p]
        else:
            problems.append(Problem(str(p), "no such file or folder"))
            continue
        for item in items:
            key = item.resolve()
            if key not in seen:
                seen.add(key)
                found.append(item)
    return found, problems


def analyze_paths(paths: Iterable[str | Path], on_file: Any = None) -> AnalyzeReport:
    """Analyse every recording found; a file that cannot be analysed becomes a Problem, the others go on.

    Two or more ramp recordings are also combined into one delta = v * L fit over all their passes.
    """
    files, problems = find_csv_files(paths)
    report = AnalyzeReport(problems=problems)
    for path in files:
        if on_file is not None:
            on_file(path)
        try:
            report.files.append(analyze_file(path))
        except NotAnalyzable as exc:
            report.problems.append(Problem(str(path), _strip_path(str(exc), path)))
    lags = [f.result for f in report.files if isinstance(f.result, LagResult)]
    if len(lags) >= 2:
        report.combined = combine_lag(lags)
    return report


def _strip_path(message: str, path: Path) -> str:
    prefix = f"{path}: "
    return message[len(prefix) :] if message.startswith(prefix) else message
