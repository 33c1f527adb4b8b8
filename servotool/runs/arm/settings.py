"""Every setting of an arm run checked before any device is opened: finite, in range, consistent.

The checks are pure and return ALL problems, one line each, worded with the command-line option that holds
the value (a campaign file checker shows the same lines). Nothing here clamps: a value out of range is
refused with its reason.

Two kinds of check:

* `validate_lag`, `validate_step`, `validate_shaper`: the settings alone (plus, where known before opening,
  the joint speed limits and joint ranges of the URL's model).
* `lag_goal_problems`, `step_goal_problems`: the goals a run would command, against the arm's joint ranges.
  Without a start pose (before opening) only what no start pose can satisfy is refused (an excursion wider
  than the joint's whole range); with the measured start pose (after connecting, before enabling) every goal
  is checked: a ramp's out-and-back excursion, a step cycle's +X and -X levels (both directions, whatever
  the step count).

Units: settings carry seconds, deg, deg/s, deg/s^2, deg/s^3; messages quote them in the option's unit (ms).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, fields, replace
from enum import Enum
from typing import TYPE_CHECKING, Any, Protocol

from servotool.devices.family import MotionCaps
from servotool.errors import SettingsError
from servotool.motion.defaults import (
    A_MAX_DEG_S2,
    CMD_PERIOD_S,
    J_MAX_DEG_S3,
    LAG_RAMP_S,
    LAG_SETTLE_S,
    LAG_SPEEDS_DEG_S,
    LAG_SWEEP_DEG,
    OTG_LIMIT_MIN,
    V_MAX_DEG_S,
)
from servotool.runs.options import joint_name, option

if TYPE_CHECKING:  # the runs' modules import this one (and numpy): their settings types only
    from servotool.runs.arm.ramp import RampSettings
    from servotool.runs.arm.step import StepSettings

# bounds of a sane run; a value past them is a typo or a unit mix-up, not a measurement
CMD_PERIOD_RANGE_S = (0.001, 0.1)
MAX_RAMP_S = 10.0
MAX_SETTLE_S = 60.0
MAX_HOLD_S = 60.0
# a generator step is held this long at rest after it lands, before the next one starts
LAND_MARGIN_S = 0.3
MAX_PRE_HOLD_S = 10.0
MAX_WARMUP_S = 60.0
MAX_SPEEDS = 20
MAX_STEPS = 1000
MAX_RUN_S = 600.0  # one run streams at most 10 minutes (the plan is held in memory, one row per tick)
MAX_SWEEP_DEG = 360.0
MAX_STEP_DEG = 180.0
# The a_max caps of an arm whose family gives none (a device known only once opened): the braked stop falls
# by a_max * period per tick, and past the first cap it is a jump, not a braked stop; a shaped step may probe
# up to the second to find the clean ceiling (on a real arm only as a test-arm trial, like a raw step). A
# family's own caps (MotionCaps.a_cap, a_probe_cap) replace them wherever the URL is known.
GENERIC_CAPS = MotionCaps(
    cmd_period_s=CMD_PERIOD_S,
    v_max=V_MAX_DEG_S,
    a_max=A_MAX_DEG_S2,
    j_max=J_MAX_DEG_S3,
    a_cap=2000.0,
    a_probe_cap=20000.0,
)
MAX_A_DEG_S2 = GENERIC_CAPS.a_cap
MAX_PROBE_A_DEG_S2 = GENERIC_CAPS.a_probe_cap
# Both caps hold at their family's period. The trigger is a change of the per-command step, and a stream
# bounded by a_max changes its step by up to a_max * cmdT^2: 0.2 deg at 2,000 deg/s^2 and 10 ms, but 5 deg at
# the default 500 deg/s^2 and 100 ms. Past that period the bounds fall with the square of the period.
MAX_STEP_CHANGE_DEG = MAX_A_DEG_S2 * CMD_PERIOD_S**2
MEASURED_STEP_ONLY = (
    "measured_step breaks the generator's one-step-per-command rule: otg shaped steps on a simulator only"
)
J_MAX_OTG_ONLY = "--j-max bounds the otg shaper only; add --shaper otg (shaped steps) or leave it out"
JOINT_HELP = "Arm joint to move, by name: J1 (the base) to Jn."
CMD_MS_HELP = (
    "Command period (ms; default: the device family's). Past the family's period (10 ms by default), "
    "--a-max is bounded by its cap x (period / cmd-ms)^2 deg/s²: the per-command step changes by up to "
    "a_max x period²."
)
MAX_V_DEG_S = 360.0
MAX_J_DEG_S3 = 1.0e6
MAX_LAG_MS = 2000.0
MAX_GUARD_NOISE_DEG = 1.0


class ShaperKind(str, Enum):
    """The stream shapers a step (and `shape`) may use; a setting carries the value string."""

    ACCEL = "accel"  # acceleration-bounded: a C1 wire
    OTG = "otg"  # the jerk-limited trajectory generator: a C2 wire


SHAPER_KINDS = tuple(kind.value for kind in ShaperKind)

Ranges = Sequence[tuple[float, float]]


class LagLike(Protocol):
    """The fields of a ramp (lag) run's settings that are checked."""

    @property
    def joint(self) -> int: ...
    @property
    def sweep_deg(self) -> float: ...
    @property
    def speeds_deg_s(self) -> Sequence[float]: ...
    @property
    def ramp_s(self) -> float: ...
    @property
    def settle_s(self) -> float: ...
    @property
    def cmd_period_s(self) -> float: ...
    @property
    def a_max(self) -> float: ...
    @property
    def v_max(self) -> float: ...
    @property
    def warmup_timeout_s(self) -> float: ...


class StepLike(Protocol):
    """The fields of a step run's settings that are checked."""

    @property
    def joint(self) -> int: ...
    @property
    def size_deg(self) -> float: ...
    @property
    def steps(self) -> int: ...
    @property
    def hold_s(self) -> float: ...
    @property
    def cmd_period_s(self) -> float: ...
    @property
    def shaped(self) -> bool: ...
    @property
    def shaper(self) -> str: ...
    @property
    def v_max(self) -> float: ...
    @property
    def a_max(self) -> float: ...
    @property
    def j_max(self) -> float: ...
    @property
    def guard(self) -> bool: ...
    @property
    def lag_ms(self) -> float | None: ...
    @property
    def guard_noise_deg(self) -> float: ...
    @property
    def warmup_timeout_s(self) -> float: ...
    @property
    def pre_hold_s(self) -> float: ...


def _num(x: object) -> float | None:
    """x as a float when it is a real number (bools and strings are not); None otherwise."""
    if isinstance(x, bool) or not isinstance(x, (int, float)):
        return None
    return float(x)


def _in(
    value: object,
    option: str,
    lo: float,
    hi: float,
    *,
    scale: float = 1.0,
    unit: str = "",
    lo_open: bool = False,
) -> list[str]:
    """One problem line when value * scale is not a finite number within lo..hi (lo excluded if lo_open)."""
    x = _num(value)
    shown = f"{value!r}" if x is None else f"{x * scale:g}"
    if x is None or not math.isfinite(x):
        return [f"{option} {shown}: must be a finite number"]
    x *= scale
    below = x <= lo if lo_open else x < lo
    if below or x > hi:
        low = f"> {lo:g}" if lo_open else f">= {lo:g}"
        return [f"{option} {shown}: must be {low} and <= {hi:g}{unit}"]
    return []


def _finite(*values: object) -> bool:
    return all((x := _num(v)) is not None and math.isfinite(x) for v in values)


def _joint(joint: object, n_joints: int | None) -> list[str]:
    """One problem line when joint is no joint index of the arm; with n_joints None (the arm's count is not
    known before it opens) only an index that no arm has is refused, the count is checked once connected."""
    top = n_joints if n_joints is not None else math.inf
    if isinstance(joint, bool) or not isinstance(joint, int) or not 0 <= joint < top:
        shown = joint_name(joint) if isinstance(joint, int) and joint >= 0 else repr(joint)
        known = f"J1..{joint_name(n_joints - 1)}" if n_joints is not None else "J1 and up"
        return [f"--joint {shown}: this arm has joints {known}"]
    return []


def _period(period_s: object) -> list[str]:
    lo, hi = (b * 1e3 for b in CMD_PERIOD_RANGE_S)
    return _in(period_s, "--cmd-ms", lo, hi, scale=1e3, unit=" ms")


def _fixed_period(period_s: object, caps: MotionCaps) -> list[str]:
    """One problem line when the family's controller sets the pace and period_s is not its cycle."""
    period = _num(period_s)
    if not caps.fixed_period or period is None or abs(period - caps.cmd_period_s) <= 1e-12:
        return []
    return [
        f"--cmd-ms {period * 1e3:g}: this arm's controller sets the pace, one setpoint every "
        f"{caps.cmd_period_s * 1e3:g} ms cycle (leave --cmd-ms out)"
    ]


def a_max_bound(cap: float, period_s: float, base_s: float = CMD_PERIOD_S) -> float:
    """The highest a_max (deg/s^2) a stream at this command period (s) may use, for an a_max cap that holds at
    the family's period base_s: the cap up to base_s, cap * (base_s / period)^2 beyond (the same largest
    change of the per-command step, a_max * period^2)."""
    return cap if period_s <= base_s else cap * (base_s / period_s) ** 2


def over_bound(a_max: float, period_s: float, cap: float, base_s: float = CMD_PERIOD_S) -> bool:
    """Whether a_max at this period (finite, > 0) goes past `a_max_bound(cap, period_s, base_s)`; the bound
    itself, as printed and given back, is within (a relative tolerance of 1e-9)."""
    if period_s <= base_s:
        return a_max > cap
    # products, not powers: a period far too long (refused elsewhere) gives inf here, not OverflowError
    return a_max * period_s * period_s > cap * base_s * base_s * (1 + 1e-9)


def _step_change(period_s: object, a_max: object, cap: float, caps: MotionCaps) -> list[str]:
    """One problem line when a_max at this period would change the per-command step by more than `cap`
    allows at the family's period (see MAX_STEP_CHANGE_DEG); [] when either value is not a finite positive
    number (refused elsewhere)."""
    if not _finite(period_s, a_max):
        return []
    period, a = float(period_s), float(a_max)  # type: ignore[arg-type]
    base, stop_cap = caps.cmd_period_s, caps.a_cap
    if period <= base or a <= 0 or not over_bound(a, period, cap, base):
        return []
    # the advice is the bound of a run that is no probe, whatever the cap
    most = f"the {cap * base**2:.3g} deg " + (
        "a shaped probe may reach" if cap > stop_cap else "of the braked-stop bound"
    )
    return [
        f"--a-max {a:g} at --cmd-ms {period * 1e3:g}: the setpoint's per-command step would change by up to "
        f"{a * period * period:.3g} deg (a_max x cmdT^2), above {most} (the runaway band starts at 1 deg per "
        f"command): lower --a-max to {a_max_bound(stop_cap, period, base):.4g} or --cmd-ms to "
        f"{base * 1e3 * math.sqrt(stop_cap / a):.3g}"
    ]


def _common(
    period_s: object,
    a_max: object,
    v_max: object,
    warmup_s: object,
    a_cap: float | None = None,
    caps: MotionCaps = GENERIC_CAPS,
) -> list[str]:
    a_cap = caps.a_cap if a_cap is None else a_cap
    problems = _period(period_s) or _fixed_period(period_s, caps)
    problems += _in(a_max, "--a-max", 0.0, a_cap, unit=" deg/s^2", lo_open=True)
    if not problems:
        problems += _step_change(period_s, a_max, a_cap, caps)
    problems += _in(v_max, "--v-max", 0.0, MAX_V_DEG_S, unit=" deg/s", lo_open=True)
    problems += _in(warmup_s, "warm-up timeout", 0.0, MAX_WARMUP_S, unit=" s", lo_open=True)
    return problems


def _speed_limit(joint: object, speed_limits: Sequence[float] | None) -> float:
    if speed_limits and isinstance(joint, int) and 0 <= joint < len(speed_limits):
        return float(speed_limits[joint])
    return math.inf


def _speeds(s: LagLike, limit: float) -> list[str]:
    speeds = list(s.speeds_deg_s)
    if not speeds:
        return ["--speeds lists no speed"]
    if len(speeds) > MAX_SPEEDS:
        return [f"--speeds lists {len(speeds)} speeds: at most {MAX_SPEEDS}"]
    problems: list[str] = []
    for v in speeds:
        x = _num(v)
        if x is None or not math.isfinite(x) or x <= 0:
            problems.append(f"--speeds {v!r}: every speed must be a finite number > 0 deg/s")
            continue
        if _finite(s.v_max) and x > s.v_max:
            problems.append(f"--speeds {x:g} deg/s exceeds --v-max {s.v_max:g} deg/s")
        if x > limit:
            problems.append(f"--speeds {x:g} deg/s exceeds J{s.joint + 1}'s speed limit of {limit:g} deg/s")
        if _finite(s.ramp_s, s.a_max) and s.ramp_s > 0 and x / s.ramp_s > s.a_max:
            problems.append(
                f"--speeds {x:g} deg/s over a {s.ramp_s * 1e3:g} ms ramp needs {x / s.ramp_s:g} deg/s^2, "
                f"above --a-max {s.a_max:g}: lengthen --ramp-ms"
            )
    return problems


def lag_duration_s(s: LagLike) -> float:
    """How long the ramp passes of these settings stream (s): out and back once per speed. Settings must be
    finite and positive (validate first); an upper estimate, within a few ticks."""
    total = 0.0
    for v in s.speeds_deg_s:
        total += 2 * (abs(s.sweep_deg) / v + s.ramp_s + s.settle_s + 2 * s.cmd_period_s)
    return total


def validate_lag(
    s: LagLike,
    *,
    n_joints: int | None = None,
    speed_limits: Sequence[float] | None = None,
    ranges: Ranges | None = None,
    motion: MotionCaps | None = None,
) -> list[str]:
    """Every problem of a ramp (lag) run's settings, one line each; [] when it may run. speed_limits and
    ranges (per joint, deg/s and deg) are the model's when known before opening, motion the family's caps
    (GENERIC_CAPS when unknown); goals against a start pose are `lag_goal_problems`."""
    problems = _joint(s.joint, n_joints)
    problems += _common(s.cmd_period_s, s.a_max, s.v_max, s.warmup_timeout_s, caps=motion or GENERIC_CAPS)
    if _finite(s.sweep_deg) and s.sweep_deg == 0:
        problems.append("--sweep 0: must not be 0 (sign = direction)")
    else:
        problems += _in(
            abs(s.sweep_deg) if _finite(s.sweep_deg) else s.sweep_deg,
            "--sweep",
            0.0,
            MAX_SWEEP_DEG,
            unit=" deg in size",
        )
    problems += _in(s.ramp_s, "--ramp-ms", 0.0, MAX_RAMP_S * 1e3, scale=1e3, unit=" ms", lo_open=True)
    problems += _in(s.settle_s, "--settle-ms", 0.0, MAX_SETTLE_S * 1e3, scale=1e3, unit=" ms")
    problems += _speeds(s, _speed_limit(s.joint, speed_limits))
    if not problems:
        run_s = lag_duration_s(s)
        if run_s > MAX_RUN_S:
            shown = f"{run_s:.0f}" if run_s < 1e6 else f"{run_s:.3g}"  # not 300 digits for --speeds 1e-300
            problems.append(
                f"the passes would stream for {shown} s, over the {MAX_RUN_S:g} s a run may last: "
                "shorten --sweep or raise --speeds"
            )
        problems += _cruise_problems(s)
        problems += lag_goal_problems(s, ranges, start=None)
    return problems


# A pass measures only with a cruise of at least this many ticks (the analysis fits a slope over them).
MIN_CRUISE_TICKS = 2
# The cruise the suggested sweep leaves at the fastest speed: room for a lag up to about 150 ms plus the
# state frames the analysis needs after it (the defaults leave 0.4 s at 30 deg/s).
SUGGESTED_CRUISE_S = 0.2


def _cruise_ticks(sweep_deg: float, speed: float, dt: float, ramp_s: float) -> int:
    """Cruise ticks of one pass of the ramp profile (motion.ramp: distance = peak * dt * (ramps + cruise))."""
    n_ramp = max(1, math.ceil(ramp_s / dt - 1e-9))
    return max(0, math.ceil(abs(sweep_deg) / (speed * dt) - n_ramp - 1e-9))


def _cruise_problems(s: LagLike) -> list[str]:
    """A refusal when no speed's passes have a cruise at all: nothing could be measured, whatever the arm's
    lag, so nothing should move. It names the smallest sweep that would work (SUGGESTED_CRUISE_S at the
    fastest speed). A run where some speeds cruise goes ahead; the passes without one are reported."""
    dt = s.cmd_period_s
    if any(_cruise_ticks(s.sweep_deg, v, dt, s.ramp_s) >= MIN_CRUISE_TICKS for v in s.speeds_deg_s):
        return []
    fastest = max(s.speeds_deg_s)
    need = math.ceil(fastest * (s.ramp_s + SUGGESTED_CRUISE_S) * 2 - 1e-9) / 2  # to 0.5 deg, rounded up
    need = math.copysign(need, s.sweep_deg)
    speeds = ", ".join(f"{v:g}" for v in s.speeds_deg_s)
    return [
        f"--sweep {s.sweep_deg:g}: L not measurable: no pass would have a cruise (at {speeds} deg/s the "
        f"{s.ramp_s * 1e3:g} ms ramps take the whole sweep); the smallest sweep that would work is "
        f"--sweep {need:g} ({SUGGESTED_CRUISE_S * 1e3:g} ms of cruise at {fastest:g} deg/s), "
        "or lower --speeds"
    ]


def validate_shaper(
    kind: object,
    v_max: object,
    a_max: object,
    j_max: object,
    cmd_period_s: object = None,
    a_cap: float = GENERIC_CAPS.a_cap,
) -> list[str]:
    """The stream shaper's kind and bounds (deg/s, deg/s^2 up to a_cap, deg/s^3, and the tick period in s when
    given); for `shape` and `step`."""
    problems: list[str] = []
    if cmd_period_s is not None:
        problems += _period(cmd_period_s)
    if kind not in SHAPER_KINDS:
        problems.append(f"--shaper {kind!r}: must be {' or '.join(SHAPER_KINDS)}")
    # the generator plans limits from OTG_LIMIT_MIN up (below, its terms underflow): a smaller one is refused
    problems += _in(v_max, "--v-max", OTG_LIMIT_MIN, MAX_V_DEG_S, unit=" deg/s")
    problems += _in(a_max, "--a-max", OTG_LIMIT_MIN, a_cap, unit=" deg/s^2")
    problems += _in(j_max, "--j-max", OTG_LIMIT_MIN, MAX_J_DEG_S3, unit=" deg/s^3")
    return problems


def needs_test_arm_probe(s: StepLike, motion: MotionCaps | None = None) -> bool:
    """True when a shaped step's a_max lies above the braked-stop bound of the family's caps (GENERIC_CAPS
    when unknown): a ceiling probe, a test-arm trial."""
    if not (s.shaped and _finite(s.a_max, s.cmd_period_s) and s.cmd_period_s > 0):
        return False
    caps = motion or GENERIC_CAPS
    return over_bound(float(s.a_max), float(s.cmd_period_s), caps.a_cap, caps.cmd_period_s)


def shaped_peak_speed(s: StepLike) -> float:
    """The fastest a shaped step's wire can go (deg/s): --v-max, or less when a level change of --size is too
    short to reach it at --a-max (a triangle: sqrt(a_max * size)). Settings must be finite."""
    return min(float(s.v_max), math.sqrt(float(s.a_max) * abs(float(s.size_deg))))


def _step_speed(s: StepLike, limit: float) -> list[str]:
    """A shaped step whose wire would outrun the joint's speed limit (raw steps outrun it by design)."""
    if not s.shaped or not _finite(s.v_max, s.a_max, s.size_deg) or min(s.v_max, s.a_max) <= 0:
        return []
    peak = shaped_peak_speed(s)
    if peak <= limit:
        return []
    return [
        f"--v-max {s.v_max:g} deg/s: a shaped {abs(s.size_deg):g} deg step at --a-max {s.a_max:g} reaches "
        f"{peak:.4g} deg/s, above J{s.joint + 1}'s speed limit of {limit:g} deg/s: lower --v-max to {limit:g}"
    ]


def validate_step(
    s: StepLike,
    *,
    n_joints: int | None = None,
    simulated: bool = True,
    test_arm: bool = False,
    ranges: Ranges | None = None,
    speed_limits: Sequence[float] | None = None,
    motion: MotionCaps | None = None,
) -> list[str]:
    """Every problem of a step run's settings, one line each; [] when it may run. `simulated` is what the
    device URL says; a raw step on a device that is not a simulator needs `test_arm` (its typed confirmation
    is the command line's to ask). speed_limits (per joint, deg/s) are the model's when known: a shaped
    step that would go faster is refused. motion: the family's caps (GENERIC_CAPS when unknown)."""
    caps = motion or GENERIC_CAPS
    problems = _joint(s.joint, n_joints)
    a_cap = caps.a_probe_cap if s.shaped else caps.a_cap
    problems += _common(s.cmd_period_s, s.a_max, s.v_max, s.warmup_timeout_s, a_cap, caps)
    # --v-max and --a-max are in the common checks already: one line per option, not one per wording
    said = {p.split(" ", 1)[0] for p in problems}
    problems += [
        p
        for p in validate_shaper(s.shaper, s.v_max, s.a_max, s.j_max, a_cap=a_cap)
        if p.split(" ", 1)[0] not in said
    ]
    if needs_test_arm_probe(s, caps) and not simulated and not test_arm:
        problems.append(
            f"--a-max {s.a_max:g}: above {a_max_bound(caps.a_cap, s.cmd_period_s, caps.cmd_period_s):.4g} "
            f"deg/s^2 (at "
            f"--cmd-ms {s.cmd_period_s * 1e3:g}) a shaped step probes for the runaway trigger; on a device "
            "that is not a simulator it is only done on a test arm: add --test-arm"
        )
    if _finite(s.size_deg) and s.size_deg == 0:
        problems.append("--size 0: must not be 0")
    else:
        problems += _in(
            abs(s.size_deg) if _finite(s.size_deg) else s.size_deg,
            "--size",
            0.0,
            MAX_STEP_DEG,
            unit=" deg in size",
        )
    if isinstance(s.steps, bool) or not isinstance(s.steps, int) or not 1 <= s.steps <= MAX_STEPS:
        problems.append(f"--steps {s.steps!r}: must be a whole number within 1..{MAX_STEPS}")
    problems += _in(s.hold_s, "--hold-ms", 0.0, MAX_HOLD_S * 1e3, scale=1e3, unit=" ms", lo_open=True)
    if _finite(s.hold_s, s.cmd_period_s) and 0 < s.hold_s < 2 * s.cmd_period_s:
        problems.append(f"--hold-ms {s.hold_s * 1e3:g}: must cover at least two command periods")
    problems += _in(s.pre_hold_s, "pre-step hold", 0.0, MAX_PRE_HOLD_S, unit=" s", lo_open=True)
    if s.lag_ms is not None:
        problems += _in(s.lag_ms, "--lag-ms", 0.0, MAX_LAG_MS, unit=" ms")
    problems += _in(s.guard_noise_deg, "guard noise", 0.0, MAX_GUARD_NOISE_DEG, unit=" deg")
    if s.shaped and not s.guard:
        problems.append("--no-guard: a shaped stream runs only with the divergence guard (fail closed)")
    problems += _step_speed(s, _speed_limit(s.joint, speed_limits))
    if not s.shaped and not simulated and not test_arm:
        problems.append(
            "--raw on a device that is not a simulator can make the controller run away; it is only done on "
            "a test arm: add --test-arm, keep the e-stop in hand and clear the joint's arc"
        )
    if not problems:
        run_s = s.pre_hold_s + s.steps * s.hold_s
        if run_s > MAX_RUN_S:
            problems.append(
                f"the steps would stream for {run_s:.0f} s, over the {MAX_RUN_S:g} s a run may last"
            )
        problems += step_goal_problems(s, ranges, start=None)
    return problems


def _excursion_problems(
    option: str, joint: int, lo_d: float, hi_d: float, ranges: Ranges | None, start: Sequence[float] | None
) -> list[str]:
    """The goals start + lo_d and start + hi_d of one joint against its range (deg)."""
    if not ranges or not 0 <= joint < len(ranges):
        return []
    lo, hi = (float(x) for x in ranges[joint])
    name = f"J{joint + 1}"
    if start is None:
        if hi_d - lo_d > hi - lo:
            return [
                f"{option}: the run moves {name} over {hi_d - lo_d:g} deg, more than its whole range "
                f"{lo:g}..{hi:g} deg"
            ]
        return []
    q = float(start[joint])
    if not lo <= q <= hi:
        return [f"{name} is at {q:.2f} deg, outside its range {lo:g}..{hi:g} deg: move it back first"]
    problems = []
    for goal in (q + lo_d, q + hi_d):
        if not lo <= goal <= hi:
            problems.append(
                f"{option}: the goal {goal:.2f} deg of {name} (start {q:.2f} deg) is outside its range "
                f"{lo:g}..{hi:g} deg"
            )
    return problems


def lag_goal_problems(s: LagLike, ranges: Ranges | None, start: Sequence[float] | None) -> list[str]:
    """The ramp's excursion (start .. start + sweep) against the joint's range; see the module docstring."""
    sweep = float(s.sweep_deg)
    return _excursion_problems(f"--sweep {sweep:g}", s.joint, min(0.0, sweep), max(0.0, sweep), ranges, start)


def step_goal_problems(s: StepLike, ranges: Ranges | None, start: Sequence[float] | None) -> list[str]:
    """The step levels start + X and start - X (both directions) against the joint's range."""
    size = abs(float(s.size_deg))
    return _excursion_problems(f"--size {s.size_deg:g}", s.joint, -size, size, ranges, start)


def require(problems: Sequence[str]) -> None:
    """Raise SettingsError holding every problem (one per line) when there is any."""
    if problems:
        raise SettingsError("\n".join(problems))


# ---------------------------------------------------------------------------------------------------------
# One definition per option: a command's settings as the user gives them (the option's own unit), each field
# with its command-line spelling, unit, bound and help. The `lag` and `step` options and the campaign keys
# are derived from these dataclasses (runs/options.py), and `problems` is the one validator both call.


def _with_caps(settings: Any, motion: MotionCaps | None) -> dict[str, Any]:
    """The device family's period, bounds and default shaper for every one of them the settings have and
    the user did not give."""
    if motion is None:
        return {}
    caps: dict[str, Any] = {
        "cmd_ms": motion.cmd_period_s * 1e3,
        "v_max": motion.v_max,
        "a_max": motion.a_max,
        "j_max": motion.j_max,
    }
    if motion.shapers:
        caps["shaper"] = motion.shapers[0]
    names = {f.name for f in fields(settings)}
    return {k: v for k, v in caps.items() if k in names and k not in settings.given}


@dataclass(frozen=True)
class LagOptions:
    """`lag --ramp`'s settings in its options' units (deg, deg/s, ms, deg/s^2)."""

    joint: int = option(0, "--joint", JOINT_HELP, "joint")
    sweep: float = option(
        LAG_SWEEP_DEG, "--sweep", "Degrees out from the current pose (sign = direction).", "float", unit="deg"
    )
    speeds: tuple[float, ...] = option(
        LAG_SPEEDS_DEG_S,
        "--speeds",
        "Cruise speeds, deg/s, comma-separated (two or more check that L is constant).",
        "floats",
        unit="deg/s",
    )
    ramp_ms: float = option(
        LAG_RAMP_S * 1e3, "--ramp-ms", "Time to reach each cruise speed (ms).", "float", unit="ms"
    )
    settle_ms: float = option(
        LAG_SETTLE_S * 1e3, "--settle-ms", "Rest after each pass (ms).", "float", unit="ms"
    )
    cmd_ms: float = option(CMD_PERIOD_S * 1e3, "--cmd-ms", CMD_MS_HELP, "float", unit="ms")
    a_max: float = option(
        A_MAX_DEG_S2, "--a-max", "Acceleration bound, deg/s² (stop, guard tuning).", "float", unit="deg/s^2"
    )
    v_max: float = option(
        V_MAX_DEG_S, "--v-max", "Speed bound, deg/s (refusal, guard tuning).", "float", unit="deg/s"
    )
    rpc: bool = option(False, "--rpc", "Send every setpoint as an XML-RPC call instead of UDP.", "bool")
    keep: bool = option(False, "--keep", "Leave the robot enabled at the end.", "bool")
    realtime: bool = option(True, "--realtime/--no-realtime", "Ask for SCHED_FIFO while streaming.", "bool")
    cold_start: bool = option(False, "", "Stream inside the enable window (simulators only).", "bool")
    given: frozenset[str] = frozenset()  # the fields the user set (the rest are defaults)
    caps: MotionCaps | None = None  # the device family's, once known (for_device)

    def for_device(self, motion: MotionCaps | None) -> LagOptions:
        """These settings with the device family's period and bounds wherever the user gave none; and a
        ramp long enough for the fastest speed within a_max when the user gave no ramp time."""
        opts = replace(self, caps=motion, **_with_caps(self, motion))
        fastest = max((abs(v) for v in opts.speeds if _finite(v)), default=0.0)
        if "ramp_ms" in self.given or not _finite(opts.a_max) or opts.a_max <= 0 or fastest <= 0:
            return opts
        need_ms = math.ceil(fastest / opts.a_max * 1e3 / 10.0) * 10.0
        return replace(opts, ramp_ms=need_ms) if need_ms > opts.ramp_ms else opts

    def run_settings(self) -> RampSettings:
        """The ramp run's own settings (seconds, the transport by name)."""
        from servotool.runs.arm.ramp import RampSettings  # noqa: F811 (the run's module loads numpy)

        return RampSettings(
            joint=self.joint,
            sweep_deg=self.sweep,
            speeds_deg_s=tuple(self.speeds),
            ramp_s=self.ramp_ms / 1e3,
            settle_s=self.settle_ms / 1e3,
            cmd_period_s=self.cmd_ms / 1e3,
            a_max=self.a_max,
            v_max=self.v_max,
            keep=self.keep,
            realtime=self.realtime,
            transport="rpc" if self.rpc else "udp",
            settle_cycles=self.caps.settle_cycles if self.caps is not None else 0,
        )

    def problems(
        self,
        *,
        n_joints: int | None = None,
        speed_limits: Sequence[float] | None = None,
        ranges: Ranges | None = None,
        motion: MotionCaps | None = None,
    ) -> list[str]:
        """Every problem of these settings, one line each: the one check `lag` and campaign files run."""
        return validate_lag(
            self.run_settings(), n_joints=n_joints, speed_limits=speed_limits, ranges=ranges, motion=motion
        )


@dataclass(frozen=True)
class StepOptions:
    """`step`'s settings in its options' units (deg, ms, deg/s, deg/s^2, deg/s^3)."""

    joint: int = option(0, "--joint", JOINT_HELP, "joint")
    size: float = option(10.0, "--size", "Step size X in degrees (levels +X, 0, -X, 0).", "float", unit="deg")
    steps: int = option(4, "--steps", "Number of level changes.", "int", min=1)
    hold_ms: float = option(600.0, "--hold-ms", "How long each level is held (ms).", "float", unit="ms")
    cmd_ms: float = option(CMD_PERIOD_S * 1e3, "--cmd-ms", CMD_MS_HELP, "float", unit="ms")
    shaped: bool = option(
        True,
        "--shaped/--raw",
        "Through the stream shaper (default), or raw one-tick jumps (the runaway "
        "trigger: simulators and test arms only). --shaped and --raw exclude each other: both given is "
        "refused.",
        "bool",
        key="raw",
        invert=True,
    )
    v_max: float = option(V_MAX_DEG_S, "--v-max", "Shaper speed bound, deg/s.", "float", unit="deg/s")
    a_max: float = option(
        A_MAX_DEG_S2, "--a-max", "Shaper acceleration bound, deg/s².", "float", unit="deg/s^2"
    )
    shaper: str = option(
        ShaperKind.ACCEL.value,
        "--shaper",
        "accel: acceleration-bounded (C1 wire); otg: jerk-limited trajectory generator (C2 wire).",
        "str",
    )
    j_max: float = option(
        J_MAX_DEG_S3, "--j-max", "Jerk bound of the otg shaper, deg/s³.", "float", unit="deg/s^3"
    )
    lag_ms: float | None = option(
        None,
        "--lag-ms",
        "Measured lag L to tune the guard with (ms; default: the device profile's).",
        "float",
        unit="ms",
    )
    rpc: bool = option(False, "--rpc", "Send setpoints as XML-RPC calls: every reject is counted.", "bool")
    keep: bool = option(False, "--keep", "Leave the robot enabled at the end.", "bool")
    test_arm: bool = option(
        False,
        "--test-arm",
        "Allow raw steps on a real arm (a test arm, e-stop in hand); a typed confirmation is still asked.",
        "bool",
    )
    guard: bool = option(
        True, "--guard/--no-guard", "Run the divergence guard alongside (always on for shaped steps).", "bool"
    )
    measured_step: bool = option(
        False,
        "",
        "otg: step the generator by the measured period, not one command period per command: after a "
        "lost packet a doubled increment (a campaign key, to show what that does; simulators only).",
        "bool",
    )
    realtime: bool = option(True, "--realtime/--no-realtime", "Ask for SCHED_FIFO while streaming.", "bool")
    given: frozenset[str] = frozenset()  # the fields the user set (the rest are defaults)
    caps: MotionCaps | None = None  # the device family's, once known (for_device)

    def for_device(self, motion: MotionCaps | None) -> StepOptions:
        """These settings with the device family's period, bounds and shaper wherever the user gave none,
        and the family's generator rules. A default hold too short for a generator step to land (a slow
        arm's acceleration bound) is lengthened to the landing time plus LAND_MARGIN_S; a hold the user
        gave is kept, and refused by `problems` when the step cannot land within it."""
        out = replace(self, caps=motion, **_with_caps(self, motion))
        land = out.landing_s()
        if land is not None and "hold_ms" not in self.given and out.hold_ms < (land + LAND_MARGIN_S) * 1e3:
            out = replace(out, hold_ms=math.ceil((land + LAND_MARGIN_S) * 10.0) * 100.0)
        return out

    def landing_s(self) -> float | None:
        """How long a jerk-limited generator step of --size takes to land at rest (s), at these bounds;
        None for another shaper, a raw step, or bounds the generator would refuse."""
        if not (self.shaped and self.shaper == ShaperKind.OTG.value):
            return None
        from servotool.motion.otg_profile import plan_to_rest

        try:
            if not all(_finite(x) and x > 0 for x in (self.v_max, self.a_max, self.j_max)):
                return None
            return float(plan_to_rest(abs(float(self.size)), 0.0, 0.0, self.v_max, self.a_max, self.j_max)[1])
        except (TypeError, ValueError, ZeroDivisionError):
            return None

    def _generator(self) -> dict[str, Any]:
        """The jerk-limited generator's rules, backstop and settle cycles of the family (none unknown)."""
        caps = self.caps
        if caps is None:
            return {}
        otg = self.shaped and self.shaper == ShaperKind.OTG.value
        return {
            "norm_budget": otg and caps.norm_budget,
            "reanchor": otg and caps.echo_anchor,
            "backstop": caps.backstop if otg else None,
            "settle_cycles": caps.settle_cycles,
        }

    def run_settings(self) -> StepSettings:
        """The step run's own settings (seconds, the transport by name)."""
        from servotool.runs.arm.step import StepSettings  # noqa: F811 (the run's module loads numpy)

        return StepSettings(
            joint=self.joint,
            size_deg=self.size,
            steps=self.steps,
            hold_s=self.hold_ms / 1e3,
            cmd_period_s=self.cmd_ms / 1e3,
            shaped=self.shaped,
            shaper=self.shaper,
            v_max=self.v_max,
            a_max=self.a_max,
            j_max=self.j_max,
            guard=self.guard,
            lag_ms=self.lag_ms,
            keep=self.keep,
            test_arm=self.test_arm,
            realtime=self.realtime,
            transport="rpc" if self.rpc else "udp",
            nominal_step=not self.measured_step,
            **self._generator(),
        )

    def problems(
        self,
        *,
        n_joints: int | None = None,
        simulated: bool = True,
        ranges: Ranges | None = None,
        speed_limits: Sequence[float] | None = None,
        motion: MotionCaps | None = None,
    ) -> list[str]:
        """Every problem of these settings, one line each: the one check `step` and campaign files run."""
        problems = validate_step(
            self.run_settings(),
            n_joints=n_joints,
            simulated=simulated,
            test_arm=self.test_arm,
            ranges=ranges,
            speed_limits=speed_limits,
            motion=motion,
        )
        otg = self.shaped and self.shaper == ShaperKind.OTG.value
        if "j_max" in self.given and not otg:
            problems.append(J_MAX_OTG_ONLY)
        if self.measured_step and not (otg and simulated):
            problems.append(MEASURED_STEP_ONLY)
        land = self.landing_s()
        if land is not None and _finite(self.hold_ms) and self.hold_ms < land * 1e3:
            problems.append(
                f"--hold-ms {self.hold_ms:g}: a {abs(self.size):g} deg generator step takes "
                f"{land * 1e3:.0f} ms to land at a_max {self.a_max:.4g} deg/s²; hold at least "
                f"{math.ceil((land + LAND_MARGIN_S) * 10.0) * 100.0:.0f} ms, or step smaller"
            )
        return problems
