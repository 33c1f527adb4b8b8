"""Recompute runs' results from their CSV files alone: find the files, recognise each run, analyse it, group.

The live commands call `analyze_file` on the CSV they have just written, so what they report and what
`servotool analyze` reports for the same file are the same computation on the same data. A folder is
analysed file by file on a pool of processes (one per core by default), with progress by callback.
Lag runs are combined per (device, simulated, joint, transport) group only: never across devices, never a
simulated run with a real one.
"""

from __future__ import annotations

import contextlib
import errno
import functools
import gc
import json
import math
import multiprocessing
import os
import stat
import sys
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlencode

import numpy as np

from servotool.analysis.lag import CombinedLag, LagResult, analyze_lag, combine_lag
from servotool.analysis.recording import (
    FAULT_CODES,
    READ_WHEN_SORTED,
    Recording,
    RecordingError,
    columns_for,
    recording_from_frame,
)
from servotool.analysis.step import StepResult, analyze_step
from servotool.analysis.sweep_files import SweepFileResult, analyze_sweep_file
from servotool.errors import FileFormatError
from servotool.io.csvlog import CsvFormatError, CsvMeta, read_columns
from servotool.io.jsondoc import JsonText, compact
from servotool.motion.defaults import A_MAX_DEG_S2, V_MAX_DEG_S
from servotool.runs.arm.settings import CMD_PERIOD_RANGE_S

MODES = ("ramp", "step", "sweep")
Progress = Callable[[int, int, Path], None]  # (files done, files in all, the file just done)


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
        return analyze_lag(
            rec,
            joint=joint,
            cmd_period_s=period,
            a_max=float(_cfg(meta, "a_max", A_MAX_DEG_S2)),
            v_max=float(_cfg(meta, "v_max", V_MAX_DEG_S)),
        )
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


def analyze_any(path: str | Path, keep_recording: bool = True) -> FileAnalysis | SweepAnalysis:
    """Read one servotool-csv file and analyse it according to its header's mode (ramp, step or sweep).

    An interrupted file is analysed up to where it ends (meta.complete is False, meta.end_reason says why);
    malformed rows and rows with non-finite values are left out and counted (skipped_rows()). Raises
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
                    meta.config, table, None if meta.complete else (meta.end_reason or "no end line")
                ),
            )
            sweep.rows = sweep.result.rows(_row_base(sweep))
            return sweep
        joint = _joint_read(meta)
        rec = recording_from_frame(table, None if joint is None else [joint], raw=meta.mode == "step")
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


# ---------------------------------------------------------------------------------------------------------
# many files


@dataclass
class Problem:
    path: str
    reason: str


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


def analyze_written(path: Path) -> tuple[FileAnalysis | None, str | None]:
    """Analyse the CSV a live run has just written: (analysis, None), or (None, why) when it holds too little
    to analyse (a run cut off before its first pass, say). The recording itself is kept either way."""
    try:
        return analyze_file(path), None
    except ValueError as exc:
        return None, str(exc)


def find_csv_files(paths: Iterable[str | Path]) -> tuple[list[Path], list[Problem]]:
    """Files named directly, plus every *.csv under the folders named (recursively, sorted; folders reached
    through a symbolic link are not entered). A file found twice (named twice, or through a link) is
    taken once."""
    found: list[Path] = []
    problems: list[Problem] = []
    seen: set[str] = set()
    for raw in paths:
        p = Path(raw)
        if p.is_dir():
            real = os.path.realpath(p)
            odd: list[Problem] = []
            items = sorted(_csv_under(p, real, odd), key=lambda item: item[0].parts)  # Path order, faster
            problems += sorted(odd, key=lambda o: Path(o.path).parts)
            if not items and not odd:
                problems.append(Problem(str(p), "folder holds no .csv file"))
        elif p.is_file():
            items = [(p, os.path.realpath(p))]
        else:
            problems.append(Problem(str(p), not_a_file(p)))
            continue
        for item, key in items:
            if key not in seen:
                seen.add(key)
                found.append(item)
    return found, problems


def not_a_file(path: Path) -> str:
    """Why `path`, which is neither a regular file nor a folder, cannot be read as a recording."""
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return "no such file or folder"
    except OSError as exc:
        return f"cannot read ({exc.strerror or exc})"
    if stat.S_ISLNK(mode):
        try:
            os.stat(path)
        except FileNotFoundError:
            return f"a symbolic link to nothing ({os.readlink(path)})"
        except OSError as exc:
            loop = exc.errno == errno.ELOOP
            return "a symbolic link loop" if loop else f"cannot read ({exc.strerror or exc})"
        return not_a_file(Path(os.path.realpath(path)))
    kinds = {stat.S_ISFIFO: "a named pipe", stat.S_ISSOCK: "a socket", stat.S_ISCHR: "a device",
             stat.S_ISBLK: "a device"}  # fmt: skip
    return f"not a regular file ({next((k for test, k in kinds.items() if test(mode)), 'nor a folder')})"


def _csv_under(folder: Path, real: str, odd: list[Problem]) -> Iterator[tuple[Path, str]]:
    """(path, resolved path) of every file named *.csv (any case) under folder, whose resolved path is
    `real`: one directory listing per folder, a path resolved only where it is a link. An entry named
    *.csv that is neither a regular file, a folder nor a link (a named pipe, a device) goes to `odd` with
    why: it gets its line, as a damaged file does."""
    try:
        with os.scandir(folder) as listing:
            entries = list(listing)
    except OSError:  # an unreadable folder holds nothing we can read
        return
    for entry in entries:
        name = entry.name
        try:
            if entry.is_dir() and not entry.is_symlink():
                yield from _csv_under(folder / name, os.path.join(real, name), odd)
                continue
            dot = name.rfind(".")
            if dot > 0 and name[dot:].lower() == ".csv":
                if entry.is_file():
                    link = entry.is_symlink()
                    yield folder / name, os.path.realpath(entry.path) if link else os.path.join(real, name)
                elif not entry.is_symlink() and not entry.is_dir():
                    # a named pipe or a device: named like a recording, never opened (a pipe would wait for
                    # a writer). A link to nothing is left out without a word, as a link to a folder
                    odd.append(Problem(str(folder / name), not_a_file(folder / name)))
        except OSError:
            continue


Outcome = FileAnalysis | SweepAnalysis | Problem


def _analyse_one(path: Path, keep_recording: bool, encode: bool = False) -> Outcome:
    try:
        done = analyze_any(path, keep_recording)
    except NotAnalyzable as exc:
        return Problem(str(path), _strip_path(str(exc), path))
    if encode:  # in the worker, while the other workers analyse: not all in this process after the last file
        done.encoded = compact(done.to_dict())
    return done


def _quiet_worker() -> None:
    # a worker never writes to stdout: numerical libraries' console noise goes to stderr
    with contextlib.suppress(OSError):
        os.dup2(2, 1)


def _analyse_chunk(paths: Sequence[Path], keep_recording: bool, encode: bool) -> list[Outcome]:
    return [_analyse_one(p, keep_recording, encode) for p in paths]


def _worker_ready() -> bool:
    return True


# "fork" copies this process, its libraries already imported, in milliseconds; "forkserver" starts a server
# that imports numpy, scipy and pyarrow first (a second or more). None: fork where that is safe (see _context)
START_METHOD: str | None = None
# chunks shrink as the files run out: each takes 1/(CHUNK_SHARE x workers) of the files left, at most
# MAX_CHUNK of them (the progress bar moves at least that often) and at least one. Each chunk costs the
# command about half a millisecond of hand-over; the small last ones leave little of one core idle
CHUNK_SHARE = 4
MAX_CHUNK = 32
FORK_START_WAIT_S = 5.0  # forked workers answer in milliseconds: wait for them rather than analyse here


def _context() -> multiprocessing.context.BaseContext:
    """fork on Linux from a process with one thread (a fork copies no other thread, and a lock another
    thread held would stay held in the child), the forkserver otherwise."""
    method = START_METHOD
    if method is None:
        single = threading.active_count() == 1
        method = "fork" if single and sys.platform.startswith("linux") else "forkserver"
    return multiprocessing.get_context(method)


class _Workers:
    """A process pool whose start does not hold up the caller. Forked workers start at once (the first
    task is submitted from this thread, before any other thread exists); forkserver workers block the
    caller until the server has imported numpy, scipy and pyarrow (a second or more), so they are started
    on a thread of their own while this process analyses files. `up` tells when a worker has answered."""

    def __init__(self, n: int) -> None:
        ctx = _context()
        self.forked = ctx.get_start_method() == "fork"
        if not self.forked:
            ctx.set_forkserver_preload([__name__])
        else:
            # the objects alive now (the imported libraries, some 100,000) are left out of the garbage
            # collector's passes until the pool closes: a full pass over them in this process, set off by
            # the results coming in, cost some 60 ms while the workers waited for their next chunk, and one
            # in a worker would copy every page it shares with this process
            gc.freeze()
        try:
            self.pool = ProcessPoolExecutor(max_workers=n, mp_context=ctx, initializer=_quiet_worker)
            self._up = threading.Event()
            # with fork, submitting forks every worker now, from this thread
            first = self.pool.submit(_worker_ready) if self.forked else None
            self._starter = threading.Thread(
                target=self._start, args=(first,), name="analyze-workers", daemon=True
            )
            self._starter.start()
        except BaseException:
            if self.forked:  # no pool to close: the objects go back to the collector now
                gc.unfreeze()
            raise

    def _start(self, first: Future[bool] | None) -> None:
        with contextlib.suppress(Exception):  # workers that fail to start leave the work to this process
            (first or self.pool.submit(_worker_ready)).result()
            self._up.set()

    @property
    def up(self) -> bool:
        return self._up.is_set()

    def wait_up(self, timeout: float) -> None:
        """Wait up to timeout for a forked worker's answer (forkserver workers are not waited for)."""
        if self.forked:
            self._up.wait(timeout)

    def close(self) -> None:
        """Shut the pool down once its workers have started (a worker abandoned while it starts would fail
        noisily after this process is gone)."""
        self._starter.join()
        self.pool.shutdown(wait=True, cancel_futures=True)
        if self.forked:
            gc.unfreeze()


def _chunks(files: Sequence[Path], workers: int) -> list[Sequence[Path]]:
    """The files in consecutive chunks of decreasing size (see CHUNK_SHARE): 1,000 files on 2 workers go
    out as 61 chunks, twenty of 32 files first and single files last."""
    out: list[Sequence[Path]] = []
    i = 0
    while i < len(files):
        size = max(1, min(MAX_CHUNK, (len(files) - i) // (CHUNK_SHARE * workers)))
        out.append(files[i : i + size])
        i += size
    return out


def _outcomes(files: Sequence[Path], workers: int, keep: bool, encode: bool) -> Iterator[Outcome]:
    """Each file's outcome, in file order. With workers > 1 the files go out in chunks (_chunks) to that
    many processes; until the first of them answers, this
    process analyses the chunks itself, so the workers' start costs no time unless the folder takes less than
    it (forked workers answer at once and are waited for)."""
    if workers <= 1 or len(files) < 2:
        for path in files:
            yield _analyse_one(path, keep)  # encoded ahead only where the cost is spread over workers
        return
    chunks = _chunks(files, workers)
    pool = _Workers(min(workers, len(chunks)))  # a process with no chunk to take would only cost its start
    futures: dict[int, Future[list[Outcome]]] = {}
    try:
        pool.wait_up(FORK_START_WAIT_S)
        for k, chunk in enumerate(chunks):
            if not futures and pool.up:
                futures = {
                    j: pool.pool.submit(_analyse_chunk, chunks[j], keep, encode)
                    for j in range(k, len(chunks))
                }
            fut = futures.get(k)
            yield from (fut.result() if fut is not None else _analyse_chunk(chunk, keep, encode))
    finally:
        pool.close()


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


def is_lag_measurement(f: FileAnalysis) -> bool:
    """A ramp file whose passes measure the lag: not a cold start, no controller fault latched during it."""
    return not f.meta.config.get("cold_start") and not f.flags()["fault"]


def _strip_path(message: str, path: Path) -> str:
    prefix = f"{path}: "
    return message[len(prefix) :] if message.startswith(prefix) else message
