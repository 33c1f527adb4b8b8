"""`servotool servo read|move|hold|relax`: a bus-servo arm's state, safe moves, hold and torque off."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer
from rich.table import Table

from servotool.cli.common import announce_device, console, err_console, fail, print_json
from servotool.clock import MonotonicClock
from servotool.devices.registry import DeviceURLError, open_bus
from servotool.errors import DeviceError, Refused
from servotool.io.limits_yaml import LimitsFile, LimitsFileError, load_limits
from servotool.runs.servo import (
    DEFAULT_SPEED,
    MAX_SPEED,
    hold,
    move_to,
    parse_goal,
    read_limits,
    relax,
)

DEFAULT_BUS = "sim:rosorin-arm"

servo_app = typer.Typer(
    help="Read, move, hold and relax the servos of a bus-servo arm (default: the simulated rosorin-arm).",
    no_args_is_help=True,
)

BusOption = typer.Option(DEFAULT_BUS, "--bus", help="Servo bus URL: sim:rosorin-arm[?k=v] or "
                         "hiwonder:///dev/ttyX?baud=1000000.")
JsonOption = typer.Option(False, "--json", help="Print JSON instead of a table.")
LimitsOption = typer.Option(None, "--limits", help="ROS 2 parameter YAML with arm_limit_N: [lo, hi] (and "
                            "arm_<pose>_N poses); intersected with the limits stored in the servos.")


def open_arm_bus(url: str) -> Any:
    """Open the bus, or exit with one line saying why; a simulator is announced as such."""
    try:
        bus = open_bus(url)
    except (DeviceURLError, DeviceError) as exc:
        fail(str(exc))
    announce_device(url, bus.simulated, bus.model)
    return bus


def load_limits_option(path: Path | None) -> LimitsFile | None:
    if path is None:
        return None
    try:
        return load_limits(path)
    except LimitsFileError as exc:
        fail(str(exc))


def _fmt(value: Any, unit: str = "") -> str:
    return "[dim]-[/]" if value is None else f"{value}{unit}"


@servo_app.command("read")
def read_cmd(bus: str = BusOption, json_out: bool = JsonOption) -> None:
    """Read every servo: position (pulses), voltage, temperature and torque. Silent servos are shown as
    such."""
    dev = open_arm_bus(bus)
    try:
        records = dev.read_all()
    except DeviceError as exc:
        fail(str(exc))
    finally:
        dev.close()
    silent = sorted(sid for sid, r in records.items() if r.silent)
    names = dev.profile.joint_names
    if json_out:
        print_json({
            "device": bus, "simulated": dev.simulated, "model": dev.model, "silent": silent,
            "servos": {sid: {"name": names.get(sid, ""), "position": r.position,
                             "voltage_v": None if r.voltage_mv is None else r.voltage_mv / 1000.0,
                             "temperature_c": r.temperature_c, "torque": r.torque, "silent": r.silent}
                       for sid, r in records.items()},
        })
        return
    table = Table(title=f"servos on {bus}")
    for col in ("id", "joint", "position", "voltage", "temp", "torque"):
        table.add_column(col, justify="right" if col != "joint" else "left")
    for sid, r in records.items():
        if r.silent:
            table.add_row(str(sid), names.get(sid, ""), "[bold red]silent[/]", "", "", "")
            continue
        volts = None if r.voltage_mv is None else f"{r.voltage_mv / 1000:.2f}"
        torque = None if r.torque is None else ("on" if r.torque else "[yellow]off[/]")
        table.add_row(str(sid), names.get(sid, ""), _fmt(r.position), _fmt(volts, " V"),
                      _fmt(r.temperature_c, " C"), _fmt(torque))
    console.print(table)
    if silent:
        optional = set(dev.profile.optional_ids)
        for sid in silent:
            what = ("optional: the arm carries on" if sid in optional
                    else "a joint: moves refuse until it answers")
            err_console.print(f"[bold red]servo {sid} is not answering[/] ({what}); check its cable.")


@servo_app.command("move")
def move_cmd(
    to: str = typer.Option(..., "--to", help="A named pose (rest, fold, pretuck, drive, or arm_<pose>_N from "
                           "--limits) or id=pulse,... e.g. 2=700,3=200."),
    speed: float = typer.Option(DEFAULT_SPEED, "--speed", min=1.0, max=MAX_SPEED,
                                help="Speed cap, pulses/s (the minimum-jerk peak speed)."),
    limits: Path | None = LimitsOption,
    bus: str = BusOption,
    json_out: bool = JsonOption,
) -> None:
    """Move along a minimum-jerk trajectory, checked against the limits first.

    The goal and every 40 ms sample are checked against the stored limits, intersected with --limits.
    Pass your mapped limits file (e.g. campaigns/rosorin-arm-limits.yaml): without it only the servos'
    stored limits apply, and those are wider than where the arm is safe.

    A goal outside them is refused with its reason, and nothing moves.
    """
    lf = load_limits_option(limits)
    dev = open_arm_bus(bus)
    try:
        poses = {**dev.profile.poses, **(lf.poses if lf else {})}
        if to.strip() in dev.profile.reference_poses:
            fail(f"pose {to.strip()!r} is a reference (where the arm rests with torque off), not a command "
                 "target; move to pretuck, then relax")
        try:
            goal = parse_goal(to, poses)
        except ValueError as exc:
            fail(str(exc))
        if lf is None:
            err_console.print("[yellow]no --limits file: checking against the servos' stored limits only[/]")
        lim = read_limits(dev, lf.limits if lf else None)
        result = move_to(dev, MonotonicClock(), goal, limits=lim, speed=speed)
    except Refused as exc:
        fail(str(exc))
    except DeviceError as exc:
        fail(str(exc))
    finally:
        dev.close()
    notes = []
    if result.skipped:
        for sid, pulse in result.skipped.items():
            at = result.carried.get(sid)
            where = f"carried at its last known {at}" if at is not None else "position unknown"
            notes.append(f"servo {sid} silent: not moved to {pulse} ({where})")
    if json_out:
        print_json({"device": bus, "simulated": dev.simulated, "start": result.start, "goal": result.goal,
                    "final": result.final, "duration_s": round(result.duration_s, 3), "frames": result.frames,
                    "speed": speed, "limits": {k: list(v) for k, v in result.limits.items()},
                    "silent": result.silent, "notes": notes})
        return
    table = Table(title=f"move in {result.duration_s:.2f} s ({result.frames} frames, cap {speed:g} pulses/s)")
    for col in ("id", "start", "goal", "final", "limits"):
        table.add_column(col, justify="right")
    for sid, g in result.goal.items():
        lo, hi = result.limits[sid]
        table.add_row(str(sid), str(result.start[sid]), str(g), _fmt(result.final.get(sid)), f"{lo}-{hi}")
    console.print(table)
    for note in notes:
        err_console.print(f"[yellow]{note}[/]")


@servo_app.command("hold")
def hold_cmd(bus: str = BusOption, json_out: bool = JsonOption) -> None:
    """Stop every servo where it is and hold it there (torque on)."""
    dev = open_arm_bus(bus)
    try:
        ids = hold(dev)
    except DeviceError as exc:
        fail(str(exc))
    finally:
        dev.close()
    if json_out:
        print_json({"device": bus, "held": ids})
    else:
        console.print(f"holding servos {', '.join(map(str, ids))}")


@servo_app.command("relax")
def relax_cmd(
    force: bool = typer.Option(False, "--force", help="Switch torque off even if the arm is not resting on "
                               "itself: every joint that carries weight will drop."),
    tolerance: int | None = typer.Option(None, "--tolerance", min=0, help="Pulses the rest joints may be "
                                         "from the rest pose (default: the profile's, 25)."),
    limits: Path | None = LimitsOption,
    bus: str = BusOption,
    json_out: bool = JsonOption,
) -> None:
    """Switch torque off on every servo, only when the arm rests on itself.

    Refused unless servos 2-4 are within --tolerance of the tuck pose, or --force.

    The torque state is read back to verify it.
    """
    lf = load_limits_option(limits)
    dev = open_arm_bus(bus)
    prof = dev.profile
    rest = {**prof.poses[prof.rest_pose], **(lf.poses.get(prof.rest_pose, {}) if lf else {})}
    tol = prof.rest_tolerance if tolerance is None else tolerance
    try:
        result = relax(dev, MonotonicClock(), rest=rest, joints=prof.rest_joints, tolerance=tol, force=force,
                       rest_name=prof.rest_pose)
    except Refused as exc:
        fail(str(exc))
    except DeviceError as exc:
        fail(str(exc))
    finally:
        dev.close()
    if json_out:
        print_json({"device": bus, "pose": result.pose, "torque": result.torque, "still_on": result.still_on,
                    "forced": result.forced, "attempts": result.attempts})
        return
    console.print(f"torque off ({prof.rest_pose} pose, +-{tol} on servos "
                  f"{', '.join(map(str, prof.rest_joints))}{', forced' if force else ''})")
    if result.still_on:
        err_console.print(f"[yellow]still reporting torque on after {result.attempts} attempts: "
                          f"{', '.join(map(str, result.still_on))}[/]")
