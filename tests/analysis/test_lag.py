"""Lag analysis on synthetic recordings whose answer is known exactly."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from servotool.analysis.lag import (
    analyze_lag,
    combine_lag,
    first_order_response,
    fit_through_origin,
    guard_advice,
    simulate,
)
from servotool.analysis.lag.origin import model_check
from servotool.analysis.lag.passes import cruise_deltas
from servotool.analysis.lag.results import PassLag
from servotool.analysis.recording import RecordingError, recording_from_frame
from servotool.motion.ramp import ramp_profile

T = 0.01


def recording(
    lag=0.078,
    tau=0.0,
    friction=0.0,
    noise=0.002,
    state=0.008,
    speeds=(5, 10, 20, 40),
    sweep=20.0,
    seed=1,
    jitter=2e-4,
    dev_time=True,
    cut_at=None,
    late=(),
    stall=(),
):
    """A ramp run as the stream loop would record it: commands at their send times, measured = the commands
    delayed by `lag`, filtered by `tau`, offset by `friction` against the motion, plus noise, sampled every
    `state` s and received up to `jitter` s later.

    late: (tick, delay s) pairs: that tick is sent delay late, the ticks due meanwhile right after it (0.5 ms
    apart). stall: (tick, s) pairs: the controller takes nothing from that tick's send for s, then every
    setpoint sent meanwhile at once, and answers each as it takes it (with stall, every command is answered).
    Until a setpoint is taken the controller holds the one before."""
    rng = np.random.default_rng(seed)
    prof = ramp_profile(0.0, sweep, speeds, dt=T, ramp_s=0.2, settle_s=0.5)
    n = len(prof)
    tc = np.arange(n) * T
    qc = prof.q
    ts = np.arange(0.0, tc[-1] + 0.5, state)
    for k, delay in late:
        tc[k] += delay
        for j in range(k + 1, n):  # the ticks due meanwhile go out in a burst
            if tc[j] > tc[j - 1]:
                break
            tc[j] = tc[j - 1] + 5e-4
    taken = tc.copy()
    for k, s in stall:
        burst = np.flatnonzero((tc >= tc[k]) & (tc < tc[k] + s))
        taken[burst] = tc[k] + s + 1e-5 * np.arange(len(burst))
    held = np.flatnonzero(np.diff(taken) > 1.5 * T) + 1  # the setpoint before holds until these arrive
    t_ctl, q_ctl = np.insert(taken, held, taken[held] - 1e-6), np.insert(qc, held, qc[held - 1])
    y, dy = simulate(t_ctl, q_ctl, ts, lag, tau)
    m = y - friction * np.tanh(dy) + rng.normal(0.0, noise, len(ts))
    tr = ts + rng.uniform(0.0, jitter, len(ts))
    rows = [
        {
            "t": tc[k],
            "event": "cmd",
            "seq": k,
            "pass": prof.pass_index[k],
            "phase": prof.phase[k],
            "q1": qc[k],
        }
        for k in range(n)
    ]
    rows += [
        {
            "t": tr[i],
            "event": "state",
            "q1": m[i],
            "main_code": 0,
            "sub_code": 0,
            "dev_t": ts[i] + 100.0 if dev_time else np.nan,
        }
        for i in range(len(ts))
    ]
    if stall:
        rows += [{"t": taken[k] + 3e-4, "event": "reply", "errcode": 0} for k in range(n)]
    df = pd.DataFrame(rows).sort_values("t", kind="mergesort")
    for j in range(2, 7):
        df[f"q{j}"] = 0.0
    if cut_at is not None:
        df = df[df.t < cut_at]
    return recording_from_frame(df)


@pytest.mark.parametrize("lag", [0.020, 0.078, 0.200])
def test_pure_delay_is_recovered_exactly(lag):
    res = analyze_lag(recording(lag=lag), joint=0, cmd_period_s=T)
    assert res.fit.lag_ms == pytest.approx(lag * 1e3, abs=0.05)
    assert res.fit.ci95_ms[0] <= res.fit.lag_ms <= res.fit.ci95_ms[1]
    assert res.midpoint.agrees and abs(res.midpoint.mean_ms - lag * 1e3) < 0.3
    assert res.model.constant
    assert not res.dynamics.has_filter and not res.dynamics.has_friction
    assert res.dynamics.lag_ms == pytest.approx(lag * 1e3, abs=0.1)
    assert len(res.passes) == 8 and all(p.n_frames >= 3 for p in res.passes)
    assert {p.direction for p in res.passes} == {"out", "back"}
    # the state path was mapped through the controller clock: no latency left to remove beyond the jitter
    assert res.link.state_mapped and res.link.state_path_ms < 0.2


def test_guard_view_exceeds_the_true_lag_by_the_frame_age():
    res = analyze_lag(recording(lag=0.078, state=0.008), joint=0, cmd_period_s=T)
    extra = res.guard_fit.lag_ms - res.fit.lag_ms
    assert 2.5 < extra < 6.0  # about half the 8 ms state period
    assert all(p.guard_delta_peak_deg >= p.guard_delta_mean_deg for p in res.passes)


@pytest.mark.parametrize("tau", [0.005, 0.010, 0.020])
def test_dead_time_and_first_order_lag_are_told_apart(tau):
    res = analyze_lag(recording(lag=0.060, tau=tau), joint=0, cmd_period_s=T)
    d = res.dynamics
    assert d.has_filter
    assert d.lag_ms == pytest.approx(60.0, abs=1.0)
    assert d.tau_ms == pytest.approx(tau * 1e3, abs=1.0)
    # a cruise sees the sum, constant across speeds: delta / v alone cannot separate them
    assert res.fit.lag_ms == pytest.approx(60.0 + tau * 1e3, abs=0.3)
    assert res.model.constant


def test_friction_shows_as_a_lag_that_shrinks_with_speed():
    res = analyze_lag(recording(lag=0.078, friction=0.05), joint=0, cmd_period_s=T)
    assert not res.model.constant
    assert "real dynamics" in res.model.message
    slow = [p.lag_ms for p in res.passes if p.speed_deg_s < 6]
    fast = [p.lag_ms for p in res.passes if p.speed_deg_s > 30]
    assert min(slow) > max(fast) + 5
    assert res.dynamics.has_friction
    assert res.dynamics.offset_deg == pytest.approx(0.05, abs=0.005)
    assert res.dynamics.lag_ms == pytest.approx(78.0, abs=0.3)


def test_noise_at_rest_and_guard_tuning():
    res = analyze_lag(recording(lag=0.078, noise=0.003), joint=0, cmd_period_s=T, a_max=500, v_max=130)
    assert res.noise.std_deg == pytest.approx(0.003, rel=0.2)
    t = res.tuning
    assert t.lag_s == pytest.approx(0.08)  # the guard-view lag rounded up to 10 ms... or the true lag's
    assert t.margin_deg >= 500 * 0.078**2 / 2 + res.noise.peak_deg
    assert t.trail_deg == pytest.approx(130**2 / 1000 + 1.3)
    assert round(t.margin_deg * 10) == pytest.approx(t.margin_deg * 10)


def test_guard_advice_covers_the_frame_age():
    plain = guard_advice(0.078, a_max=500, v_max=130, noise_deg=0.01, dt=T)
    assert plain.lag_s == pytest.approx(0.08) and plain.margin_deg == pytest.approx(1.6)
    aged = guard_advice(0.078, a_max=500, v_max=130, noise_deg=0.01, dt=T, frame_age_s=0.008)
    # braking from v_max with the guard seeing L + age, and v_max * (L + age - lag_s) above the allowance
    floor = 500 * 0.086**2 / 2 + 0.01 + 130 * (0.086 - 0.08)
    assert aged.margin_deg >= floor and aged.margin_deg < floor + 0.1 + 1e-9


def test_fit_through_origin_reports_its_uncertainty():
    v = np.array([5.0, 10.0, 20.0, 40.0])
    fit = fit_through_origin(v, 0.05 * v + np.array([0.001, -0.001, 0.001, -0.001]))
    assert fit.lag_ms == pytest.approx(50.0, abs=0.1)
    assert 0 < fit.stderr_ms < 0.1
    assert fit.ci95_ms[0] < 50.0 < fit.ci95_ms[1]
    assert fit_through_origin([], []) is None
    single = fit_through_origin([10.0], [0.5])
    assert single.lag_ms == pytest.approx(50.0) and math.isnan(single.stderr_ms)


def test_first_order_response_is_exact_for_a_ramp():
    h, tau = 0.001, 0.02
    t = np.arange(0, 0.5, h)
    y = first_order_response(2.0 * t, h, tau)
    exact = 2.0 * (t - tau + tau * np.exp(-t / tau))
    np.testing.assert_allclose(y, exact, atol=1e-9)
    np.testing.assert_array_equal(first_order_response(t, h, 0.0), t)


def test_an_interrupted_recording_is_analysed_up_to_where_it_ends():
    full = recording(lag=0.05, speeds=(10, 20, 40))
    cut = recording(lag=0.05, speeds=(10, 20, 40), cut_at=full.cmd_t[-1] * 0.6)
    res = analyze_lag(cut, joint=0, cmd_period_s=T)
    assert res.fit.lag_ms == pytest.approx(50.0, abs=0.1)
    assert res.fit.n_passes < 6


def test_several_recordings_combine_into_one_fit():
    a = analyze_lag(recording(lag=0.11, speeds=(5, 10), seed=1), joint=0, cmd_period_s=T)
    b = analyze_lag(recording(lag=0.11, speeds=(10, 20), seed=2), joint=0, cmd_period_s=T)
    c = combine_lag([a, b])
    assert c.n_files == 2 and c.fit.n_passes == 8
    assert c.fit.lag_ms == pytest.approx(110.0, abs=0.1)


def test_without_controller_timestamps_the_receive_times_are_used():
    res = analyze_lag(recording(lag=0.05, dev_time=False, jitter=0.0), joint=0, cmd_period_s=T)
    assert not res.link.state_mapped
    assert res.fit.lag_ms == pytest.approx(res.host_fit.lag_ms)
    assert res.fit.lag_ms == pytest.approx(50.0, abs=0.1)


def test_a_recording_without_passes_is_refused():
    rec = recording()
    rec.cmd_pass[:] = -1
    with pytest.raises(RecordingError):
        analyze_lag(rec, joint=0, cmd_period_s=T)
    with pytest.raises(RecordingError):
        analyze_lag(recording(), joint=7, cmd_period_s=T)


def _cruise_thirds(rec, passes):
    """A tick a third into each given pass's cruise (clear of its midpoint crossing)."""
    out = []
    for p in passes:
        idx = np.flatnonzero((rec.cmd_pass == p) & (rec.cmd_phase == "cruise"))
        out.append(int(idx[len(idx) // 3]))
    return out


@pytest.mark.parametrize(
    "kind, n_late",
    [("late", 3), ("stall", 13)],  # a stall: every setpoint sent in it is taken late (9 + 4 ticks)
)
def test_late_setpoints_are_left_out_of_the_cruise_deltas(kind, n_late):
    kw = dict(lag=0.078, speeds=(15, 30), sweep=15.0, seed=3)  # short cruises, as in a real ramp run
    plain = recording(**kw)
    ticks = _cruise_thirds(plain, (0, 1, 2))
    if kind == "late":
        rec = recording(**kw, late=[(ticks[0], 0.0322), (ticks[1], 0.025), (ticks[2], 0.018)])
        assert np.count_nonzero(np.diff(rec.cmd_t) > 1.5 * T) == 3
    else:
        rec = recording(**kw, stall=[(ticks[0], 0.09), (ticks[1], 0.064)])
    res = analyze_lag(rec, joint=0, cmd_period_s=T)
    for p in res.passes:
        assert p.lag_ms == pytest.approx(78.0, abs=0.5)
        assert p.n_frames >= 3
    assert [p.n_late_left_out > 0 for p in res.passes] == [True, True, kind == "late", False]
    assert res.late_sends == n_late
    assert res.late_frames_left_out == sum(p.n_late_left_out for p in res.passes)
    assert res.model.constant and "varies" not in res.model.message
    assert not res.dynamics.has_filter and not res.dynamics.has_friction
    # the same run without them: nothing left out, the figures of the ordinary path
    assert plain.cmd_t[1] - plain.cmd_t[0] == pytest.approx(T)
    base = analyze_lag(plain, joint=0, cmd_period_s=T)
    assert base.late_sends == 0 and base.late_frames_left_out == 0
    assert all(p.n_late_left_out == 0 for p in base.passes)
    assert base.model.constant and not base.model.disagreeing


def test_cruise_deltas_with_nothing_dropped_match_the_running_sums():
    rng = np.random.default_rng(7)
    tc = np.arange(300) * T
    qc = np.cumsum(rng.uniform(0.0, 0.2, 300))
    ts = np.sort(rng.uniform(0.0, 3.0, 400))
    qs = np.interp(ts - 0.05, tc, qc) + rng.normal(0.0, 0.01, 400)
    windows = np.array([[0.2, 1.0], [1.1, 2.5], [2.9, 2.95]])
    sgn = np.array([1.0, 1.0, -1.0])
    fast = cruise_deltas(tc, qc, ts, qs, windows, sgn, True)
    slow = cruise_deltas(tc, qc, ts, qs, windows, sgn, True, np.zeros(len(ts), dtype=bool))
    for a, b in zip(fast, slow, strict=True):
        assert a.n == b.n and b.left_out == 0
        assert a.mean == pytest.approx(b.mean, rel=1e-12, nan_ok=True)
        assert a.peak == pytest.approx(b.peak, rel=1e-12, nan_ok=True)
    drop = (ts > 0.5) & (ts < 0.6)
    cut = cruise_deltas(tc, qc, ts, qs, windows, sgn, True, drop)
    assert cut[0].left_out == int(np.count_nonzero(drop)) and cut[0].n == fast[0].n - cut[0].left_out


def test_a_pass_whose_cruise_disagrees_with_its_midpoint_is_no_evidence_of_dynamics():
    def p(i, v, lag, mid, direction):
        d = v * lag * 1e-3
        return PassLag(i, direction, v, 1.0, 50, d, d, lag, d, d, lag, mid, 0.0)

    passes = [
        p(0, 15, 80.0, 78.1, "out"),
        p(1, 15, 88.9, 77.8, "back"),
        p(2, 30, 78.2, 78.2, "out"),
        p(3, 30, 78.2, 78.2, "back"),
    ]
    fit = fit_through_origin([x.speed_deg_s for x in passes], [x.delta_mean_deg for x in passes])
    check = model_check(passes, fit)
    assert check.constant and check.disagreeing == [1]
    assert "pass 2 left out" in check.message and "real dynamics" not in check.message
    # a real offset moves the midpoint crossing with the cruise delta: still reported as dynamics
    friction = [p(0, 15, 88.9, 88.5, "out"), p(1, 30, 78.2, 78.4, "out")]
    fit = fit_through_origin([x.speed_deg_s for x in friction], [x.delta_mean_deg for x in friction])
    check = model_check(friction, fit)
    assert not check.constant and not check.disagreeing and "real dynamics" in check.message
