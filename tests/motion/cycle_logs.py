"""Per-cycle logs for the replay tests: read from a step run's CSV, kept compact in a JSON fixture, or drawn.

A log is the target held in each cycle (the raw targets r1..rN of the cmd rows) and the period measured
before it (the controller's time between the state that command answered and the one before).
"""

from __future__ import annotations

import io
import json
from pathlib import Path

import numpy as np
import pandas as pd

from servotool.motion.replay import CycleLog

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"


def log_of_csv(path: Path) -> CycleLog:
    """The per-cycle log of a paced step run (each cmd row followed by the state it answered); the cycles
    after the plan (stop, settle: no raw target) are left out."""
    body = "\n".join(line for line in Path(path).read_text().splitlines() if not line.startswith("#"))
    df = pd.read_csv(io.StringIO(body), low_memory=False)
    qs = [c for c in df.columns if c.startswith("r") and c[1:].isdigit()]
    targets, periods, last_dev = [], [], None
    pending: list[float] | None = None
    for row in df.itertuples(index=False):
        d = row._asdict()
        if d["event"] == "cmd" and not pd.isna(d[qs[0]]):
            pending = [float(d[c]) for c in qs]
        elif d["event"] == "state" and pending is not None:
            dev = float(d["dev_t"])
            targets.append(pending)
            periods.append(0.001 if last_dev is None else round(dev - last_dev, 6))
            last_dev, pending = dev, None
    t = np.array(targets)
    return CycleLog(t[0], t, np.array(periods))


def save_compact(log: CycleLog, path: Path, note: str) -> None:
    """The log as JSON: the start, the cycles where the target changes, and the periods that are not 1 ms."""
    levels = [[0, log.targets[0].tolist()]]
    for k in range(1, len(log.targets)):
        if not np.array_equal(log.targets[k], log.targets[k - 1]):
            levels.append([k, log.targets[k].tolist()])
    late = [[k, float(p)] for k, p in enumerate(log.periods) if p != 0.001]
    doc = {
        "note": note,
        "cycles": len(log.targets),
        "start": log.start.tolist(),
        "levels": levels,
        "late": late,
    }
    path.write_text(json.dumps(doc, indent=1) + "\n")


def load_compact(path: Path) -> CycleLog:
    doc = json.loads(Path(path).read_text())
    n = int(doc["cycles"])
    targets = np.empty((n, len(doc["start"])))
    bounds = [k for k, _ in doc["levels"]] + [n]
    for (k, level), end in zip(doc["levels"], bounds[1:], strict=True):
        targets[k:end] = level
    periods = np.full(n, 0.001)
    for k, p in doc["late"]:
        periods[k] = p
    return CycleLog(np.asarray(doc["start"], dtype=float), targets, periods)


def cartesian_log(seed: int = 2) -> CycleLog:
    """A 4 s Cartesian position log (m), drawn from `seed`: a 5 cm step in y, then y back while z steps
    up (one axis braking while another starts, the move that first made a norm limiter bind), a
    diagonal, a last small step held for 1.5 s; 52 cycles of 2-4 ms among them."""
    rng = np.random.default_rng(seed)
    n = 4000
    t = np.zeros((n, 3))
    t[100:, 1] = 0.05
    t[1000:, 1], t[1000:, 2] = 0.0, 0.05
    t[1600:, 0], t[1600:, 1] = 0.04, -0.03
    t[2500:] = [0.0, 0.02, 0.0]
    periods = np.full(n, 0.001)
    late = rng.choice(np.arange(200, 3000), 52, replace=False)
    periods[late] = rng.choice([0.002, 0.003, 0.004], 52)
    return CycleLog(np.zeros(3), t, periods)
