"""`servotool lag --ramp` end to end on the built-in simulator, and `analyze` giving back the same result."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from servotool.cli.app import app

runner = CliRunner()
SHORT = ["--sweep", "5", "--speeds", "10,20", "--ramp-ms", "100", "--settle-ms", "300"]


def test_lag_ramp_json_plot_and_analyze_agree(tmp_path):
    res = runner.invoke(
        app,
        ["lag", "--ramp", "--robot", "sim:simmachine", *SHORT, "--out", str(tmp_path), "--json", "--plot"],
    )
    assert res.exit_code == 0, res.stderr
    assert "SIMULATED simmachine" in res.stderr
    live = json.loads(res.stdout)
    assert live["run"]["status"] == "complete"
    result = live["analysis"]["result"]
    assert result["fit"]["lag_ms"] == pytest.approx(39.0, abs=0.5)
    assert result["midpoint"]["agrees"]
    assert len(result["passes"]) == 4
    for key in ("fit", "host_fit", "guard_fit", "link", "model", "dynamics", "noise", "tuning"):
        assert result[key] is not None, key
    assert result["tuning"]["lag_s"] == pytest.approx(0.04)
    assert live["plot"].endswith(".png") and (tmp_path / live["plot"].split("/")[-1]).stat().st_size > 10_000
    csv = live["analysis"]["file"]

    again = runner.invoke(app, ["analyze", csv, "--json"])
    assert again.exit_code == 0, again.stderr
    redo = json.loads(again.stdout)
    assert len(redo["files"]) == 1 and redo["problems"] == []
    entry = redo["files"][0]
    entry.pop("plot")
    assert entry == live["analysis"]  # the same figures, recomputed from the CSV alone

    text = runner.invoke(app, ["analyze", csv])
    assert text.exit_code == 0
    for word in (
        "lag L",
        "guard-view lag",
        "midpoint cross-check",
        "model check",
        "dynamics",
        "guard tuning",
    ):
        assert word in text.stdout


def test_lag_refuses_bad_options_with_one_line(tmp_path):
    res = runner.invoke(app, ["lag", "--speeds", "5,fast", "--out", str(tmp_path)])
    assert res.exit_code == 2 and "--speeds" in res.stderr and "Traceback" not in res.stderr
    res = runner.invoke(app, ["lag", "--robot", "sim:fr3", "--speeds", "300", "--out", str(tmp_path)])
    assert res.exit_code == 2 and "refused" in res.stderr
    res = runner.invoke(app, ["lag", "--robot", "nowhere", "--out", str(tmp_path)])
    assert res.exit_code == 2 and "nowhere" in res.stderr
    assert not list(tmp_path.glob("*.csv"))


def test_a_pass_too_short_to_cruise_is_reported_not_a_crash(tmp_path):
    res = runner.invoke(
        app, ["lag", "--ramp", "--sweep", "4", "--speeds", "10,40", "--out", str(tmp_path), "--json"]
    )
    assert res.exit_code == 0, res.stderr
    out = json.loads(res.stdout)
    passes = out["analysis"]["result"]["passes"]
    # the 40 deg/s passes of a 4 deg sweep are triangles: reported as such and left out of the fit
    assert [p["note"] for p in passes[2:]] == ["no cruise", "no cruise"]
    assert out["analysis"]["result"]["fit"]["n_passes"] == 2
