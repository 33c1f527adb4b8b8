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
from servotool.runs.arm.step import StepSettings, run_step

runner = CliRunner()
SIM = "sim:fr3?enable_ms=300"
PRE = 50  # pre-hold ticks (0.5 s at 10 ms)


def _run(folder, *, hold_s=0.4, steps=2, at=None, how=None, sim=SIM, size=10.0):
    """A step run on simulated time; at tick `at` the controller's state stream goes silent (how="silent",
    a lost link) or our own code fails (how="error": the braked stop); the CSV's path."""
    folder.mkdir(parents=True, exist_ok=True)
    clock = FakeClock()
    arm = open_arm(sim, clock=clock)

    def inject(info):
        if at is not None and info.k >= at:
            if how == "silent":
                arm.sim.hold_stream(True)
            elif how == "ctrl-c":
                raise KeyboardInterrupt
            else:
                raise RuntimeError("injected fault in a callback")

    try:
        settings = StepSettings(steps=steps, hold_s=hold_s, size_deg=size, realtime=False)
        run_step(arm, settings, clock=clock, out_dir=folder, on_tick=inject)
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


STUCK = SIM + "&tau_ms=100000"  # an arm that barely moves: no step of it ever arrives


def test_a_step_that_had_long_had_its_time_to_arrive_is_no_arrival_however_the_run_ended(tmp_path):
    # 2 deg (inside the guard's margin: no trip) on a stuck arm; its setpoint is at the target ~130 ms into
    # the 600 ms hold and Ctrl-C comes 550 ms in: the arm had all the time it needed and never arrived
    entry = _analysed(
        _run(tmp_path / "late", hold_s=0.6, steps=1, at=PRE + 55, how="ctrl-c", sim=STUCK, size=2.0)
    )
    assert entry["end_reason"] == "Ctrl-C"
    (step,) = entry["result"]["steps"]
    assert step["verdict"] == "no arrival" and step["cut_short"] is True and step["cut_reason"] == "Ctrl-C"
    assert entry["result"]["cut_short"] == 0
    csv = next((tmp_path / "late").glob("step_*.csv"))
    out = " ".join(runner.invoke(app, ["analyze", str(csv)]).stdout.split())
    assert "1 not ok (no arrival)" in out and "no step measured" not in out


def test_a_step_whose_own_divergence_tripped_the_guard_is_not_excused_as_cut_short(tmp_path):
    # 10 deg on a stuck arm: the guard trips on this step's divergence; that end is the arm's failure
    entry = _analysed(_run(tmp_path / "trip", hold_s=0.6, steps=2, sim=STUCK))
    assert entry["end_reason"].startswith("divergence guard")
    (step,) = entry["result"]["steps"]
    assert step["verdict"] == "no arrival" and entry["result"]["cut_short"] == 0


def test_a_step_cut_early_on_a_stuck_arm_is_still_cut_short(tmp_path):
    # Ctrl-C 100 ms into the step: its setpoint had not reached the target, nothing can be said yet
    entry = _analysed(
        _run(tmp_path / "early", hold_s=0.6, steps=1, at=PRE + 10, how="ctrl-c", sim=STUCK, size=2.0)
    )
    (step,) = entry["result"]["steps"]
    assert step["verdict"] == "cut short" and entry["result"]["cut_short"] == 1


def test_a_slow_arm_still_on_its_way_when_the_run_ended_is_cut_short_not_failed(tmp_path):
    # tau 150 ms: a whole run sees this 2 deg step arrive ~480 ms into its 600 ms hold; Ctrl-C at 400 ms
    # finds it still closing in on the target: the end, not the arm, kept it from arriving
    whole = _analysed(_run(tmp_path / "whole", hold_s=0.6, steps=1, sim=SIM + "&tau_ms=150", size=2.0))
    assert whole["result"]["steps"][0]["verdict"] == "ok"
    entry = _analysed(
        _run(
            tmp_path / "cut",
            hold_s=0.6,
            steps=1,
            at=PRE + 40,
            how="ctrl-c",
            sim=SIM + "&tau_ms=150",
            size=2.0,
        )
    )
    (step,) = entry["result"]["steps"]
    assert step["verdict"] == "cut short" and entry["result"]["cut_short"] == 1


def test_a_stuck_arm_unseen_since_before_its_arrival_was_due_is_cut_short(tmp_path):
    # the state stream goes silent 250 ms into the step; the lost link's stop comes ~100 ms later, past the
    # time the arrival was due, but no frame after that time says whether it arrived
    entry = _analysed(
        _run(tmp_path / "blind", hold_s=0.6, steps=1, at=PRE + 25, how="silent", sim=STUCK, size=2.0)
    )
    assert entry["end_reason"].startswith("connection lost")
    (step,) = entry["result"]["steps"]
    assert step["verdict"] == "cut short" and entry["result"]["cut_short"] == 1
