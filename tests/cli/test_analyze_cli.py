"""`servotool analyze` on folders of recordings: good, interrupted, foreign and damaged files."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from servotool.analysis.lag import simulate
from servotool.cli.app import app
from servotool.io.csvlog import CsvLogWriter
from servotool.motion.ramp import ramp_profile
from servotool.runs.stream import columns, units

runner = CliRunner()
T = 0.01


def write_ramp(path: Path, lag: float, speeds=(10.0, 20.0), cut: float | None = None, seed: int = 0) -> Path:
    """A ramp recording as the stream loop writes it, with a known lag (and cut short when `cut` is given)."""
    rng = np.random.default_rng(seed)
    prof = ramp_profile(0.0, 8.0, speeds, dt=T, ramp_s=0.1, settle_s=0.3)
    tc = np.arange(len(prof)) * T
    ts = np.arange(0.0, tc[-1] + 0.3, 0.008)
    m, _ = simulate(tc, prof.q, ts, lag, 0.0)
    m += rng.normal(0, 0.002, len(ts))
    rows = [
        (
            tc[k],
            {"event": "cmd", "seq": k, "pass": prof.pass_index[k], "phase": prof.phase[k], "q1": prof.q[k]},
        )
        for k in range(len(tc))
    ]
    rows += [
        (ts[i], {"event": "state", "q1": m[i], "main_code": 0, "sub_code": 0, "dev_t": ts[i]})
        for i in range(len(ts))
    ]
    rows.sort(key=lambda r: r[0])
    cfg = {"mode": "ramp", "joint": 0, "cmd_period_s": T, "a_max": 500.0, "v_max": 130.0}
    with CsvLogWriter(
        path,
        device="sim:fr3",
        simulated=True,
        config=cfg,
        units=units(6, False),
        columns=columns(6, False),
        command="servotool lag --ramp",
    ) as w:
        for t, row in rows:
            w.write({"t": t, **{f"q{j}": 0.0 for j in range(2, 7)}, **row})
    if cut is not None:
        # what a crash at t = cut leaves: the rows up to then, half a row, no end line
        lines = path.read_text().splitlines(keepends=True)
        header = [ln for ln in lines if ln.startswith("#") and not ln.startswith("# end")]
        body = lines[len(header) :]
        kept = [body[0]] + [
            ln for ln in body[1:] if not ln.startswith("#") and float(ln.split(",")[0]) <= cut
        ]
        path.write_text("".join(header + kept) + "2.0,sta")
    return path


def test_a_folder_is_searched_and_every_problem_gets_one_line(tmp_path):
    sub = tmp_path / "day1" / "fr20"
    sub.mkdir(parents=True)
    write_ramp(sub / "a.csv", 0.111, speeds=(5.0, 10.0), seed=1)
    write_ramp(tmp_path / "b.csv", 0.111, speeds=(10.0, 20.0), seed=2)
    write_ramp(tmp_path / "cut.csv", 0.111, cut=2.0, seed=3)
    (tmp_path / "foreign.csv").write_text("a,b\n1,2\n")
    (tmp_path / "broken.csv").write_text("# servotool-csv: 1\n# config: {not json\nt,event\n")
    (tmp_path / "notes.txt").write_text("ignored: not a csv")

    res = runner.invoke(app, ["analyze", str(tmp_path), "--json", "--plot", str(tmp_path / "plots")])
    assert res.exit_code == 0, res.stderr
    out = json.loads(res.stdout)
    names = sorted(Path(f["file"]).name for f in out["files"])
    assert names == ["a.csv", "b.csv", "cut.csv"]
    problems = {Path(p["file"]).name: p["reason"] for p in out["problems"]}
    assert set(problems) == {"foreign.csv", "broken.csv"}
    assert "not a servotool-csv" in problems["foreign.csv"]
    assert "config" in problems["broken.csv"]
    cut = next(f for f in out["files"] if f["file"].endswith("cut.csv"))
    assert not cut["complete"] and "cut off" in cut["end_reason"]
    assert cut["result"]["fit"]["lag_ms"] == pytest.approx(111.0, abs=0.5)
    combined = out["combined_lag"]
    assert combined["n_files"] == 3 and combined["fit"]["lag_ms"] == pytest.approx(111.0, abs=0.3)
    assert len(list((tmp_path / "plots").glob("*.png"))) == 3
    # on the terminal: one line per skipped file, naming it and the reason
    text = runner.invoke(app, ["analyze", str(tmp_path)])
    skipped = [line for line in text.stderr.splitlines() if line.startswith("skipped")]
    assert len(skipped) == 2 and any("foreign.csv" in line for line in skipped)
    assert "interrupted" in text.stdout and "combined over 3 ramp files" in text.stdout


def test_nothing_analysable_exits_non_zero(tmp_path):
    (tmp_path / "foreign.csv").write_text("x\n1\n")
    res = runner.invoke(app, ["analyze", str(tmp_path / "foreign.csv"), str(tmp_path / "missing.csv")])
    assert res.exit_code == 1
    assert "no such file" in res.stderr and "no file could be analysed" in res.stderr
    empty = tmp_path / "empty"
    empty.mkdir()
    assert runner.invoke(app, ["analyze", str(empty)]).exit_code == 1


def test_other_modes_are_named_not_analysed(tmp_path):
    path = tmp_path / "sweep.csv"
    with CsvLogWriter(
        path,
        device="sim:rosorin-arm",
        simulated=True,
        config={"mode": "sweep"},
        units={},
        columns=["t", "event"],
        command="servotool sweep",
    ) as w:
        w.write(t=0.0, event="x")
    res = runner.invoke(app, ["analyze", str(path), "--json"])
    assert res.exit_code == 1
    assert "mode 'sweep'" in json.loads(res.stdout)["problems"][0]["reason"]
