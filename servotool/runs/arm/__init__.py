"""Arm runs: settings checked before opening, the stream loop, ramps, steps and their safe ending."""
