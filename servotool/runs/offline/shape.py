"""Replay a recorded run's raw targets through a shaper, offline: what would the wire have carried?"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from servotool.analysis.recording import RecordingError, recording_from_frame
from servotool.analysis.shape import ReplayResult, replay
from servotool.io.csvlog import CsvMeta, read_columns
from servotool.motion.stream_shapers import ShaperSpec


@dataclass
class FileReplay:
    path: Path
    meta: CsvMeta
    source: str  # "raw target (r1..rN)" or "setpoints on the wire (q1..qN)"
    result: ReplayResult
    skipped: dict[str, Any] = field(default_factory=dict)  # rows left out (see runs.analyze.FileAnalysis)

    def to_dict(self) -> dict[str, Any]:
        r = self.result
        return {
            "file": str(self.path),
            "mode": self.meta.mode,
            "device": self.meta.device,
            "complete": self.meta.complete,
            "source": self.source,
            "shaper": r.spec.as_dict(),
            "ticks": int(r.t.size),
            "raw": vars(r.raw_figures),
            "shaped": vars(r.shaped_figures),
            "runaway_band_deg": list(r.runaway_band_deg),
            "raw_crosses_runaway_band": r.crosses_runaway_band("raw"),
            "shaped_crosses_runaway_band": r.crosses_runaway_band("shaped"),
            "max_trail_deg": r.max_trail,
            "arrivals": [vars(a) for a in r.arrivals],
            "skipped_rows": self.skipped,
        }


def replay_file(path: str | Path, spec: ShaperSpec | None = None, **overrides: Any) -> FileReplay:
    """Read a servotool-csv run and replay its raw targets (r1..rN when the run was shaped, else the setpoints
    it sent) through the shaper. The tick period defaults to the run's cmd_period_s. Malformed rows and rows
    with non-finite values are left out and counted. Raises CsvFormatError or RecordingError (both
    FileFormatError) with the file named when the file is damaged or holds no command stream."""
    meta, df = read_columns(path)
    try:
        rec = recording_from_frame(df)
    except RecordingError as exc:
        raise RecordingError(f"{path}: {exc}") from None
    if rec.cmd_t.size < 2:
        raise RecordingError(f"{path}: fewer than two commands recorded: nothing to replay")
    if rec.cmd_r is not None and np.all(np.isfinite(rec.cmd_r)):
        raw, source = rec.cmd_r, "raw target (r1..rN)"
    else:
        raw, source = rec.cmd_q, "setpoints on the wire (q1..qN)"
    if spec is None:
        dt = float(meta.config.get("cmd_period_s") or np.median(np.diff(rec.cmd_t)))
        spec = ShaperSpec(dt=dt, **overrides)
    skipped = {
        "malformed": meta.n_bad_rows,
        "malformed_lines": [{"line": b.line, "reason": b.reason} for b in meta.bad_rows],
        **rec.skipped,
    }
    return FileReplay(Path(path), meta, source, replay(rec.cmd_t, raw, spec), skipped)
