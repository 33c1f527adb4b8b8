"""Pure motion math: stream shapers (acceleration-bounded and jerk-limited OTG), divergence guard, joint
limits, ramp and step profiles, minimum-jerk moves and the default bounds (defaults.py). No I/O, no clock, no
printing; every function is deterministic.

The names below load their submodule on first use, so importing one constant (motion.defaults) does not load
numpy and every shaper with it.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
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

_SUBMODULE = {
    "DivergenceGuard": "guard",
    "GuardConfig": "guard",
    "GuardTuning": "guard",
    "GuardVerdict": "guard",
    "JointLimits": "limits",
    "JumpEvent": "shaper",
    "PHASES": "ramp",
    "RampProfile": "ramp",
    "SafetyConfig": "guard",
    "ShaperConfig": "shaper",
    "ShaperNotPrimedError": "shaper",
    "StepLevels": "ramp",
    "StreamSafety": "guard",
    "StreamShaper": "shaper",
    "Trajectory": "quintic",
    "UnsafeConfigError": "guard",
    "WaypointTrajectory": "quintic",
    "braking_velocity": "shaper",
    "build_stream_safety": "guard",
    "duration_for": "quintic",
    "effective_cap": "quintic",
    "margin_floor": "guard",
    "max_trail": "shaper",
    "min_jerk": "quintic",
    "ramp_profile": "ramp",
    "step_levels": "ramp",
    "tuning_from_measurement": "guard",
}


def __getattr__(name: str) -> Any:
    """The exported `name`, imported from its submodule when first asked for."""
    if name not in _SUBMODULE:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{_SUBMODULE[name]}"), name)


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
