"""`servotool analyze` of a step run that ended early: the step in progress is "cut short" (named with why the
run ended), not "no arrival", and stays out of the arrival figures; a missing arrival inside a complete
hold is still "no arrival". Every run is on simulated time (lock-step): the same run whatever the load."""

from __future__ import annotations

import json
import math

from typer.testing import CliRunner

from servotool.cli.app import app
from servotool.clock import FakeClock
from servotool.devices.registry import open_arm
from servotool.runs.step import StepSettings, run_step

runner = CliRunner()
SIM = "sim:fr3?enable_ms=300"
PRE = 50  # pre-hold ticks (0.5 s at 10 ms)


def _run(folder, *, hold_s=0.4, steps=2, at=None, how=None):
    """A step run on simulated time; at tick `at` the controller's state stream goes silent (how="silent",
    a lost link) or our own code fails (how="error": the braked stop); the CSV's path."""
    folder.mkdir(parents=True, exist_ok=True)
    clock = FakeClock()
    arm = open_arm(SIM, clock=clock)

    def inject(info):
        if at is not None and info.k >= at:
            if how == "silent":
                arm.sim.hold_stream(True)
            else:
                raise RuntimeError("injected fault in a callback")

    try:
        run_step(arm, StepSettings(steps=steps, hold_s=hold_s, realtime=False), clock=clock, out_dir=folder,
                 on_tick=inject)
    finally:
        arm.close()
    return next(folder.glob("step_*.csv"))


def _analysed(csv):
    res = runner.invoke(app, ["analyze", str(csv), "--json"])
    assert res.exit_code == 0, res.output
    return json.loads(res.stdout)["files"][0]


def test_a_step_cut_mid_hold_by_a_lost_link_is_cut_short_not_no_arrival(tmp_path):
    csv = _run(tmp_path / "lost", at=PRE + 15, how="silent")  # 150 ms into the first 400 ms hold
    entry = _analysed(csv)
    assert not entry["complete"] and entry["end_reason"].startswith("connection lost")
    (step,) = entry["result"]["steps"]
    assert step["verdict"] == "cut short" and step["cut_short"] is True
    assert step["cut_reason"] == entry["end_reason"]
    assert step["arrive_ms"] is None or math.isnan(step["arrive_ms"])
    assert entry["result"]["cut_short"] == 1
    text = runner.invoke(app, ["analyze", str(csv)])
    out = " ".join(text.stdout.split())
    assert text.exit_code == 0 and "no arrival" not in out and "not ok" not in out
    assert "cut short" in out and "connection lost" in out


def test_an_arrival_only_during_the_braked_stop_is_no_arrival_of_the_step(tmp_path):
    # the run stops 150 ms into the step; the braking carries the arm near its target some 290 ms after the
    # step: that is the stop's doing, not the step's arrival
    csv = _run(tmp_path / "error", at=PRE + 15, how="error")
    entry = _analysed(csv)
    assert entry["end_reason"].startswith("internal error")
    (step,) = entry["result"]["steps"]
    assert step["verdict"] == "cut short" and step["cut_reason"].startswith("internal error")
    assert step["arrive_ms"] is None or math.isnan(step["arrive_ms"])
    assert entry["flags"]["interrupted"]


def test_the_steps_completed_before_the_end_keep_their_figures(tmp_path):
    whole = _analysed(_run(tmp_path / "whole"))["result"]["steps"]
    cut = _analysed(_run(tmp_path / "cut", at=PRE + 40 + 15, how="silent"))["result"]["steps"]
    assert [s["verdict"] for s in cut] == ["ok", "cut short"]
    assert cut[0] == whole[0] and not whole[0]["cut_short"] and whole[0]["cut_reason"] == ""
    assert [s["verdict"] for s in whole] == ["ok", "ok"]


def test_a_complete_hold_without_an_arrival_is_still_no_arrival(tmp_path):
    # 60 ms is too short a hold for a shaped 10 deg step to arrive in: a complete run, a true missing arrival
    entry = _analysed(_run(tmp_path / "short", hold_s=0.06))
    assert entry["complete"]
    first = entry["result"]["steps"][0]
    assert first["verdict"] == "no arrival" and first["cut_short"] is False and first["cut_reason"] == ""
    assert entry["result"]["cut_short"] == 0
    text = runner.invoke(app, ["analyze", str(next((tmp_path / "short").glob("step_*.csv")))])
    assert "not ok (no arrival)" in " ".join(text.stdout.split()) and "cut short" not in text.stdout
