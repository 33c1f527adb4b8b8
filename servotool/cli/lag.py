"""`servotool lag --ramp`: measure the commanded-to-measured lag with smooth out-and-back passes."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

import typer

from servotool.cli.common import DryRunOpt, fail, plain_number, say_estimate, show_plan
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
from servotool.cli.render import ended_early_line, render_lag
from servotool.clock import MonotonicClock
from servotool.devices.registry import ARM, DeviceURLError, url_facts
from servotool.io.paths import out_dir
from servotool.runs.arm.preflight import profile_joint_count, profile_ranges, profile_speed_limits
from servotool.runs.arm.settings import LagOptions

if TYPE_CHECKING:
    from servotool.analysis.lag import LagResult
    from servotool.runs.arm.ramp import RampSettings
    from servotool.runs.outcome import StreamOutcome

RampOpt = Annotated[
    bool,
    typer.Option(
        "--ramp/--no-ramp",
        help="Ramp mode: smooth passes, never a velocity jump "
        "(the only lag method; step responses come from `servotool step`).",
    ),
]
PlotOpt = Annotated[bool, typer.Option("--plot", help="Also write a PNG of the fit next to the CSV.")]


def parse_speeds(text: str) -> tuple[float, ...]:
    """--speeds as a tuple of floats (deg/s); one error line and exit 2 when it is not a number list (an
    empty item, as in 5,,10, included: which speeds were meant cannot be told)."""
    items = [x.strip() for x in text.replace(";", ",").split(",")]
    if not any(items):
        fail("--speeds lists no speed")
    if not all(items):
        fail(f"--speeds {text!r}: an empty item; expected a comma list of speeds in deg/s, e.g. 15,30")
    if not all(plain_number(x) for x in items):
        fail(f"--speeds {text!r}: write speeds in plain decimal (ASCII digits, no '_'), e.g. 15,30")
    try:
        return tuple(float(x) for x in items)
    except ValueError:
        fail(f"--speeds {text!r}: expected a comma list of speeds in deg/s, e.g. 15,30")


@derive_options(LagOptions, after="robot")
def lag(
    ctx: typer.Context,
    ramp: RampOpt = True,
    robot: RobotOpt = DEFAULT_ROBOT,
    out: OutOpt = None,
    plot: PlotOpt = False,
    json_out: JsonOpt = False,
    wide: WideOpt = False,
    dry_run: DryRunOpt = False,
    **options: Any,
) -> None:
    """Measure the commanded-to-measured lag L with smooth out-and-back passes at several speeds.

    Per pass: the cruise delta and L = delta / v at every state frame, the guard-view delta, the midpoint
    lag and the overshoot. Summary: delta = v * L through the origin with its 95 % confidence interval,
    the midpoint cross-check and the model check (it needs two speeds or more), a dead time + first-order
    lag + friction fit over the whole sweep, the noise at rest and the guard tuning. Everything is recorded
    in a CSV that `servotool analyze` reads back. Every setting is checked before the arm is opened, the
    sweep against the joint's range.

    Exit 0 complete, 1 fault, guard or no lag measured, 2 refused before anything moved (a sweep that
    leaves no cruise included), 3 device unreachable or lost, 130/143/129/131 Ctrl-C/SIGTERM/SIGHUP/SIGQUIT
    (after the braked stop). A run that ended early opens with how far it got and tunes no guard.
    """
    # the run and its analysis (numpy, pandas, scipy) load here, not when `lag -h` parses the options
    from servotool.analysis.lag import LagResult
    from servotool.io.csvlog import command_line
    from servotool.runs.arm.ramp import ramp_plan, run_ramp

    if not ramp:
        fail("only ramp mode measures the lag here: use --ramp (step responses: `servotool step`)")
    try:
        motion = url_facts(robot, ARM).motion
    except DeviceURLError:  # refused with its reason when the arm is opened
        motion = None
    opts = settings_from(LagOptions, ctx, {**options, "speeds": parse_speeds(options["speeds"])})
    opts = opts.for_device(motion)
    limits, ranges = profile_speed_limits(robot), profile_ranges(robot)
    preflight_or_refuse(
        opts.problems(n_joints=profile_joint_count(robot), speed_limits=limits, ranges=ranges, motion=motion),
        out_dir(out),
    )
    settings, joint, rpc = opts.run_settings(), opts.joint, opts.rpc
    plan = ramp_plan(settings)
    show_plan(plan, robot, dry_run=dry_run, json_out=json_out)
    clock = MonotonicClock()
    with live_arm(robot, rpc, clock) as (arm, signals):
        say_estimate(plan)
        with RunProgress(not json_out, "ramp") as progress:
            run = run_ramp(
                arm,
                settings,
                clock=clock,
                out_dir=out_dir(out),
                command=command_line(),
                signals=signals,
                **progress.callbacks("pass"),
            )

        result = run.analysis.result if run.analysis is not None else None
        lag_result = result if isinstance(result, LagResult) else None
        early = None if run.outcome.complete else ended_early(run.outcome, lag_result, settings)

        def render() -> None:
            if lag_result is not None:
                title = f"lag, J{joint + 1} ({robot})"
                render_lag(lag_result, title=title, wide=wide, ended_early=early)

        unmeasured = None
        if lag_result is not None and lag_result.fit is None:
            unmeasured = "L not measurable: no pass had a cruise long enough (see the notes)"
        finish_live(run, signals, plot=plot, json_out=json_out, render=render, unmeasured=unmeasured)


def ended_early(outcome: StreamOutcome, result: LagResult | None, settings: RampSettings) -> str:
    """The first line of a run that ended early: how it ended and how far it got (passes measured of those
    planned, seconds streamed of the plan), and that its figures are partial and tune nothing."""
    from servotool.motion.ramp import ramp_profile

    s = settings
    profile = ramp_profile(0.0, s.sweep_deg, s.speeds_deg_s, s.cmd_period_s, s.ramp_s, s.settle_s)
    streamed = f"{outcome.t_end:.1f} of {len(profile) * s.cmd_period_s:.1f} s streamed"
    return ended_early_line(result, outcome.reason or str(outcome.status), len(profile.passes), streamed)
