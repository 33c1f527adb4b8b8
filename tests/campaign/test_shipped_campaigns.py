"""The shipped seed-000 campaigns, run as files against the simulators, reproduce the campaign's findings.

Each runs its simulator in simulated time (lock-step, `?clock=sim`): the findings do not depend on the load
on the machine. Still seconds of CPU each, hence `slow`."""

import math
import statistics

import pytest

from servotool.analysis.lag import LagResult
from servotool.analysis.step import StepResult
from servotool.io.campaign_file import shipped_campaign_files
from servotool.runs.campaign.plan import load_campaign
from servotool.runs.campaign.report import build_report
from servotool.runs.campaign.run import run_campaign, start_campaign
from servotool.runs.offline.analyze import analyze_paths

pytestmark = pytest.mark.slow


def run_shipped(stem, tmp_path):
    path = next(f for f in shipped_campaign_files() if f.stem == stem)
    # the file's own simulator, in simulated time
    robot = f"{load_campaign(path).device}?clock=sim"
    campaign = load_campaign(path, robot)
    cr = start_campaign(campaign, tmp_path, robot)
    state = run_campaign(campaign, cr)
    files = sorted(analyze_paths([cr.folder]).files, key=lambda fa: fa.meta.created)
    return state, files, cr.folder


def step_metrics(files):
    return [m for fa in files if isinstance(fa.result, StepResult) for m in fa.result.steps]


def test_giant_step_is_refused_with_no_motion(tmp_path):
    state, files, _ = run_shipped("fairino-5-giant-step", tmp_path)
    assert state.done and [r.status for r in state.runs] == ["fault"]
    (m,) = step_metrics(files)
    assert m.verdict == "refused" and m.faults == 1 and m.travel_deg < 0.1


def test_gap_injection_band_and_runaway_travel(tmp_path):
    state, files, _ = run_shipped("fairino-3-gap-injection-udp", tmp_path)
    assert state.done and len(state.runs) == 5
    by_size = {round(abs(m.size_deg), 3): m for m in step_metrics(files)}
    assert by_size[1.0].verdict == "ok"  # the bottom of the band
    for size in (2.0, 2.5):  # above the band: always
        m = by_size[size]
        assert m.runaway and 14 <= m.travel_ratio <= 35
        assert m.peak_speed_deg_s == pytest.approx(min(size / 0.01, 180.0), rel=0.15)


def test_enable_window_runaway_two_of_two_then_clean(tmp_path):
    state, files, folder = run_shipped("fairino-2-enable-window-runaway", tmp_path)
    assert [r.status for r in state.runs] == ["fault", "fault", "complete"]
    cold = build_report(folder).tables[1]
    assert cold.title.startswith("ramps from a disabled robot")
    assert [row[3] for row in cold.rows] == ["yes", "yes"]
    warm = [
        fa.result for fa in files if isinstance(fa.result, LagResult) and not fa.meta.config.get("cold_start")
    ]
    assert warm[0].fit.lag_ms == pytest.approx(78.0, abs=3.0)


def test_shaped_steps_are_clean_with_zero_rejects(tmp_path):
    state, files, folder = run_shipped("fairino-7-shaped-steps", tmp_path)
    # a late tick on a loaded machine can stall the simulated arm for a moment and trip the divergence
    # guard (the campaign then stops there, as it must); the controller itself never faults or rejects
    assert state.done or "divergence guard" in (state.stopped or "")
    metrics = step_metrics(files)
    assert {2.5, 5.0, 10.0} <= {round(abs(m.size_deg), 3) for m in metrics}
    assert all(m.rejects == 0 and m.faults == 0 and not m.runaway for m in metrics)
    ten = [m.arrive_ms for m in metrics if round(abs(m.size_deg), 3) == 10.0]
    assert all(250 <= a <= 450 for a in ten)  # about 290 ms
    assert any(f.name == "shaped-arrival" for f in build_report(folder).figures)


def test_fr20_protocol_lag_and_tuning(tmp_path):
    state, files, folder = run_shipped("fairino-8-fr20-lag", tmp_path)
    assert state.done
    lags = [fa.result for fa in files if isinstance(fa.result, LagResult)]
    assert [r.joint for r in lags] == [5, 0]
    for r in lags:
        assert 108 <= r.fit.lag_ms <= 114
        # a single pass is noisier than the fit (a loaded host can stall one pass by a whole period or more):
        # every pass measured, and the typical pass at the profile's lag
        passes = [p.lag_ms for p in r.passes]
        assert all(math.isfinite(x) for x in passes) and 100 <= statistics.median(passes) <= 120, passes
    tuning = build_report(folder).tuning
    assert "lag_s: 0.12" in tuning and "a_max_deg_s2: 500" in tuning


def test_simmachine_lag_on_both_transports_and_no_runaway(tmp_path):
    state, files, _ = run_shipped("fairino-1-simmachine-baseline", tmp_path)
    assert state.done and all(r.status == "complete" for r in state.runs)
    lags = {fa.meta.config["transport"]: fa.result for fa in files if isinstance(fa.result, LagResult)}
    assert lags["udp"].fit.lag_ms == pytest.approx(39.0, abs=3.0)
    assert lags["rpc"].fit.lag_ms == pytest.approx(39.0, abs=3.0)
    assert lags["udp"].model.constant  # the same L at 5, 10, 20 and 40 deg/s
    steps = step_metrics(files)
    assert len(steps) == 4 and not any(m.runaway or m.faults for m in steps)
    assert all(25 <= m.first_move_ms <= 45 for m in steps)  # the ~33 ms step-response lag


def test_amax_ceiling_report_leads_with_the_ceiling_and_draws_it(tmp_path):
    state, _files, folder = run_shipped("fairino-9-amax-ceiling", tmp_path)
    assert (
        state.stop_status == "fault"
    )  # by design: the first fault ends it, the last clean a_max is the answer
    report = build_report(folder)
    assert report.outcome[0].startswith("**SIMULATED**")
    ceiling = next(line for line in report.outcome if "a_max ceiling" in line)
    assert "**a_max ceiling: 10000 deg/s²**" in ceiling and "first fault came at 12500" in ceiling
    assert "amax-ceiling" in {f.name for f in report.figures}
    assert "(SIMULATED)" in report.tuning.splitlines()[0]


def test_rosorin_limits_report_is_marked_simulated_and_shows_the_stall(tmp_path):
    state, _files, folder = run_shipped("rosorin-arm-limits", tmp_path)
    assert state.done
    report = build_report(folder)
    assert report.outcome[0].startswith("**SIMULATED**") and "sim:rosorin-arm" in report.outcome[0]
    assert "stalls: servo 1 up at 880" in report.outcome[1]
    assert report.limits.startswith("# SIMULATED: mapped on sim:rosorin-arm")
    assert "arm_limit_1: [30, 860]" in report.limits
    assert all("SIMULATED" in line for line in report.intro if line.startswith("Device:"))
