"""Turn the rows of a servotool-csv recording into time series the analyses work on.

A recording holds events in time order: `cmd` rows (the setpoint on the wire as q1..qN, for shaped runs
the raw target as r1..rN, with pass/phase labels), `state` rows (measured joints and the fault latch),
`reply` rows (errcode), `fault` rows (a new fault latch), `guard` rows (divergence guard trips) and one
`stop` row when the run ended early. Everything here is pure: a DataFrame in, numpy arrays out.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

EVENTS = ("cmd", "state", "reply", "fault", "guard", "stop")


class RecordingError(ValueError):
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

    @property
    def n_joints(self) -> int:
        return int(self.cmd_q.shape[1])

    def commanded(self, joint: int) -> tuple[np.ndarray, np.ndarray]:
        return self.cmd_t, self.cmd_q[:, joint]

    def measured(self, joint: int) -> tuple[np.ndarray, np.ndarray]:
        return self.state_t, self.state_q[:, joint]

    def latest_measured_at(self, t: np.ndarray, joint: int) -> np.ndarray:
        """The measured value a live loop had at times t: the last state frame received at or before t.

        NaN where no frame had arrived yet.
        """
        idx = np.searchsorted(self.state_t, t, side="right") - 1
        out = np.full(len(t), np.nan)
        ok = idx >= 0
        out[ok] = self.state_q[idx[ok], joint]
        return out


def _num(df: pd.DataFrame, col: str, default: float = np.nan) -> np.ndarray:
    if col not in df.columns:
        return np.full(len(df), default, dtype=float)
    return pd.to_numeric(df[col], errors="coerce").to_numpy(dtype=float)


def _str(df: pd.DataFrame, col: str) -> np.ndarray:
    if col not in df.columns:
        return np.full(len(df), "", dtype=object)
    return df[col].astype("string").fillna("").to_numpy(dtype=object)


def recording_from_frame(df: pd.DataFrame) -> Recording:
    """Split a servotool-csv DataFrame into per-event arrays, each sorted by time (stable for ties).

    Raises RecordingError when the frame has no `t`/`event` columns or no joint columns.
    """
    for col in ("t", "event"):
        if col not in df.columns:
            raise RecordingError(f"no '{col}' column")
    qcols = joint_columns("q", df.columns)
    if not qcols:
        raise RecordingError("no joint columns q1..qN")
    rcols = joint_columns("r", df.columns)
    t = _num(df, "t")
    keep = np.isfinite(t)
    df = df.loc[keep].copy()
    df["_t"] = t[keep]
    # rows are written in time order per loop tick; a frame stamped just before a send can land in the next
    # batch, so order by time here (mergesort keeps the file order for equal stamps)
    df = df.sort_values("_t", kind="mergesort")
    ev = df["event"].fillna("").astype(str).to_numpy()

    def part(name: str) -> pd.DataFrame:
        return df.loc[ev == name]

    cmd = part("cmd")
    st = part("state")
    rep = part("reply")
    flt = part("fault")
    grd = part("guard")
    stop = part("stop")

    cmd_r = None
    if rcols:
        r = cmd[rcols].apply(pd.to_numeric, errors="coerce").to_numpy(dtype=float)
        if np.isfinite(r).any():
            cmd_r = r
    cmd_pass = _num(cmd, "pass", -1)
    cmd_pass = np.where(np.isfinite(cmd_pass), cmd_pass, -1).astype(int)
    stop_t = float(stop["_t"].iloc[0]) if len(stop) else None
    stop_reason = str(_str(stop, "info")[0]) if len(stop) else ""
    return Recording(
        cmd_t=cmd["_t"].to_numpy(dtype=float),
        cmd_q=cmd[qcols].apply(pd.to_numeric, errors="coerce").to_numpy(dtype=float),
        cmd_r=cmd_r,
        cmd_pass=cmd_pass,
        cmd_phase=_str(cmd, "phase"),
        state_t=st["_t"].to_numpy(dtype=float),
        state_q=st[qcols].apply(pd.to_numeric, errors="coerce").to_numpy(dtype=float),
        state_main=np.nan_to_num(_num(st, "main_code", 0)).astype(int),
        state_sub=np.nan_to_num(_num(st, "sub_code", 0)).astype(int),
        reply_t=rep["_t"].to_numpy(dtype=float),
        reply_err=np.nan_to_num(_num(rep, "errcode", 0)).astype(int),
        reply_cmd=_str(rep, "info"),
        fault_t=flt["_t"].to_numpy(dtype=float),
        fault_main=np.nan_to_num(_num(flt, "main_code", 0)).astype(int),
        fault_sub=np.nan_to_num(_num(flt, "sub_code", 0)).astype(int),
        state_dev=_num(st, "dev_t"),
        guard_t=grd["_t"].to_numpy(dtype=float),
        guard_info=[str(s) for s in _str(grd, "info")],
        stop_t=stop_t,
        stop_reason=stop_reason,
    )


def check_joint(rec: Recording, joint: int) -> None:
    if not 0 <= joint < rec.n_joints:
        raise RecordingError(f"joint index {joint} is outside 0..{rec.n_joints - 1}")
    if len(rec.cmd_t) < 2:
        raise RecordingError("fewer than two commanded setpoints")
    if len(rec.state_t) < 2:
        raise RecordingError("fewer than two measured state frames")
