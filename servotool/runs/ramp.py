"""`lag --ramp`: stream smooth out-and-back passes at several speeds and measure the lag from the recording.

Sequence: refuse unsafe settings before anything moves; enable, servo mode, warm-up (the run starts only
once the controller executes the held pose); stream the ramp profile through the Streamer, which records
every send and every receive into the CSV; end the servo mode and disable unless keep; then read the CSV
back and analyse it, so the figures a live run reports are exactly what `servotool analyze` recomputes
from the file.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from servotool.clock import Clock
from servotool.devices.arm import Arm
from servotool.motion.ramp import ramp_profile
from servotool.runs.analyze import FileAnalysis, analyze_written
from servotool.runs.realtime import realtime
from servotool.runs.stream import (
    RunRefused,
    StopSettings,
    StreamOutcome,
    StreamPlan,
    TickInfo,
    finish,
    prepare,
    record_stream,
)


@dataclass
class RampSettings:
    """Everything a ramp run needs (deg, deg/s, s). Recorded in the CSV header as the run's config."""

    joint: int = 0
    sweep_deg: float = 20.0
    speeds_deg_s: tuple[float, ...] = (5.0, 10.0, 20.0, 40.0)
    ramp_s: float = 0.2
    settle_s: float = 0.5
    cmd_period_s: float = 0.01
    a_max: float = 500.0
    v_max: float = 130.0
    keep: bool = False
    realtime: bool = True
    warmup_timeout_s: float = 10.0
    transport: str = ""


@dataclass
class RampRun:
    path: Path
    outcome: StreamOutcome
    analysis: FileAnalysis | None
    analysis_error: str | None = None
    notes: list[str] = field(default_factory=list)


def check_settings(s: RampSettings, arm: Arm) -> None:
    """Refuse (RunRefused) what ramp mode must not do; refuse, never clamp."""
    if not 0 <= s.joint < arm.n_joints:
        raise RunRefused(f"--joint {s.joint} does not exist: this arm has joints 0..{arm.n_joints - 1}")
    if not s.speeds_deg_s:
        raise RunRefused("--speeds lists no speed")
    if s.sweep_deg == 0:
        raise RunRefused("--sweep must not be 0")
    if not 0.001 <= s.cmd_period_s <= 0.1:
        raise RunRefused(f"--cmd-ms {s.cmd_period_s * 1e3:g} is outside 1..100 ms")
    if s.ramp_s <= 0:
        raise RunRefused("--ramp-ms must be > 0: ramp mode never puts a velocity jump on the wire")
    limit = float(arm.joint_speed_limits[s.joint]) if arm.joint_speed_limits else float("inf")
    for v in s.speeds_deg_s:
        if not v > 0:
            raise RunRefused(f"speed {v:g} deg/s must be > 0")
        if v > s.v_max:
            raise RunRefused(f"speed {v:g} deg/s exceeds --v-max {s.v_max:g} deg/s")
        if v > limit:
            raise RunRefused(f"speed {v:g} deg/s exceeds joint {s.joint}'s limit of {limit:g} deg/s")
        if v / s.ramp_s > s.a_max:
            raise RunRefused(
                f"speed {v:g} deg/s over a {s.ramp_s * 1e3:g} ms ramp needs "
                f"{v / s.ramp_s:g} deg/s^2, above --a-max {s.a_max:g}: lengthen --ramp-ms"
            )


def config_dict(s: RampSettings, start_pose: Sequence[float], notes: Sequence[str]) -> dict[str, Any]:
    cfg: dict[str, Any] = {"mode": "ramp"}
    cfg.update(asdict(s))
    cfg["speeds_deg_s"] = [float(v) for v in s.speeds_deg_s]
    cfg["start_pose"] = [float(x) for x in start_pose]
    cfg["profile_notes"] = list(notes)
    return cfg


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
) -> RampRun:
    """Run a ramp measurement on an open arm; returns the CSV path, how the stream ended and the analysis.

    Raises RunRefused before anything moves, DeviceError when the arm cannot be prepared (nothing recorded).
    The robot is left out of servo mode, and disabled unless settings.keep, whatever happens.
    """
    s = settings
    check_settings(s, arm)
    say = on_status or (lambda _msg: None)
    notes: list[str] = []
    with realtime(s.realtime) as rt:
        try:
            say("warming up: waiting for the controller to execute the stream")
            prep = prepare(arm, clock, s.cmd_period_s, s.warmup_timeout_s)
            notes += prep.notes
            pose = prep.pose
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
            plan = StreamPlan(targets, profile.pass_index, profile.phase)
            say(f"streaming {len(profile.passes)} passes, {len(profile) * s.cmd_period_s:.1f} s")
            path, outcome = record_stream(
                arm,
                clock,
                plan,
                mode="ramp",
                out_dir=out_dir,
                config=config_dict(s, pose, profile.notes),
                header={"realtime": rt, "warm_up_s": round(prep.warm_up_s, 3)},
                command=command,
                period_s=s.cmd_period_s,
                stop=StopSettings(a_max=s.a_max, v_max=s.v_max),
                on_tick=on_tick,
                on_pass=on_pass,
            )
        finally:
            notes += finish(arm, s.keep)
    notes += outcome.notes
    analysis, error = analyze_written(path)
    return RampRun(path=path, outcome=outcome, analysis=analysis, analysis_error=error, notes=notes)
