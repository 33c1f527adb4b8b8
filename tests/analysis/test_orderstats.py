"""Median and percentile by one partition give numpy's values exactly."""

from __future__ import annotations

import math

import numpy as np
import pytest

from servotool.analysis.lag.orderstats import median, percentile


@pytest.mark.parametrize("n", [1, 2, 3, 4, 7, 10, 101, 1152, 1153])
def test_the_values_are_numpys(n):
    rng = np.random.default_rng(n)
    for _ in range(20):
        a = rng.normal(size=n) * rng.uniform(1e-4, 1e3)
        assert median(a) == float(np.median(a))
        for q in (0, 1, 50, 97.5, 99, 100):
            assert percentile(a, q) == float(np.percentile(a, q))


def test_nan_and_empty():
    assert math.isnan(median(np.array([1.0, math.nan, 2.0])))
    assert math.isnan(percentile(np.array([1.0, math.nan]), 99))
    assert math.isnan(median(np.zeros(0)))
