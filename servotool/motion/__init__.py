"""Pure motion math: stream shapers (acceleration-bounded and jerk-limited OTG), divergence guard, joint
limits, ramp and step profiles, minimum-jerk moves and the default bounds (defaults.py). No I/O, no clock, no
printing; every function is deterministic."""

from servotool.motion.guard import (
    DivergenceGuard,
    GuardConfig,
    GuardTuning,
    GuardVerdict,
    SafetyConfig,
    StreamSafety,
    UnsafeConfigError,
    build_stream_safety,
    margin_floor,
    tuning_from_measurement,
)
from servotool.motion.limits import JointLimits
from servotool.motion.quintic import (
    Trajectory,
    WaypointTrajectory,
    duration_for,
    effective_cap,
    min_jerk,
)
from servotool.motion.ramp import PHASES, RampProfile, StepLevels, ramp_profile, step_levels
from servotool.motion.shaper import (
    JumpEvent,
    ShaperConfig,
    ShaperNotPrimedError,
    StreamShaper,
    braking_velocity,
    max_trail,
)

__all__ = [
    "PHASES",
    "DivergenceGuard",
    "GuardConfig",
    "GuardTuning",
    "GuardVerdict",
    "JointLimits",
    "JumpEvent",
    "RampProfile",
    "SafetyConfig",
    "ShaperConfig",
    "ShaperNotPrimedError",
    "StepLevels",
    "StreamSafety",
    "StreamShaper",
    "Trajectory",
    "UnsafeConfigError",
    "WaypointTrajectory",
    "braking_velocity",
    "build_stream_safety",
    "duration_for",
    "effective_cap",
    "margin_floor",
    "max_trail",
    "min_jerk",
    "ramp_profile",
    "step_levels",
    "tuning_from_measurement",
]
