"""A ramp started from a disabled robot, inside its enable window: the first runaway of the lag campaign,
reproduced on purpose. SIMULATORS ONLY: `run_cold_ramp` refuses any device that is not a simulator.

The run skeleton (runs/arm/run.py) never does this: it warms up until the controller executes the stream, and
its stream gives up after a few rejected commands. This run keeps streaming through the enable window's
rejects (COLD_REJECT_WINDOW_S), with the skeleton's own pieces: the recorded stream and its braked stop, and
the same finish. Here the robot
is disabled, enabled without waiting, and the ramp streams at once. While the controller answers 101 it
drops the setpoints; the stream advances regardless, so when execution starts the controller meets a gap of
several degrees in one tick and runs away. The stream still ends the one way every run ends (braked stop,
CSV end line, servo mode ended, robot disabled).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path

import numpy as np

from servotool.clock import Clock
from servotool.devices.arm import Arm, EnablesCold, clock_of
from servotool.motion.ramp import ramp_profile
from servotool.runs.arm.prepare import RunRefused, finish, wait_for_state
from servotool.runs.arm.ramp import RampRun, RampSettings, check_settings, config_dict
from servotool.runs.arm.stream import StopSettings, StreamPlan, TickInfo, record_stream
from servotool.runs.offline.analyze import analyze_written

# commands rejected in a row before the stream gives up: long enough to stream through an enable window
COLD_REJECT_WINDOW_S = 3.0


def run_cold_ramp(
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
    """Stream a ramp from a disabled robot with no warm-up (see the module doc); returns a RampRun.

    Raises RunRefused on a device that is not a simulator or has no enable window (EnablesCold), or for
    settings ramp mode refuses.
    """
    if not arm.simulated:
        raise RunRefused(
            f"a cold start makes the controller run away; it runs on simulators only, not {arm.url}"
        )
    if not isinstance(arm, EnablesCold):
        raise RunRefused(f"a cold start streams inside an enable window, and {arm.url} has none to stream in")
    s = settings
    check_settings(s, arm)
    clock = clock_of(arm) or clock  # an arm in simulated time moves only on its own clock
    say = on_status or (lambda _msg: None)
    notes: list[str] = []
    try:
        arm.disable()
        pose = np.asarray(wait_for_state(arm, clock).q, dtype=float)[: arm.n_joints]
        say("cold start: enabling and streaming at once, inside the enable window")
        arm.enable_cold()
        arm.servo_start()
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
        rejects = int(math.ceil(COLD_REJECT_WINDOW_S / s.cmd_period_s))
        config = config_dict(s, [float(x) for x in pose], profile.notes)
        config["cold_start"] = True
        path, outcome = record_stream(
            arm,
            clock,
            StreamPlan(targets, profile.pass_index, profile.phase),
            mode="ramp",
            out_dir=out_dir,
            config=config,
            header={"realtime": "not asked (cold start)", "warm_up_s": 0.0},
            command=command,
            period_s=s.cmd_period_s,
            stop=StopSettings(a_max=s.a_max, v_max=s.v_max, max_consecutive_rejects=rejects),
            on_tick=on_tick,
            on_pass=on_pass,
        )
    finally:
        notes += finish(arm, s.keep)
    notes += outcome.notes
    analysis, error = analyze_written(path)
    return RampRun(path=path, outcome=outcome, analysis=analysis, analysis_error=error, notes=notes)
