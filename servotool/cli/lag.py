"""`servotool lag --ramp`: measure the commanded-to-measured lag with smooth out-and-back passes."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from servotool.analysis.lag import LagResult
from servotool.cli.common import console, fail, print_json
from servotool.cli.live import (
    DEFAULT_ROBOT,
    RunProgress,
    exit_for,
    live_arm,
    preflight_or_refuse,
    report_outcome,
    run_json,
)
from servotool.cli.render import render_lag, save_plot
from servotool.clock import MonotonicClock
from servotool.io.csvlog import command_line
from servotool.io.paths import out_dir
from servotool.motion.defaults import A_MAX_DEG_S2, CMD_PERIOD_S, V_MAX_DEG_S
from servotool.runs.arm_run import RunResult
from servotool.runs.preflight import profile_ranges, profile_speed_limits
from servotool.runs.ramp import RampSettings, run_ramp
from servotool.runs.settings import validate_lag


def parse_speeds(text: str) -> tuple[float, ...]:
    """--speeds as a tuple of floats (deg/s); one error line and exit 2 when it is not a number list."""
    try:
        speeds = tuple(float(x) for x in text.replace(";", ",").split(",") if x.strip())
    except ValueError:
        fail(f"--speeds {text!r}: expected a comma list of speeds in deg/s, e.g. 5,10,20,40")
    if not speeds:
        fail("--speeds lists no speed")
    return speeds


# ---------------------------------------------------------------------------------------------------------
# the command


def lag(
    ramp: bool = typer.Option(
        True,
        "--ramp/--no-ramp",
        help="Ramp mode: smooth passes, never a velocity jump "
        "(the only lag method; step responses come from `servotool step`).",
    ),
    robot: str = typer.Option(
        DEFAULT_ROBOT,
        "--robot",
        help="Device URL: sim:fr3, sim:fr20, sim:simmachine (built-in simulators) or fairino://HOST.",
    ),
    joint: int = typer.Option(0, "--joint", min=0, help="Joint index, 0 = J1 (the base)."),
    sweep: float = typer.Option(
        20.0, "--sweep", help="Degrees out from the current pose (sign = direction)."
    ),
    speeds: str = typer.Option("5,10,20,40", "--speeds", help="Cruise speeds, deg/s, comma-separated."),
    ramp_ms: float = typer.Option(200.0, "--ramp-ms", help="Time to reach each cruise speed (ms)."),
    settle_ms: float = typer.Option(500.0, "--settle-ms", help="Rest after each pass (ms)."),
    cmd_ms: float = typer.Option(CMD_PERIOD_S * 1e3, "--cmd-ms", help="Command period (ms)."),
    a_max: float = typer.Option(
        A_MAX_DEG_S2, "--a-max", help="Acceleration bound, deg/s² (stop, guard tuning)."
    ),
    v_max: float = typer.Option(V_MAX_DEG_S, "--v-max", help="Speed bound, deg/s (refusal, guard tuning)."),
    rpc: bool = typer.Option(False, "--rpc", help="Send every setpoint as an XML-RPC ServoJ instead of UDP."),
    out: Annotated[
        Path | None, typer.Option("--out", help="Folder for the CSV (default ./servotool-runs).")
    ] = None,
    plot: bool = typer.Option(False, "--plot", help="Also write a PNG of the fit next to the CSV."),
    json_out: bool = typer.Option(False, "--json", help="Print everything as JSON on stdout."),
    keep: bool = typer.Option(False, "--keep", help="Leave the robot enabled at the end."),
    rt: bool = typer.Option(True, "--realtime/--no-realtime", help="Ask for SCHED_FIFO while streaming."),
) -> None:
    """Measure the commanded-to-measured lag L with smooth out-and-back passes at several speeds.

    Per pass: cruise delta and L = delta / v at every state frame, guard-view delta, midpoint lag, overshoot.
    Summary: delta = v * L through the origin with its 95 % CI, the midpoint cross-check, the model check.
    Then a dead time + first-order lag + friction fit over the whole sweep, the noise at rest, guard tuning.
    Everything is recorded in a CSV that `servotool analyze` reads back. Every setting is checked before the
    arm is opened, the sweep against the joint's range. Exit 0 complete, 1 fault or guard, 2 refused before
    anything moved, 3 device lost, 130/143/129 Ctrl-C/SIGTERM/SIGHUP (after the braked stop).
    """
    if not ramp:
        fail("only ramp mode measures the lag here: use --ramp (step responses: `servotool step`)")
    settings = RampSettings(
        joint=joint,
        sweep_deg=sweep,
        speeds_deg_s=parse_speeds(speeds),
        ramp_s=ramp_ms / 1e3,
        settle_s=settle_ms / 1e3,
        cmd_period_s=cmd_ms / 1e3,
        a_max=a_max,
        v_max=v_max,
        keep=keep,
        realtime=rt,
        transport="rpc" if rpc else "udp",
    )
    limits, ranges = profile_speed_limits(robot), profile_ranges(robot)
    preflight_or_refuse(validate_lag(settings, speed_limits=limits, ranges=ranges), out_dir(out))
    clock = MonotonicClock()
    with live_arm(robot, rpc, clock) as (arm, signals):
        with RunProgress(not json_out, "ramp") as progress:
            run = run_ramp(
                arm,
                settings,
                clock=clock,
                out_dir=out_dir(out),
                command=command_line(),
                on_tick=progress.tick,
                on_pass=progress.on_pass("pass"),
                on_status=progress.status,
                signals=signals,
            )
        _render(run, joint, robot, plot, json_out)
        exit_for(run, signals)


def _render(run: RunResult, joint: int, robot: str, plot: bool, json_out: bool) -> None:
    plot_path = None
    if plot and run.analysis is not None:
        plot_path = save_plot(run.analysis)
    if json_out:
        print_json(run_json(run, plot_path))
    else:
        if run.analysis is not None:
            assert isinstance(run.analysis.result, LagResult)
            render_lag(run.analysis.result, title=f"lag, joint {joint} ({robot})")
        report_outcome(run.outcome, run.path, run.notes)
        if plot_path:
            console.print(f"plot: {plot_path}", highlight=False)
