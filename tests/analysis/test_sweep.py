import math
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from servotool.analysis.sweep import (
    STOP_ABORT,
    STOP_STALL,
    STOP_STORED,
    StallCriterion,
    StallDetector,
    SweepResult,
    find_stall,
    limit_from_stop,
    merge_found,
)

PERIOD = 0.04


def trace(speed, direction, start=500, obstacle=None, lag_s=0.1, noise=1, seconds=6.0, seed=0):
    """Command ramp and a read-back that follows it with a first-order lag, stops at an obstacle, +-noise."""
    rng = random.Random(seed)
    t, cmd, read = [], [], []
    pos = float(start)
    for k in range(int(seconds / PERIOD)):
        tk = k * PERIOD
        c = start + direction * speed * tk
        pos += (c - pos) * (1 - math.exp(-PERIOD / lag_s))
        if obstacle is not None:
            pos = min(pos, obstacle) if direction > 0 else max(pos, obstacle)
        t.append(tk)
        cmd.append(round(c))
        read.append(round(pos) + rng.randint(-noise, noise))
    return t, cmd, read


@pytest.mark.parametrize("speed", [5, 25, 100, 300])
@pytest.mark.parametrize("direction", [1, -1])
def test_free_joint_is_never_a_stall(speed, direction):
    t, cmd, read = trace(speed, direction, seconds=min(6.0, 450 / speed))
    assert find_stall(t, cmd, read, direction, speed) is None


@pytest.mark.parametrize("speed", [5, 25, 100, 300])
@pytest.mark.parametrize("direction", [1, -1])
def test_stall_is_found_soon_after_contact(speed, direction):
    obstacle = 500 + direction * 60
    t, cmd, read = trace(speed, direction, obstacle=obstacle, seconds=60 / speed + 3)
    i = find_stall(t, cmd, read, direction, speed)
    assert i is not None
    contact = next(k for k, r in enumerate(read) if abs(r - obstacle) <= 1)
    crit = StallCriterion()
    # within the window plus the time the command needs to lead by K, plus two ticks
    assert t[i] - t[contact] <= crit.window_s + crit.lead_threshold(speed) / speed + 2 * PERIOD
    assert abs(read[i] - obstacle) <= 1


@settings(max_examples=60, deadline=None)
@given(speed=st.floats(3, 300), lag=st.floats(0.0, 0.1), noise=st.integers(0, 1), seed=st.integers(0, 1000))
def test_property_free_following_within_the_lag_allowance_is_not_a_stall(speed, lag, noise, seed):
    seconds = min(4.0, 450 / speed)
    t, cmd, read = trace(speed, 1, lag_s=max(lag, 1e-3), noise=noise, seed=seed, seconds=seconds)
    assert find_stall(t, cmd, read, 1, speed) is None


def test_detector_needs_a_full_window_of_history():
    det = StallDetector(1, 25.0)
    assert not det.update(0.0, 100, 0)  # a huge lead at once is not yet a stall
    assert det.progress is None
    assert not det.update(0.2, 105, 0)
    assert det.update(0.5, 112, 0)
    assert det.lead == 112 and det.progress == 0


def test_thresholds():
    crit = StallCriterion()
    assert crit.lead_threshold(25) == pytest.approx(9.75)
    assert crit.progress_threshold(25) == pytest.approx(3.75)
    assert crit.progress_threshold(5) == pytest.approx(2.0)
    with pytest.raises(ValueError):
        StallDetector(0, 25)
    with pytest.raises(ValueError):
        StallDetector(1, 0)


def test_limit_from_stop_is_inside_the_stop():
    assert limit_from_stop(562, -1, 20) == 582
    assert limit_from_stop(961, 1, 20) == 941


def _result(joint, direction, reason, stop, inside=20):
    sign = 1 if direction == "up" else -1
    r = SweepResult(
        joint=joint,
        direction=direction,
        speed=25,
        inside=inside,
        start=500,
        bound=960 if sign > 0 else 80,
        stored=(80, 960),
        reason=reason,
        stop=stop,
    )
    r.limit = limit_from_stop(stop, sign, inside) if reason in (STOP_STALL, STOP_STORED) else None
    return r


def test_merge_found_takes_sweep_bounds_then_file_then_stored():
    results = [
        _result(2, "down", STOP_STALL, 562),
        _result(3, "up", STOP_STORED, 988),
        _result(4, "down", STOP_ABORT, 300),
    ]
    found = merge_found(results, existing={3: (40, 881)}, stored={2: (80, 960), 3: (10, 990), 4: (0, 1000)})
    assert (found[2].lo, found[2].hi, found[2].lo_source, found[2].hi_source) == (582, 960, "sweep", "stored")
    assert (found[3].lo, found[3].hi, found[3].lo_source, found[3].hi_source) == (40, 968, "file", "sweep")
    assert (found[4].lo, found[4].hi, found[4].lo_source) == (0, 1000, "stored")  # an abort sets no limit
    assert "stalled at 562" in found[2].lo_detail


def test_merge_found_refuses_crossing_limits():
    with pytest.raises(ValueError, match="cross"):
        merge_found(
            [_result(2, "down", STOP_STALL, 600), _result(2, "up", STOP_STALL, 620)], {}, {2: (80, 960)}
        )


def test_result_dict_and_push_measure():
    r = _result(2, "down", STOP_STALL, 562)
    r.cmd = [776, 700, 560, 550]
    assert r.max_command_past_stop == 12
    d = r.as_dict()
    assert d["limit"] == 582 and d["ticks"]["cmd"] == [776, 700, 560, 550]


def test_summary_figure_names_every_mapped_limit_and_labels_its_axes():
    from servotool.analysis.sweep import FoundLimit, SweepResult
    from servotool.plots.sweep import limits_summary_figure, sweep_figure

    res = SweepResult(
        joint=2,
        direction="down",
        speed=25.0,
        inside=20,
        start=776,
        bound=80,
        stored=(80, 960),
        t=[0.0, 0.04, 0.08],
        cmd=[776, 775, 774],
        read=[776, 776, 775],
        reason="stalled",
        stop=740,
        stop_t=0.08,
        limit=760,
    )
    found = {2: FoundLimit(2, 760, 941, "sweep", "file")}
    fig = limits_summary_figure([res], found, {2: (80, 960)}, {2: (95, 941)})
    ax = fig.axes[0]
    assert "2: 760-941" in ax.get_title() and "pulses" in ax.get_xlabel()
    labels = {t.get_text() for t in ax.get_legend().get_texts()}
    assert {"stored limit (in the servo)", "limit before the run", "mapped limit", "stop read back"} <= labels
    one = sweep_figure(res).axes[0]
    assert "stalled at 740 pulses, limit 760" in one.get_title()
    assert "(s)" in one.get_xlabel() and "(pulses)" in one.get_ylabel()
    legend = " ".join(t.get_text() for t in one.get_legend().get_texts())
    assert "stall called at 0.08 s" in legend and "20 pulses inside the stop" in legend
