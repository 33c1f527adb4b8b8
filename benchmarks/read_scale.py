"""The reading half of `servotool analyze` on a long recording, against a plain pandas read of the same file.

Measures, each in its own fresh process (so that peak memory is that measurement's alone), interleaved and
best of --repeat:

* anchor: `pandas.read_csv(FILE, comment="#")`
* read:   `read_columns(FILE)` (header, body checks, rows parsed into Arrow columns)
* arrays: `recording_from_frame(read_columns(FILE)[1])`, the per-event arrays the analyses take

Wall time is taken inside the process around the call (imports excluded on every side); peak memory is the
process's peak resident set. Prints each figure and its ratio to the anchor. With --folder DIR it measures
CPU time per file over the first --files recordings of a folder instead (one process, in turn).

    python benchmarks/read_scale.py [--file PATH] [--rows 1000000] [--repeat 3]
    python benchmarks/read_scale.py --folder DIR [--files 100]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent

CODE = """
import json, resource, sys, time
import pandas as pd
import pyarrow.csv
from servotool.io.csvlog import read_columns
from servotool.analysis.recording import recording_from_frame
what, path = sys.argv[1], sys.argv[2]
t0 = time.perf_counter()
if what == "pandas":
    rows = len(pd.read_csv(path, comment="#"))
elif what == "read":
    rows = len(read_columns(path)[1])
else:
    rec = recording_from_frame(read_columns(path)[1])
    rows = len(rec.cmd_t) + len(rec.state_t)
dt = time.perf_counter() - t0
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(json.dumps({"s": dt, "rss_mb": peak, "rows": rows}))
"""

FOLDER = """
import json, sys, time
from pathlib import Path
import pandas as pd
import pyarrow.csv
from servotool.io.csvlog import read_columns
from servotool.analysis.recording import recording_from_frame
files = sorted(Path(sys.argv[1]).glob("*.csv"))[: int(sys.argv[2])]
cases = {
    "pandas": lambda f: pd.read_csv(f, comment="#"),
    "read": lambda f: read_columns(f),
    "arrays": lambda f: recording_from_frame(read_columns(f)[1]),
}
best = {}
for _ in range(3):
    for name, fn in cases.items():
        t0 = time.process_time()
        for f in files:
            fn(f)
        best[name] = min(best.get(name, 1e9), (time.process_time() - t0) / len(files))
print(json.dumps({"files": len(files), **best}))
"""

LABELS = {
    "pandas": "pandas.read_csv",
    "read": "read_columns",
    "arrays": "read + per-event arrays",
}


def measure(what: str, path: Path) -> dict[str, float]:
    res = subprocess.run(
        [sys.executable, "-c", CODE, what, str(path)], capture_output=True, text=True, check=False
    )
    if res.returncode != 0:
        raise SystemExit(f"measurement failed:\n{res.stderr[-2000:]}")
    return dict(json.loads(res.stdout.strip().splitlines()[-1]))


def one_file(path: Path, repeat: int) -> None:
    runs: dict[str, list[dict[str, float]]] = {k: [] for k in LABELS}
    for _ in range(repeat):
        for what in LABELS:
            runs[what].append(measure(what, path))
    best = {k: (min(r["s"] for r in v), min(r["rss_mb"] for r in v)) for k, v in runs.items()}
    anchor_s, anchor_mb = best["pandas"]
    print(f"file: {path} ({path.stat().st_size / 1e6:.1f} MB)")
    for what, (s, mb) in best.items():
        ratios = f"({s / anchor_s:4.2f}x)  peak {mb:5.0f} MB ({mb / anchor_mb:4.2f}x)"
        print(f"{LABELS[what]:24s}: {s:6.3f} s {ratios}")


def folder(path: Path, files: int) -> None:
    res = subprocess.run(
        [sys.executable, "-c", FOLDER, str(path), str(files)], capture_output=True, text=True, check=False
    )
    if res.returncode != 0:
        raise SystemExit(f"measurement failed:\n{res.stderr[-2000:]}")
    doc = json.loads(res.stdout.strip().splitlines()[-1])
    print(f"folder: {path} (first {doc['files']} files), CPU per file, best of 3")
    for what in LABELS:
        print(f"{LABELS[what]:24s}: {doc[what] * 1e3:6.2f} ms ({doc[what] / doc['pandas']:4.2f}x)")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--file", type=Path, help="an existing recording (default: generate one)")
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--folder", type=Path, help="a folder of recordings: CPU per file instead")
    ap.add_argument("--files", type=int, default=100)
    a = ap.parse_args(argv)
    if a.folder is not None:
        folder(a.folder, a.files)
        return 0
    sys.path.insert(0, str(HERE))
    from make_ramp_recording import write_recording

    with tempfile.TemporaryDirectory() as tmp:
        path = a.file or write_recording(Path(tmp) / "ramp_1m.csv", a.rows, 0.078, 0.0, 1)
        one_file(path, a.repeat)
    return 0


if __name__ == "__main__":
    sys.exit(main())
