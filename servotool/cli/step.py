"""`servotool step`: inject level steps (shaped by default) and report the response and any runaway."""

from __future__ import annotations

from typing import Annotated

import typer

from servotool.cli.common import given, refuse
from servotool.cli.confirm import confirm_typed
from servotool.cli.live import (
    DEFAULT_ROBOT,
    CmdMsOpt,
    JointOpt,
    JsonOpt,
    KeepOpt,
    OutOpt,
    RealtimeOpt,
    RobotOpt,
    RunProgress,
    WideOpt,
    finish_live,
    live_arm,
    preflight_or_refuse,
)
from servotool.cli.render import render_guard_setup, render_step
from servotool.clock import MonotonicClock
from servotool.devices.registry import DeviceURLError, parse_url
from servotool.errors import Refused
from servotool.io.paths import out_dir
from servotool.motion.defaults import A_MAX_DEG_S2, CMD_PERIOD_S, J_MAX_DEG_S3, V_MAX_DEG_S
from servotool.runs.arm.preflight import profile_ranges, profile_speed_limits
from servotool.runs.arm.settings import ShaperKind, needs_test_arm_probe, validate_step

SizeOpt = Annotated[float, typer.Option("--size", help="Step size X in degrees (levels +X, 0, -X, 0).")]
StepsOpt = Annotated[int, typer.Option("--steps", min=1, help="Number of level changes.")]
HoldMsOpt = Annotated[float, typer.Option("--hold-ms", help="How long each level is held (ms).")]
ShapedOpt = Annotated[
    bool,
    typer.Option(
        "--shaped/--raw",
        help="Through the stream shaper (default), or raw "
        "one-tick jumps (the runaway trigger: simulators and test arms only). --shaped and --raw exclude "
        "each other: both given is refused.",
    ),
]
VMaxOpt = Annotated[float, typer.Option("--v-max", help="Shaper speed bound, deg/s.")]
AMaxOpt = Annotated[float, typer.Option("--a-max", help="Shaper acceleration bound, deg/s².")]
ShaperOpt = Annotated[
    ShaperKind,
    typer.Option(
        "--shaper",
        case_sensitive=False,
        help="accel: acceleration-bounded (C1 wire); otg: jerk-limited trajectory generator (C2 wire).",
    ),
]
JMaxOpt = Annotated[float, typer.Option("--j-max", help="Jerk bound of the otg shaper, deg/s³.")]
LagMsOpt = Annotated[
    float | None,
    typer.Option(
        "--lag-ms", help="Measured lag L to tune the guard with (ms; default: the device profile's)."
    ),
]
RpcOpt = Annotated[
    bool, typer.Option("--rpc", help="Send setpoints as XML-RPC ServoJ: every reject is counted.")
]
TestArmOpt = Annotated[
    bool,
    typer.Option(
        "--test-arm",
        help="Allow raw steps on a real arm (a test arm, e-stop in hand); "
        "a typed confirmation is still asked.",
    ),
]
GuardOpt = Annotated[
    bool,
    typer.Option(
        "--guard/--no-guard", help="Run the divergence guard alongside (always on for shaped steps)."
    ),
]
PlotOpt = Annotated[bool, typer.Option("--plot", help="Also write a PNG of the steps next to the CSV.")]


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


def step(
    ctx: typer.Context,
    robot: RobotOpt = DEFAULT_ROBOT,
    joint: JointOpt = 0,
    size: SizeOpt = 10.0,
    steps: StepsOpt = 4,
    hold_ms: HoldMsOpt = 600.0,
    cmd_ms: CmdMsOpt = CMD_PERIOD_S * 1e3,
    shaped: ShapedOpt = True,
    v_max: VMaxOpt = V_MAX_DEG_S,
    a_max: AMaxOpt = A_MAX_DEG_S2,
    shaper: ShaperOpt = ShaperKind.ACCEL,
    j_max: JMaxOpt = J_MAX_DEG_S3,
    lag_ms: LagMsOpt = None,
    rpc: RpcOpt = False,
    keep: KeepOpt = False,
    test_arm: TestArmOpt = False,
    guard: GuardOpt = True,
    out: OutOpt = None,
    json_out: JsonOpt = False,
    plot: PlotOpt = False,
    rt: RealtimeOpt = True,
    wide: WideOpt = False,
) -> None:
    """Step one joint through +X, 0, -X, 0 and report each step's response, rejects, faults and runaway.

    Shaped by default: the wire sees a bounded trapezoid, and the divergence guard runs alongside.
    --raw puts the jump on the wire in one tick: a FAIRINO controller latches a fault and sweeps on its own.
    Raw steps run on simulators, or on a real arm with --test-arm and a confirmation typed on the terminal.
    Every setting is checked before the arm is opened, +X and -X against the joint's range. Exit 0 complete,
    1 fault or guard, 2 refused before anything moved, 3 device lost,
    130/143/129/131 Ctrl-C/SIGTERM/SIGHUP/SIGQUIT.
    """
    # the run and its analysis (numpy, pandas, scipy) load here, not when `step -h` parses the options
    from servotool.analysis.step import StepResult
    from servotool.io.csvlog import command_line
    from servotool.runs.arm.step import StepSettings, run_step

    settings = StepSettings(
        joint=joint, size_deg=size, steps=steps, hold_s=hold_ms / 1e3, cmd_period_s=cmd_ms / 1e3,
        shaped=shaped, shaper=shaper.value, v_max=v_max, a_max=a_max, j_max=j_max, guard=guard, lag_ms=lag_ms,
        keep=keep, test_arm=test_arm, realtime=rt, transport="rpc" if rpc else "udp",
    )
    try:
        simulated = parse_url(robot).simulated
    except DeviceURLError as exc:
        refuse([str(exc)])
    problems = validate_step(settings, simulated=simulated, test_arm=test_arm, ranges=profile_ranges(robot),
                             speed_limits=profile_speed_limits(robot))
    if given(ctx, "j_max") and not (settings.shaped and settings.shaper == "otg"):
        problems.append("--j-max bounds the otg shaper only; add --shaper otg (shaped steps) or leave it out")
    preflight_or_refuse(problems, out_dir(out))
    if (not settings.shaped or needs_test_arm_probe(settings)) and not simulated:
        # on the terminal, before the arm is even opened
        confirm_raw(robot, size, joint, a_max if settings.shaped else None)
        settings.confirmed = True
    clock = MonotonicClock()
    with live_arm(robot, rpc, clock) as (arm, signals):
        with RunProgress(not json_out, "steps") as progress:
            run = run_step(
                arm, settings, clock=clock, out_dir=out_dir(out), command=command_line(), signals=signals,
                **progress.callbacks("step"),
            )

        def render() -> None:
            if run.guard is not None:
                render_guard_setup(run.guard)
            if run.analysis is not None and isinstance(run.analysis.result, StepResult):
                render_step(run.analysis.result, title=f"steps, J{joint + 1} ({robot})", wide=wide)

        finish_live(run, signals, plot=plot, json_out=json_out, render=render)
