"""The dynamic fit's pieces: the exact Jacobian and the starts of the filter fit."""

from __future__ import annotations

import numpy as np
import pytest

from servotool.analysis.lag import analyze_lag, dynamics, simulate
from servotool.analysis.lag.fitmodel import FitModel
from servotool.analysis.lag.solver import cost_of, solve
from servotool.motion.ramp import ramp_profile
from tests.analysis.test_lag import T, recording


def _model(friction: float) -> FitModel:
    prof = ramp_profile(0.0, 20.0, (5, 40), dt=T, ramp_s=0.2, settle_s=0.5)
    tc = np.arange(len(prof)) * T
    ts = np.arange(0.0, tc[-1], 0.008) + 0.0031
    y, dy = simulate(tc, prof.q, ts, 0.05, 0.01)
    rng = np.random.default_rng(3)
    return FitModel(tc, prof.q, ts, y - friction * np.tanh(dy) + rng.normal(0.0, 0.002, len(ts)))


@pytest.mark.parametrize("friction", [0.0, 0.05])
@pytest.mark.parametrize("x", [(0.047, 0.008), (0.06, 0.02), (0.05, 0.0)])
def test_the_jacobian_is_the_residuals_derivative(friction, x):
    model = _model(friction)
    x = np.array(x)
    _, jac = model.residual(x, fit_tau=True)
    for p, step in ((0, 1e-7), (1, 1e-7)):
        lo, hi = x.copy(), x.copy()
        lo[p] = max(x[p] - step, 0.0)
        hi[p] += step
        fd = (model.residual_only(hi) - model.residual_only(lo)) / (hi[p] - lo[p])
        # the model is piecewise smooth (grid cells, setpoints): compared as a whole column
        assert np.linalg.norm(jac[:, p] - fd) <= 1e-4 * np.linalg.norm(fd)


def test_the_solver_keeps_its_bounds_and_finds_the_minimum():
    def line(x):
        r = np.array([x[0] - 2.0, 0.5 * (x[0] - 2.0)])
        return r, np.array([[1.0], [0.5]])

    assert solve(line, np.array([0.5]), np.array([0.0]), np.array([1.0])).x[0] == 1.0
    assert solve(line, np.array([0.5]), np.array([0.0]), np.array([5.0])).x[0] == pytest.approx(2.0)


def test_a_filter_longer_than_the_dead_time_is_found():
    # from tau = 0 the cost is flat in tau: the fit must start from a split of the lag to see this filter
    res = analyze_lag(
        recording(lag=0.014, tau=0.012, noise=0.0013, seed=971, jitter=0.0), joint=0, cmd_period_s=T
    )
    d = res.dynamics
    assert d.has_filter
    assert d.lag_ms == pytest.approx(14.0, abs=1.0) and d.tau_ms == pytest.approx(12.0, abs=1.0)


@pytest.mark.parametrize(
    ("tau", "seed"), [(0.0, 11), (0.0, 12), (0.002, 13), (0.003, 14), (0.004, 15), (0.008, 16), (0.02, 17)]
)
def test_the_pretest_decides_as_the_filter_fit_would(monkeypatch, tau, seed):
    # the pre-test only spares the filter fit a walk: the outcome is the one the walk would give
    rec = recording(lag=0.04, tau=tau, noise=0.002, seed=seed)
    quick = analyze_lag(rec, joint=0, cmd_period_s=T).dynamics
    monkeypatch.setattr(dynamics, "_no_filter_ahead", lambda *args: False)
    walked = analyze_lag(rec, joint=0, cmd_period_s=T).dynamics
    assert quick.has_filter == walked.has_filter
    assert quick.lag_ms == pytest.approx(walked.lag_ms, abs=0.1)
    assert quick.tau_ms == pytest.approx(walked.tau_ms, abs=0.1)


@pytest.mark.parametrize(
    ("lag", "tau", "seed"),
    [
        (0.04, 0.0, 21),
        (0.04, 0.002, 22),
        (0.04, 0.004, 23),
        (0.014, 0.012, 24),
        (0.03, 0.02, 25),
        (0.12, 0.05, 26),
        (0.02, 0.05, 27),
        (0.2, 0.0, 28),
    ],
)
def test_the_splits_stop_where_every_split_tried_would_start(monkeypatch, lag, tau, seed):
    # the splits are tried in order of tau and stop once the cost rises: the start (and so the outcome) is
    # the one trying every split gives
    starts = []
    found = dynamics._filter_start

    def checked(model, pure, upper, f_scale):
        start = found(model, pure, upper, f_scale)
        s = float(pure.x[0])
        options = [(pure.cost, np.array([s, 0.0]))]
        for t in (dynamics.TAU_FLOOR_S, *(frac * s for frac in dynamics.TAU_SPLITS)):
            x = np.array([max(s - t, 0.0), min(t, float(upper[1]))])
            options.append((cost_of(model.residual_only(x), f_scale), x))
        every = min(options, key=lambda option: option[0])[1]  # the first of the cheapest, as before
        starts.append((start, every))
        return start

    monkeypatch.setattr(dynamics, "_filter_start", checked)
    analyze_lag(recording(lag=lag, tau=tau, noise=0.002, seed=seed), joint=0, cmd_period_s=T)
    assert starts and all(np.array_equal(start, every) for start, every in starts)


@pytest.mark.parametrize("tau", [0.0, 0.005, 0.015, 0.03, 0.05])
@pytest.mark.parametrize("lag", [0.03, 0.12])
def test_the_fit_finds_the_known_dead_time_and_filter_within_its_standard_errors(tau, lag):
    # seeded recordings of a known truth: what any faster fit must still recover
    rec = recording(lag=lag, tau=tau, noise=0.001, seed=int(tau * 1e4 + lag * 1e3))
    d = analyze_lag(rec, joint=0, cmd_period_s=T).dynamics
    assert d.has_filter == (tau > 0)
    assert d.lag_stderr_ms < 0.2
    assert abs(d.lag_ms - lag * 1e3) <= 3 * d.lag_stderr_ms + 0.01
    # a cruise pins the sum to a few microseconds whatever the split
    assert d.effective_lag_ms == pytest.approx((lag + tau) * 1e3, abs=0.05)
    if tau > 0:
        assert d.tau_stderr_ms < 0.2
        assert abs(d.tau_ms - tau * 1e3) <= 3 * d.tau_stderr_ms + 0.01
    else:
        assert d.tau_ms == 0.0
