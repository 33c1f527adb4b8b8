"""Where a short recording's analysis spends its CPU, stage by stage, against reading it with pandas.

For ramp recordings of several lengths (make_ramp_recording.py, same seed and lag), prints the CPU time
(`time.process_time`, best of --repeat rounds of --calls calls) of each stage of `servotool analyze` on one
file in one process, and of `pandas.read_csv(FILE, comment="#")`, the anchor of the folder goal:

* read:     the servotool-csv reader (header, body through pyarrow, checks)
* events:   the per-event arrays the analyses take (analysis.recording)
* analysis: the lag analysis (passes, midpoints, dynamic fit, cruise deltas, summaries)
* output:   the tidy-table rows and the file's JSON, as a folder's worker makes them

then ours (their sum), pandas, and the ratio. A stage whose time stays flat while the rows double is paid
per call (numpy and Python overhead), not per row.

    python benchmarks/analysis_cost.py [--rows 1500,3000,6000,12000] [--calls 20] [--repeat 5]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from make_ramp_recording import write_recording  # noqa: E402

from servotool.analysis.recording import recording_from_frame  # noqa: E402
from servotool.io.csvlog import read_columns  # noqa: E402
from servotool.io.jsondoc import compact  # noqa: E402
from servotool.runs.offline import analyze as run  # noqa: E402

LAG_S = 0.078


def best_cpu(fn: Callable[[], Any], calls: int, repeat: int) -> float:
    """The lowest mean CPU seconds per call over `repeat` rounds of `calls` calls."""
    fn()
    best = float("inf")
    for _ in range(repeat):
        t = time.process_time()
        for _ in range(calls):
            fn()
        best = min(best, (time.process_time() - t) / calls)
    return best


def stages(path: Path, calls: int, repeat: int) -> dict[str, float]:
    """CPU seconds per call of each stage on one file, and of the pandas anchor."""
    meta, table = read_columns(path, run._columns_read, lazy=run.FAULT_CODES)
    joint = run._joint_read(meta)
    rec = recording_from_frame(table, None if joint is None else [joint], raw=False)
    result = run._analyse(meta, rec)

    def output() -> None:
        fa = run.FileAnalysis(path, meta, None, result, dict(rec.skipped, faults=len(rec.fault_t)))
        fa.rows = run.table_rows(fa, rec)
        compact(fa.to_dict())

    def events() -> None:
        _, cols = read_columns(path, run._columns_read, lazy=run.FAULT_CODES)
        recording_from_frame(cols, None if joint is None else [joint], raw=False)

    read = best_cpu(lambda: read_columns(path, run._columns_read, lazy=run.FAULT_CODES), calls, repeat)
    return {
        "read": read,
        "events": max(best_cpu(events, calls, repeat) - read, 0.0),
        "analysis": best_cpu(lambda: run._analyse(meta, rec), calls, repeat),
        "output": best_cpu(output, calls, repeat),
        "pandas": best_cpu(lambda: pd.read_csv(path, comment="#"), calls, repeat),
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", default="1500,3000,6000,12000", help="recording lengths, comma-separated")
    ap.add_argument("--calls", type=int, default=20)
    ap.add_argument("--repeat", type=int, default=5)
    a = ap.parse_args(argv)
    sizes = [int(x) for x in a.rows.split(",") if x.strip()]
    print(f"CPU per file, ms (best of {a.repeat} x {a.calls} calls)")
    print(
        f"{'rows':>6} {'read':>6} {'events':>6} {'analysis':>8} {'output':>6} {'ours':>6} "
        f"{'pandas':>6} {'ratio':>6}"
    )
    with tempfile.TemporaryDirectory() as tmp:
        for rows in sizes:
            path = write_recording(Path(tmp) / f"ramp_{rows}.csv", rows, LAG_S, 0.0, 1)
            s = stages(path, a.calls, a.repeat)
            ours = s["read"] + s["events"] + s["analysis"] + s["output"]
            print(
                f"{rows:>6} {1e3 * s['read']:6.2f} {1e3 * s['events']:6.2f} {1e3 * s['analysis']:8.2f} "
                f"{1e3 * s['output']:6.2f} {1e3 * ours:6.2f} {1e3 * s['pandas']:6.2f} "
                f"{ours / s['pandas']:5.2f}x"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
