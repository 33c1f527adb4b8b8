"""The controller-clock path of the lag analysis against damaged timestamps: a few frames whose controller
timestamp jumps are outliers of a robust fit (not the envelope's extreme, which they moved: three frames in
800 ahead by 20 ms turned a 78 ms controller into "L = 58.42 ms ± 0.47, pure dead time"), and a lag on the
controller's clock that disagrees with the host view beyond their uncertainty and a state period is said
so (text and JSON), with the host view reported."""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from servotool.analysis.lag import analyze_lag, link
from servotool.analysis.lag.driver import clock_disagreement
from tests.analysis.test_lag import T, recording

DAMAGED = (100, 300, 500)


def _damaged(jump_s: float = 0.020):
    rec = copy.copy(recording(lag=0.078))
    rec.state_dev = rec.state_dev.copy()
    rec.state_dev[list(DAMAGED)] += jump_s
    return rec


@pytest.mark.parametrize("jump_s", [0.020, -0.020, 0.005])
def test_three_jumping_controller_timestamps_do_not_move_the_lag(jump_s):
    rec = _damaged(jump_s)
    assert len(rec.state_t) >= 800
    res = analyze_lag(rec, joint=0, cmd_period_s=T)
    assert res.fit.lag_ms == pytest.approx(78.0, abs=0.1)
    assert res.link.state_mapped and "3 state frame(s)" in res.link.note
    assert not res.warnings


def test_a_clean_recording_has_no_outliers():
    rec = recording(lag=0.078)
    gap = rec.state_t - rec.state_dev
    assert not link.clock_outliers(rec.state_dev, gap, 0.008).any()
    assert "strays" not in analyze_lag(rec, joint=0, cmd_period_s=T).link.note


def test_a_controller_clock_that_disagrees_with_the_host_view_is_reported_and_the_host_view_kept(monkeypatch):
    # the mapping as it was (no outlier rejected): the three frames pull every mapped time 20 ms early
    monkeypatch.setattr(link, "clock_outliers", lambda d, x, period: np.zeros(len(x), dtype=bool))
    res = analyze_lag(_damaged(), joint=0, cmd_period_s=T)
    assert res.fit.lag_ms == pytest.approx(78.0, abs=0.3)  # the host view, not 58
    assert res.host_fit.lag_ms == pytest.approx(res.fit.lag_ms)
    assert not res.link.state_mapped
    (warning,) = [w for w in res.warnings if "controller's clock" in w]
    assert "host view (78." in warning and "the host view is reported" in warning
    assert float(warning.split("controller's clock (")[1].split(" ms")[0]) < 70
    assert warning in json.dumps(res.to_dict())


def test_agreeing_figures_give_no_warning():
    res = analyze_lag(recording(lag=0.078), joint=0, cmd_period_s=T)
    assert clock_disagreement(res) is None


def test_a_damaged_simulator_recording_through_the_command_line(tmp_path: Path):
    run = [sys.executable, "-m", "servotool"]
    done = subprocess.run(
        [
            *run,
            "lag",
            "--robot",
            "sim:fr3?clock=sim",
            "--speeds",
            "15,30",
            "--sweep",
            "40",
            "--out",
            str(tmp_path),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    (csv,) = tmp_path.glob("*.csv")
    lines = csv.read_text().split("\n")
    header = next(line for line in lines if line.startswith("t,event,")).split(",")
    col = header.index("dev_t")
    states = [i for i, line in enumerate(lines) if line.split(",")[1:2] == ["state"]]
    assert len(states) >= 800
    for i in (states[100], states[400], states[700]):
        cells = lines[i].split(",")
        cells[col] = repr(float(cells[col]) + 0.020)
        lines[i] = ",".join(cells)
    damaged = tmp_path / "damaged.csv"
    damaged.write_text("\n".join(lines))
    done = subprocess.run(
        [*run, "analyze", str(damaged), "--json"], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)["files"][0]["result"]
    assert result["fit"]["lag_ms"] == pytest.approx(78.0, abs=0.2)
    assert "3 state frame(s)" in result["link"]["note"] and not result["warnings"]
    text = subprocess.run([*run, "analyze", str(damaged)], capture_output=True, text=True, timeout=120)
    assert "L = 78." in text.stdout or "L = 77.9" in text.stdout, text.stdout
