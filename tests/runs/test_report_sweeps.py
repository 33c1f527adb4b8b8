"""A sweep's limit is one number wherever it is read: the live command, `analyze` and the campaign report."""

import json

import pytest
from typer.testing import CliRunner

from servotool.cli.app import app
from servotool.runs.campaign.report import build_report

runner = CliRunner()


@pytest.fixture(autouse=True)
def own_dirs(tmp_path, monkeypatch):
    monkeypatch.setenv("SERVOTOOL_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.setenv("SERVOTOOL_LOCK_DIR", str(tmp_path / "locks"))


@pytest.mark.parametrize("inside", [0, 20])
def test_the_report_and_analyze_give_the_sweeps_own_limits(tmp_path, inside):
    # analyze read --inside 0 as the default 20, and the report set a sweep that reached the stored limit
    # at that limit (arm_limit_3: [10, 990]) where the sweep itself had set it inside (30..970)
    out = tmp_path / "runs"
    res = runner.invoke(
        app,
        [
            "sweep",
            "--bus",
            "sim:rosorin-arm?clock=sim",
            "--servo",
            "3",
            "--speed",
            "300",
            "--inside",
            str(inside),
            "--out",
            str(out),
            "--json",
        ],
    )
    assert res.exit_code == 0, res.output
    live = {s["direction"]: s["limit"] for s in json.loads(res.stdout)["sweeps"]}
    assert live == {"down": 10 + inside, "up": 990 - inside}
    analysed = runner.invoke(app, ["analyze", str(out), "--json", "--workers", "1"])
    assert analysed.exit_code == 0, analysed.output
    found = {
        s["direction"]: s["limit"]
        for f in json.loads(analysed.stdout)["files"]
        for s in f["result"]["sweeps"]
    }
    assert found == live
    report = build_report(out)
    assert f"arm_limit_3: [{live['down']}, {live['up']}]" in report.limits
    (table,) = report.tables
    assert [row[-1] for row in table.rows] == [str(live["down"]), str(live["up"])]
