"""A ramp from a disabled robot streams through the enable window and runs away; simulators only."""

import pytest

from servotool.clock import FakeClock, MonotonicClock
from servotool.devices.registry import open_arm
from servotool.io.csvlog import read_csv
from servotool.runs.arm.cold_start import run_cold_ramp
from servotool.runs.arm.prepare import RunRefused
from servotool.runs.arm.ramp import RampSettings


def test_cold_start_runs_away_and_ends_through_the_braked_stop(tmp_path):
    clock = FakeClock()  # lock-step: the stream meets the enable window at the same instant whatever the load
    arm = open_arm("sim:fr3?enable_ms=1000&seed=1", clock=clock)
    try:
        run = run_cold_ramp(
            arm,
            RampSettings(joint=0, sweep_deg=10, speeds_deg_s=(10.0,), realtime=False),
            clock=clock,
            out_dir=tmp_path,
        )
    finally:
        arm.close()
    assert run.outcome.fault == (1, 32)  # the runaway latch, at the moment execution started
    meta, df = read_csv(run.path)
    assert meta.config["cold_start"] is True and not meta.complete and "fault" in meta.end_reason
    measured = df[df["event"] == "state"]["q1"]
    assert measured.max() - measured.iloc[0] > 14 * 1.0  # swept well past the gap


def test_cold_start_refuses_a_real_arm():
    class RealArm:
        simulated = False
        url = "fairino://192.0.2.1"

    with pytest.raises(RunRefused, match="simulators only"):
        run_cold_ramp(RealArm(), RampSettings(), clock=MonotonicClock(), out_dir=".")  # type: ignore[arg-type]


def test_cold_start_refuses_an_arm_without_an_enable_window(tmp_path):
    # an arm whose enable has no window to stream inside is refused before anything is sent
    clock = FakeClock()
    arm = open_arm("sim:fake-arm?clock=sim", clock=clock)
    try:
        with pytest.raises(RunRefused, match="has none to stream in"):
            run_cold_ramp(arm, RampSettings(realtime=False), clock=clock, out_dir=tmp_path)
    finally:
        arm.close()
    assert not list(tmp_path.glob("*.csv"))
