"""Step metrics and the runaway verdict on synthetic step recordings."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from servotool.analysis.recording import recording_from_frame
from servotool.analysis.step import analyze_step
from servotool.motion.ramp import step_levels
from servotool.motion.shaper import StreamShaper

T = 0.01
LAG = 0.078


def recording(
    size=10.0,
    steps=2,
    shaped=True,
    runaway_speed=None,
    travel=None,
    fault=False,
    refuse=False,
    rejects_per_fault=40,
    noise=0.002,
    guard_t=None,
    seed=3,
):
    """A step run: 0.3 s at rest, then the level cycle; the arm executes the setpoint LAG later, or, with a
    runaway, sweeps from the step on at runaway_speed until it has travelled `travel`."""
    rng = np.random.default_rng(seed)
    lv = step_levels(0.0, size, steps, hold_s=0.6, dt=T)
    n_pre = 30
    raw = np.concatenate([np.zeros(n_pre), lv.q])
    labels = np.concatenate([np.full(n_pre, -1), lv.step_index])
    if shaped:
        sh = StreamShaper(130.0, 500.0, T, n_joints=1)
        sh.prime([0.0])
        sp = np.array([sh.step([x])[0] for x in raw])
    else:
        sp = raw.copy()
    tc = np.arange(len(raw)) * T
    ts = np.arange(0.0, tc[-1] + 0.5, 0.008)
    m = np.interp(ts - LAG, tc, sp, left=0.0)
    t_step = tc[n_pre]
    if refuse:
        m = np.zeros_like(ts)
    if runaway_speed is not None:
        start = t_step + LAG
        m = np.where(ts > start, np.minimum(runaway_speed * (ts - start), travel), 0.0)
    m = m + rng.normal(0.0, noise, len(ts))
    rows = [
        {"t": tc[k], "event": "cmd", "seq": k, "pass": labels[k], "phase": "hold", "q1": sp[k], "r1": raw[k]}
        for k in range(len(tc))
    ]
    codes = np.zeros(len(ts), dtype=int)
    if fault or refuse:
        codes[ts > t_step + 0.004] = 1
        first = int(np.argmax(ts > t_step + 0.004))
        rows.append({"t": ts[first], "event": "fault", "main_code": 1, "sub_code": 32})
        for k in range(rejects_per_fault):
            rows.append({"t": t_step + (k + 1) * T + 0.0005, "event": "reply", "errcode": 14})
    rows += [
        {"t": ts[i], "event": "state", "q1": m[i], "main_code": codes[i], "sub_code": 32 * codes[i]}
        for i in range(len(ts))
    ]
    if guard_t is not None:
        rows.append({"t": guard_t, "event": "guard", "info": "q1 diverged"})
    df = pd.DataFrame(rows).sort_values("t", kind="mergesort")
    return recording_from_frame(df), t_step


def test_a_shaped_step_arrives_cleanly():
    rec, _ = recording(size=10.0, steps=4)
    res = analyze_step(rec, joint=0, cmd_period_s=T, shaped=True)
    assert len(res.steps) == 4 and res.runaways == 0
    first = res.steps[0]
    assert first.verdict == "ok" and not first.runaway
    assert first.size_deg == pytest.approx(10.0)
    # the arm starts moving one lag after the setpoint does and arrives within 10 % after the shaped move
    assert first.first_move_ms == pytest.approx(LAG * 1e3, abs=9)
    assert 250 < first.arrive_ms < 330
    assert first.travel_deg == pytest.approx(10.0, abs=0.02)
    assert 60 < first.peak_speed_deg_s < 80
    assert first.rejects == 0 and first.faults == 0
    assert 3.0 < first.peak_delta_deg < 7.0
    assert first.guard_lag_ms > 0
    assert [s.size_deg for s in res.steps] == pytest.approx([10.0, -10.0, -10.0, 10.0])
    assert res.threshold_deg >= 0.01


def test_a_raw_step_that_runs_away_is_called_a_runaway():
    rec, t_step = recording(
        size=2.5, steps=1, shaped=False, runaway_speed=180.0, travel=60.0, fault=True, guard_t=None
    )
    res = analyze_step(rec, joint=0, cmd_period_s=T, shaped=False, guard_margin_deg=2.7, guard_lag_s=0.08)
    s = res.steps[0]
    assert s.runaway and s.verdict == "runaway"
    assert s.travel_ratio == pytest.approx(24.0, rel=0.01)
    assert s.peak_speed_deg_s == pytest.approx(180.0, rel=0.05)
    assert s.faults == 1 and s.fault_codes == "1/32" and s.rejects == 40
    assert s.fault_ms <= 12.0 + 1e-9  # the first frame after the step
    # the arm went beyond the guard's 2.7 deg allowance about (2.5 + 2.7) / 180 s after it started
    assert s.crossed_ms == pytest.approx((LAG + 5.2 / 180) * 1e3, abs=9)
    assert math.isnan(s.guard_trip_ms)


def test_guard_trip_times_are_related_to_the_step_the_fault_and_the_crossing():
    rec, t_step = recording(
        size=2.5, steps=1, shaped=False, runaway_speed=180.0, travel=60.0, fault=True, guard_t=None
    )
    crossed = (
        analyze_step(rec, joint=0, cmd_period_s=T, shaped=False, guard_margin_deg=2.7, guard_lag_s=0.08)
        .steps[0]
        .crossed_ms
    )
    trip = t_step + crossed / 1e3 + 0.006
    rec, _ = recording(
        size=2.5, steps=1, shaped=False, runaway_speed=180.0, travel=60.0, fault=True, guard_t=trip
    )
    s = analyze_step(
        rec, joint=0, cmd_period_s=T, shaped=False, guard_margin_deg=2.7, guard_lag_s=0.08
    ).steps[0]
    assert s.guard_after_crossing_ms == pytest.approx(6.0, abs=1e-6)
    assert s.guard_trip_ms == pytest.approx(crossed + 6.0, abs=1e-6)
    assert s.guard_after_fault_ms == pytest.approx(s.guard_trip_ms - s.fault_ms, abs=1e-6)


def test_a_refused_step_is_not_a_runaway():
    rec, _ = recording(size=30.0, steps=1, shaped=False, refuse=True)
    s = analyze_step(rec, joint=0, cmd_period_s=T, shaped=False).steps[0]
    assert s.verdict == "refused" and not s.runaway
    assert s.travel_deg < 0.02 and math.isnan(s.arrive_ms) and math.isnan(s.first_move_ms)


def test_a_fault_without_a_runaway_is_bounded():
    rec, _ = recording(size=1.5, steps=1, shaped=False, fault=True)
    s = analyze_step(rec, joint=0, cmd_period_s=T, shaped=False).steps[0]
    assert s.verdict == "fault, bounded" and not s.runaway
    assert s.travel_deg == pytest.approx(1.5, abs=0.02)


def test_a_shaped_run_without_its_raw_targets_is_refused():
    """Without r1 a shaped run's step sizes would be read as one shaper tick, and every clean arrival as a
    runaway of forty times that: refused instead of judged."""
    from dataclasses import replace

    from servotool.analysis.recording import RecordingError

    rec, _ = recording(size=2.0, steps=2)
    with pytest.raises(RecordingError, match="raw targets"):
        analyze_step(replace(rec, cmd_r=None), joint=0, cmd_period_s=T, shaped=True)
    raw_rec, _ = recording(size=2.0, steps=2, shaped=False)
    res = analyze_step(replace(raw_rec, cmd_r=None), joint=0, cmd_period_s=T, shaped=False)
    assert [s.size_deg for s in res.steps] == pytest.approx([2.0, -2.0])


def _cut(args, t_cut):
    """recording(**args) up to t_cut, then the stop row a run that ends early writes (a lost link)."""
    from dataclasses import replace

    rec, t_step = recording(**args)
    c, s = rec.cmd_t < t_cut, rec.state_t < t_cut
    cut = replace(
        rec,
        cmd_t=rec.cmd_t[c],
        cmd_q=rec.cmd_q[c],
        cmd_r=rec.cmd_r[c],
        cmd_pass=rec.cmd_pass[c],
        cmd_phase=rec.cmd_phase[c],
        state_t=rec.state_t[s],
        state_q=rec.state_q[s],
        stop_t=t_cut,
        stop_reason="connection lost: no state frame",
    )
    return cut, t_step


def test_a_step_whose_hold_the_run_s_end_cut_is_cut_short_and_names_why():
    rec, t_step = _cut({"size": 10.0, "steps": 2}, 0.3 + 0.6 + 0.15)  # 150 ms into the second step
    res = analyze_step(rec, joint=0, cmd_period_s=T, shaped=True, hold_s=0.6, end_reason="connection lost")
    first, second = res.steps
    assert first.verdict == "ok" and not first.cut_short and first.cut_reason == ""
    assert second.verdict == "cut short" and second.cut_short and second.cut_reason == "connection lost"
    assert math.isnan(second.arrive_ms) and res.cut_short == 1
    # the figures of the step before the end are those of the whole recording's first step
    whole = analyze_step(recording(size=10.0, steps=2)[0], joint=0, cmd_period_s=T, shaped=True, hold_s=0.6)
    assert first == whole.steps[0] and [s.verdict for s in whole.steps] == ["ok", "ok"]
    # without the end line's reason the stop row says why
    bare = analyze_step(rec, joint=0, cmd_period_s=T, shaped=True)
    assert bare.steps[1].verdict == "cut short" and bare.steps[1].cut_reason.startswith("connection lost")


def test_a_run_that_ended_early_after_its_last_hold_keeps_its_last_step():
    # a signal as the stream returned: the end line says interrupted, yet every hold was streamed whole
    rec, _ = recording(size=10.0, steps=2)
    res = analyze_step(rec, joint=0, cmd_period_s=T, shaped=True, hold_s=0.6, end_reason="Ctrl-C")
    assert [s.verdict for s in res.steps] == ["ok", "ok"] and not any(s.cut_short for s in res.steps)


def test_a_complete_hold_without_an_arrival_is_no_arrival_even_in_a_run_cut_later():
    # the arm stops at half the first step; the run is cut 150 ms into the second step
    rec, _ = _cut({"size": 10.0, "steps": 2, "runaway_speed": 100.0, "travel": 5.0}, 0.3 + 0.6 + 0.15)
    res = analyze_step(rec, joint=0, cmd_period_s=T, shaped=True, hold_s=0.6, end_reason="connection lost")
    assert [s.verdict for s in res.steps] == ["no arrival", "cut short"]


def test_a_complete_run_has_no_step_cut_short_even_with_a_stray_stop_row():
    # the end line says every tick was streamed: a stop row (an edited file) cuts nothing, hold known or not
    rec, _ = _cut({"size": 10.0, "steps": 2, "runaway_speed": 100.0, "travel": 5.0}, 0.3 + 0.6 + 0.15)
    for hold in (0.6, None):
        res = analyze_step(rec, joint=0, cmd_period_s=T, shaped=True, hold_s=hold, complete=True)
        assert [s.verdict for s in res.steps] == ["no arrival", "no arrival"]
        assert not any(s.cut_short for s in res.steps) and res.cut_short == 0
