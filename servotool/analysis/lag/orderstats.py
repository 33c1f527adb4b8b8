"""Median and percentile of one short array by a single partition: the values np.median and np.percentile
(linear method) give, without their dispatch, which on the arrays of a short recording costs more than
the partition itself."""

from __future__ import annotations

import math

import numpy as np


def _order_pair(a: np.ndarray, hi: int, lo: int) -> tuple[float, float]:
    """The lo-th and hi-th smallest values of a (lo is hi or hi - 1) by one partition at hi: the one below
    is the largest of the part in front of it (a partition at two places costs twice one)."""
    p = np.partition(a, hi)
    above = float(p[hi])
    return (above if lo == hi else float(p[:hi].max())), above


def median(a: np.ndarray) -> float:
    """np.median of a 1-d array (the mean of the two middle values for an even count); NaN when it is
    empty or holds a NaN."""
    n = len(a)
    if n == 0 or np.isnan(a).any():
        return math.nan
    k = n // 2
    below, above = _order_pair(a, k, k - 1 if n % 2 == 0 else k)
    return 0.5 * (below + above) if n % 2 == 0 else above


def percentile(a: np.ndarray, q: float) -> float:
    """np.percentile(a, q) of a 1-d array (linear interpolation between order statistics, numpy's own
    rounding); NaN when it is empty or holds a NaN."""
    n = len(a)
    if n == 0 or np.isnan(a).any():
        return math.nan
    at = q / 100.0 * (n - 1)
    lo = int(math.floor(at))
    hi = min(lo + 1, n - 1)
    below, above = _order_pair(a, hi, lo)
    t = at - lo
    # as numpy's lerp: from the nearer end, so the result stays between the two values
    return above - (above - below) * (1.0 - t) if t >= 0.5 else below + (above - below) * t
