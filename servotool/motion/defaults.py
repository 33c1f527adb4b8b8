"""The default motion bounds of every arm run, defined once.

Every command, run setting and shaper that needs a speed, acceleration or jerk bound and is not given one
takes it from here, so `lag`, `step`, `shape` and the campaign files agree on what "the default" means.
Units: deg/s, deg/s^2, deg/s^3 and s.
"""

from __future__ import annotations

# the stream's speed bound: the shaper never commands faster, the braked stop never starts faster
V_MAX_DEG_S = 130.0
# the stream's acceleration bound: the shaper's ramps and the braked stop's deceleration
A_MAX_DEG_S2 = 500.0
# the jerk bound of the jerk-limited (otg) shaper
J_MAX_DEG_S3 = 10000.0
# one setpoint every 10 ms: the FAIRINO ServoJ period
CMD_PERIOD_S = 0.01

__all__ = ["A_MAX_DEG_S2", "CMD_PERIOD_S", "J_MAX_DEG_S3", "V_MAX_DEG_S"]
