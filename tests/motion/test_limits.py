"""Joint limits refuse with a reason and never clamp."""

from __future__ import annotations

import numpy as np
import pytest

from servotool.motion.limits import JointLimits
from servotool.motion.quintic import Trajectory

# The mapped pulse limits of the bus-servo arm (servo id -> [lo, hi]).
ARM = {1: (34, 966), 2: (95, 941), 3: (40, 881), 4: (121, 935), 5: (31, 969), 10: (131, 631)}


def test_goals_inside_the_limits_are_allowed_bounds_included() -> None:
    lim = JointLimits(ARM, unit="pulses")
    assert lim.check({1: 500, 2: 776, 3: 211, 4: 161, 5: 500, 10: 499}) is None
    assert lim.check({4: 121}) is None and lim.check({4: 935}) is None  # inclusive
    assert lim.check({4: 200}) is None  # a partial goal moves only the joints it names


def test_a_goal_outside_is_refused_with_joint_value_and_limits() -> None:
    lim = JointLimits(ARM, unit="pulses")
    reason = lim.check({1: 500, 4: 100})
    assert reason == "joint 4 goal 100 pulses outside limits [121, 935] pulses"
    assert JointLimits(ARM).check({4: 936}) == "joint 4 goal 936 outside limits [121, 935]"


def test_unknown_joints_and_non_numbers_are_refused() -> None:
    lim = JointLimits(ARM)
    assert lim.check({7: 500}) == "joint 7 has no limits configured"
    # A servo id given as a string is a different joint: refused, not guessed.
    assert lim.check({"4": 500}) == "joint '4' has no limits configured"
    for bad in (float("nan"), float("inf"), -float("inf"), None, "500", True):
        reason = lim.check({4: bad})
        assert reason is not None and "joint 4" in reason and "not a finite number" in reason
    assert lim.check({}) is not None


def test_never_clamps() -> None:
    lim = JointLimits(ARM)
    assert not any("clamp" in name for name in dir(lim))
    goal = {1: 2000, 2: 500}
    assert lim.check(goal) is not None
    assert goal == {1: 2000, 2: 500}  # the caller's goal is left exactly as it was


def test_sequence_limits_and_sequence_goals() -> None:
    lim = JointLimits([(-170.0, 170.0), (-265.0, 85.0), (-160.0, 160.0)], unit="deg")
    assert lim.joints == (0, 1, 2)
    assert lim.check([0.0, -90.0, 10.0]) is None
    assert lim.check(np.array([0.0, 90.0, 10.0])) == "joint 1 goal 90 deg outside limits [-265, 85] deg"
    assert "2 values" in lim.check([0.0, 0.0]) and "3 joints" in lim.check([0.0, 0.0])
    assert lim.check({2: 200.0}) is not None
    assert lim.check(np.zeros((3, 1))) is not None
    # Named limits cannot be matched to a bare list by position.
    assert JointLimits(ARM).check([500] * 6) is not None


def test_from_bounds() -> None:
    lim = JointLimits.from_bounds([0, 0], [10, 20], joints=["a", "b"])
    assert lim["b"] == (0.0, 20.0) and "a" in lim and len(lim) == 2
    assert lim.check({"b": 21}) == "joint 'b' goal 21 outside limits [0, 20]"
    assert JointLimits.from_bounds([0, 0], [10, 20]).joints == (0, 1)
    with pytest.raises(ValueError):
        JointLimits.from_bounds([0], [10, 20])
    with pytest.raises(ValueError):
        JointLimits.from_bounds([0, 0], [10, 20], joints=["a"])


@pytest.mark.parametrize(
    "bad",
    [
        {},
        [],
        {1: (10, 5)},
        {1: (0, float("nan"))},
        {1: (0, float("inf"))},
        {1: 5},
        {1: (0, 1, 2)},
        {1: ("a", 1)},
    ],
)
def test_bad_limits_are_refused(bad) -> None:
    with pytest.raises(ValueError):
        JointLimits(bad)


def test_check_path_checks_every_sample() -> None:
    lim = JointLimits(ARM)
    path = [{4: 200}, {4: 150}, {4: 120}, {4: 300}]
    assert lim.check_path(path) == "sample 2: joint 4 goal 120 outside limits [121, 935]"
    assert lim.check_path(path[:2]) is None
    assert lim.check_path([]) == "path has no samples"
    rows = JointLimits([(0.0, 1.0), (0.0, 1.0)])
    reason = rows.check_path(np.array([[0.5, 0.5], [0.5, 1.5]]))
    assert reason == "sample 1: joint 1 goal 1.5 outside limits [0, 1]"


def test_check_path_over_a_planned_move() -> None:
    lim = JointLimits(ARM)
    ok = Trajectory({1: 500, 4: 161}, {1: 700, 4: 220}, 250.0)
    assert lim.check_path(ok.samples()) is None
    bad = Trajectory({1: 500, 4: 161}, {1: 700, 4: 100}, 250.0)
    assert "joint 4" in lim.check_path(bad.samples())
