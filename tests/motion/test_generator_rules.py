"""The three rules of a generator in a robot's command loop (OtgStreamShaper) and the backstop behind it.

Every figure is checked at the nominal command period from the commands themselves, as the robot checks
them, independently of the generator's planner.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from servotool.motion.backstop import RateBounds, RateLimiter
from servotool.motion.replay import rates
from servotool.motion.stream_shapers import OtgStreamShaper, ShaperSpec

DT = 0.001
REL = 1e-9
V, A, J = 150.0, 570.0, 280000.0  # deg/s, deg/s^2, deg/s^3: a joint at about a datasheet's limits


def _within(x: float, bound: float) -> bool:
    return x <= bound * (1 + REL) + 1e-9


# a stream: (cycles a target holds, the target's offset per axis from the start)
segments = st.lists(
    st.tuples(
        st.integers(min_value=1, max_value=400),
        st.lists(st.floats(-20.0, 20.0, allow_nan=False), min_size=3, max_size=3),
    ),
    min_size=1,
    max_size=6,
)
periods = st.lists(st.sampled_from([DT, DT, DT, DT, 2 * DT, 3 * DT, 4 * DT]), min_size=1, max_size=50)


def _stream(segs: list[tuple[int, list[float]]], start: np.ndarray) -> np.ndarray:
    rows = [np.tile(start + np.asarray(off), (n, 1)) for n, off in segs]
    return np.vstack(rows)


def _run(shaper: OtgStreamShaper, targets: np.ndarray, pers: list[float], echo_offset: float = 0.0):
    out = []
    echo = None
    for k, t in enumerate(targets):
        shaper.observe(echo, pers[k % len(pers)])
        c = shaper.step(t)
        out.append(c)
        echo = c + echo_offset
    return np.array(out)


START = np.array([10.0, -30.0, 45.0])


@given(segments, periods, st.booleans())
@settings(max_examples=40, deadline=None)
def test_every_tick_keeps_v_a_j_per_axis(segs, pers, reanchor) -> None:
    shaper = OtgStreamShaper(V, A, J, DT, 3, reanchor=reanchor)
    shaper.prime(START)
    cmds = _run(shaper, _stream(segs, START), pers)
    peak = rates(cmds, START, DT).max(axis=0)
    assert _within(peak[0], V) and _within(peak[1], A) and _within(peak[2], J)


@given(segments, periods)
@settings(max_examples=30, deadline=None)
def test_a_norm_budget_gives_each_axis_its_share(segs, pers) -> None:
    shaper = OtgStreamShaper(V, A, J, DT, 3, norm_budget=True, reanchor=True)
    shaper.prime(START)
    cmds = _run(shaper, _stream(segs, START), pers)
    share = rates(cmds, START, DT).max(axis=0)
    for got, bound in zip(share, (V, A, J), strict=True):
        assert _within(got, bound / math.sqrt(3))
    norm = rates(cmds, START, DT, norm=True).max(axis=0)
    for got, bound in zip(norm, (V, A, J), strict=True):
        assert _within(got, bound)


@given(segments, periods)
@settings(max_examples=30, deadline=None)
def test_a_missed_cycle_never_doubles_an_increment(segs, pers) -> None:
    """The measured period changes nothing: the commands are those of a loop that never missed a cycle, and
    no increment is ever larger than v_max * dt."""
    targets = _stream(segs, START)
    late = OtgStreamShaper(V, A, J, DT, 3, reanchor=True)
    late.prime(START)
    steady = OtgStreamShaper(V, A, J, DT, 3, reanchor=True)
    steady.prime(START)
    got = _run(late, targets, pers)
    want = _run(steady, targets, [DT])
    assert np.array_equal(got, want)
    steps = np.abs(np.diff(np.vstack([START, got]), axis=0))
    assert np.all(steps <= V * DT * (1 + REL))


def test_stepping_the_measured_period_doubles_the_increment() -> None:
    """What rule 2 prevents: mid-cruise, a 2 ms period stepped as such is twice the nominal increment."""
    shaper = OtgStreamShaper(V, A, J, DT, 1, nominal_step=False)
    shaper.prime([0.0])
    q = [shaper.step([90.0])[0] for _ in range(400)]
    cruise = q[-1] - q[-2]
    assert cruise == pytest.approx(V * DT, rel=1e-6)
    shaper.observe(None, 2 * DT)
    doubled = shaper.step([90.0])[0] - q[-1]
    assert doubled == pytest.approx(2 * V * DT, rel=1e-6)


@given(
    segments,
    st.floats(-0.5, 0.5, allow_nan=False).filter(lambda d: abs(d) > 1e-6),
    st.integers(0, 300),
    st.sampled_from([0, 1]),
)
@settings(max_examples=30, deadline=None)
def test_reanchoring_follows_an_echo_offset(segs, offset, at, lag) -> None:
    """An echo that differs by d from the command it echoes (the last one, or with echo_lag 1 the one
    before) moves the generator by d: from there on its commands toward target + d are those of an
    undisturbed generator toward target, shifted by d."""
    targets = _stream(segs, START)
    at = max(1, min(at, len(targets) - 2))
    a = OtgStreamShaper(V, A, J, DT, 3, reanchor=True, echo_lag=lag)
    b = OtgStreamShaper(V, A, J, DT, 3, reanchor=True, echo_lag=lag)
    a.prime(START)
    b.prime(START)
    sent = []
    for t in targets[: at + 1]:
        ca = a.step(t)
        assert np.array_equal(ca, b.step(t))
        sent.append(ca)
    echoed = sent[-1 - lag]
    a.observe(echoed)
    b.observe(echoed + offset)
    rest_a = np.array([a.step(t) for t in targets[at + 1 :]])
    rest_b = np.array([b.step(t + offset) for t in targets[at + 1 :]])
    assert np.allclose(rest_b - rest_a, offset, atol=1e-7)


def test_an_exact_echo_changes_nothing() -> None:
    a = OtgStreamShaper(V, A, J, DT, 3, reanchor=True)
    b = OtgStreamShaper(V, A, J, DT, 3, reanchor=False)
    a.prime(START)
    b.prime(START)
    target = START + [5.0, -3.0, 1.0]
    for _ in range(300):
        ca = a.step(target)
        cb = b.step(target)
        assert np.array_equal(ca, cb)
        a.observe(ca)
    assert a.at_target and np.array_equal(ca, target)


@given(segments, periods)
@settings(max_examples=30, deadline=None)
def test_under_the_rules_the_backstop_never_binds(segs, pers) -> None:
    # the generator's bounds a little inside the backstop's (the robot's limits, kept with a margin)
    spec = ShaperSpec("otg", 0.99 * V, 0.99 * A, 0.99 * J, DT, reanchor=True, backstop=(V, A, J))
    shaper = spec.build(3)
    assert isinstance(shaper, OtgStreamShaper)
    shaper.prime(START)
    targets = _stream(segs, START)
    cmds = _run(shaper, targets, pers)
    assert shaper.max_alteration == 0.0
    assert np.array_equal(cmds[-1], targets[-1]) or not shaper.at_target


POINT = st.lists(st.floats(-5.0, 5.0, allow_nan=False), min_size=2, max_size=2)


@given(st.lists(POINT, min_size=2, max_size=200), st.booleans())
@settings(max_examples=60, deadline=None)
def test_the_backstop_keeps_its_bounds_on_any_command(cmds, norm) -> None:
    b = RateBounds(2.0, 10.0, 5000.0, norm=norm)
    lim = RateLimiter(b, DT)
    start = np.zeros(2)
    lim.prime(start)
    out = np.array([lim.limit(c) for c in cmds])
    peak = rates(out, start, DT, norm=norm).max(axis=0)
    assert _within(peak[0], b.v_max) and _within(peak[1], b.a_max)
    assert lim.max_alteration >= 0.0
    if lim.altered_cycles == 0:
        assert np.array_equal(out, np.array(cmds))


def test_the_backstop_records_its_largest_alteration() -> None:
    lim = RateLimiter(RateBounds(1.0, 10.0, 1000.0), DT)
    lim.prime([0.0])
    assert lim.limit([0.0])[0] == 0.0
    out = lim.limit([1.0])[0]  # a 1 m jump in 1 ms
    assert out == pytest.approx(1000.0 * DT**3, rel=1e-5)  # the jerk bound's first step, with its margin
    assert lim.max_alteration == pytest.approx(1.0 - out)
    assert lim.altered_cycles == 1 and lim.first_altered == 1


def test_backstop_refuses_nonsense() -> None:
    with pytest.raises(ValueError):
        RateBounds(0.0, 1.0, 1.0)
    lim = RateLimiter(RateBounds(1.0, 1.0, 1.0), DT)
    with pytest.raises(RuntimeError):
        lim.limit([0.0])
    lim.prime([0.0])
    with pytest.raises(ValueError):
        lim.limit([float("nan")])
    with pytest.raises(ValueError):
        lim.limit([0.0, 1.0])
