import numpy as np
import pytest

from servotool.analysis.shape import replay, stream_figures
from servotool.motion.stream_shapers import OtgStreamShaper, ShaperSpec

DT = 0.01


def _steps():
    t = np.arange(300) * DT
    raw = np.zeros((300, 2))
    raw[20:150, 0] = 10.0
    raw[150:, 0] = -10.0
    return t, raw


@pytest.mark.parametrize("kind", ["accel", "otg"])
def test_replay_bounds_the_wire(kind):
    t, raw = _steps()
    spec = ShaperSpec(kind=kind, v_max=130, a_max=500, j_max=8000, dt=DT)
    r = replay(t, raw, spec)
    f = r.shaped_figures
    assert max(f.peak_velocity) <= 130 + 1e-9
    assert max(f.peak_acceleration) <= 500 * (1 + 1e-9)
    if kind == "otg":
        assert max(f.peak_jerk) <= 8000 * (1 + 1e-9)
    # the raw stream jumps 10 and 20 deg in one tick: far above the runaway band; the shaped one is not
    assert r.raw_figures.max_dv_per_tick[0] == pytest.approx(20.0)
    assert r.crosses_runaway_band("raw") and not r.crosses_runaway_band("shaped")
    # both steps land exactly, the +10 one within the time-optimal bound plus a few ticks
    arrivals = [a for a in r.arrivals if a.joint == 0]
    assert len(arrivals) == 2 and all(a.arrive_s is not None for a in arrivals)
    assert r.shaped[149, 0] == 10.0 and r.shaped[-1, 0] == -10.0
    t_min = 2 * np.sqrt(10 / 500)  # bang-bang landing time (no velocity cap reached); 1 % band comes sooner
    assert 0.8 * t_min <= arrivals[0].arrive_s <= t_min + 0.1 + (0.05 if kind == "otg" else 0)
    # a joint that never moves stays bit-exact; a pure step stream has no moving target to trail
    assert np.all(r.shaped[:, 1] == 0.0)
    assert r.max_trail == [0.0, 0.0]


def test_trail_behind_a_ramp_is_bounded():
    t = np.arange(400) * DT
    raw = np.minimum(t * 60.0, 120.0)[:, None]
    r = replay(t, raw, ShaperSpec(kind="accel", v_max=130, a_max=500, dt=DT))
    assert 0 < r.max_trail[0] <= 60**2 / (2 * 500) + 60 * DT + 1e-9


def test_otg_shaper_refuses_bad_input():
    s = OtgStreamShaper(100, 500, 5000, DT)
    with pytest.raises(RuntimeError):
        s.step([1.0])
    s.prime([0.0, 0.0])
    with pytest.raises(ValueError):
        s.step([np.nan, 0.0])
    with pytest.raises(ValueError):
        s.step([0.0])
    assert np.all(s.position == 0.0)


def test_spec_refuses_bad_settings():
    with pytest.raises(ValueError, match="unknown shaper"):
        ShaperSpec(kind="spline")
    with pytest.raises(ValueError):
        ShaperSpec(a_max=0)


def test_replay_refuses_empty_or_nonfinite():
    with pytest.raises(ValueError):
        replay(np.zeros(1), np.zeros((1, 1)), ShaperSpec())
    with pytest.raises(ValueError):
        replay(np.arange(3) * DT, np.array([[0.0], [np.inf], [0.0]]), ShaperSpec())


def test_stream_figures_of_a_known_stream():
    q = (np.arange(10) * DT) ** 2 * 50  # a = 100 deg/s^2
    f = stream_figures(q, DT)
    assert f.peak_acceleration[0] == pytest.approx(100.0)
    assert f.peak_jerk[0] == pytest.approx(0.0, abs=1e-6)
