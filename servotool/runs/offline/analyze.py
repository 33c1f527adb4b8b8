"""Recompute runs' results from their CSV files alone: find the files, recognise each run, analyse it, group.

The live commands call `analyze_file` on the CSV they have just written, so what they report and what
`servotool analyze` reports for the same file are the same computation on the same data. A folder is
analysed file by file on a pool of processes (one per core by default), with progress by callback.
Lag runs are combined per (device, simulated, joint, transport) group only: never across devices, never a
simulated run with a real one.

The modules: per_file (one recording: recognise, analyse, table rows), discovery (the files to read), pool
(many files on worker processes), grouping (the report and the combined lag fits); this one joins them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path

from servotool.analysis.recording import FAULT_CODES
from servotool.runs.offline.discovery import Problem, find_csv_files, not_a_file
from servotool.runs.offline.grouping import AnalyzeReport, CombinedGroup, combine_groups
from servotool.runs.offline.per_file import (
    MODES,
    PERIOD_BOUNDS_S,
    TABLE_COLUMNS,
    FileAnalysis,
    GroupKey,
    NotAnalyzable,
    SweepAnalysis,
    _analyse,
    _columns_read,
    _joint_read,
    analyze_any,
    analyze_file,
    analyze_written,
    config_joint,
    config_period,
    is_lag_measurement,
    table_rows,
)
from servotool.runs.offline.pool import _outcomes

__all__ = [
    "FAULT_CODES",
    "MODES",
    "PERIOD_BOUNDS_S",
    "TABLE_COLUMNS",
    "AnalyzeReport",
    "CombinedGroup",
    "FileAnalysis",
    "GroupKey",
    "NotAnalyzable",
    "Problem",
    "Progress",
    "SweepAnalysis",
    "_analyse",
    "_columns_read",
    "_joint_read",
    "analyze_any",
    "analyze_file",
    "analyze_paths",
    "analyze_written",
    "combine_groups",
    "config_joint",
    "config_period",
    "find_csv_files",
    "is_lag_measurement",
    "not_a_file",
    "table_rows",
]

Progress = Callable[[int, int, Path], None]  # (files done, files in all, the file just done)


def analyze_paths(
    paths: Iterable[str | Path],
    on_file: Callable[[Path], None] | None = None,
    *,
    workers: int = 1,
    keep_recordings: bool = True,
    on_progress: Progress | None = None,
    encode_json: bool = False,
) -> AnalyzeReport:
    """Analyse every recording found; a file that cannot be analysed becomes a Problem, the others go on.

    With workers > 1 the files are analysed on that many processes (results in file order either way);
    keep_recordings=False drops each file's rows once analysed (FileAnalysis.kept None), which a big folder
    needs. With encode_json each worker also encodes its files' to_dict (FileAnalysis.encoded, for
    AnalyzeReport.to_dict(encoded=True)). Sweep files land in report.sweeps. Ramp files are combined into
    one delta = v * L fit per GroupKey with two or more files.
    """
    files, problems = find_csv_files(paths)
    report = AnalyzeReport(problems=problems)
    for done, outcome in enumerate(_outcomes(files, workers, keep_recordings, encode_json), start=1):
        path = files[done - 1]
        if on_file is not None:
            on_file(path)
        if isinstance(outcome, Problem):
            report.problems.append(outcome)
        elif isinstance(outcome, SweepAnalysis):
            report.sweeps.append(outcome)
        else:
            report.files.append(outcome)
        if on_progress is not None:
            on_progress(done, len(files), path)
    report.groups = combine_groups(report.files)
    return report
