"""Step runs end to end on the FAIRINO simulator: the shaped fix, the raw runaway, and the refusals.

The simulator runs in lock-step with the run (simulated time on a FakeClock): the figures do not depend on how
busy the machine is."""

from __future__ import annotations

import pytest

from servotool.clock import FakeClock, MonotonicClock
from servotool.devices.registry import open_arm
from servotool.runs.arm.step import StepSettings, run_step
from servotool.runs.arm.stream import FAULT, RunRefused
from servotool.runs.offline.analyze import analyze_file


def _run(tmp_path, url: str, **kw):
    clock = FakeClock()
    transport = kw.pop("transport", "udp")
    arm = open_arm(url, clock=clock, transport=transport)
    try:
        return run_step(arm, StepSettings(**kw), clock=clock, out_dir=tmp_path, command="test")
    finally:
        arm.close()


def test_a_shaped_10_deg_step_arrives_smoothly(tmp_path):
    run = _run(tmp_path, "sim:fr3", size_deg=10.0, steps=2)
    assert run.outcome.complete, run.outcome.reason
    res = run.analysis.result
    assert res.shaped and res.runaways == 0 and res.total_rejects == 0 and res.total_faults == 0
    assert res.guard_trips == []
    for s in res.steps:
        assert s.verdict == "ok"
        assert 250 < s.arrive_ms < 360  # ~290 ms: the shaped move plus the 78 ms lag
        assert s.travel_deg == pytest.approx(10.0, abs=0.1)
        assert s.peak_speed_deg_s < 130.0 * 1.1
    assert run.guard is not None and run.guard.basis == "profile fr3"
    assert analyze_file(run.path).to_dict() == run.analysis.to_dict()


def test_a_raw_2_5_deg_step_runs_away_and_the_guard_sees_it(tmp_path, slack):
    run = _run(tmp_path, "sim:fr3", size_deg=2.5, steps=1, shaped=False, transport="rpc")
    assert run.outcome.status == FAULT and run.outcome.fault == (1, 32)
    res = run.analysis.result
    s = res.steps[0]
    assert s.runaway and s.verdict == "runaway"
    assert 13.0 <= s.travel_ratio <= 36.0
    assert s.faults == 1 and s.fault_codes == "1/32"
    assert s.rejects >= 20  # every command during the ~0.9 s fault window, each answered over XML-RPC
    assert 150.0 <= s.peak_speed_deg_s <= 200.0
    # the guard tripped on the sweep within two ticks of the arm crossing its allowance (a loaded host's late
    # ticks and late frames delay it by their lateness)
    assert s.guard_after_crossing_ms <= 20.0 + slack(0.0, 80.0, run.outcome.late_ticks)
    assert s.guard_trip_ms > s.fault_ms
    meta = run.analysis.meta
    assert not meta.complete and "main 1 sub 32" in meta.end_reason


class _RealArm:
    url, model, simulated, n_joints, joint_speed_limits = "fairino://10.0.0.9", "fr3", False, 6, (180.0,) * 6

    def __getattr__(self, name):
        raise AssertionError(f"a refused run touched the arm ({name})")


def test_raw_steps_on_a_real_arm_are_refused_without_test_arm_and_confirmation(tmp_path):
    clock = MonotonicClock()
    with pytest.raises(RunRefused, match="--test-arm"):
        run_step(_RealArm(), StepSettings(shaped=False), clock=clock, out_dir=tmp_path)
    with pytest.raises(RunRefused, match="confirmation"):
        run_step(_RealArm(), StepSettings(shaped=False, test_arm=True), clock=clock, out_dir=tmp_path)
    assert not list(tmp_path.iterdir())
