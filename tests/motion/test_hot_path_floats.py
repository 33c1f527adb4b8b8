"""The generator's per-tick path (OtgStreamShaper.step and the backstop behind it) runs on plain floats; these
tests hold it to the array arithmetic it replaced, bit for bit, on seeded random streams."""

from __future__ import annotations

from collections import deque

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from servotool.motion.backstop import MARGIN, RateBounds, RateLimiter
from servotool.motion.otg import MultiOtg
from servotool.motion.stream_shapers import ECHO_TOLERANCE, OtgStreamShaper

V, A, J, DT, N = 150.0, 800.0, 20000.0, 0.001, 7


def _clip_norm(x: np.ndarray, bound: float) -> np.ndarray:
    n = float(np.linalg.norm(x))
    return x * (bound / n) if n > bound else x


class ArrayBackstop:
    """The backstop's arithmetic on numpy arrays, as it was written before the scalar path."""

    def __init__(self, bounds: RateBounds, dt: float, q: np.ndarray) -> None:
        self.b, self.dt = bounds, dt
        self.p, self.v, self.a = q.copy(), np.zeros_like(q), np.zeros_like(q)
        self.max_alteration, self.altered_cycles, self.first_altered, self.cycles = 0.0, 0, None, 0

    def _within(self, v: np.ndarray, a: np.ndarray, j: np.ndarray) -> bool:
        b, f = self.b, 1.0 - MARGIN
        if b.norm:
            return bool(
                np.linalg.norm(v) <= b.v_max * f
                and np.linalg.norm(a) <= b.a_max * f
                and np.linalg.norm(j) <= b.j_max * f
            )
        return bool(
            np.all(np.abs(v) <= b.v_max * f)
            and np.all(np.abs(a) <= b.a_max * f)
            and np.all(np.abs(j) <= b.j_max * f)
        )

    def _limited_velocity(self, j: np.ndarray) -> np.ndarray:
        dt, v0, a0, f = self.dt, self.v, self.a, 1.0 - MARGIN
        vm, am, jm = self.b.v_max * f, self.b.a_max * f, self.b.j_max * f
        if self.b.norm:
            return _clip_norm(v0 + _clip_norm(a0 + _clip_norm(j, jm) * dt, am) * dt, vm)
        a = np.clip(a0 + np.clip(j, -jm, jm) * dt, -am, am)
        a = np.clip(a, (-vm - v0) / dt, (vm - v0) / dt)
        return np.clip(v0 + a * dt, -vm, vm)

    def limit(self, x: np.ndarray) -> np.ndarray:
        dt = self.dt
        v = (x - self.p) / dt
        a = (v - self.v) / dt
        j = (a - self.a) / dt
        self.cycles += 1
        if self._within(v, a, j):
            out = x.copy()
        else:
            v = self._limited_velocity(j)
            out = self.p + v * dt
            a = (v - self.v) / dt
            self.altered_cycles += 1
            if self.first_altered is None:
                self.first_altered = self.cycles - 1
            self.max_alteration = max(self.max_alteration, float(np.max(np.abs(out - x))))
        self.p, self.v, self.a = out, v, a
        return out.copy()


class ArrayShaper:
    """OtgStreamShaper's step and re-anchoring on numpy arrays, as written before the scalar path."""

    def __init__(self, q: np.ndarray, echo_lag: int, backstop: ArrayBackstop | None) -> None:
        self.otg = MultiOtg(q, OtgStreamShaper(V, A, J, DT).budget, synchronized=True)
        self.lag, self.backstop = echo_lag, backstop
        self.sent: deque[np.ndarray] = deque([q.copy()] * 3, maxlen=3)

    def step(self, target: np.ndarray, echo: np.ndarray | None) -> np.ndarray:
        anchor = self.sent[-1]
        if echo is not None:
            offset = echo - self.sent[-1 - self.lag]
            lost = np.all(np.abs(echo - self.sent[-2 - self.lag]) <= ECHO_TOLERANCE)
            if np.any(np.abs(offset) > ECHO_TOLERANCE) and not lost:
                anchor = anchor + offset
        if np.any(np.abs(anchor - self.otg.position) > ECHO_TOLERANCE):
            self.otg.set_position(anchor)
        self.otg.set_target(target)
        out = self.otg.step(DT)
        if self.backstop is not None:
            out = self.backstop.limit(out)
        self.sent.append(out)
        return out


def _same(a: np.ndarray, b: np.ndarray) -> bool:
    return a.dtype == b.dtype == np.float64 and a.tobytes() == b.tobytes()


def _echo(rng: np.random.Generator, sent: deque[np.ndarray]) -> np.ndarray | None:
    """An echo of the kind a robot gives: none, the last command, one rounded, one lost, or one moved."""
    kind = rng.integers(6)
    if kind == 0:
        return None
    e = sent[-1].copy()
    if kind == 2:
        e += rng.uniform(-1, 1, e.size) * ECHO_TOLERANCE * 0.5
    elif kind == 3:
        e = sent[-2].copy()
    elif kind == 4:
        e[rng.integers(e.size)] += rng.normal(0, 0.05)
    elif kind == 5:
        e += rng.normal(0, 1e-9, e.size)
    return e


@settings(max_examples=40, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    echo_lag=st.sampled_from([0, 1]),
    backstop=st.sampled_from([None, "axis", "norm"]),
    tight=st.booleans(),
)
def test_the_float_path_gives_the_array_path_bits(seed, echo_lag, backstop, tight) -> None:
    rng = np.random.default_rng(seed)
    q = rng.uniform(-90, 90, N)
    # tight: a backstop below the generator's bounds, so it binds (the altered path is compared too)
    f = 0.5 if tight else 1.01
    bounds = None if backstop is None else RateBounds(f * V, f * A, f * J, norm=backstop == "norm")
    fast = OtgStreamShaper(
        V,
        A,
        J,
        DT,
        N,
        reanchor=True,
        echo_lag=echo_lag,
        backstop=None if bounds is None else RateLimiter(bounds, DT),
    )
    fast.prime(q)
    ref = ArrayShaper(q, echo_lag, None if bounds is None else ArrayBackstop(bounds, DT, q))
    target = q.copy()
    for _ in range(150):
        if rng.random() < 0.1:
            target = q + rng.uniform(-30, 30, N)
        elif rng.random() < 0.5:
            target = target + rng.normal(0, 0.05, N)
        echo = _echo(rng, ref.sent)
        fast.observe(echo)
        got, want = fast.step(target), ref.step(target, echo)
        assert _same(got, want)
        assert _same(fast.velocity, ref.otg.velocity)
    if bounds is not None:
        assert fast.backstop is not None and ref.backstop is not None
        bs, rb = fast.backstop, ref.backstop
        assert (bs.max_alteration, bs.altered_cycles, bs.first_altered, bs.cycles) == (
            rb.max_alteration,
            rb.altered_cycles,
            rb.first_altered,
            rb.cycles,
        )
        assert _same(bs.position, rb.p) and _same(bs.velocity, rb.v)
        if tight:
            assert bs.altered_cycles > 0  # the altered path was exercised


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), norm=st.booleans())
def test_the_backstop_floats_match_the_arrays_on_any_command(seed, norm) -> None:
    rng = np.random.default_rng(seed)
    q = rng.uniform(-1, 1, N)
    b = RateBounds(V, A, J, norm=norm)
    fast, ref = RateLimiter(b, DT), ArrayBackstop(b, DT, q)
    fast.prime(q)
    x = q.copy()
    for _ in range(100):
        # steps within the bounds mostly, beyond them now and then
        x = x + rng.normal(0, 0.01 if rng.random() < 0.8 else 1.0, N)
        assert _same(fast.limit(x), ref.limit(x))
    assert (fast.max_alteration, fast.altered_cycles, fast.first_altered) == (
        ref.max_alteration,
        ref.altered_cycles,
        ref.first_altered,
    )
