"""Write a long synthetic ramp recording (servotool-csv v1) for the analyze benchmarks.

The model is the simulator's physics without the sockets: the setpoint stream of `servotool lag --ramp`
(100 Hz, passes at several speeds repeated until the row budget is spent), measured = that stream delayed by
the lag and passed through a first-order filter, plus seeded encoder noise, sampled every state period and
received a little later; every setpoint gets a UDP answer. Deterministic for a given seed.

    python benchmarks/make_ramp_recording.py OUT.csv [--rows 1000000] [--lag-ms 78] [--seed 1]
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

import numpy as np
import pandas as pd

from servotool.analysis.lag import simulate
from servotool.io.csvlog import CsvLogWriter
from servotool.motion.ramp import ramp_profile
from servotool.runs.arm.stream import columns, units

CMD_PERIOD_S = 0.01
STATE_PERIOD_S = 0.008
SPEEDS = (5.0, 10.0, 20.0, 40.0)
SWEEP_DEG = 20.0
RTT_S = 0.0003


def _profile(n_cmd: int) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """Commanded q, pass index and phase for n_cmd ticks: the ramp profile repeated, passes renumbered."""
    prof = ramp_profile(0.0, SWEEP_DEG, SPEEDS, dt=CMD_PERIOD_S, ramp_s=0.2, settle_s=0.5)
    reps = math.ceil(n_cmd / len(prof.q))
    n_pass = int(np.max(prof.pass_index)) + 1
    q = np.tile(prof.q, reps)[:n_cmd]
    pidx = np.concatenate([np.asarray(prof.pass_index) + k * n_pass for k in range(reps)])[:n_cmd]
    phase = (list(prof.phase) * reps)[:n_cmd]
    return q, pidx, phase


def build_rows(n_rows: int, lag_s: float, tau_s: float, seed: int) -> pd.DataFrame:
    """About n_rows rows of cmd, reply and state events in time order."""
    rng = np.random.default_rng(seed)
    per_s = 2 / CMD_PERIOD_S + 1 / STATE_PERIOD_S  # cmd + reply + state rows per second
    duration = n_rows / per_s
    n_cmd = int(duration / CMD_PERIOD_S)
    q, pidx, phase = _profile(n_cmd)
    tc = np.arange(n_cmd) * CMD_PERIOD_S + rng.uniform(0, 2e-4, n_cmd)
    ts = np.arange(0.0, tc[-1], STATE_PERIOD_S)
    m, _ = simulate(tc, q, ts, lag_s, tau_s)
    m += rng.normal(0.0, 0.002, len(ts))
    tr = ts + rng.uniform(1e-4, 4e-4, len(ts))
    cmd = pd.DataFrame(
        {"t": tc, "event": "cmd", "seq": np.arange(n_cmd), "pass": pidx, "phase": phase, "q1": q}
    )
    rep = pd.DataFrame({"t": tc + RTT_S, "event": "reply", "errcode": 0})
    st = pd.DataFrame(
        {"t": tr, "event": "state", "q1": m, "main_code": 0, "sub_code": 0, "dev_t": ts + 100.0}
    )
    df = pd.concat([cmd, rep, st], ignore_index=True).sort_values("t", kind="mergesort")
    for j in range(2, 7):
        df.loc[df["event"] != "reply", f"q{j}"] = 0.0
    return df


def write_recording(path: Path, n_rows: int, lag_s: float, tau_s: float, seed: int) -> Path:
    """Write the recording to path (overwrites); returns path."""
    df = build_rows(n_rows, lag_s, tau_s, seed)
    cols = columns(6, False)
    cfg = {"mode": "ramp", "joint": 0, "cmd_period_s": CMD_PERIOD_S, "a_max": 500.0, "v_max": 130.0}
    path.unlink(missing_ok=True)
    with CsvLogWriter(
        path,
        device="sim:fr3",
        simulated=True,
        config=cfg,
        units=units(6, False),
        columns=cols,
        command="servotool lag --ramp (synthetic benchmark recording)",
    ):
        pass
    lines = path.read_text().splitlines(keepends=True)
    head = "".join(ln for ln in lines if not ln.startswith("# end"))
    with path.open("w") as fh:
        fh.write(head)
        df.reindex(columns=cols).to_csv(
            fh, header=False, index=False, float_format="%.10g", lineterminator="\n"
        )
        fh.write("# end: complete\n")
    return path


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out", type=Path)
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--lag-ms", type=float, default=78.0)
    ap.add_argument("--tau-ms", type=float, default=0.0)
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args(argv)
    write_recording(a.out, a.rows, a.lag_ms / 1e3, a.tau_ms / 1e3, a.seed)
    print(f"{a.out}: {a.out.stat().st_size / 1e6:.1f} MB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
