"""`lag --ramp`: stream smooth out-and-back passes at several speeds and measure the lag from the recording.

A ramp run is a job of the run skeleton (runs/arm/run.py): refuse unsafe settings before anything moves;
enable, servo mode, warm-up; stream the ramp profile from the warmed-up pose, recording every send and every
receive into the CSV; end the servo mode and disable unless keep; then read the CSV back and analyse it,
so the figures a live run reports are exactly what `servotool analyze` recomputes from the file.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from servotool.clock import Clock
from servotool.devices.arm import Arm
from servotool.motion.defaults import A_MAX_DEG_S2, CMD_PERIOD_S, V_MAX_DEG_S
from servotool.motion.ramp import LAG_RAMP_S, LAG_SETTLE_S, LAG_SPEEDS_DEG_S, LAG_SWEEP_DEG, ramp_profile
from servotool.runs.arm.prepare import Prepared, RunRefused
from servotool.runs.arm.run import (
    DEFAULT_WARMUP_TIMEOUT_S,
    ArmRun,
    RunCallbacks,
    RunOptions,
    RunResult,
    StreamSetup,
)
from servotool.runs.arm.settings import Ranges, lag_goal_problems, validate_lag
from servotool.runs.arm.stream import StreamPlan, TickInfo
from servotool.runs.plan import MotionPlan
from servotool.runs.signals import StopSignals

# a ramp run's result is the skeleton's
RampRun = RunResult


@dataclass
class RampSettings:
    """Everything a ramp run needs (deg, deg/s, s). Recorded in the CSV header as the run's config."""

    joint: int = 0
    sweep_deg: float = LAG_SWEEP_DEG
    speeds_deg_s: tuple[float, ...] = LAG_SPEEDS_DEG_S
    ramp_s: float = LAG_RAMP_S
    settle_s: float = LAG_SETTLE_S
    cmd_period_s: float = CMD_PERIOD_S
    a_max: float = A_MAX_DEG_S2
    v_max: float = V_MAX_DEG_S
    keep: bool = False
    realtime: bool = True
    warmup_timeout_s: float = DEFAULT_WARMUP_TIMEOUT_S
    transport: str = ""
    settle_cycles: int = 0  # still commands every stream ends on (the device family's, MotionCaps)


def check_settings(s: RampSettings, arm: Arm | None = None) -> None:
    """Refuse (RunRefused, every problem one line) what ramp mode must not do; refuse, never clamp. Without
    an arm only the checks that need none run (runs/settings.validate_lag); with one, its joint count and
    speed limits too."""
    if arm is None:
        problems = validate_lag(s)
    else:
        problems = validate_lag(s, n_joints=arm.n_joints, speed_limits=arm.joint_speed_limits)
    if problems:
        raise RunRefused("\n".join(problems))


def config_dict(
    s: RampSettings, start_pose: Sequence[float] | np.ndarray, notes: Sequence[str]
) -> dict[str, Any]:
    """The CSV header's config of a ramp run: every setting, the start pose and the profile's notes."""
    cfg: dict[str, Any] = {"mode": "ramp"}
    cfg.update(asdict(s))
    cfg["speeds_deg_s"] = [float(v) for v in s.speeds_deg_s]
    cfg["start_pose"] = [float(x) for x in start_pose]
    cfg["profile_notes"] = list(notes)
    return cfg


def ramp_plan(s: RampSettings) -> MotionPlan:
    """The ramp run's plan from its settings alone: the profile's length does not depend on the start pose
    (ValueError, as ramp_profile, on settings it refuses: check them first)."""
    profile = ramp_profile(
        0.0, s.sweep_deg, s.speeds_deg_s, dt=s.cmd_period_s, ramp_s=s.ramp_s, settle_s=s.settle_s
    )
    speeds = ", ".join(f"{v:g}" for v in s.speeds_deg_s)
    return MotionPlan(
        what=f"lag, {len(profile.passes)} passes (out and back at each speed)",
        joints=f"J{s.joint + 1} only (the others hold)",
        motion=f"{s.sweep_deg:+g} deg out from the current pose and back; ramps {s.ramp_s * 1e3:g} ms, "
        f"rests {s.settle_s * 1e3:g} ms",
        speeds=f"{speeds} deg/s cruise (v_max {s.v_max:g} deg/s, a_max {s.a_max:g} deg/s²)",
        duration_s=len(profile) * s.cmd_period_s,
        extra="streaming, plus the warm-up",
    )


class RampJob:
    """The ramp passes as a job of the run skeleton."""

    mode = "ramp"

    def __init__(self, settings: RampSettings) -> None:
        self.settings = settings

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
        return lag_goal_problems(self.settings, ranges, start)

    def build(self, arm: Arm, prep: Prepared) -> StreamSetup:
        s, pose = self.settings, prep.pose
        profile = ramp_profile(
            float(pose[s.joint]),
            s.sweep_deg,
            s.speeds_deg_s,
            dt=s.cmd_period_s,
            ramp_s=s.ramp_s,
            settle_s=s.settle_s,
        )
        targets = np.tile(pose, (len(profile), 1))
        targets[:, s.joint] = profile.q
        return StreamSetup(
            plan=StreamPlan(targets, profile.pass_index, profile.phase),
            config=config_dict(s, pose, profile.notes),
            message=f"streaming {len(profile.passes)} passes, {len(profile) * s.cmd_period_s:.1f} s",
        )


def run_ramp(
    arm: Arm,
    settings: RampSettings,
    *,
    clock: Clock,
    out_dir: Path,
    command: str | None = None,
    on_tick: Callable[[TickInfo], None] | None = None,
    on_pass: Callable[[int], None] | None = None,
    on_status: Callable[[str], None] | None = None,
    signals: StopSignals | None = None,
) -> RampRun:
    """Run a ramp measurement on an open arm; returns the CSV path, how the stream ended and the analysis.

    Raises RunRefused before anything moves (settings), Refused after connecting and before enabling (a goal
    outside the joint ranges, an arm someone else drives), DeviceError when the arm cannot be prepared
    (nothing recorded). The robot is left out of servo mode, and disabled unless settings.keep, whatever
    happens; `signals` (the command's StopSignals) makes SIGTERM and SIGHUP end the stream like Ctrl-C.
    """
    callbacks = RunCallbacks(on_tick=on_tick, on_pass=on_pass, on_status=on_status)
    run = ArmRun(
        RampJob(settings), clock=clock, out_dir=out_dir, command=command, callbacks=callbacks, signals=signals
    )
    return run.run(arm)
