"""Median and percentile of one short array by a single partition: the values np.median and np.percentile
(linear method) give, without their dispatch, which on the arrays of a short recording costs more than
the partition itself."""

from __future__ import annotations

import math

import numpy as np


def _partitioned(a: np.ndarray, ks: list[int]) -> np.ndarray:
    """a partitioned at the indices ks and at its last one (where a NaN goes)."""
    return np.partition(a, sorted({*ks, len(a) - 1}))


def median(a: np.ndarray) -> float:
    """np.median of a 1-d array (the mean of the two middle values for an even count); NaN when it is
    empty or holds a NaN."""
    n = len(a)
    if n == 0:
        return math.nan
    k = n // 2
    p = _partitioned(a, [k - 1, k] if n % 2 == 0 else [k])
    if math.isnan(p[-1]):
        return math.nan
    return float(0.5 * (p[k - 1] + p[k])) if n % 2 == 0 else float(p[k])


def percentile(a: np.ndarray, q: float) -> float:
    """np.percentile(a, q) of a 1-d array (linear interpolation between order statistics, numpy's own
    rounding); NaN when it is empty or holds a NaN."""
    n = len(a)
    if n == 0:
        return math.nan
    at = q / 100.0 * (n - 1)
    lo = int(math.floor(at))
    hi = min(lo + 1, n - 1)
    p = _partitioned(a, [lo, hi])
    if math.isnan(p[-1]):
        return math.nan
    below, above, t = float(p[lo]), float(p[hi]), at - lo
    # as numpy's lerp: from the nearer end, so the result stays between the two values
    return above - (above - below) * (1.0 - t) if t >= 0.5 else below + (above - below) * t
