"""Turn the rows of a servotool-csv recording into time series the analyses work on.

A recording holds events in time order: `cmd` rows (the setpoint on the wire as q1..qN, for shaped runs
the raw target as r1..rN, with pass/phase labels), `state` rows (measured joints and the fault latch),
`reply` rows (errcode), `fault` rows (a new fault latch), `guard` rows (divergence guard trips) and one
`stop` row when the run ended early. Everything here is pure: a DataFrame in, numpy arrays out.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from servotool.errors import FileFormatError
from servotool.readings import Readable

EVENTS = ("cmd", "state", "reply", "fault", "guard", "stop")


class RecordingError(FileFormatError):
    """The rows do not hold what an analysis needs (no commands, no measured samples, unknown joint)."""


def joint_columns(prefix: str, columns: Iterable[str]) -> list[str]:
    """q1..qN (or r1..rN) present in the frame, in joint order."""
    present = set(columns)
    found = []
    k = 1
    while f"{prefix}{k}" in present:
        found.append(f"{prefix}{k}")
        k += 1
    return found


@dataclass
class Recording:
    """One run's events as arrays, each sorted by time (s since run start).

    cmd_q / cmd_r / state_q are (samples, joints); cmd_r is None when the run streamed no raw target.
    cmd_pass is -1 where a row carried no pass label; cmd_phase is "" where it carried no phase. cmd_phase
    and reply_cmd are numpy str arrays (object arrays of str when a label is longer than MAX_FIXED_LABEL).
    """

    cmd_t: np.ndarray
    cmd_q: np.ndarray
    cmd_r: np.ndarray | None
    cmd_pass: np.ndarray
    cmd_phase: np.ndarray
    state_t: np.ndarray
    state_q: np.ndarray
    reply_t: np.ndarray
    reply_err: np.ndarray
    reply_cmd: np.ndarray  # "" for the answer to a setpoint, else the command answered
    fault_t: np.ndarray
    fault_main: np.ndarray
    fault_sub: np.ndarray
    state_dev: np.ndarray = field(default_factory=lambda: np.zeros(0))  # controller clock (s), NaN if none
    # the controller's echo of the setpoint it executes (states x joints) and the share of recent setpoints
    # it received, where the file has them (e1..eN, success), else None
    state_echo: np.ndarray | None = None
    state_success: np.ndarray | None = None
    guard_t: np.ndarray = field(default_factory=lambda: np.zeros(0))
    guard_info: list[str] = field(default_factory=list)
    stop_t: float | None = None
    stop_reason: str = ""
    # rows left out: "no_time" (no finite t), "nan_joint" (a cmd or state row with a non-finite joint),
    # "absurd_joint" (one with a finite value no device could report: past its readable range)
    skipped: dict[str, int] = field(default_factory=dict)

    @property
    def n_joints(self) -> int:
        return int(self.cmd_q.shape[1])

    def commanded(self, joint: int) -> tuple[np.ndarray, np.ndarray]:
        """(send times, setpoints of the joint), both contiguous (numpy's interp copies strided input)."""
        return self.cmd_t, np.ascontiguousarray(self.cmd_q[:, joint])

    def measured(self, joint: int) -> tuple[np.ndarray, np.ndarray]:
        """(receive times, measured joint), both contiguous."""
        return self.state_t, np.ascontiguousarray(self.state_q[:, joint])

    def latest_measured_at(self, t: np.ndarray, joint: int) -> np.ndarray:
        """The measured value a live loop had at times t: the last state frame received at or before t.

        NaN where no frame had arrived yet.
        """
        idx = np.searchsorted(self.state_t, t, side="right") - 1
        out = np.full(len(t), np.nan)
        ok = idx >= 0
        out[ok] = self.state_q[idx[ok], joint]
        return out


class Table(Protocol):
    """What the reader hands over: named columns of equal length (a DataFrame, or columns made on demand).
    A column is anything numpy or pandas can take as a 1-d array."""

    @property
    def columns(self) -> Iterable[str]: ...

    def __getitem__(self, name: str) -> Any: ...

    def __len__(self) -> int: ...


RELEASE_MIN_ROWS = 100_000  # shorter tables keep their read columns: dropping one costs more than it frees


def _release(df: Table, col: str) -> None:
    # a reader that builds columns on demand can drop one once it has been read (a DataFrame cannot)
    release = getattr(df, "release", None)
    if release is not None and len(df) >= RELEASE_MIN_ROWS:
        release(col)


def number_column(df: Table, col: str, default: float = np.nan) -> np.ndarray:
    """The column as float64 (a view when it already is); non-numbers become NaN. Read once per column."""
    if col not in df.columns:
        return np.full(len(df), default, dtype=float)
    values = df[col]
    _release(df, col)
    if getattr(values, "dtype", None) == np.float64:
        return np.asarray(values)
    import pandas as pd  # only for text in a number column: a long recording read by pyarrow never needs it

    ser = pd.Series(values).astype("string")
    return pd.to_numeric(ser, errors="coerce").to_numpy(dtype=float, na_value=np.nan)


def label_codes(df: Table, col: str) -> tuple[np.ndarray, list[str]]:
    """(integer code per row, label of each code); code -1 where the cell is empty."""
    if col not in df.columns:
        return np.full(len(df), -1, dtype=np.int32), []
    as_codes = getattr(df, "codes", None)  # a reader that holds labels as codes hands them over as such
    if as_codes is not None:
        try:
            codes, names = as_codes(col)
        except TypeError:  # a label column that came out numeric (every cell a number): as text below
            pass
        else:
            _release(df, col)
            return codes, names
    values = df[col]
    _release(df, col)
    import pandas as pd

    if isinstance(values, pd.Categorical):
        cat = values  # already codes and labels: no second pass over the rows
    else:
        if not isinstance(getattr(values, "dtype", None), pd.CategoricalDtype):
            values = pd.Series(values).astype("string")
        cat = pd.Categorical(values)
    return np.asarray(cat.codes, dtype=np.int32), [str(c) for c in cat.categories]


def _fast(df: Table, col: str) -> tuple[np.ndarray, np.ndarray | None] | None:
    """(values, empty-cell mask or None) from a reader that hands number columns over as such (see
    ArrowColumns.numbers), else None (then the column is read through _num)."""
    numbers = getattr(df, "numbers", None)
    if numbers is None:
        return None
    try:
        got: tuple[np.ndarray, np.ndarray | None] = numbers(col)
    except (TypeError, KeyError):  # a number column with text in it (coerced by _num), or none at all
        return None
    return got


def _floats_at(df: Table, col: str, rows: Sequence[np.ndarray]) -> list[np.ndarray]:
    """The column as float64 at each array of row indices: NaN where a cell is empty or no number, or
    where the file has no such column."""
    got = _fast(df, col)
    if got is None:
        values = number_column(df, col)
        return [values[r] for r in rows]
    _release(df, col)
    return _taken(*got, rows, np.nan, np.float64)


def _taken(
    values: np.ndarray, missing: np.ndarray | None, rows: Sequence[np.ndarray], fill: float, dtype: Any = None
) -> list[np.ndarray]:
    """`values` (as `dtype`, if given) at each array of row indices, each a new array (indexing copies),
    `fill` where `missing` is True."""
    out = []
    for r in rows:
        x = values[r] if dtype is None else values[r].astype(dtype, copy=False)
        if missing is not None:
            hole = missing[r]
            if hole.any():
                x[hole] = fill
        out.append(x)
    return out


def _ints_at(df: Table, col: str, rows: Sequence[np.ndarray], fill: int) -> list[np.ndarray]:
    """The column as integers at each array of row indices; `fill` where a cell is empty or NaN or the
    file has no such column (fill 0: a code; an infinite code becomes the extreme integer, as numpy's
    nan_to_num gives it; fill -1: a pass label, -1 for any non-finite one)."""
    if not any(len(r) for r in rows):  # (fault rows, say): the column is not read
        return [np.zeros(0, dtype=np.int64) for _ in rows]
    got = _fast(df, col)
    if got is not None and got[0].dtype == np.int64:
        _release(df, col)
        return _taken(*got, rows, fill)
    if got is None:
        full = number_column(df, col)
    else:
        _release(df, col)
        full = got[0].astype(np.float64)
        if got[1] is not None:
            full[got[1]] = np.nan
    if fill == 0:
        return [_ints(full[r]) for r in rows]
    # a label beyond INT_BOUND (1e308 in a damaged cell) is no label either
    return [np.where(np.abs(x) <= INT_BOUND, x, fill).astype(int) for x in (full[r] for r in rows)]


def _times(df: Table) -> np.ndarray:
    """The t column as float64, NaN where empty or no number (a read-only view where nothing is)."""
    got = _fast(df, "t")
    if got is None:
        return number_column(df, "t")
    _release(df, "t")
    values, missing = got
    values = values.astype(np.float64, copy=False)
    if missing is None:
        return values
    values = values.copy()
    values[missing] = np.nan
    return values


def _event_rows(ev: np.ndarray, names: list[str], order: np.ndarray | None, event: str) -> np.ndarray:
    """Row indices of one event, in time order (ev: the event codes of the rows in `order`; None: every
    row, already in time order)."""
    if event not in names:
        return np.zeros(0, dtype=np.int64)
    hit = ev == names.index(event)
    return np.flatnonzero(hit) if order is None else order[hit]


MAX_FIXED_LABEL = 32  # labels up to this long come as a fixed-width numpy str array, longer ones as objects


def _labels_at(df: Table, col: str, rows: Sequence[np.ndarray]) -> list[np.ndarray]:
    """The label of each row in each array of row indices, "" where empty: a numpy str array (an object
    array of str when a label is longer than MAX_FIXED_LABEL, so that one long text does not widen every
    cell)."""
    codes, names = label_codes(df, col)
    if not names:  # every cell empty
        return [np.zeros(len(r), dtype="U1") for r in rows]
    wide = max(len(n) for n in names) > MAX_FIXED_LABEL
    lookup = np.array([*names, ""], dtype=object if wide else str)
    return [lookup[codes[r]] for r in rows]  # code -1 (empty) picks the last label, ""


# codes are held within this, so that a huge or infinite one casts exactly, keeping its sign
INT_BOUND = 2.0**62


def _ints(values: np.ndarray) -> np.ndarray:
    return np.clip(np.nan_to_num(values), -INT_BOUND, INT_BOUND).astype(int)


def columns_for(header: Iterable[str], joints: Iterable[int] | None = None, raw: bool = True) -> list[str]:
    """The columns of `header` that recording_from_frame(df, joints, raw) reads (joints None: all)."""
    names = list(header)
    wanted = set(_BASE)
    for prefix in ("q", "r", "e") if raw else ("q", "e"):
        cols = joint_columns(prefix, names)
        wanted.update(cols if joints is None else (cols[j] for j in joints if 0 <= j < len(cols)))
    return [c for c in names if c in wanted]


_BASE = ("t", "event", "pass", "phase", "errcode", "main_code", "sub_code", "dev_t", "success", "info")
FAULT_CODES = ("main_code", "sub_code")  # read at fault rows only: not at all in a run without a fault
# read only where rows had to be put in time order: then the commands' counter must agree with it (a reader
# asked for the columns of columns_for alone leaves it out, and the check with it)
READ_WHEN_SORTED = ("seq",)


def _order(t: np.ndarray, ev: np.ndarray) -> tuple[np.ndarray | None, np.ndarray, dict[str, int]]:
    """(the rows with a finite time, in time order, or None when that is every row as it is; their event
    codes; rows left out). A stable sort keeps the file order for equal stamps."""
    timed = np.isfinite(t)
    if timed.all():
        if np.all(t[1:] >= t[:-1]):
            return None, ev, {"no_time": 0, "nan_joint": 0, "absurd_joint": 0}
        order = np.argsort(t, kind="stable")
        return order, ev[order], {"no_time": 0, "nan_joint": 0, "absurd_joint": 0}
    blank = ~timed & (ev < 0)  # an empty line, not a damaged row
    skipped = {"no_time": int((~timed & ~blank).sum()), "nan_joint": 0, "absurd_joint": 0}
    order = np.flatnonzero(timed)
    t_timed = t[order]
    if not np.all(t_timed[1:] >= t_timed[:-1]):
        order = order[np.argsort(t_timed, kind="stable")]
    return order, ev[order], skipped


def _joints(df: Table, cols: list[str], read: Sequence[int], rows: Sequence[np.ndarray]) -> list[np.ndarray]:
    """(rows x joints) float64 arrays, one per array of row indices, column-major (a joint's column is
    contiguous); the joints not in `read` are NaN. One column at a time: a long recording never holds all
    joint columns at full length at once."""
    make = np.empty if len(read) == len(cols) else functools.partial(np.full, fill_value=np.nan)
    out = [make((len(r), len(cols)), order="F") for r in rows]
    for j in read:
        for a, x in zip(out, _floats_at(df, cols[j], rows), strict=True):
            a[:, j] = x
    return out


def _finite_rows(a: np.ndarray, read: Sequence[int]) -> np.ndarray:
    if len(read) == 1:
        return np.isfinite(a[:, read[0]])
    return np.isfinite(a if len(read) == a.shape[1] else a[:, list(read)]).all(axis=1)


def _readable_rows(a: np.ndarray, read: Sequence[int], readable: Readable) -> np.ndarray:
    """Rows whose joints read are inside what the device can report (NaN rows pass: counted apart). No
    arithmetic on the values: a comparison cannot overflow, whatever a crafted file holds."""
    ok = np.ones(len(a), dtype=bool)
    for j in read:
        lo, hi = readable.span(j)
        x = a[:, j]
        ok &= ~((x < lo) | (x > hi))
    return ok


def _keep_readable(q: np.ndarray, read: Sequence[int], readable: Readable) -> tuple[np.ndarray, np.ndarray]:
    """(rows kept: finite and readable, rows left out for an impossible value only)."""
    finite = _finite_rows(q, read) if read else np.ones(len(q), dtype=bool)
    sane = _readable_rows(q, read, readable) if read else finite
    return finite & sane, finite & ~sane


def _check_send_order(df: Table, t: np.ndarray, cmd: np.ndarray) -> None:
    """Raise RecordingError where the commands, put in time order, are out of the order they were sent in
    (their counter, seq, goes back): a clock that went back, or rows of another run pasted in. Rows in
    another order that kept their times (sorted by a column in a spreadsheet) pass."""
    if "seq" not in df.columns or len(cmd) < 2:
        return
    try:
        (seq,) = _floats_at(df, "seq", (cmd,))
    except KeyError:  # a column the reader was asked to leave out
        return
    counted = np.isfinite(seq)
    back = np.flatnonzero(np.diff(seq[counted]) < 0)
    if len(back):
        at = float(t[cmd[counted]][back[0] + 1])
        raise RecordingError(
            f"the command counter (seq) goes back {len(back)} time(s) in time order, first at t = {at:g} s: "
            "times edited or rows of another run mixed in"
        )


def recording_from_frame(
    df: Table, joints: Iterable[int] | None = None, raw: bool = True, readable: Readable | None = None
) -> Recording:
    """Split a servotool-csv DataFrame into per-event arrays, each sorted by time (stable for ties).

    joints (indices from 0) limits the joint columns read to those (None: all); the others are NaN in
    cmd_q, state_q and cmd_r, and n_joints is still the file's count. raw=False reads no r1..rN (cmd_r
    None). Rows without a finite time are left out, and so are cmd and state rows whose joint values read
    are not all finite, or finite but past what the device can report (`readable`, by default the physical
    bound alone); all are counted in Recording.skipped. Raises RecordingError when the frame has no
    `t`/`event` columns or no joint columns.
    """
    names = list(df.columns)
    for col in ("t", "event"):
        if col not in names:
            raise RecordingError(f"no '{col}' column")
    qcols = joint_columns("q", names)
    if not qcols:
        raise RecordingError("no joint columns q1..qN")
    read = list(range(len(qcols))) if joints is None else sorted({j for j in joints if 0 <= j < len(qcols)})
    t = _times(df)
    ev, ev_names = label_codes(df, "event")
    # rows are written in time order per loop tick; a frame stamped just before a send can land in the next
    # batch, so order by time here
    order, ev, skipped = _order(t, ev)
    cmd_all, st_all = (_event_rows(ev, ev_names, order, e) for e in ("cmd", "state"))
    cmd_q, state_q = _joints(df, qcols, read, (cmd_all, st_all)) if read else (
        np.full((len(cmd_all), len(qcols)), np.nan), np.full((len(st_all), len(qcols)), np.nan))  # fmt: skip
    readable = readable or Readable()
    cmd_ok, cmd_absurd = _keep_readable(cmd_q, read, readable)
    st_ok, st_absurd = _keep_readable(state_q, read, readable)
    n_cmd, n_st = int(np.count_nonzero(cmd_ok)), int(np.count_nonzero(st_ok))
    skipped["absurd_joint"] = int(np.count_nonzero(cmd_absurd)) + int(np.count_nonzero(st_absurd))
    skipped["nan_joint"] = len(cmd_ok) - n_cmd + len(st_ok) - n_st - skipped["absurd_joint"]
    # most recordings have no row to drop: then no copy of the (long) arrays
    cmd, cmd_q = (cmd_all, cmd_q) if n_cmd == len(cmd_ok) else (cmd_all[cmd_ok], cmd_q[cmd_ok])
    st, state_q = (st_all, state_q) if n_st == len(st_ok) else (st_all[st_ok], state_q[st_ok])
    if order is not None:
        _check_send_order(df, t, cmd)
    rep, flt, grd, stop = (_event_rows(ev, ev_names, order, e) for e in ("reply", "fault", "guard", "stop"))
    del ev
    rcols = joint_columns("r", names) if raw else []
    r_read = [j for j in read if j < len(rcols)]
    cmd_r = _joints(df, rcols, r_read, (cmd,))[0] if r_read else None
    if cmd_r is not None and not np.isfinite(cmd_r).any():
        cmd_r = None
    reply_cmd, guard_info, stop_info = _labels_at(df, "info", (rep, grd, stop[:1]))
    (cmd_phase,) = _labels_at(df, "phase", (cmd,))
    (cmd_pass,) = _ints_at(df, "pass", (cmd,), -1)
    (fault_main,) = _ints_at(df, "main_code", (flt,), 0)
    (fault_sub,) = _ints_at(df, "sub_code", (flt,), 0)
    (dev_t,) = _floats_at(df, "dev_t", (st,))
    ecols = joint_columns("e", names)
    e_read = [j for j in read if j < len(ecols)]
    echo = _joints(df, ecols, e_read, (st,))[0] if e_read else None
    (success,) = _floats_at(df, "success", (st,)) if "success" in names else (None,)
    (errcode,) = _ints_at(df, "errcode", (rep,), 0)
    return Recording(
        cmd_t=t[cmd],
        cmd_q=cmd_q,
        cmd_r=cmd_r,
        cmd_pass=cmd_pass,
        cmd_phase=cmd_phase,
        state_t=t[st],
        state_q=state_q,
        reply_t=t[rep],
        reply_err=errcode,
        reply_cmd=reply_cmd,
        fault_t=t[flt],
        fault_main=fault_main,
        fault_sub=fault_sub,
        state_dev=dev_t,
        state_echo=echo,
        state_success=success,
        guard_t=t[grd],
        guard_info=[str(x) for x in guard_info],
        stop_t=float(t[stop[0]]) if len(stop) else None,
        stop_reason=str(stop_info[0]) if len(stop) else "",
        skipped=skipped,
    )


def check_joint(rec: Recording, joint: int) -> None:
    if not 0 <= joint < rec.n_joints:
        raise RecordingError(f"joint index {joint} is outside 0..{rec.n_joints - 1}")
    if len(rec.cmd_t) < 2:
        raise RecordingError("fewer than two commanded setpoints")
    if len(rec.state_t) < 2:
        raise RecordingError("fewer than two measured state frames")
    for what, t in (("commanded setpoints", rec.cmd_t), ("measured state frames", rec.state_t)):
        # rows all stamped alike (a spreadsheet that filled the column down) hold no timing: a lag, an
        # arrival or a runaway read from them would be made up
        if not t[-1] > t[0]:
            raise RecordingError(f"the {what} all have one time ({t[0]:g} s): no timing to analyse")
