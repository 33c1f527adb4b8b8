"""`servotool step`: inject level steps (shaped by default) and report the response and any runaway."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from servotool.analysis.step import StepResult
from servotool.cli.common import console, print_json, refuse
from servotool.cli.confirm import confirm_typed
from servotool.cli.live import (
    DEFAULT_ROBOT,
    RunProgress,
    exit_for,
    live_arm,
    preflight_or_refuse,
    report_outcome,
    run_json,
)
from servotool.cli.render import render_guard_setup, render_step, save_plot
from servotool.clock import MonotonicClock
from servotool.devices.registry import DeviceURLError, parse_url
from servotool.errors import Refused
from servotool.io.csvlog import command_line
from servotool.io.paths import out_dir
from servotool.motion.defaults import A_MAX_DEG_S2, CMD_PERIOD_S, J_MAX_DEG_S3, V_MAX_DEG_S
from servotool.runs.preflight import profile_ranges
from servotool.runs.settings import validate_step
from servotool.runs.step import StepRun, StepSettings, run_step


def step(
    robot: str = typer.Option(
        DEFAULT_ROBOT, "--robot", help="Device URL (sim:fr3, sim:fr20, sim:simmachine, fairino://HOST)."
    ),
    joint: int = typer.Option(0, "--joint", min=0, help="Joint index, 0 = J1 (the base)."),
    size: float = typer.Option(10.0, "--size", help="Step size X in degrees (levels +X, 0, -X, 0)."),
    steps: int = typer.Option(4, "--steps", min=1, help="Number of level changes."),
    hold_ms: float = typer.Option(600.0, "--hold-ms", help="How long each level is held (ms)."),
    cmd_ms: float = typer.Option(CMD_PERIOD_S * 1e3, "--cmd-ms", help="Command period (ms)."),
    shaped: bool = typer.Option(
        True,
        "--shaped/--raw",
        help="Through the stream shaper (default), or raw "
        "one-tick jumps (the runaway trigger: simulators and test arms only).",
    ),
    v_max: float = typer.Option(V_MAX_DEG_S, "--v-max", help="Shaper speed bound, deg/s."),
    a_max: float = typer.Option(A_MAX_DEG_S2, "--a-max", help="Shaper acceleration bound, deg/s²."),
    shaper: str = typer.Option(
        "accel",
        "--shaper",
        help="accel: acceleration-bounded (C1 wire); otg: jerk-limited trajectory generator (C2 wire).",
    ),
    j_max: float = typer.Option(J_MAX_DEG_S3, "--j-max", help="Jerk bound of the otg shaper, deg/s³."),
    lag_ms: float | None = typer.Option(
        None, "--lag-ms", help="Measured lag L to tune the guard with (ms; default: the device profile's)."
    ),
    rpc: bool = typer.Option(
        False, "--rpc", help="Send setpoints as XML-RPC ServoJ: every reject is counted."
    ),
    keep: bool = typer.Option(False, "--keep", help="Leave the robot enabled at the end."),
    test_arm: bool = typer.Option(
        False,
        "--test-arm",
        help="Allow raw steps on a real arm (a test arm, "
        "e-stop in hand); a typed confirmation is still asked.",
    ),
    guard: bool = typer.Option(
        True, "--guard/--no-guard", help="Run the divergence guard alongside (always on for shaped steps)."
    ),
    out: Annotated[
        Path | None, typer.Option("--out", help="Folder for the CSV (default ./servotool-runs).")
    ] = None,
    json_out: bool = typer.Option(False, "--json", help="Print everything as JSON on stdout."),
    plot: bool = typer.Option(False, "--plot", help="Also write a PNG of the steps next to the CSV."),
    rt: bool = typer.Option(True, "--realtime/--no-realtime", help="Ask for SCHED_FIFO while streaming."),
) -> None:
    """Step one joint through +X, 0, -X, 0 and report each step's response, rejects, faults and runaway.

    Shaped by default: the wire sees a bounded trapezoid, and the divergence guard runs alongside.
    --raw puts the jump on the wire in one tick: a FAIRINO controller latches a fault and sweeps on its own.
    Raw steps run on simulators, or on a real arm with --test-arm and a confirmation typed on the terminal.
    Every setting is checked before the arm is opened, +X and -X against the joint's range. Exit 0 complete,
    1 fault or guard, 2 refused before anything moved, 3 device lost, 130/143/129 Ctrl-C/SIGTERM/SIGHUP.
    """
    settings = StepSettings(
        joint=joint,
        size_deg=size,
        steps=steps,
        hold_s=hold_ms / 1e3,
        cmd_period_s=cmd_ms / 1e3,
        shaped=shaped,
        shaper=shaper,
        v_max=v_max,
        a_max=a_max,
        j_max=j_max,
        guard=guard,
        lag_ms=lag_ms,
        keep=keep,
        test_arm=test_arm,
        realtime=rt,
        transport="rpc" if rpc else "udp",
    )
    try:
        simulated = parse_url(robot).simulated
    except DeviceURLError as exc:
        refuse([str(exc)])
    problems = validate_step(settings, simulated=simulated, test_arm=test_arm, ranges=profile_ranges(robot))
    preflight_or_refuse(problems, out_dir(out))
    if not settings.shaped and not simulated:
        _confirm_raw(robot, size, joint)  # on the terminal, before the arm is even opened
        settings.confirmed = True
    clock = MonotonicClock()
    with live_arm(robot, rpc, clock) as (arm, signals):
        with RunProgress(not json_out, "steps") as progress:
            run = run_step(
                arm,
                settings,
                clock=clock,
                out_dir=out_dir(out),
                command=command_line(),
                on_tick=progress.tick,
                on_pass=progress.on_pass("step"),
                on_status=progress.status,
                signals=signals,
            )
        _render(run, joint, robot, plot, json_out)
        exit_for(run, signals)


def _confirm_raw(robot: str, size: float, joint: int) -> None:
    """The typed confirmation of a raw step on a real arm, on the terminal (never a pipe); exit 2 without."""
    warning = (
        f"RAW steps on a real arm ({robot}): the controller may run away for 14-35x the step. "
        "E-stop in hand, clear the joint's arc."
    )
    try:
        confirm_typed(warning, f"RAW {size:g} J{joint + 1}")
    except Refused as exc:
        refuse([str(exc)])


def _render(run: StepRun, joint: int, robot: str, plot: bool, json_out: bool) -> None:
    plot_path = save_plot(run.analysis) if plot and run.analysis is not None else None
    if json_out:
        print_json(run_json(run, plot_path))
    else:
        if run.guard is not None:
            render_guard_setup(run.guard)
        if run.analysis is not None:
            assert isinstance(run.analysis.result, StepResult)
            render_step(run.analysis.result, title=f"steps, joint {joint} ({robot})")
        report_outcome(run.outcome, run.path, run.notes)
        if plot_path:
            console.print(f"plot: {plot_path}", highlight=False)
