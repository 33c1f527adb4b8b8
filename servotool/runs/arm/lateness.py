"""How late the streaming loop sends its ticks, summarised in memory that does not grow with the run.

A one-hour run at 100 Hz has 360 000 ticks: keeping each tick's lateness would grow the process by
megabytes an hour. LatenessStats keeps a count, a running mean, the maximum, the number of ticks past a
threshold and a fixed histogram (0.05 ms bins up to 50 ms, one overflow bin) from which p50 and p99 are
read to within one bin.
"""

from __future__ import annotations

import math

import numpy as np

BIN_S = 5e-5  # 0.05 ms
N_BINS = 1000  # up to 50 ms; later ticks share the overflow bin (their max is still exact)


class LatenessStats:
    """Bounded statistics of per-tick lateness (s; a tick sent early counts as 0 late).

    late_threshold_s: a tick later than this counts in `late_ticks` (the loop uses half a period).
    """

    def __init__(self, late_threshold_s: float) -> None:
        self.late_threshold_s = float(late_threshold_s)
        self.count = 0
        self.late_ticks = 0
        self.max_s = 0.0
        self._sum = 0.0
        self._hist = np.zeros(N_BINS + 1, dtype=np.int64)

    def add(self, late_s: float) -> None:
        """Take one tick's lateness (s)."""
        x = late_s if late_s > 0.0 else 0.0
        self.count += 1
        self._sum += x
        if x > self.max_s:
            self.max_s = x
        if x > self.late_threshold_s:
            self.late_ticks += 1
        i = int(x / BIN_S)
        self._hist[i if i < N_BINS else N_BINS] += 1

    @property
    def mean_s(self) -> float:
        return self._sum / self.count if self.count else 0.0

    def quantile_s(self, q: float) -> float:
        """The q-quantile (0..1) of the lateness, to within one 0.05 ms bin (the bin's upper edge, capped
        at the maximum seen); 0 before any tick."""
        if not self.count:
            return 0.0
        if not 0.0 <= q <= 1.0 or math.isnan(q):
            raise ValueError(f"quantile {q!r} is outside 0..1")
        rank = max(1, math.ceil(q * self.count))
        i = int(np.searchsorted(np.cumsum(self._hist), rank))
        if i >= N_BINS:
            return self.max_s
        return min((i + 1) * BIN_S, self.max_s)
