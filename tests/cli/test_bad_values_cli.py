"""Impossible readings end to end: a value no device could report is a bad frame, counted and left out."""

import json
import shutil
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from servotool.cli.app import app
from servotool.io.limits_yaml import load_limits

runner = CliRunner()
EXAMPLE = Path(__file__).resolve().parents[2] / "params" / "rosorin-arm-limits.yaml"


@pytest.fixture(autouse=True)
def own_state_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("SERVOTOOL_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.setenv("SERVOTOOL_LOCK_DIR", str(tmp_path / "locks"))


def test_an_impossible_position_during_a_sweep_is_no_stall_and_the_merged_limit_is_true(tmp_path):
    limits = tmp_path / "arm_limits.yaml"
    shutil.copy(EXAMPLE, limits)
    out = tmp_path / "out"
    args = ["--joint", "4", "--direction", "down", "--limits", str(limits), "--out", str(out), "--json"]
    clean = runner.invoke(app, ["sweep", "--bus", "sim:rosorin-arm?clock=sim", *args])
    assert clean.exit_code == 0, clean.output
    # every 7th read of servo 4 answers 15496, checksum valid: the reply the board's decoder accepts
    bus = "sim:rosorin-arm?clock=sim&bad_read_4=15496&bad_read_every=7"
    result = runner.invoke(app, ["sweep", "--bus", bus, *args])
    assert result.exit_code == 0, result.output
    data, truth = json.loads(result.stdout), json.loads(clean.stdout)
    (sw,) = data["sweeps"]
    assert sw["reason"] == truth["sweeps"][0]["reason"] == "reached stored limit"
    assert data["found"]["4"]["lo"] == truth["found"]["4"]["lo"] == 20
    assert data["bad_frames_left_out"] > 5 and truth["bad_frames_left_out"] == 0
    assert any(n.startswith(f"{data['bad_frames_left_out']} bad frames left out") for n in data["notes"])
    merged = load_limits(Path(data["outputs"]["yaml"]))
    assert merged.limits[4][0] == 20
    (csv_path,) = data["outputs"]["csv"]
    rows = Path(csv_path).read_text().splitlines()
    bad_rows = [line for line in rows if ",bad," in line]
    assert len(bad_rows) == data["bad_frames_left_out"] and all(r.endswith(",15496") for r in bad_rows)
    # recorded as it came, on its own rows: never a state reading the stall test or the limit saw
    assert not [line for line in rows if ",state," in line and line.endswith(",15496")]
    assert yaml.safe_load(limits.read_text()) == yaml.safe_load(EXAMPLE.read_text())
