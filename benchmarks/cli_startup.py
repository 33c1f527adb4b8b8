"""How long `servotool --help` and a one-file `servotool analyze` take, against the least they could cost.

Goal: `--help` under 0.25 s. Each figure is the median wall time of fresh processes (the first run is
discarded so the file cache is warm); the anchors of `--help` are `python -c pass` (the interpreter alone)
and `python -c "import typer"` (the CLI framework alone). The anchor of `servotool analyze FILE --json` is
reading the same file with pandas in a fresh process (`python -c "import pandas; pandas.read_csv(FILE,
comment='#')"`): what a script that only loads the recording already pays. FILE is a 3,000-row ramp
recording written by make_ramp_recording.py into a temporary folder unless --file names one. Prints each
median and the ratios of ours to each anchor (for the analyze pair also the median CPU time, user +
system, which a shared machine's load disturbs less); the figures depend on the machine and its load. Run:

    python benchmarks/cli_startup.py [--repeat 9] [--file F] [--json]
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent

CASES = {
    "servotool --help": [sys.executable, "-m", "servotool", "--help"],
    "python -c pass": [sys.executable, "-c", "pass"],
    'python -c "import typer"': [sys.executable, "-c", "import typer"],
}


def median_wall_s(argv: list[str], repeat: int, cpu: dict[str, float] | None = None) -> float:
    """The median wall time of `repeat` runs of argv, in seconds (one discarded warm-up run first); with
    cpu, also stores there the median CPU time (user + system) of those runs under the key " ".join(argv)."""
    times, cpus = [], []
    for i in range(repeat + 1):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True, env=None)
        if i:
            times.append(time.perf_counter() - start)
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            cpus.append(after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime)
    if cpu is not None:
        cpu[" ".join(argv)] = statistics.median(cpus)
    return statistics.median(times)


def analyze_cases(path: Path) -> dict[str, list[str]]:
    """One file analysed by servotool, and the same file read by pandas, each in a fresh process."""
    read = f"import pandas; pandas.read_csv({str(path)!r}, comment='#')"
    return {
        "servotool analyze FILE --json": [sys.executable, "-m", "servotool", "analyze", str(path), "--json"],
        "pandas.read_csv(FILE)": [sys.executable, "-c", read],
    }


def measure(repeat: int, path: Path) -> dict[str, Any]:
    """Every median, and the ratios of ours to the anchors."""
    figures = {name: median_wall_s(argv, repeat) for name, argv in CASES.items()}
    cpu: dict[str, float] = {}
    cases = analyze_cases(path)
    figures |= {name: median_wall_s(argv, repeat, cpu) for name, argv in cases.items()}
    cpu_s = {name: cpu[" ".join(argv)] for name, argv in cases.items()}
    ours = figures["servotool --help"]
    return {
        "median_s": figures,
        "ratio_to_python": ours / figures["python -c pass"],
        "ratio_to_typer": ours / figures['python -c "import typer"'],
        "analyze_ratio_to_pandas": (
            figures["servotool analyze FILE --json"] / figures["pandas.read_csv(FILE)"]
        ),
        "analyze_cpu_s": cpu_s,
        "analyze_cpu_ratio_to_pandas": (
            cpu_s["servotool analyze FILE --json"] / cpu_s["pandas.read_csv(FILE)"]
        ),
        "goal_s": 0.25,
        "file": str(path),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=9)
    parser.add_argument("--file", type=Path, help="the recording to analyse (default: a 3,000-row ramp)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = args.file
        if path is None:
            path = Path(tmp) / "ramp.csv"
            subprocess.run(
                [
                    sys.executable,
                    str(HERE / "make_ramp_recording.py"),
                    str(path),
                    "--rows",
                    "3000",
                    "--tau-ms",
                    "20",
                ],
                stdout=subprocess.DEVNULL,
                check=True,
            )
        result = measure(args.repeat, path)
    if args.json:
        print(json.dumps(result, indent=2))
        return
    for name, seconds in result["median_s"].items():
        print(f"{name:30s} {seconds * 1000:8.1f} ms")
    print(f"--help: ratio to python -c pass  {result['ratio_to_python']:8.2f}")
    print(f"--help: ratio to import typer    {result['ratio_to_typer']:8.2f}")
    met = "met" if result["median_s"]["servotool --help"] < 0.25 else "NOT met"
    print(f"--help: goal                     {250.0:8.1f} ms  ({met})")
    print(f"analyze FILE: ratio to pandas    {result['analyze_ratio_to_pandas']:8.2f}")
    for name, seconds in result["analyze_cpu_s"].items():
        print(f"{name:30s} {seconds * 1000:8.1f} ms CPU")
    print(f"analyze FILE: CPU ratio          {result['analyze_cpu_ratio_to_pandas']:8.2f}")


if __name__ == "__main__":
    main()
