"""`step`: the level cycle +X, 0, -X, 0 on one joint, shaped by default, with the divergence guard alongside.

Shaped (the default), every raw level change goes through the stream shaper, so the wire sees a bounded
trapezoid; raw (`shaped=False`), the level changes in one tick: the velocity discontinuity that makes a
controller latch a fault and run away (as seen on real arms). A raw step on a device that is not a simulator
is refused unless the caller says it is a test arm AND passes `confirmed=True` (the confirmation itself is
asked by the command line, not here).

The guard is tuned from the lag given, else from the arm's nominal lag (its model's: Arm.nominal_lag_ms),
with the shaper's bounds. For a raw stream there is no shaper velocity: the guard gets the largest commanded
speed of the last lag_s instead, because a raw step is a one-tick velocity spike that a healthy arm only
answers lag_s later.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from servotool.analysis.lag import guard_advice
from servotool.clock import Clock
from servotool.devices.arm import Arm
from servotool.motion.defaults import A_MAX_DEG_S2, CMD_PERIOD_S, J_MAX_DEG_S3, V_MAX_DEG_S
from servotool.motion.guard import (
    DivergenceGuard,
    GuardConfig,
    GuardVerdict,
    SafetyConfig,
    UnsafeConfigError,
)
from servotool.motion.ramp import step_levels
from servotool.motion.shaper import ShaperConfig
from servotool.motion.stream_shapers import ShaperSpec
from servotool.runs.arm.prepare import Prepared, RunRefused
from servotool.runs.arm.run import (
    DEFAULT_WARMUP_TIMEOUT_S,
    ArmRun,
    RunCallbacks,
    RunOptions,
    RunResult,
    StreamSetup,
)
from servotool.runs.arm.settings import Ranges, needs_test_arm_probe, step_goal_problems, validate_step
from servotool.runs.arm.stream import StreamPlan, TickInfo
from servotool.runs.plan import MotionPlan
from servotool.runs.signals import StopSignals

# the lag (ms) the guard is tuned for when neither the settings nor the arm give one
UNKNOWN_LAG_MS = 120.0
DEFAULT_GUARD_NOISE_DEG = 0.01
PRE_HOLD_S = 0.5
# how many commands old the echo in the newest state is when a step computes the next setpoint
ECHO_LAG = 1


@dataclass
class StepSettings:
    joint: int = 0
    size_deg: float = 10.0
    steps: int = 4
    hold_s: float = 0.6
    cmd_period_s: float = CMD_PERIOD_S
    shaped: bool = True
    shaper: str = "accel"  # "accel" (acceleration-bounded) or "otg" (jerk-limited); shaped runs only
    v_max: float = V_MAX_DEG_S
    a_max: float = A_MAX_DEG_S2
    j_max: float = J_MAX_DEG_S3  # deg/s^3, otg only
    guard: bool = True
    lag_ms: float | None = None
    guard_noise_deg: float = DEFAULT_GUARD_NOISE_DEG
    keep: bool = False
    test_arm: bool = False
    confirmed: bool = False
    realtime: bool = True
    warmup_timeout_s: float = DEFAULT_WARMUP_TIMEOUT_S
    pre_hold_s: float = PRE_HOLD_S
    transport: str = ""
    # the jerk-limited generator's rules (motion.stream_shapers.OtgStreamShaper) and what ends a stream,
    # from the device family (MotionCaps)
    norm_budget: bool = False
    nominal_step: bool = True
    reanchor: bool = False
    backstop: tuple[float, float, float] | None = None
    settle_cycles: int = 0


@dataclass
class GuardSetup:
    lag_s: float
    margin_deg: float
    basis_lag_ms: float
    basis: str  # "--lag-ms" or "profile <model>" or "unknown model"
    frame_age_ms: float = 0.0


@dataclass
class StepRun(RunResult):
    """A step run's result: the skeleton's, plus how the guard was tuned (None without a guard)."""

    guard: GuardSetup | None = None

    def to_dict(self) -> dict[str, Any]:
        d = super().to_dict()
        return {
            "run": d["run"],
            "notes": d["notes"],
            "guard": vars(self.guard) if self.guard else None,
            "analysis": d["analysis"],
            "analysis_error": d["analysis_error"],
        }


def raw_needs_confirmation(s: StepSettings, arm: Arm) -> bool:
    """True when this run would put raw steps, or shaped steps probing above the braked-stop a_max bound, on a
    device that is not a simulator."""
    return (not s.shaped or needs_test_arm_probe(s)) and not arm.simulated


def check_settings(s: StepSettings, arm: Arm | None = None) -> None:
    """Refuse (RunRefused, every problem one line) before anything moves. Without an arm only the checks
    that need none run (runs/settings.validate_step); with one, its joint count and whether it is a
    simulator too (a raw step on a real arm needs --test-arm and the typed confirmation)."""
    if arm is None:
        problems = validate_step(s)
    else:
        problems = validate_step(
            s,
            n_joints=arm.n_joints,
            simulated=arm.simulated,
            test_arm=s.test_arm,
            speed_limits=arm.joint_speed_limits,
        )
        if not problems and raw_needs_confirmation(s, arm) and not s.confirmed:
            problems.append("a raw step on a real arm needs the confirmation typed on a terminal")
    if problems:
        raise RunRefused("\n".join(problems))


def guard_setup(s: StepSettings, arm: Arm, frame_age_s: float) -> GuardSetup:
    if s.lag_ms is not None:
        lag_ms, basis = float(s.lag_ms), "--lag-ms"
    elif arm.nominal_lag_ms is not None:
        lag_ms, basis = float(arm.nominal_lag_ms), f"profile {arm.model}"
    else:
        lag_ms, basis = UNKNOWN_LAG_MS, "unknown model (conservative default)"
    t = guard_advice(
        lag_ms / 1e3,
        a_max=s.a_max,
        v_max=s.v_max,
        noise_deg=s.guard_noise_deg,
        dt=s.cmd_period_s,
        frame_age_s=frame_age_s,
    )
    return GuardSetup(
        lag_s=t.lag_s,
        margin_deg=t.margin_deg,
        basis_lag_ms=lag_ms,
        basis=basis,
        frame_age_ms=frame_age_s * 1e3,
    )


class _WindowGuard:
    """A raw stream's guard input: the largest commanded speed of the last lag_s, per joint (see module)."""

    def __init__(self, guard: DivergenceGuard, period_s: float) -> None:
        self.guard = guard
        self._speeds: deque[np.ndarray] = deque(maxlen=max(1, int(math.ceil(guard.lag_s / period_s)) + 1))

    @property
    def lag_s(self) -> float:
        return self.guard.lag_s

    def check(self, setpoint: np.ndarray, measured: np.ndarray, velocity: np.ndarray) -> GuardVerdict | None:
        self._speeds.append(np.abs(np.asarray(velocity, dtype=float)))
        return self.guard.check(setpoint, measured, np.max(np.array(self._speeds), axis=0))


def pair_check(s: StepSettings, gs: GuardSetup | None) -> None:
    """Refuse (RunRefused) a shaped stream whose guard is missing or tuned below the shaper's floors."""
    guard = None
    try:
        if gs is not None:
            guard = GuardConfig(gs.margin_deg, gs.lag_s, measured_lag_s=gs.basis_lag_ms / 1e3, a_max=s.a_max)
        SafetyConfig(shaper=ShaperConfig(s.v_max, s.a_max, s.cmd_period_s), guard=guard)
    except UnsafeConfigError as exc:
        raise RunRefused(str(exc)) from None


def config_dict(s: StepSettings, pose: np.ndarray, guard: GuardSetup | None) -> dict[str, Any]:
    """The CSV header's config of a step run: every setting, the start pose and the guard's tuning."""
    cfg: dict[str, Any] = {"mode": "step"}
    cfg.update(asdict(s))
    cfg["start_pose"] = [float(x) for x in pose]
    cfg["guard_lag_s"] = guard.lag_s if guard else None
    cfg["guard_margin_deg"] = guard.margin_deg if guard else None
    cfg["guard_basis"] = guard.basis if guard else None
    return cfg


def shaper_spec(s: StepSettings) -> ShaperSpec:
    """The shaper of a shaped step run. A generator re-anchoring on the arm's echo gets it one command
    late: the state a setpoint answers comes back inside the send of the one before (ECHO_LAG)."""
    return ShaperSpec(
        s.shaper,
        s.v_max,
        s.a_max,
        s.j_max,
        s.cmd_period_s,
        norm_budget=s.norm_budget,
        nominal_step=s.nominal_step,
        reanchor=s.reanchor,
        echo_lag=ECHO_LAG if s.reanchor else 0,
        backstop=s.backstop,
    )


def build_plan(s: StepSettings, pose: np.ndarray) -> StreamPlan:
    """A short hold at the start pose (label -1, so the pre-step pose is known), then the step levels."""
    levels = step_levels(float(pose[s.joint]), s.size_deg, s.steps, hold_s=s.hold_s, dt=s.cmd_period_s)
    n_pre = max(1, int(round(s.pre_hold_s / s.cmd_period_s)))
    targets = np.tile(pose, (n_pre + len(levels), 1))
    targets[n_pre:, s.joint] = levels.q
    passes = np.concatenate([np.full(n_pre, -1), levels.step_index])
    phase = np.array(["pre"] * n_pre + ["hold"] * len(levels), dtype=object)
    return StreamPlan(targets, passes, phase)


def step_plan(s: StepSettings) -> MotionPlan:
    """The step run's plan from its settings alone (the stream's length does not depend on the start pose)."""
    n = len(build_plan(s, np.zeros(s.joint + 1)).targets)
    kind = f"shaped ({s.shaper})" if s.shaped else "RAW (the jump on the wire in one tick)"
    guard = "divergence guard on" if s.guard else "no guard"
    return MotionPlan(
        what=f"step, {s.steps} {kind} steps, {guard}",
        joints=f"J{s.joint + 1} only (the others hold)",
        motion=f"+{s.size_deg:g}, 0, -{s.size_deg:g}, 0 deg around the current pose, each held "
        f"{s.hold_s * 1e3:g} ms",
        speeds=f"v_max {s.v_max:g} deg/s, a_max {s.a_max:g} deg/s²" if s.shaped else "unbounded (raw)",
        duration_s=n * s.cmd_period_s,
        extra="streaming, plus the warm-up",
    )


class StepJob:
    """The step cycle as a job of the run skeleton; `guard` is how the guard was tuned, once built."""

    mode = "step"

    def __init__(self, settings: StepSettings) -> None:
        self.settings = settings
        self.guard: GuardSetup | None = None

    @property
    def options(self) -> RunOptions:
        s = self.settings
        return RunOptions(
            s.cmd_period_s, s.a_max, s.v_max, s.keep, s.realtime, s.warmup_timeout_s, s.settle_cycles
        )

    def check_settings(self) -> None:
        check_settings(self.settings)

    def check_arm(self, arm: Arm) -> None:
        check_settings(self.settings, arm)

    def goal_problems(self, ranges: Ranges | None, start: Sequence[float] | None) -> list[str]:
        return step_goal_problems(self.settings, ranges, start)

    def build(self, arm: Arm, prep: Prepared) -> StreamSetup:
        """The plan, the primed shaper (shaped runs) and the guard, tuned from the lag and the warm-up's
        state period; refuses (RunRefused) a shaped stream whose guard is tuned below the shaper's floors."""
        s, pose = self.settings, prep.pose
        shaper: Any = None
        guard: Any = None
        if s.guard:
            self.guard = guard_setup(s, arm, prep.state_period_s)
        if s.shaped:
            pair_check(s, self.guard)
            shaper = shaper_spec(s).build(arm.n_joints)
            shaper.prime(pose)
        if self.guard is not None:
            g = DivergenceGuard(self.guard.margin_deg, self.guard.lag_s)
            guard = g if s.shaped else _WindowGuard(g, s.cmd_period_s)
        kind = "shaped" if s.shaped else "RAW"
        return StreamSetup(
            plan=build_plan(s, pose),
            config=config_dict(s, pose, self.guard),
            record_raw=True,
            shaper=shaper,
            guard=guard,
            message=f"streaming {s.steps} {kind} steps of {s.size_deg:g} deg on J{s.joint + 1}",
        )


def run_step(
    arm: Arm,
    settings: StepSettings,
    *,
    clock: Clock,
    out_dir: Path,
    command: str | None = None,
    on_tick: Callable[[TickInfo], None] | None = None,
    on_pass: Callable[[int], None] | None = None,
    on_status: Callable[[str], None] | None = None,
    signals: StopSignals | None = None,
) -> StepRun:
    """Run the step cycle on an open arm; returns the CSV path, how the stream ended and the analysis.

    Raises RunRefused before anything moves (see check_settings), Refused after connecting and before
    enabling (a goal outside the joint ranges, an arm someone else drives), DeviceError when the arm cannot
    be prepared. The robot is left out of servo mode, and disabled unless settings.keep, whatever happens;
    `signals` (the command's StopSignals) makes SIGTERM and SIGHUP end the stream like Ctrl-C.
    """
    job = StepJob(settings)
    callbacks = RunCallbacks(on_tick=on_tick, on_pass=on_pass, on_status=on_status)
    run = ArmRun(
        job, clock=clock, out_dir=out_dir, command=command, callbacks=callbacks, signals=signals
    ).run(arm)
    return StepRun(
        path=run.path,
        outcome=run.outcome,
        analysis=run.analysis,
        analysis_error=run.analysis_error,
        notes=run.notes,
        guard=job.guard,
    )
