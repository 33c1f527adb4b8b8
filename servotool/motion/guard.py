"""Lag-compensated divergence guard, its tuning rules, and the fail-closed pairing with the stream shaper.

The shaper bounds what goes on the wire but cannot see the arm. The guard is the closed-loop check: it trips
when, on any joint,

    |s - m| > margin + |v_shaper| * lag_s

with s the setpoint just sent, m the measured pose and v_shaper the shaper's own commanded velocity. A
healthy arm executes the setpoint from L seconds ago, so while cruising at v it trails by v*L; the allowance
grows with exactly that term, so clean tracking never trips it, while an arm moving on its own at runaway
speed crosses it within a tick or two.

Two floors keep the tuning from reintroducing false trips: lag_s >= L (below it the allowance grows slower
than the healthy gap), and margin_deg >= a_max*L^2/2 + noise (while braking at a_max the arm briefly lags by
more than v*L: the allowance uses the current velocity while the arm still executes the faster past).

JointLimits is re-exported here for callers that look for every safety check in this module.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from servotool.errors import SettingsError
from servotool.motion.limits import JointLimits
from servotool.motion.shaper import ShaperConfig, StreamShaper, max_trail
from servotool.readings import fixed, sig

__all__ = [
    "DivergenceGuard",
    "GuardConfig",
    "GuardTuning",
    "GuardVerdict",
    "JointLimits",
    "SafetyConfig",
    "StreamSafety",
    "UnsafeConfigError",
    "build_stream_safety",
    "margin_floor",
    "tuning_from_measurement",
]

# Recommended lag_s is L rounded up to this step, and margin_deg the floor rounded up to this step.
LAG_STEP_S = 0.01
MARGIN_STEP_DEG = 0.1


class UnsafeConfigError(SettingsError):
    """A safety configuration that leaves the stream half-protected or tuned below its measured floors."""


def margin_floor(measured_lag_s: float, a_max: float, noise_deg: float = 0.0) -> float:
    """Smallest safe margin (deg): a_max * L^2 / 2 + noise, the braking transient plus measurement noise."""
    return a_max * measured_lag_s * measured_lag_s / 2.0 + noise_deg


def _finite_or_none(value: object, name: str, *, positive: bool = False) -> float | None:
    """None stays None (an optional setting left out); anything else must pass _finite."""
    return None if value is None else _finite(value, name, positive=positive)


def _finite(value: object, name: str, *, positive: bool = False) -> float:
    try:
        x = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a number, got {value!r}") from None
    if not math.isfinite(x) or x < 0 or (positive and x == 0):
        raise ValueError(f"{name} must be finite and {'> 0' if positive else '>= 0'}, got {value!r}")
    return x


def _check_floors(
    margin_deg: float, lag_s: float, measured_lag_s: float | None, a_max: float | None, noise_deg: float
) -> None:
    if measured_lag_s is None:
        return
    if lag_s < measured_lag_s:
        raise UnsafeConfigError(
            f"lag_s {lag_s:.3f} s is below the measured lag {measured_lag_s:.3f} s: the allowance would grow "
            f"slower than a healthy arm's lag and clean cruise would trip the guard"
        )
    if a_max is not None:
        floor = margin_floor(measured_lag_s, a_max, noise_deg)
        if margin_deg < floor:
            raise UnsafeConfigError(
                f"margin_deg {margin_deg:.3f} is below a_max*L^2/2 + noise = "
                f"{a_max:g}*{measured_lag_s:.3f}^2/2 + {noise_deg:g} = {floor:.3f} deg: "
                f"a hard stop at a_max would trip the guard"
            )


@dataclass(frozen=True)
class GuardVerdict:
    """Why the guard tripped. `joint` is the index of the worst joint (a non-finite value beats any excess),
    `joints` every joint over its allowance; delta = setpoint - measured, allowance = margin + |v|*lag_s and
    excess = |delta| - allowance (> 0; inf when a value was not finite)."""

    joint: int
    joint_name: str
    delta: float
    allowance: float
    excess: float
    setpoint: float
    measured: float
    velocity: float
    joints: tuple[int, ...]
    reason: str


def _floats(x: Any) -> list[Any]:
    return x.tolist() if isinstance(x, np.ndarray) else list(x)


class DivergenceGuard:
    """Trips when |setpoint - measured| > margin_deg + |shaper velocity| * lag_s on any joint, and latches.

    margin_deg (> 0) and lag_s (>= 0) are the tuning. When the measured lag `measured_lag_s` is given, the
    guard refuses to build (UnsafeConfigError, a ValueError) with lag_s < measured_lag_s; when `a_max`
    (deg/s^2) is given as well, also with margin_deg < a_max*L^2/2 + noise_deg. `joint_names` only label the
    reasons (default q1, q2, ... as in the CSV columns).

    check() returns None while tracking is healthy, and a GuardVerdict on the first trip. A NaN or inf
    setpoint, measurement or velocity trips too: a guard that cannot compare must not stay silent. Once
    tripped, the guard stays tripped (`tripped`, `reason`, `verdict`) and check() keeps returning the same
    verdict without looking at new data, until reset().
    """

    def __init__(
        self,
        margin_deg: float,
        lag_s: float,
        measured_lag_s: float | None = None,
        a_max: float | None = None,
        noise_deg: float = 0.0,
        joint_names: Sequence[str] | None = None,
    ) -> None:
        self.margin_deg = _finite(margin_deg, "margin_deg", positive=True)
        self.lag_s = _finite(lag_s, "lag_s")
        self.measured_lag_s = _finite_or_none(measured_lag_s, "measured_lag_s")
        self.a_max = _finite_or_none(a_max, "a_max", positive=True)
        self.noise_deg = _finite(noise_deg, "noise_deg")
        _check_floors(self.margin_deg, self.lag_s, self.measured_lag_s, self.a_max, self.noise_deg)
        self.joint_names = None if joint_names is None else tuple(str(n) for n in joint_names)
        self._verdict: GuardVerdict | None = None
        self.checks = 0

    @property
    def tripped(self) -> bool:
        return self._verdict is not None

    @property
    def verdict(self) -> GuardVerdict | None:
        return self._verdict

    @property
    def reason(self) -> str | None:
        return None if self._verdict is None else self._verdict.reason

    def reset(self) -> None:
        """Clear the latch (an operator decision: the cause should be understood first)."""
        self._verdict = None

    def allowance(self, shaper_velocity: npt.ArrayLike) -> np.ndarray:
        """Per-joint allowance margin_deg + |v| * lag_s (deg) for the given shaper velocity (deg/s)."""
        return self.margin_deg + np.abs(np.asarray(shaper_velocity, dtype=float)) * self.lag_s

    def _name(self, j: int) -> str:
        if self.joint_names is not None and j < len(self.joint_names):
            return self.joint_names[j]
        return f"q{j + 1}"

    def _within(self, setpoint: Any, measured: Any, velocity: Any) -> bool:
        """True when three flat, equally long, finite sequences are within the allowance on every joint:
        the same float operations as the array check below, without its small-array cost (a 1 kHz loop
        calls this every tick). False for anything else: the array check decides and explains."""
        try:
            s, m, v = (
                x.tolist() if isinstance(x, np.ndarray) else list(x) for x in (setpoint, measured, velocity)
            )
        except TypeError:  # a scalar
            return False
        if not len(s) == len(m) == len(v):
            return False
        margin, lag = self.margin_deg, self.lag_s
        for a, b, w in zip(s, m, v, strict=True):
            if type(a) is not float or type(b) is not float or type(w) is not float:
                return False
            # NaN fails the comparison and inf exceeds any allowance: both fall through to the array check
            if not abs(a - b) - (margin + abs(w) * lag) <= 0 or not math.isfinite(w):
                return False
        return True

    def check(
        self, setpoint: npt.ArrayLike, measured: npt.ArrayLike, shaper_velocity: npt.ArrayLike
    ) -> GuardVerdict | None:
        """Compare the setpoint just sent with the measured pose. Returns None, or the (latched) verdict.

        The three arguments are per-joint sequences of equal length (deg, deg, deg/s); a length mismatch is a
        programming error and raises ValueError.
        """
        if self._verdict is not None:
            return self._verdict
        if self._within(setpoint, measured, shaper_velocity):
            self.checks += 1
            return None
        s = np.array(setpoint, dtype=float, ndmin=1)
        m = np.array(measured, dtype=float, ndmin=1)
        v = np.array(shaper_velocity, dtype=float, ndmin=1)
        if not (s.ndim == m.ndim == v.ndim == 1 and s.size == m.size == v.size):
            raise ValueError(
                f"setpoint, measured and velocity must be flat and equally long, got shapes "
                f"{s.shape}, {m.shape}, {v.shape}"
            )
        self.checks += 1
        allowance = self.allowance(v)
        delta = s - m
        finite = np.isfinite(s) & np.isfinite(m) & np.isfinite(v)
        with np.errstate(invalid="ignore"):
            excess = np.where(finite, np.abs(delta) - allowance, np.inf)
        over = np.flatnonzero(excess > 0)
        if over.size == 0:
            return None
        j = int(over[np.argmax(excess[over])])
        name = self._name(j)
        if not finite[j]:
            values = {"setpoint": float(s[j]), "measured": float(m[j]), "velocity": float(v[j])}
            which = " and ".join(k for k, x in values.items() if not math.isfinite(x))
            shown = ", ".join(f"{k} {sig(x)}" for k, x in values.items())
            reason = f"{name}: non-finite {which} ({shown}); the guard cannot compare"
        else:
            # a few significant digits: a measured pose of 1e300 must not print 300 of them
            gap, allow, speed = fixed(abs(delta[j])), fixed(allowance[j]), fixed(abs(v[j]))
            reason = (
                f"{name} diverged: |setpoint - measured| = {gap} deg > allowance {allow} deg (margin "
                f"{fixed(self.margin_deg)} + |v| {speed} deg/s x lag {fixed(self.lag_s)} s), over by "
                f"{fixed(excess[j])} deg"
            )
        self._verdict = GuardVerdict(
            joint=j,
            joint_name=name,
            delta=float(delta[j]),
            allowance=float(allowance[j]),
            excess=float(excess[j]),
            setpoint=float(s[j]),
            measured=float(m[j]),
            velocity=float(v[j]),
            joints=tuple(int(i) for i in over),
            reason=reason,
        )
        return self._verdict


@dataclass(frozen=True)
class GuardConfig:
    """Settings of a DivergenceGuard, validated on construction with the same floors."""

    margin_deg: float
    lag_s: float
    measured_lag_s: float | None = None
    a_max: float | None = None
    noise_deg: float = 0.0

    def __post_init__(self) -> None:
        self.build()

    def build(self, joint_names: Sequence[str] | None = None) -> DivergenceGuard:
        return DivergenceGuard(
            self.margin_deg,
            self.lag_s,
            measured_lag_s=self.measured_lag_s,
            a_max=self.a_max,
            noise_deg=self.noise_deg,
            joint_names=joint_names,
        )


@dataclass(frozen=True)
class GuardTuning:
    """Recommended guard settings from a measured lag, and what they cost.

    lag_s is the measured lag rounded up to the next 10 ms; margin_deg is a_max*L^2/2 + noise (braking_deg +
    noise_deg) rounded up to the next 0.1 deg (at least 0.1 deg). trail_deg = v_max^2/(2*a_max) + v_max*dt
    is how far the shaper trails a target moving at v_max, and trail_s = trail_deg / v_max the extra lag that
    adds at that speed.
    """

    measured_lag_s: float
    a_max: float
    v_max: float
    noise_deg: float
    dt: float
    lag_s: float
    margin_deg: float
    braking_deg: float
    trail_deg: float
    trail_s: float

    def guard_config(self) -> GuardConfig:
        return GuardConfig(
            margin_deg=self.margin_deg,
            lag_s=self.lag_s,
            measured_lag_s=self.measured_lag_s,
            a_max=self.a_max,
            noise_deg=self.noise_deg,
        )


def _round_up(x: float, step: float) -> float:
    # Round x up to a multiple of step without letting float noise in x/step add a whole step
    # (0.07 / 0.01 is 7.000000000000001), and never return less than x.
    k = math.ceil(round(x / step, 9))
    value = k * step
    while value < x:
        k += 1
        value = k * step
    rounded = round(value, 12)
    return rounded if rounded >= x else value


def tuning_from_measurement(
    L_s: float, a_max: float, v_max: float, noise_deg: float, dt: float
) -> GuardTuning:
    """Guard settings for a controller whose measured lag is L_s (s), streamed through a shaper with a_max
    (deg/s^2), v_max (deg/s) and tick dt (s), with measurement noise noise_deg (deg).

    Guarantees lag_s >= L_s (a multiple of 10 ms) and margin_deg >= a_max*L_s^2/2 + noise_deg (a multiple
    of 0.1 deg, and at least 0.1 deg), so the returned settings always pass DivergenceGuard's floors.
    Refuses (ValueError) a negative or non-finite L_s or noise_deg, and non-positive or non-finite a_max,
    v_max or dt.
    """
    L = _finite(L_s, "L_s")
    a = _finite(a_max, "a_max", positive=True)
    v = _finite(v_max, "v_max", positive=True)
    noise = _finite(noise_deg, "noise_deg")
    step = _finite(dt, "dt", positive=True)
    assert L is not None and a is not None and v is not None and noise is not None and step is not None
    braking = a * L * L / 2.0
    trail = max_trail(v, a, step)
    return GuardTuning(
        measured_lag_s=L,
        a_max=a,
        v_max=v,
        noise_deg=noise,
        dt=step,
        lag_s=_round_up(L, LAG_STEP_S),
        margin_deg=max(MARGIN_STEP_DEG, _round_up(margin_floor(L, a, noise), MARGIN_STEP_DEG)),
        braking_deg=braking,
        trail_deg=trail,
        trail_s=trail / v,
    )


@dataclass(frozen=True)
class SafetyConfig:
    """The stream's safety pair. Fail-closed: a shaper without a divergence guard refuses to construct
    (UnsafeConfigError), because a shaped stream streams fast catch-ups that only the guard can check.

    Both absent is a raw, unshaped stream; a guard alone is allowed. With both, the guard's margin floor is
    checked against the largest acceleration the shaper may command, and a guard sized for a smaller a_max
    than the shaper's is refused.
    """

    shaper: ShaperConfig | None
    guard: GuardConfig | None

    def __post_init__(self) -> None:
        if self.shaper is not None and self.guard is None:
            raise UnsafeConfigError(
                "a stream shaper is configured without a divergence guard: refusing to build a "
                "half-protected stream; configure the guard (margin_deg, lag_s) as well"
            )
        if self.shaper is None or self.guard is None:
            return
        a_shaper = self.shaper.a_max_peak
        if self.guard.a_max is not None and self.guard.a_max < a_shaper:
            raise UnsafeConfigError(
                f"the guard's margin was sized for a_max {self.guard.a_max:g} deg/s^2 but the shaper may "
                f"command up to {a_shaper:g} deg/s^2"
            )
        _check_floors(
            self.guard.margin_deg, self.guard.lag_s, self.guard.measured_lag_s, a_shaper, self.guard.noise_deg
        )

    def build(self, n_joints: int | None = None, joint_names: Sequence[str] | None = None) -> StreamSafety:
        shaper = None if self.shaper is None else self.shaper.build(n_joints)
        guard = None if self.guard is None else self.guard.build(joint_names)
        return StreamSafety(shaper=shaper, guard=guard)


@dataclass
class StreamSafety:
    """A built shaper and guard, used together on each tick: s = shaper.step(target), then
    guard.check(s, measured, shaper.velocity)."""

    shaper: StreamShaper | None
    guard: DivergenceGuard | None

    @property
    def shaped(self) -> bool:
        return self.shaper is not None


def build_stream_safety(
    shaper_cfg: ShaperConfig | None,
    guard_cfg: GuardConfig | None,
    n_joints: int | None = None,
    joint_names: Sequence[str] | None = None,
) -> StreamSafety:
    """Build the shaper and guard of a stream, refusing (UnsafeConfigError) a shaper without a guard and a
    guard tuned below the shaper's floors; see SafetyConfig."""
    return SafetyConfig(shaper=shaper_cfg, guard=guard_cfg).build(n_joints, joint_names)
