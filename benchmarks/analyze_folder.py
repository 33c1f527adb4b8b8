"""`servotool analyze` on a folder of many recordings, on every core, against reading them with pandas.

Makes (or reuses) a folder of N short ramp recordings (make_ramp_recording.py, a different seed and lag per
file), then measures, each in a fresh process:

* anchor: every file read with `pandas.read_csv(FILE, comment="#")` one after the other on one core; the
  figure compared is that time divided by the number of cores
* ours:   `servotool analyze FOLDER --json` (a process per core, progress by callback)

Prints both, and the ratio (goal <= 1.2). Wall times on a shared machine swing with its other work; with
--cpu-files N it also prints the CPU time per file in one process (`time.process_time`) of analysing each of
the first N files and of reading it with pandas, interleaved file by file, three rounds.

    python benchmarks/analyze_folder.py [--folder DIR] [--files 1000] [--rows 3000] [--repeat 1]
                                        [--cpu-files 100]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent

PANDAS = """
import json, sys, time
from pathlib import Path
import pandas as pd
files = sorted(Path(sys.argv[1]).glob("*.csv"))
t0 = time.perf_counter()
rows = sum(len(pd.read_csv(f, comment="#")) for f in files)
print(json.dumps({"s": time.perf_counter() - t0, "files": len(files), "rows": rows}))
"""

OURS = """
import contextlib, io, json, sys, time
from servotool.cli.app import app
import pandas, pyarrow.csv, scipy.optimize, scipy.signal, scipy.special  # library imports outside the timing
t0 = time.perf_counter()
out = io.StringIO()
with contextlib.redirect_stdout(out):
    try:
        app(["analyze", sys.argv[1], "--json"], standalone_mode=False)
    except SystemExit:
        pass
dt = time.perf_counter() - t0
doc = json.loads(out.getvalue())
print(json.dumps({"s": dt, "files": len(doc["files"]), "problems": len(doc["problems"])}))
"""


CPU = """
import json, sys, time
from pathlib import Path
import pandas as pd
from servotool.runs.offline.analyze import analyze_any
files = sorted(Path(sys.argv[1]).glob("*.csv"))[: int(sys.argv[2])]
for f in files[:3]:  # first calls load what they need
    analyze_any(f, keep_recording=False)
    pd.read_csv(f, comment="#")
ours, anchor = [], []
for _ in range(3):
    a = b = 0.0
    for f in files:
        t = time.process_time()
        analyze_any(f, keep_recording=False)
        a += time.process_time() - t
        t = time.process_time()
        pd.read_csv(f, comment="#")
        b += time.process_time() - t
    ours.append(a / len(files))
    anchor.append(b / len(files))
print(json.dumps({"ours": ours, "pandas": anchor, "files": len(files)}))
"""


def measure(code: str, folder: Path, *args: str) -> dict[str, Any]:
    res = subprocess.run(
        [sys.executable, "-c", code, str(folder), *args], capture_output=True, text=True, check=False
    )
    if res.returncode != 0:
        raise SystemExit(f"measurement failed:\n{res.stderr[-2000:]}")
    return dict(json.loads(res.stdout.strip().splitlines()[-1]))


def make_folder(folder: Path, files: int, rows: int) -> None:
    sys.path.insert(0, str(HERE))
    from make_ramp_recording import write_recording

    folder.mkdir(parents=True, exist_ok=True)
    for k in range(files):
        write_recording(folder / f"ramp_{k:04d}.csv", rows, 0.040 + 0.0001 * k, 0.0, k)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--folder", type=Path, help="an existing folder of recordings (default: generate one)")
    ap.add_argument("--files", type=int, default=1000)
    ap.add_argument("--rows", type=int, default=3000)
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--cpu-files", type=int, default=0, help="also CPU per file in one process, on N files")
    a = ap.parse_args(argv)
    cores = os.cpu_count() or 1
    with tempfile.TemporaryDirectory() as tmp:
        folder = a.folder
        if folder is None or not any(folder.glob("*.csv")):
            folder = folder or Path(tmp) / "campaign"
            make_folder(folder, a.files, a.rows)
        anchors, ours = [], []
        for _ in range(a.repeat):
            anchors.append(measure(PANDAS, folder))
            ours.append(measure(OURS, folder))
        cpu = measure(CPU, folder, str(a.cpu_files)) if a.cpu_files > 0 else None
    anchor = min(anchors, key=lambda r: r["s"])
    mine = min(ours, key=lambda r: r["s"])
    per_core = anchor["s"] / cores
    print(f"folder: {folder} ({int(anchor['files'])} files, {int(anchor['rows'])} rows), {cores} cores")
    print(f"pandas.read_csv, one core : {anchor['s']:7.2f} s  -> / {cores} cores = {per_core:.2f} s")
    print(f"servotool analyze         : {mine['s']:7.2f} s  ({int(mine['files'])} analysed)")
    print(f"ratio {mine['s'] / per_core:.2f}x (goal <= 1.2)")
    if cpu is not None:
        o, p = (" ".join(f"{1e3 * x:.2f}" for x in cpu[k]) for k in ("ours", "pandas"))
        ratio = statistics.median(cpu["ours"]) / statistics.median(cpu["pandas"])
        print(
            f"CPU per file, one process, {cpu['files']} files x 3: ours {o} ms, pandas {p} ms, "
            f"median ratio {ratio:.2f}x"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
