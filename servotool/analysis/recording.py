"""Turn the rows of a servotool-csv recording into time series the analyses work on.

A recording holds events in time order: `cmd` rows (the setpoint on the wire as q1..qN, for shaped runs
the raw target as r1..rN, with pass/phase labels), `state` rows (measured joints and the fault latch),
`reply` rows (errcode), `fault` rows (a new fault latch), `guard` rows (divergence guard trips) and one
`stop` row when the run ended early. Everything here is pure: a DataFrame in, numpy arrays out.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from servotool.errors import FileFormatError

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
    cmd_pass is -1 where a row carried no pass label; cmd_phase is "" where it carried no phase.
    """

    cmd_t: np.ndarray
    cmd_q: np.ndarray
    cmd_r: np.ndarray | None
    cmd_pass: np.ndarray
    cmd_phase: np.ndarray
    state_t: np.ndarray
    state_q: np.ndarray
    state_main: np.ndarray
    state_sub: np.ndarray
    reply_t: np.ndarray
    reply_err: np.ndarray
    reply_cmd: np.ndarray  # "" for a ServoJ answer, else the command answered
    fault_t: np.ndarray
    fault_main: np.ndarray
    fault_sub: np.ndarray
    state_dev: np.ndarray = field(default_factory=lambda: np.zeros(0))  # controller clock (s), NaN if none
    guard_t: np.ndarray = field(default_factory=lambda: np.zeros(0))
    guard_info: list[str] = field(default_factory=list)
    stop_t: float | None = None
    stop_reason: str = ""
    # rows left out: "no_time" (no finite t), "nan_joint" (a cmd or state row with a non-finite joint)
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


def _num(df: Table, col: str, default: float = np.nan) -> np.ndarray:
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


def _labels(df: Table, col: str) -> tuple[np.ndarray, list[str]]:
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


def _event_rows(ordered_codes: np.ndarray, names: list[str], order: np.ndarray, event: str) -> np.ndarray:
    """Row indices of one event, in time order (ordered_codes: the event codes of the rows in `order`)."""
    if event not in names:
        return np.zeros(0, dtype=np.int64)
    return order[ordered_codes == names.index(event)]


def _label_values(codes: np.ndarray, names: list[str], rows: np.ndarray) -> np.ndarray:
    lookup = np.array([*names, ""], dtype=object)
    c = codes[rows]
    return lookup[np.where(c >= 0, c, len(names))]


def _ints(values: np.ndarray) -> np.ndarray:
    return np.nan_to_num(values).astype(int)


def recording_from_frame(df: Table) -> Recording:
    """Split a servotool-csv DataFrame into per-event arrays, each sorted by time (stable for ties).

    Rows without a finite time are left out, and so are cmd and state rows whose joint values are not all
    finite; both are counted in Recording.skipped. Raises RecordingError when the frame has no `t`/`event`
    columns or no joint columns.
    """
    names = list(df.columns)
    for col in ("t", "event"):
        if col not in names:
            raise RecordingError(f"no '{col}' column")
    qcols = joint_columns("q", names)
    if not qcols:
        raise RecordingError("no joint columns q1..qN")
    rcols = joint_columns("r", names)
    t = _num(df, "t")
    ev, ev_names = _labels(df, "event")
    timed = np.isfinite(t)
    blank = ~timed & (ev < 0)  # an empty line, not a damaged row
    skipped = {"no_time": int((~timed & ~blank).sum()), "nan_joint": 0}
    # rows are written in time order per loop tick; a frame stamped just before a send can land in the next
    # batch, so order by time here (a stable sort keeps the file order for equal stamps)
    order = np.flatnonzero(timed)
    t_timed = t[order]
    if not np.all(t_timed[1:] >= t_timed[:-1]):
        order = order[np.argsort(t_timed, kind="stable")]
    ev = ev[order]
    cmd_all = _event_rows(ev, ev_names, order, "cmd")
    st_all = _event_rows(ev, ev_names, order, "state")
    # one column at a time: a long recording never holds all joint columns at full length at once
    cmd_q = np.empty((len(cmd_all), len(qcols)))
    state_q = np.empty((len(st_all), len(qcols)))
    for j, c in enumerate(qcols):
        values = _num(df, c)
        cmd_q[:, j] = values[cmd_all]
        state_q[:, j] = values[st_all]
        del values
    cmd_ok, st_ok = np.isfinite(cmd_q).all(axis=1), np.isfinite(state_q).all(axis=1)
    skipped["nan_joint"] = int((~cmd_ok).sum() + (~st_ok).sum())
    # most recordings have no row to drop: then no copy of the (long) arrays
    cmd, cmd_q = (cmd_all, cmd_q) if cmd_ok.all() else (cmd_all[cmd_ok], cmd_q[cmd_ok])
    st, state_q = (st_all, state_q) if st_ok.all() else (st_all[st_ok], state_q[st_ok])
    rep, flt, grd, stop = (_event_rows(ev, ev_names, order, e) for e in ("reply", "fault", "guard", "stop"))
    info, info_names = _labels(df, "info")
    phase, phase_names = _labels(df, "phase")
    cmd_r = None
    if rcols:
        r = np.column_stack([_num(df, c)[cmd] for c in rcols])
        if np.isfinite(r).any():
            cmd_r = r
    cmd_pass = _num(df, "pass", -1)[cmd]
    main = _num(df, "main_code", 0)
    state_main, fault_main = _ints(main[st]), _ints(main[flt])
    del main  # one full-length column at a time
    sub = _num(df, "sub_code", 0)
    state_sub, fault_sub = _ints(sub[st]), _ints(sub[flt])
    del sub
    dev_t, errcode = _num(df, "dev_t")[st], _num(df, "errcode", 0)[rep]
    return Recording(
        cmd_t=t[cmd],
        cmd_q=cmd_q,
        cmd_r=cmd_r,
        cmd_pass=np.where(np.isfinite(cmd_pass), cmd_pass, -1).astype(int),
        cmd_phase=_label_values(phase, phase_names, cmd),
        state_t=t[st],
        state_q=state_q,
        state_main=state_main,
        state_sub=state_sub,
        reply_t=t[rep],
        reply_err=_ints(errcode),
        reply_cmd=_label_values(info, info_names, rep),
        fault_t=t[flt],
        fault_main=fault_main,
        fault_sub=fault_sub,
        state_dev=dev_t,
        guard_t=t[grd],
        guard_info=[str(x) for x in _label_values(info, info_names, grd)],
        stop_t=float(t[stop[0]]) if len(stop) else None,
        stop_reason=str(_label_values(info, info_names, stop[:1])[0]) if len(stop) else "",
        skipped=skipped,
    )


def check_joint(rec: Recording, joint: int) -> None:
    if not 0 <= joint < rec.n_joints:
        raise RecordingError(f"joint index {joint} is outside 0..{rec.n_joints - 1}")
    if len(rec.cmd_t) < 2:
        raise RecordingError("fewer than two commanded setpoints")
    if len(rec.state_t) < 2:
        raise RecordingError("fewer than two measured state frames")
