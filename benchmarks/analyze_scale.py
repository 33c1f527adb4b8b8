"""How `servotool analyze` scales with a long recording, against a plain pandas read of the same file.

Makes (or reuses) a 1,000,000-row 100 Hz ramp recording with make_ramp_recording.py, then measures, each in
its own fresh process so that peak memory is that measurement's alone:

* anchor: `pandas.read_csv(FILE, comment="#")`
* ours:   `servotool analyze FILE --json` (the whole command: read, analyse, JSON on stdout)

Wall time is taken inside the process around the call (interpreter start-up and library imports excluded
for both: scipy's lazily loaded submodules and typer's value-conversion layer are loaded before the clock
starts; servotool's own modules load inside it); peak memory is the process's peak resident set
(ru_maxrss), imports included on both sides; CPU time (process_time) is printed beside the wall time, as it
depends less on other work on a shared machine. Prints both and the ratios.

    python benchmarks/analyze_scale.py [--file PATH] [--rows 1000000] [--repeat 3]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent

PANDAS = """
import json, resource, sys, time
import pandas as pd
t0, c0 = time.perf_counter(), time.process_time()
df = pd.read_csv(sys.argv[1], comment="#")
dt, cpu = time.perf_counter() - t0, time.process_time() - c0
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(json.dumps({"s": dt, "cpu_s": cpu, "rss_mb": peak, "rows": len(df)}))
"""

OURS = """
import contextlib, io, json, os, resource, sys, time
from servotool.cli.app import app
# scipy loads its submodules on first use and the command imports pandas only when it analyses: import them
# here, so that library imports stay outside the timing on both sides (the anchor's `import pandas` is too)
import pandas, pyarrow.csv, scipy.optimize, scipy.signal, scipy.special
# typer loads its value-conversion layer (pydantic) on the first command it parses: parse one small command
# first, so that this library import too stays outside the timing (servotool's own modules stay inside)
with contextlib.redirect_stdout(io.StringIO()):
    try:
        app(["version"], standalone_mode=False)
    except SystemExit:
        pass
t0, c0 = time.perf_counter(), time.process_time()
out = io.StringIO()
with contextlib.redirect_stdout(out):
    try:
        app(["analyze", sys.argv[1], "--json"], standalone_mode=False)
    except SystemExit:
        pass
dt, cpu = time.perf_counter() - t0, time.process_time() - c0
doc = json.loads(out.getvalue())
lag = doc["files"][0]["result"]["fit"]["lag_ms"]
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(json.dumps({"s": dt, "cpu_s": cpu, "rss_mb": peak, "lag_ms": lag}))
"""


def measure(code: str, path: Path) -> dict[str, float]:
    """Run one measurement in a fresh interpreter; its last stdout line is the JSON result."""
    res = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True, text=True, check=False)
    if res.returncode != 0:
        raise SystemExit(f"measurement failed:\n{res.stderr[-2000:]}")
    return dict(json.loads(res.stdout.strip().splitlines()[-1]))


def _best(runs: list[dict[str, float]]) -> dict[str, float]:
    best = dict(min(runs, key=lambda r: r["s"]))
    best["rss_mb"] = min(r["rss_mb"] for r in runs)
    best["cpu_s"] = min(r["cpu_s"] for r in runs)
    return best


def best_of_interleaved(path: Path, repeat: int) -> tuple[dict[str, float], dict[str, float]]:
    """Best time and lowest peak of each, the two measured in turn (a shared machine's load hits both)."""
    anchor, ours = [], []
    for _ in range(repeat):
        anchor.append(measure(PANDAS, path))
        ours.append(measure(OURS, path))
    return _best(anchor), _best(ours)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--file", type=Path, help="an existing recording (default: generate one)")
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--repeat", type=int, default=3)
    a = ap.parse_args(argv)
    sys.path.insert(0, str(HERE))
    from make_ramp_recording import write_recording

    with tempfile.TemporaryDirectory() as tmp:
        path = a.file
        if path is None:
            path = write_recording(Path(tmp) / "ramp_1m.csv", a.rows, 0.078, 0.0, 1)
        size = path.stat().st_size / 1e6
        anchor, ours = best_of_interleaved(path, a.repeat)
    print(f"file: {path} ({size:.1f} MB, {int(anchor['rows'])} rows)")
    a_cpu, o_cpu = f"(cpu {anchor['cpu_s']:5.2f} s)", f"(cpu {ours['cpu_s']:5.2f} s)"
    print(f"pandas.read_csv : {anchor['s']:7.2f} s {a_cpu}  peak {anchor['rss_mb']:7.0f} MB")
    lag = f"(L = {ours['lag_ms']:.2f} ms)"
    print(f"servotool analyze: {ours['s']:7.2f} s {o_cpu}  peak {ours['rss_mb']:7.0f} MB  {lag}")
    t_ratio, m_ratio = ours["s"] / anchor["s"], ours["rss_mb"] / anchor["rss_mb"]
    print(f"ratio time {t_ratio:.2f}x (goal <= 3), memory {m_ratio:.2f}x (goal <= 1.5)")
    # CPU time (user + system of the process) is less at the mercy of other work on a shared machine
    print(f"ratio cpu {ours['cpu_s'] / anchor['cpu_s']:.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
