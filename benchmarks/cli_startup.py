"""How long `servotool --help` takes to appear, against the least any Python CLI costs.

Goal: under 0.25 s. Each figure is the median wall time of fresh processes (the first run is discarded so
the file cache is warm); the anchors are `python -c pass` (the interpreter alone) and
`python -c "import typer"` (the CLI framework alone). Prints each median and the ratio of `servotool --help`
to each anchor; the figures depend on the machine and its load. Run:

    python benchmarks/cli_startup.py [--repeat 9] [--json]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time

CASES = {
    "servotool --help": [sys.executable, "-m", "servotool", "--help"],
    "python -c pass": [sys.executable, "-c", "pass"],
    'python -c "import typer"': [sys.executable, "-c", "import typer"],
}


def median_wall_s(argv: list[str], repeat: int) -> float:
    """The median wall time of `repeat` runs of argv, in seconds (one discarded warm-up run first)."""
    times = []
    for i in range(repeat + 1):
        start = time.perf_counter()
        subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True,
                       env=None)
        if i:
            times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=9)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    figures = {name: median_wall_s(argv, args.repeat) for name, argv in CASES.items()}
    ours = figures["servotool --help"]
    result = {
        "median_s": figures,
        "ratio_to_python": ours / figures["python -c pass"],
        "ratio_to_typer": ours / figures['python -c "import typer"'],
        "goal_s": 0.25,
    }
    if args.json:
        print(json.dumps(result, indent=2))
        return
    for name, seconds in figures.items():
        print(f"{name:28s} {seconds * 1000:8.1f} ms")
    print(f"ratio to python -c pass       {result['ratio_to_python']:8.2f}")
    print(f"ratio to import typer         {result['ratio_to_typer']:8.2f}")
    print(f"goal                          {250.0:8.1f} ms  ({'met' if ours < 0.25 else 'NOT met'})")


if __name__ == "__main__":
    main()
