"""How each step run of a campaign ended: its CSV's end line, how exactly a shaped stream landed on its last
level, and what the backstop behind a generator did (the `backstop` row a run writes after its stream)."""

from __future__ import annotations

import io
import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from servotool.runs.offline.per_file import FileAnalysis

BACKSTOP_INFO = re.compile(r"largest alteration (?P<alt>\S+) deg; (?P<n>\d+) of (?P<of>\d+) commands altered")


@dataclass(frozen=True)
class Ending:
    """One step run's end: `end` the CSV's end line (complete, or the reason), `landing_deg` the largest
    |setpoint - target| over the joints at the last level's last command (None for a raw stream),
    `backstop_deg` / `backstop_altered` / `commands` what the backstop did (None without one); `late` the
    state periods longer than the command period (the controller's clock: a lost packet) and `longest_ms`
    the longest (None when the states carry no controller time)."""

    end: str
    landing_deg: float | None
    backstop_deg: float | None
    backstop_altered: int | None
    commands: int | None
    late: int | None = None
    longest_ms: float | None = None


def _periods(df: pd.DataFrame, period_s: float) -> tuple[int | None, float | None]:
    dev = pd.to_numeric(df[df["event"] == "state"]["dev_t"], errors="coerce").dropna().to_numpy(dtype=float)
    if dev.size < 2 or not period_s > 0:
        return None, None
    gaps = np.diff(dev)
    return int(np.sum(gaps > 1.5 * period_s)), float(np.max(gaps) * 1e3)


def ending_of(fa: FileAnalysis) -> Ending:
    """The ending of one analysed step recording (its CSV read again for the rows the analysis leaves out)."""
    meta = fa.meta
    with Path(fa.path).open() as fh:
        body = "".join(line for line in fh if not line.startswith("#"))
    df = pd.read_csv(io.StringIO(body), low_memory=False)
    end = "complete" if meta.complete else f"interrupted: {meta.end_reason}"
    landing = None
    qs = [c for c in df.columns if re.fullmatch(r"q\d+", str(c))]
    rs = [f"r{c[1:]}" for c in qs]
    if all(r in df.columns for r in rs) and meta.config.get("shaped"):
        held = df[(df["event"] == "cmd") & (df["phase"] == "hold")]
        if len(held):
            q = held[qs].to_numpy(dtype=float)[-1]
            r = held[rs].to_numpy(dtype=float)[-1]
            landing = float(np.max(np.abs(q - r)))
    alt = n = of = None
    rows = df[df["event"] == "backstop"]
    if len(rows):
        m = BACKSTOP_INFO.search(str(rows["info"].iloc[-1]))
        if m:
            alt, n, of = float(m["alt"]), int(m["n"]), int(m["of"])
    late, longest = _periods(df, float(meta.config.get("cmd_period_s") or 0.0))
    return Ending(end, landing, alt, n, of, late, longest)


def _g(x: float | None) -> str:
    return "-" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.3g}"


def ending_rows(files: Sequence[FileAnalysis], label: Callable[[FileAnalysis], str]) -> list[list[str]]:
    """Rows of the endings table: run, shaper, end, landing error, backstop alteration, altered commands."""
    rows = []
    for fa in files:
        e = ending_of(fa)
        cfg = fa.meta.config
        kind = str(cfg.get("shaper", "")) if cfg.get("shaped") else "raw"
        if cfg.get("shaped") and cfg.get("nominal_step") is False:
            kind += ", measured period"
        altered = "-" if e.backstop_altered is None else f"{e.backstop_altered} of {e.commands}"
        late = "-" if e.late is None else f"{e.late} (longest {e.longest_ms:.0f} ms)"
        rows.append([label(fa), kind, e.end, late, _g(e.landing_deg), _g(e.backstop_deg), altered])
    return rows


ENDING_HEADERS = [
    "run",
    "shaper",
    "end",
    "late periods",
    "landing deg",
    "backstop deg",
    "altered",
]
ENDING_NOTE = (
    "end: the recording's end line (a refusal names the robot's reflex); late periods: state periods "
    "over the command period (lost packets), by the controller's clock; landing: the last level's last "
    "setpoint against its target; backstop: the largest change it made to a command (0: never bound)"
)
