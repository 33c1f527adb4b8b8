"""The generic default motion bounds of an arm run, defined once.

Every command, run setting and shaper that needs a speed, acceleration or jerk bound and is not given one
takes it from here, so `lag`, `step`, `shape` and the campaign files agree on what "the default" means; where
the device's URL is known, its family's own bounds (devices.family.MotionCaps) replace them.
Units: deg/s, deg/s^2, deg/s^3, deg and s. Constants only: importing it loads nothing else.
"""

from __future__ import annotations

# the stream's speed bound: the shaper never commands faster, the braked stop never starts faster
V_MAX_DEG_S = 130.0
# the stream's acceleration bound: the shaper's ramps and the braked stop's deceleration
A_MAX_DEG_S2 = 500.0
# the jerk bound of the jerk-limited (otg) shaper
J_MAX_DEG_S3 = 10000.0
# one setpoint every 10 ms, the period streamed at when the device's family gives none
CMD_PERIOD_S = 0.01

# The defaults of `lag --ramp` (4.6 s of streaming). Two speeds, because only two speeds can show that L is
# the same at every speed. Each cruise outlasts a 200 ms lag plus its corner transient at the faster speed
# (sweep / v - ramp = 0.4 s at 30 deg/s), and each settle outlasts the lag, so the arm is at rest before
# it reverses. 30 deg/s over a 0.1 s ramp needs 300 deg/s^2, inside the default 500 deg/s^2 bound.
LAG_SWEEP_DEG = 15.0
LAG_SPEEDS_DEG_S = (15.0, 30.0)
LAG_RAMP_S = 0.1
LAG_SETTLE_S = 0.3

# The scales the jerk-limited generator plans over (verified over millions of random plans and streams,
# extremes included, with no exception): each limit within [OTG_LIMIT_MIN, OTG_LIMIT_MAX], positions and
# targets within +-OTG_COORD_MAX (so a displacement within 1e9), velocities and accelerations within
# +-OTG_LIMIT_MAX. Far beyond them (1e150 and more) its intermediate terms overflow or underflow: such inputs
# are refused, never planned.
OTG_LIMIT_MIN = 1e-9
OTG_LIMIT_MAX = 1e9
OTG_COORD_MAX = 5e8

__all__ = [
    "A_MAX_DEG_S2",
    "CMD_PERIOD_S",
    "J_MAX_DEG_S3",
    "LAG_RAMP_S",
    "LAG_SETTLE_S",
    "LAG_SPEEDS_DEG_S",
    "LAG_SWEEP_DEG",
    "OTG_COORD_MAX",
    "OTG_LIMIT_MAX",
    "OTG_LIMIT_MIN",
    "V_MAX_DEG_S",
]
