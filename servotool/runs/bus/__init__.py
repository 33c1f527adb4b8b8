"""Bus runs: servo reads and moves, joint-limit sweeps, and the sweep files they write."""
