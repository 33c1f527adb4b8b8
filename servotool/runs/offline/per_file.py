"""One recording analysed from its CSV file alone: recognise its run, analyse it by its mode, its tidy
table rows. The live commands call `analyze_file` on the CSV they have just written, so what they report and
what `servotool analyze` reports for the same file are the same computation on the same data.
"""

from __future__ import annotations

import contextlib
import functools
import json
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlencode

import numpy as np

from servotool.analysis.lag import LagResult, analyze_lag
from servotool.analysis.recording import (
    FAULT_CODES,
    READ_WHEN_SORTED,
    Recording,
    RecordingError,
    columns_for,
    recording_from_frame,
)
from servotool.analysis.step import StepResult, analyze_step
from servotool.analysis.sweep_files import READ_RANGE, SweepFileResult, analyze_sweep_file
from servotool.errors import FileFormatError
from servotool.io.csvlog import CsvFormatError, CsvMeta, read_columns
from servotool.io.jsondoc import JsonText
from servotool.motion.defaults import A_MAX_DEG_S2, V_MAX_DEG_S
from servotool.readings import HEADER_KEY, Readable, from_header
from servotool.runs.arm.settings import CMD_PERIOD_RANGE_S

MODES = ("ramp", "step", "sweep")


class NotAnalyzable(FileFormatError):
    """A file that cannot be analysed here; the message names it and says why."""


@dataclass(frozen=True)
class GroupKey:
    """What must be the same for lag runs to be combined into one fit."""

    device: str  # the device URL without its transport choice (simulator parameters included)
    simulated: bool
    joint: int
    transport: str

    def as_dict(self) -> dict[str, Any]:
        return {
            "device": self.device,
            "simulated": self.simulated,
            "joint": self.joint,
            "transport": self.transport,
        }


def _device_and_transport(meta: CsvMeta) -> tuple[str, str]:
    base, _, query = meta.device.partition("?")
    params = parse_qsl(query, keep_blank_values=True)
    transport = str(meta.config.get("transport") or dict(params).get("transport") or "")
    rest = [(k, v) for k, v in params if k != "transport"]
    return (f"{base}?{urlencode(rest)}" if rest else base), transport


@dataclass
class _Analysed:
    """What every analysed file has: its header facts, rows left out, rows of the tidy table."""

    path: Path
    meta: CsvMeta

    @property
    def mode(self) -> str:
        return self.meta.mode

    @functools.cached_property
    def key(self) -> GroupKey:
        """The file's group (computed once: a folder's report asks for it several times a file)."""
        device, transport = _device_and_transport(self.meta)
        return GroupKey(device, self.meta.simulated, config_joint(self.meta), transport)

    def skipped_rows(self) -> dict[str, Any]:
        """Rows left out of the analysis: malformed lines (with their line numbers, the first few), rows
        without a time, cmd/state rows with a non-finite value of the analysed joint."""
        m = self.meta
        skipped = getattr(self, "skipped", {})
        return {
            "malformed": m.n_bad_rows,
            "malformed_lines": [{"line": b.line, "reason": b.reason} for b in m.bad_rows],
            "no_time": int(skipped.get("no_time", 0)),
            "nan_joint": int(skipped.get("nan_joint", 0)),
            "absurd_joint": int(skipped.get("absurd_joint", 0)),
        }

    def flags(self) -> dict[str, bool]:
        """What --strict refuses: a controller fault, a runaway, an interrupted (or cut-off) run."""
        return {"fault": False, "runaway": False, "interrupted": not self.meta.complete}

    def _header_dict(self) -> dict[str, Any]:
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
        }


@dataclass
class FileAnalysis(_Analysed):
    """One analysed lag or step recording: the result of its mode's analysis and its table rows.

    The rows themselves (`recording`) are dropped when the caller did not ask to keep them (a big folder
    analysed on a pool of processes); `recording` then raises RecordingError."""

    kept: Recording | None
    result: LagResult | StepResult
    skipped: dict[str, int] = field(default_factory=dict)
    rows: list[dict[str, Any]] = field(default_factory=list)
    encoded: JsonText | None = None  # to_dict encoded ahead (by the worker that analysed the file)

    @property
    def recording(self) -> Recording:
        if self.kept is None:
            raise RecordingError(f"{self.path}: the recording's rows were not kept")
        return self.kept

    def flags(self) -> dict[str, bool]:
        r = self.result
        fault = bool(self.skipped.get("faults", 0))
        runaway = False
        if isinstance(r, StepResult):
            fault = fault or r.total_faults > 0
            runaway = r.runaways > 0
        return {"fault": fault, "runaway": runaway, "interrupted": not self.meta.complete}

    def to_dict(self) -> dict[str, Any]:
        """The JSON form shared by the live commands and `analyze` (what makes them comparable)."""
        return {
            **self._header_dict(),
            "result": self.result.to_dict(),
            "skipped_rows": self.skipped_rows(),
            "flags": self.flags(),
        }


@dataclass
class SweepAnalysis(_Analysed):
    """One analysed sweep recording: limits per servo and direction."""

    result: SweepFileResult
    rows: list[dict[str, Any]] = field(default_factory=list)
    encoded: JsonText | None = None  # to_dict encoded ahead (by the worker that analysed the file)

    def skipped_rows(self) -> dict[str, Any]:
        """As every file's, with the read-backs no servo could report counted as `absurd_joint`."""
        return {**super().skipped_rows(), "absurd_joint": sum(s.left_out for s in self.result.sweeps)}

    def to_dict(self) -> dict[str, Any]:
        return {
            **self._header_dict(),
            "result": self.result.to_dict(),
            "skipped_rows": self.skipped_rows(),
            "flags": self.flags(),
        }


def _cfg(meta: CsvMeta, key: str, default: Any) -> Any:
    value = meta.config.get(key, default)
    return default if value is None else value


def config_joint(meta: CsvMeta) -> int:
    """The run's analysed joint (config.joint, 0 when absent) as an index; RecordingError for a value that
    is no whole number (1.5, true, "a", 1e400): refused, never rounded to some joint."""
    value = _cfg(meta, "joint", 0)
    if isinstance(value, str):
        with contextlib.suppress(ValueError):
            value = int(value.strip())
    if (
        isinstance(value, bool)
        or not isinstance(value, (int, float))
        or not math.isfinite(value)
        or value != int(value)
    ):
        raise RecordingError(
            f"config joint {json.dumps(value, default=str)} is not a joint index (a whole number)"
        )
    return int(value)


# the command periods a recording may hold: the live range (CMD_PERIOD_RANGE_S) with room on both sides
# for runs recorded with other bounds
PERIOD_BOUNDS_S = (CMD_PERIOD_RANGE_S[0] / 10, CMD_PERIOD_RANGE_S[1] * 10)


def config_period(meta: CsvMeta) -> float:
    """The run's command period (config.cmd_period_s, 0.01 when absent) in seconds; RecordingError for a
    value no run could have streamed at (not a number, not finite, outside PERIOD_BOUNDS_S): the ramp
    passes' cruise windows and the steps' speeds are reckoned in it."""
    value = _cfg(meta, "cmd_period_s", 0.01)
    lo, hi = PERIOD_BOUNDS_S
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not lo <= value <= hi:
        raise RecordingError(
            f"config cmd_period_s {json.dumps(value, default=str)} is not a command period "
            f"(a number of seconds in {lo:g}..{hi:g})"
        )
    return float(value)


def _analyse(meta: CsvMeta, rec: Recording) -> LagResult | StepResult:
    joint = config_joint(meta)
    period = config_period(meta)
    if meta.mode == "ramp":
        ramp = analyze_lag(
            rec,
            joint=joint,
            cmd_period_s=period,
            a_max=float(_cfg(meta, "a_max", A_MAX_DEG_S2)),
            v_max=float(_cfg(meta, "v_max", V_MAX_DEG_S)),
        )
        if not meta.complete and ramp.tuning is not None:
            # a partial sweep has not seen every speed the guard must allow for: no tuning from it
            ramp.tuning = None
            ramp.warnings.append("no guard tuning from a run that ended early: run the whole sweep")
        return ramp
    margin, lag = meta.config.get("guard_margin_deg"), meta.config.get("guard_lag_s")
    hold = meta.config.get("hold_s")
    return analyze_step(
        rec,
        joint=joint,
        cmd_period_s=period,
        shaped=bool(_cfg(meta, "shaped", True)),
        guard_margin_deg=float(margin) if margin is not None else None,
        guard_lag_s=float(lag) if lag is not None else None,
        hold_s=float(hold) if isinstance(hold, (int, float)) and not isinstance(hold, bool) else None,
        end_reason=None if meta.complete else meta.end_reason or "no end line",
        complete=meta.complete,
    )


def _joint_read(meta: CsvMeta) -> int | None:
    """The one joint a lag or step analysis of the file looks at (its config's), or None: every joint is
    read (another mode, or a joint that is no integer, which the analysis then refuses as before)."""
    if meta.mode not in ("ramp", "step"):
        return None
    try:
        return config_joint(meta)
    except RecordingError:
        return None


def _columns_read(meta: CsvMeta, header: list[str]) -> list[str] | None:
    """What the reader converts: for a lag or step run, the analysed joint's columns, the event columns
    and the command counter (converted only when read, where the body is short: when the rows had to be
    put in time order) only (the other joints' cells are not parsed as numbers); every column otherwise."""
    joint = _joint_read(meta)
    if joint is None:
        return None
    return [*columns_for(header, [joint], raw=meta.mode == "step"), *READ_WHEN_SORTED]


def file_readable(meta: CsvMeta) -> Readable:
    """What the recorded device could report, as the file's header says (`readable`); the physical bound
    alone for a file that says nothing of it."""
    return from_header(meta.extra.get(HEADER_KEY))


def sweep_readable(meta: CsvMeta) -> tuple[float, float]:
    """The span a sweep file's read-backs can be in: its header's (every servo of a bus shares it), else
    what the wire carries."""
    spans = from_header(meta.extra.get(HEADER_KEY)).spans
    return spans[0] if len(spans) == 1 else READ_RANGE


def analyze_any(path: str | Path, keep_recording: bool = True) -> FileAnalysis | SweepAnalysis:
    """Read one servotool-csv file and analyse it according to its header's mode (ramp, step or sweep).

    An interrupted file is analysed up to where it ends (meta.complete is False, meta.end_reason says why);
    malformed rows and rows with non-finite or impossible values (past what the device can report: the
    header's `readable` spans, else the physical bound) are left out and counted (skipped_rows()). Raises
    NotAnalyzable naming the file for a foreign, damaged or unsupported file. Of a lag or step run only
    the analysed joint is read (FileAnalysis.recording holds NaN for the others, and only that joint's
    non-finite values leave a row out).
    """
    path = Path(path)
    try:
        meta, table = read_columns(path, _columns_read, lazy=(*FAULT_CODES, *READ_WHEN_SORTED))
    except (CsvFormatError, OSError) as exc:
        raise NotAnalyzable(str(exc)) from None
    if meta.mode not in MODES:
        what = f"mode {meta.mode!r}" if meta.mode else "no mode in its config"
        modes = ", ".join(MODES)
        raise NotAnalyzable(f"{path}: not a lag, step or sweep run ({what}); analyze reads {modes}")
    try:
        if meta.mode == "sweep":
            sweep = SweepAnalysis(
                path,
                meta,
                analyze_sweep_file(
                    meta.config,
                    table,
                    None if meta.complete else (meta.end_reason or "no end line"),
                    sweep_readable(meta),
                ),
            )
            sweep.rows = sweep.result.rows(_row_base(sweep))
            return sweep
        joint = _joint_read(meta)
        rec = recording_from_frame(
            table, None if joint is None else [joint], raw=meta.mode == "step", readable=file_readable(meta)
        )
        del table
        skipped = dict(rec.skipped, faults=len(rec.fault_t))
        fa = FileAnalysis(path, meta, rec if keep_recording else None, _analyse(meta, rec), skipped)
        fa.rows = table_rows(fa, rec)
        return fa
    except (RecordingError, ValueError, TypeError, LookupError, ArithmeticError) as exc:
        # whatever a damaged file makes the numbers do, it is that file's problem, told in one line
        raise NotAnalyzable(f"{path}: cannot be analysed: {exc or type(exc).__name__}") from None


def analyze_file(path: str | Path, keep_recording: bool = True) -> FileAnalysis:
    """analyze_any for a lag or step run (what the live commands record); a sweep file is NotAnalyzable."""
    fa = analyze_any(path, keep_recording)
    if isinstance(fa, SweepAnalysis):
        raise NotAnalyzable(f"{fa.path}: a sweep run, not a lag or step run")
    return fa


# ---------------------------------------------------------------------------------------------------------
# the tidy table: one row per pass, step and sweep

TABLE_COLUMNS = (
    "device",
    "simulated",
    "joint",
    "transport",
    "kind",
    "index",
    "direction",
    "speed",
    "size",
    "L_ms",
    "ci95_low_ms",
    "ci95_high_ms",
    "tau_ms",
    "rejects",
    "faults",
    "verdict",
    "file",
    "created",
)


def _row_base(fa: _Analysed) -> dict[str, Any]:
    key = fa.key
    return {
        "device": key.device,
        "simulated": key.simulated,
        "joint": key.joint,
        "transport": key.transport,
        "file": str(fa.path),
        "created": fa.meta.created,
    }


def _window_counts(rec: Recording, edges: Sequence[float]) -> tuple[np.ndarray, np.ndarray]:
    """(rejected commands, new fault latches) between consecutive edges (times), by search, not masks."""
    e = np.asarray(edges, dtype=float)
    rejected = np.concatenate([[0], np.cumsum(rec.reply_err != 0)])
    at = np.searchsorted(rec.reply_t, e, side="left")
    rej = np.diff(rejected[at])
    flt = np.diff(np.searchsorted(rec.fault_t, e, side="left"))
    return rej, flt


def table_rows(fa: FileAnalysis, rec: Recording) -> list[dict[str, Any]]:
    """The file's rows of the tidy table (see TABLE_COLUMNS); NaN where a figure does not apply."""
    base = _row_base(fa)
    r = fa.result
    rows: list[dict[str, Any]] = []
    if isinstance(r, LagResult):
        ci = r.fit.ci95_ms if r.fit is not None else (math.nan, math.nan)
        tau = r.dynamics.tau_ms if r.dynamics is not None else math.nan
        size = float(_cfg(fa.meta, "sweep_deg", math.nan))
        bounds = [float(t) for t in _pass_starts(rec)] + [math.inf]
        rejects, faults = _window_counts(rec, bounds)
        for i, p in enumerate(r.passes):
            rej, flt = (int(rejects[i]), int(faults[i])) if i < len(rejects) else (0, 0)
            verdict = p.note or ("ok" if math.isfinite(p.lag_ms) else "no lag")
            rows.append(
                dict(base, kind="pass", index=p.index, direction=p.direction, speed=p.speed_deg_s, size=size,
                     L_ms=p.lag_ms, ci95_low_ms=ci[0], ci95_high_ms=ci[1], tau_ms=tau, rejects=rej,
                     faults=flt, verdict=verdict)
            )  # fmt: skip
    elif isinstance(r, StepResult):
        for s in r.steps:
            rows.append(
                dict(base, kind="step", index=s.index, direction="up" if s.size_deg >= 0 else "down",
                     speed=s.peak_speed_deg_s, size=s.size_deg, L_ms=s.first_move_ms, ci95_low_ms=math.nan,
                     ci95_high_ms=math.nan, tau_ms=math.nan, rejects=s.rejects, faults=s.faults,
                     verdict=s.verdict)
            )  # fmt: skip
    return rows


def _pass_starts(rec: Recording) -> list[float]:
    """Send time of the first tick of each labelled pass, in pass order."""
    labels = rec.cmd_pass
    ok = np.flatnonzero(labels >= 0)
    _, first = np.unique(labels[ok], return_index=True)
    return [float(x) for x in rec.cmd_t[ok[first]]]


def analyze_written(path: Path) -> tuple[FileAnalysis | None, str | None]:
    """Analyse the CSV a live run has just written: (analysis, None), or (None, why) when it holds too little
    to analyse (a run cut off before its first pass, say). The recording itself is kept either way."""
    try:
        return analyze_file(path), None
    except ValueError as exc:
        return None, str(exc)


def is_lag_measurement(f: FileAnalysis) -> bool:
    """A ramp file whose passes measure the lag: not a cold start, no controller fault latched during it."""
    return not f.meta.config.get("cold_start") and not f.flags()["fault"]
