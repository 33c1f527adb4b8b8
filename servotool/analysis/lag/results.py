"""What a lag analysis reports: the result types of every stage, and two small number helpers."""

from __future__ import annotations

import math
from dataclasses import dataclass, field, fields, is_dataclass
from functools import cache
from typing import Any


def finite(x: float | None) -> bool:
    """True for a real, finite number (None and NaN are not)."""
    return x is not None and math.isfinite(x)


@cache
def _field_names(kind: type) -> tuple[str, ...]:
    return tuple(f.name for f in fields(kind))


def plain(obj: Any) -> Any:
    """What dataclasses.asdict makes of a result (dataclasses as dicts, lists and tuples kept), without its
    deep copy of every leaf: the leaves here are numbers and strings, which nothing can change in place.
    A folder's JSON document holds a thousand results."""
    kind = type(obj)
    if kind is float or kind is int or kind is str or kind is bool or obj is None:
        return obj  # the leaves, most of the calls: no dataclass test for them
    if is_dataclass(obj) and not isinstance(obj, type):
        return {name: plain(getattr(obj, name)) for name in _field_names(type(obj))}
    if isinstance(obj, list):
        return [plain(x) for x in obj]
    if isinstance(obj, tuple):
        return tuple(plain(x) for x in obj)
    if isinstance(obj, dict):
        return {k: plain(v) for k, v in obj.items()}
    return obj


def ms(x: float) -> float:
    """Seconds to milliseconds; NaN stays NaN."""
    return float(x) * 1e3 if finite(x) else math.nan


@dataclass
class PassLag:
    """One pass of a ramp run. Lags in ms, deltas in deg, speeds in deg/s (NaN where not measurable)."""

    index: int
    direction: str  # "out" (away from the start pose) or "back"
    speed_deg_s: float  # |slope| of the commanded stream over the cruise
    cruise_s: float
    n_frames: int  # state frames in the settled cruise window
    delta_mean_deg: float
    delta_peak_deg: float
    lag_ms: float  # delta_mean / speed: the true commanded-to-measured lag
    guard_delta_mean_deg: float
    guard_delta_peak_deg: float  # over the whole cruise
    guard_lag_ms: float
    mid_lag_ms: float
    overshoot_deg: float  # past the end of the pass, after the stop
    note: str = ""
    n_late_left_out: int = 0  # cruise frames left out because a late send disturbed them (not in n_frames)
    # a controller that echoes what it executes (analysis.lag.echo): the executed setpoint's lag behind the
    # one sent (ms), the pass's lowest success rate of setpoints received, the state cycles missed
    echo_lag_ms: float = math.nan
    success_rate: float = math.nan
    lost_cycles: int | None = None


@dataclass
class OriginFit:
    """delta = v * L fitted through the origin over pass means: lag_ms with its standard error (stderr_ms)
    and the bounds of its 95 % confidence interval (ci95_low_ms, ci95_high_ms); NaN where one pass gives
    no scatter to estimate them from."""

    lag_ms: float
    stderr_ms: float
    ci95_low_ms: float
    ci95_high_ms: float
    n_passes: int
    # the same data fitted with an intercept: a non-zero offset (deg) means the delta is not pure lag
    intercept_deg: float = math.nan
    intercept_stderr_deg: float = math.nan

    @property
    def ci95_ms(self) -> tuple[float, float]:
        """The 95 % confidence interval as (low, high) in ms."""
        return (self.ci95_low_ms, self.ci95_high_ms)


@dataclass
class MidpointCheck:
    """The midpoint-crossing lags (ms) against the fit: they agree within tolerance_ms or they do not."""

    mean_ms: float
    min_ms: float
    max_ms: float
    diff_from_fit_ms: float
    tolerance_ms: float
    agrees: bool


@dataclass
class ModelCheck:
    """Is L the same at every speed and in both directions? (the condition for compensating it as v * lag)"""

    constant: bool
    spread_ms: float  # max - min of the per-pass lags
    tolerance_ms: float
    out_minus_back_ms: float
    friction_deg: float  # k in L_pass = L + k / v, fitted over the passes
    message: str
    # passes whose cruise L and own midpoint crossing disagree by more than tolerance_ms: a disturbed
    # measurement, not dynamics (a filter or an offset moves both alike), so not counted
    disagreeing: list[int] = field(default_factory=list)


@dataclass
class Dynamics:
    """Dead time L plus first-order lag tau plus a direction-dependent offset, fitted on every frame."""

    lag_ms: float
    lag_stderr_ms: float
    tau_ms: float
    tau_stderr_ms: float
    offset_deg: float  # k: measured trails the command by k against the direction of motion (k > 0)
    offset_stderr_deg: float
    bias_deg: float  # a constant measured - commanded offset
    rms_deg: float
    n_samples: int
    effective_lag_ms: float  # L + tau: what a cruise sees
    has_filter: bool
    has_friction: bool
    verdict: str


@dataclass
class Noise:
    """Measured-joint noise at rest (deg): standard deviation and largest deviation from the rest value."""

    std_deg: float
    peak_deg: float
    n_samples: int
    source: str  # "rest" (settled phases) or "fit residual"


@dataclass
class GuardAdvice:
    """Divergence-guard settings that follow from a measured lag (see motion.guard).

    The guard compares the setpoint just sent with the newest state frame, which is up to one state period
    old (frame_age_s), so it sees the lag L plus that age. lag_s is L rounded up to the next 10 ms
    (motion.guard.tuning_from_measurement). margin_deg covers what lag_s does not, rounded up to 0.1 deg:

        margin >= a_max * (L + age)^2 / 2       the braking transient (a hard stop from any speed)
                  + noise_deg                   measured noise at rest
                  + v_max * max(0, L + age - lag_s)   the part of the guard-view lag above lag_s, at v_max

    With no frame age this is the plain floor a_max * L^2 / 2 + noise. trail_deg / trail_s: how far the
    shaper trails a target moving at v_max (v^2 / (2 a_max) + v T), and the extra lag that adds.
    """

    measured_lag_ms: float
    frame_age_ms: float
    lag_s: float
    margin_deg: float
    braking_deg: float
    noise_deg: float
    frame_age_deg: float
    trail_deg: float
    trail_s: float
    a_max: float
    v_max: float
    dt: float


@dataclass
class LinkLatency:
    """How long setpoints take to reach the controller and state frames to come back (ms), as far as the
    recording shows it.

    state_path_ms: mean time from the controller's sample (its own timestamp, mapped onto the host clock
    through the fastest frames, with a linear drift term) to the host receiving the frame, above the fastest
    frame's latency. command_path_ms: half the median round trip of the commands the controller answered
    (XML-RPC return or UDP reply): the moment it took a setpoint, under the usual assumption of symmetric
    paths. Each is only removed from L when the recording holds what it needs (`state_mapped`,
    `command_answers`); what is left is the fastest frame's one-way latency.
    """

    state_mapped: bool
    state_path_ms: float
    state_path_p99_ms: float
    drift_ppm: float
    command_answers: int
    command_path_ms: float
    note: str


@dataclass
class LagResult:
    """Every lag figure of one ramp recording (see servotool.analysis.lag)."""

    joint: int
    cmd_period_s: float
    state_period_s: float
    passes: list[PassLag]
    fit: OriginFit | None  # the controller's lag (link latency removed where the recording allows)
    host_fit: OriginFit | None  # send time to receive time, as a host sees it
    guard_fit: OriginFit | None  # setpoint just sent against the newest frame
    link: LinkLatency
    midpoint: MidpointCheck | None
    model: ModelCheck | None
    dynamics: Dynamics | None
    noise: Noise | None
    tuning: GuardAdvice | None
    warnings: list[str] = field(default_factory=list)
    late_sends: int = 0  # setpoints sent, or first answered, more than 1.5 command periods late
    late_frames_left_out: int = 0  # cruise frames left out for them, over all passes

    def to_dict(self) -> dict[str, Any]:
        return dict(plain(self))


@dataclass
class CombinedLag:
    """One delta = v * L fit over the passes of several recordings (e.g. two joints of one arm)."""

    n_files: int
    fit: OriginFit | None
    guard_fit: OriginFit | None
    midpoint: MidpointCheck | None
    model: ModelCheck | None

    def to_dict(self) -> dict[str, Any]:
        return dict(plain(self))
