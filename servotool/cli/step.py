"""`servotool step`: inject level steps (shaped by default) and report the response and any runaway."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from servotool.cli.common import DryRunOpt, refuse, say_estimate, show_plan
from servotool.cli.confirm import confirm_typed
from servotool.cli.live import (
    DEFAULT_ROBOT,
    JsonOpt,
    OutOpt,
    RobotOpt,
    RunProgress,
    WideOpt,
    finish_live,
    live_arm,
    preflight_or_refuse,
)
from servotool.cli.options import derive_options, settings_from
from servotool.cli.render import render_guard_setup, render_step
from servotool.clock import MonotonicClock
from servotool.devices.family import MotionCaps
from servotool.devices.registry import ARM, DeviceURLError, check_url, url_facts
from servotool.errors import Refused
from servotool.io.paths import out_dir
from servotool.runs.arm.preflight import profile_joint_count, profile_ranges, profile_speed_limits
from servotool.runs.arm.settings import ShaperKind, StepOptions, needs_test_arm_probe

PlotOpt = Annotated[bool, typer.Option("--plot", help="Also write a PNG of the steps next to the CSV.")]


def _motion(robot: str) -> MotionCaps | None:
    """The URL's family's motion caps; None when the URL is not read yet (it is refused on opening)."""
    try:
        return url_facts(robot, ARM).motion
    except DeviceURLError:
        return None


def confirm_raw(robot: str, size: float, joint: int, a_max: float | None = None) -> None:
    """The typed confirmation of a raw step (or, given a_max, of a shaped a_max probe above the braked-stop
    bound) on a real arm, on the terminal (never a pipe); exit 2 without."""
    what, phrase = "RAW steps", f"RAW {size:g} J{joint + 1}"
    if a_max is not None:
        what, phrase = f"Shaped steps at a_max {a_max:g} deg/s^2", f"AMAX {a_max:g} J{joint + 1}"
    warning = (
        f"{what} on a real arm ({robot}): the controller may run away for 14-35x the step. "
        "E-stop in hand, clear the joint's arc."
    )
    try:
        confirm_typed(warning, phrase)
    except Refused as exc:
        refuse([str(exc)])


@derive_options(StepOptions, after="robot", choices={"shaper": ShaperKind})
def step(
    ctx: typer.Context,
    robot: RobotOpt = DEFAULT_ROBOT,
    out: OutOpt = None,
    json_out: JsonOpt = False,
    plot: PlotOpt = False,
    wide: WideOpt = False,
    dry_run: DryRunOpt = False,
    **options: Any,
) -> None:
    """Step one joint through +X, 0, -X, 0 and report each step's response, rejects, faults and runaway.

    Shaped by default: the wire sees a bounded trapezoid, and the divergence guard runs alongside.
    --raw puts the jump on the wire in one tick: a controller may latch a fault and sweep on its own.
    Raw steps run on simulators, or on a real arm with --test-arm and a confirmation typed on the terminal.
    Every setting is checked before the arm is opened, +X and -X against the joint's range. Exit 0 complete,
    1 fault or guard, 2 refused before anything moved, 3 device lost,
    130/143/129/131 Ctrl-C/SIGTERM/SIGHUP/SIGQUIT.
    """
    # the run and its analysis (numpy, pandas, scipy) load here, not when `step -h` parses the options
    from servotool.analysis.step import StepResult
    from servotool.io.csvlog import command_line
    from servotool.runs.arm.step import run_step, step_plan

    try:
        simulated = check_url(robot, ARM).simulated
    except DeviceURLError as exc:
        refuse([str(exc)])
    motion = _motion(robot)
    opts = settings_from(StepOptions, ctx, options).for_device(motion)
    problems = opts.problems(
        n_joints=profile_joint_count(robot),
        simulated=simulated,
        ranges=profile_ranges(robot),
        speed_limits=profile_speed_limits(robot),
        motion=motion,
    )
    settings = opts.run_settings()
    joint, size, a_max, rpc = opts.joint, opts.size, opts.a_max, opts.rpc
    preflight_or_refuse(problems, out_dir(out))
    plan = step_plan(settings)
    show_plan(plan, robot, dry_run=dry_run, json_out=json_out)
    if (not settings.shaped or needs_test_arm_probe(settings, motion)) and not simulated:
        # on the terminal, before the arm is even opened
        confirm_raw(robot, size, joint, a_max if settings.shaped else None)
        settings.confirmed = True
    clock = MonotonicClock()
    with live_arm(robot, rpc, clock) as (arm, signals):
        say_estimate(plan)
        with RunProgress(not json_out, "steps") as progress:
            run = run_step(
                arm,
                settings,
                clock=clock,
                out_dir=out_dir(out),
                command=command_line(),
                signals=signals,
                **progress.callbacks("step"),
            )

        def render() -> None:
            if run.guard is not None:
                render_guard_setup(run.guard)
            if run.analysis is not None and isinstance(run.analysis.result, StepResult):
                title = f"steps, J{joint + 1} ({robot})"
                render_step(run.analysis.result, title=title, wide=wide, device=robot)

        finish_live(run, signals, plot=plot, json_out=json_out, render=render)
