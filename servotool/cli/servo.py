"""`servotool servo read|move|hold|relax`: a bus-servo arm's state, safe moves, hold and torque off.

Exit codes: 0 done, 1 a servo latched a hardware error during a move, or `hold` found one latched, 2 a
setting or goal refused (nothing moved; a servo not in position mode included), 3 no board
answered or the link failed, 130/143/129 a signal (after a hold, or for `read --watch` with the servos left
as they were).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.live import Live
from rich.markup import escape
from rich.table import Table

from servotool.cli.bus_common import (
    DEFAULT_BUS,
    NOTHING_SENT,
    BusOption,
    JsonOption,
    bus_command,
    fail_all,
    fail_on,
    limits_problem,
    read_only,
    stopped_by,
    url_bus_facts,
    url_profile,
)
from servotool.cli.common import (
    DryRunOpt,
    console,
    err_console,
    fail,
    given,
    print_json,
    renamed,
    show_plan,
)
from servotool.cli.render import compact_table
from servotool.clock import MonotonicClock
from servotool.devices.bus import Bus, ModeCheckedBus, ServoRecord, bus_clock, read_records
from servotool.devices.registry import family_named
from servotool.devices.url import asks_simulated_time
from servotool.errors import ExitCode, Refused, exit_code_of, signal_label
from servotool.io.devlock import DeviceLock
from servotool.io.jsondoc import encode
from servotool.io.limits_yaml import LimitsFile
from servotool.io.sim_state import forget_sim_state, lock_key, lock_name_of
from servotool.runs.bus.servo import (
    DEFAULT_SPEED,
    MAX_SPEED,
    MIN_SPEED,
    BusSilent,
    MoveLog,
    MoveResult,
    RelaxResult,
    hold,
    move_plan,
    move_problems,
    move_to,
    parse_goal,
    read_limits,
    refuse_silent_bus,
    relax,
    tuck_check,
    watch,
)
from servotool.runs.plan import MotionPlan
from servotool.runs.signals import StopSignals

DEFAULT_ARM = DEFAULT_BUS.partition(":")[2]  # the simulated arm's profile name

servo_app = typer.Typer(
    help=f"Read, move, hold and relax the servos of a bus-servo arm (default: the simulated {DEFAULT_ARM}, "
    "which keeps its pose from one command to the next).",
    no_args_is_help=True,
)

LimitsOption = typer.Option(
    None,
    "--limits",
    envvar="SERVOTOOL_LIMITS",
    help="ROS 2 parameter YAML with arm_limit_N: \\[lo, hi] (and "
    "arm_<pose>_N poses); intersected with the limits stored in the servos.",
)


def _fmt(value: Any, unit: str = "") -> str:
    return "[dim]-[/]" if value is None else f"{value}{unit}"


POSITION_MODE = "position"  # the one Operating Mode a servo that has modes is moved or held in


def _mode_cell(r: ServoRecord) -> str:
    if r.mode_name is None:
        return _fmt(None)
    return r.mode_name if r.mode_name == POSITION_MODE else f"[bold yellow]{r.mode_name} ({r.mode})[/]"


def _records_table(title: str, records: dict[int, ServoRecord], names: dict[int, str], moded: bool) -> Table:
    """Per servo: position, voltage, temperature, torque, and the Operating Mode where the bus has one."""
    table = compact_table(title)
    cols = ("servo\nid", "joint", "position\npulses", "voltage\nV", "temp\nC", "torque") + (
        ("mode",) if moded else ()
    )
    for col in cols:
        table.add_column(col, justify="left" if col in ("joint", "mode") else "right", no_wrap=True)
    for sid, r in records.items():
        if r.silent:
            table.add_row(str(sid), names.get(sid, ""), "[bold red]silent[/]", *[""] * (len(cols) - 3))
            continue
        volts = None if r.voltage_mv is None else f"{r.voltage_mv / 1000:.2f}"
        torque = None if r.torque is None else ("on" if r.torque else "[yellow]off[/]")
        table.add_row(
            str(sid),
            names.get(sid, ""),
            _fmt(r.position),
            _fmt(volts),
            _fmt(r.temperature_c),
            _fmt(torque),
            *((_mode_cell(r),) if moded else ()),
        )
    return table


def move_verdict(result: MoveResult, to: str) -> str:
    """One line: how many servos reached the goal `to` and how far off the farthest one ended (pulses)."""
    misses = [
        abs(f - result.goal[sid]) for sid, f in result.final.items() if f is not None and sid in result.goal
    ]
    worst = max(misses, default=0)
    unread = sum(1 for sid in result.goal if result.final.get(sid) is None)
    n = len(result.goal)
    text = f"[bold]moved {n} servo{'s' if n != 1 else ''} to {escape(to)}[/]"
    if misses:
        text += f", within {worst} pulse{'s' if worst != 1 else ''}" if worst else ", on the goal"
    if unread:
        text += f"; [yellow]{unread} not read back[/]"
    if result.skipped:
        text += f"; [yellow]{len(result.skipped)} silent, not moved[/]"
    return text


def move_table(result: MoveResult, speed: float) -> Table:
    """Per servo: start, goal, final and the limits checked (pulses), at 80 columns."""
    table = compact_table(f"move: {result.duration_s:.2f} s, {result.frames} frames, cap {speed:g} pulses/s")
    for col in (
        "servo\nid",
        "start\npulses",
        "goal\npulses",
        "final\npulses",
        "off\npulses",
        "limits\npulses",
    ):
        table.add_column(col, justify="right", no_wrap=True)
    for sid, g in result.goal.items():
        lo, hi = result.limits[sid]
        final = result.final.get(sid)
        off = None if final is None else final - g
        table.add_row(str(sid), str(result.start[sid]), str(g), _fmt(final), _fmt(off), f"{lo}..{hi}")
    return table


def _records_json(
    records: dict[int, ServoRecord], names: dict[int, str], moded: bool
) -> dict[int, dict[str, Any]]:
    """moded: the bus has Operating Modes (ModeCheckedBus): each servo's is given, null where silent."""
    return {
        sid: {
            "name": names.get(sid, ""),
            "position": r.position,
            "voltage_v": None if r.voltage_mv is None else r.voltage_mv / 1000.0,
            "temperature_c": r.temperature_c,
            "torque": r.torque,
            "silent": r.silent,
            **({"operating_mode": r.mode, "operating_mode_name": r.mode_name} if moded else {}),
        }
        for sid, r in records.items()
    }


def _watch(bus_url: str, dev: Bus, period: float, json_out: bool, names: dict[int, str]) -> None:
    """Live view until Ctrl-C (read only); --json prints one JSON line per round instead."""
    clock = MonotonicClock()
    moded = isinstance(dev, ModeCheckedBus)
    if json_out:

        def line(records: dict[int, ServoRecord]) -> None:  # compact, NaN as null: as every --json
            print_line = encode({"t": round(clock.now(), 3), "servos": _records_json(records, names, moded)})
            console.out(print_line, highlight=False)

        watch(dev, clock, period, line)
        return
    err_console.print("[dim]live view, read only: Ctrl-C ends it and leaves the servos as they are[/]")
    with Live(console=console, auto_refresh=False, transient=False) as live:

        def show(records: dict[int, ServoRecord]) -> None:
            live.update(
                _records_table(f"servos on {bus_url} (every {period:g} s)", records, names, moded),
                refresh=True,
            )

        watch(dev, clock, period, show)


@servo_app.command("read")
def read_cmd(
    ctx: typer.Context,
    bus: str = BusOption,
    json_out: bool = JsonOption,
    watch_: bool = typer.Option(
        False,
        "--watch",
        help="Keep reading every servo and show them live until "
        "Ctrl-C, SIGTERM, SIGHUP or SIGQUIT (read only: the servos are left as they "
        "were; exit 130, 143, 129, 131).",
    ),
    period_ms: float = typer.Option(
        500.0, "--period-ms", help="Time between reads with --watch, ms (50-10000)."
    ),
    period_s: float | None = typer.Option(None, "--period", hidden=True),  # the former spelling, seconds
) -> None:
    """Read every servo: position (pulses), voltage, temperature and torque, and on a bus with Operating
    Modes each servo's mode (only position mode is moved or held). Silent servos are shown as such."""
    period_given = given(ctx, "period_ms") or period_s is not None
    if period_s is not None:
        renamed(f"--period {period_s:g} (seconds)", f"--period-ms {period_s * 1e3:g}")
        period_ms = period_ms if given(ctx, "period_ms") else period_s * 1e3
    if not (math.isfinite(period_ms) and 50 <= period_ms <= 10_000):
        fail(f"--period-ms {period_ms:g} outside [50, 10000]")
    if not watch_ and period_given:  # a single read has no period: refused, not ignored
        fail("--period-ms is the time between reads with --watch; add --watch, or leave out --period-ms")
    period = period_ms / 1e3
    if watch_ and asks_simulated_time(bus):
        fail(
            "--watch is a live view in real time; a simulator in simulated time (clock=sim) only moves "
            "under a run"
        )
    with bus_command(bus, keep_sim_pose=True, on_signal=read_only) as dev:
        prof = url_profile(bus)
        names = dict(prof.joint_names) if prof else {}
        if watch_:
            try:
                _watch(bus, dev, period, json_out, names)
            except KeyboardInterrupt as exc:
                if not json_out:
                    console.line()  # the live table ends without one
                err_console.print(f"watch ended by {signal_label(exc)}; nothing was written to the servos")
                raise typer.Exit(exit_code_of(exc)) from None
            return
        records = read_records(dev)
        moded = isinstance(dev, ModeCheckedBus)
    silent = sorted(sid for sid, r in records.items() if r.silent)
    if json_out:
        print_json(
            {
                "device": bus,
                "simulated": dev.simulated,
                "model": dev.model,
                "silent": silent,
                "servos": _records_json(records, names, moded),
            }
        )
    else:
        _print_read(bus, dev, records, names, moded, silent)
    try:
        refuse_silent_bus(records)  # a bus where nobody answers is lost, as a board that does not answer
    except BusSilent as exc:
        fail_on(exc)


def _print_read(
    bus: str, dev: Bus, records: dict[int, ServoRecord], names: dict[int, str], moded: bool, silent: list[int]
) -> None:
    answered = len(records) - len(silent)
    quiet = f", [bold red]silent: {', '.join(map(str, silent))}[/]" if silent else ""
    console.print(
        f"{answered} of {len(records)} servo(s) answered on {escape(bus)}{quiet}",
        highlight=False,
        soft_wrap=True,
    )
    console.print(_records_table(f"servos on {bus}", records, names, moded))
    for sid, r in records.items():
        if r.mode_name not in (None, POSITION_MODE):
            err_console.print(
                f"[yellow]servo {sid} is in {r.mode_name} ({r.mode}) mode: move and hold "
                "refuse it (servotool never changes the mode)[/]"
            )
    optional = set(dev.optional_ids)
    for sid in silent:
        what = "optional: the arm carries on" if sid in optional else "a joint: moves refuse until it answers"
        err_console.print(f"[bold red]servo {sid} is not answering[/] ({what}); check its cable.")


@servo_app.command("move")
def move_cmd(
    goals: Annotated[
        list[str],
        typer.Option(
            "--to",
            help="A named pose (rest, fold, pretuck, drive, or arm_<pose>_N from --limits) or "
            "id=pulse,... e.g. 2=700,3=200; given once.",
        ),
    ],
    speed: float = typer.Option(
        DEFAULT_SPEED,
        "--speed",
        help=f"Speed cap, pulses/s (the minimum-jerk peak speed), {MIN_SPEED:g} to {MAX_SPEED:g}.",
    ),
    limits: Path | None = LimitsOption,
    bus: str = BusOption,
    json_out: bool = JsonOption,
    dry_run: DryRunOpt = False,
) -> None:
    """Move along a minimum-jerk trajectory, checked against the limits first.

    The goal and every 40 ms sample are checked against the servos' stored limits, and against --limits.

    Your mapped limits (e.g. params/<profile>-limits.yaml) are narrower and safer than the stored ones.

    A goal outside the limits is refused with its reason and nothing moves; named poses are no exception.

    Pretuck puts servo 2 at 960, past the example file's mapped 941: with that file pretuck is refused.

    So the approach to the tuck (before relax) is made without --limits, against the stored limits only.

    On a bus with Operating Modes, a goal servo not in position mode refuses the move (velocity and PWM
    modes turn, multi-turn modes span more than one turn); servotool never changes the mode (EEPROM).
    """
    lf, to, poses, problems = _move_problems(goals, speed, limits, bus)
    if problems:
        fail_all(problems)
    if dry_run:
        _dry_move(to, poses, speed, bus, json_out)
    log = MoveLog()
    with (
        bus_command(bus, keep_sim_pose=True, on_signal=lambda: _move_stopped(log)) as dev,
        StopSignals() as signals,
    ):
        goal = parse_goal(to, poses)
        if lf is None:
            err_console.print("[yellow]no --limits file: checking against the servos' stored limits only[/]")
        lim = read_limits(dev, lf.limits if lf else None)
        with signals.latching():  # Ctrl-C, SIGTERM, SIGHUP: the move stops with a hold, then we exit
            result = move_to(
                dev,
                bus_clock(dev),
                goal,
                limits=lim,
                speed=speed,
                abort_requested=lambda: signals.requested is not None,
                log=log,
            )
    if result.aborted:
        stopped_by(signals, f"the arm holds where it was after {result.frames} frames")
    _print_move(result, to, speed, bus, dev.simulated, json_out)


def _dry_move(
    to: str, poses: Mapping[str, Mapping[int, int]], speed: float, bus: str, json_out: bool
) -> None:
    """--dry-run: the move's plan, and exit 0 with the bus never opened."""
    try:
        goal = parse_goal(to, poses)
    except ValueError as exc:
        fail(f"--to {to}: {exc}")
    facts = url_bus_facts(bus)
    plan = move_plan(goal, speed, facts.position_range if facts else None)
    show_plan(plan, bus, dry_run=True, json_out=json_out)


def _move_problems(
    goals: list[str], speed: float, limits: Path | None, bus: str
) -> tuple[LimitsFile | None, str, dict[str, Mapping[int, int]], list[str]]:
    """The limits file, the goal, the named poses and every reason to refuse the move, all known before
    the bus opens."""
    lf, problems = limits_problem(limits, bus)
    to = goals[-1]
    if len(goals) > 1:  # typer would keep only the last: 2=500 then 2=900 moved to 900 without a word
        problems.append(
            f"--to given {len(goals)} times ({', '.join(goals)}): give one goal, several servos "
            "in one --to (e.g. --to 2=700,3=200)"
        )
    if lf is not None and not lf.limits:  # given, yet it would check nothing beyond the stored limits
        problems.append(
            f"{limits}: no arm_limit_N entry to check a goal against; give the mapped limits "
            "file, or leave out --limits to check against the stored limits only"
        )
    prof = url_profile(bus)
    poses = {**(prof.poses if prof else {}), **(lf.poses if lf else {})}
    bad_pose = lf.pose_problem(to.strip()) if lf else None
    if bad_pose:
        problems.append(bad_pose)
    # the bus's position and id ranges are its family's facts, known before it opens; its servos (and
    # their stored limits) are asked once it is open, before anything is written
    facts = url_bus_facts(bus)
    no_file = facts is not None and facts.limits_node is None
    if no_file and limits is not None:  # the file's pulses are a board's: another unit than this bus's
        assert facts is not None
        span = "-".join(map(str, facts.position_range)) if facts.position_range else "another range"
        problems.append(
            f"--limits {limits}: a limits file holds a board's pulses (0-1000 over 240 deg); a "
            f"{family_named(facts.family).title} counts {span} {facts.units}: leave out --limits "
            "(the servos' own position limits are checked)"
        )
    problems += move_problems(
        to,
        speed,
        poses,
        prof.ids if prof else (),
        prof.reference_poses if prof else (),
        span=facts.position_range if facts else None,
        id_span=facts.id_range if facts and prof is None else None,
        mapped=lf.limits if lf and not no_file else None,
        mapped_in=str(limits),
    )
    return lf, to, poses, problems


def _print_move(result: MoveResult, to: str, speed: float, bus: str, simulated: bool, json_out: bool) -> None:
    """The move's verdict and table (or its JSON), then a note per silent servo it could not move."""
    notes = []
    for sid, pulse in result.skipped.items():
        at = result.carried.get(sid)
        where = f"carried at its last known {at}" if at is not None else "position unknown"
        notes.append(f"servo {sid} silent: not moved to {pulse} ({where})")
    if json_out:
        print_json(
            {
                "device": bus,
                "simulated": simulated,
                "start": result.start,
                "goal": result.goal,
                "final": result.final,
                "duration_s": round(result.duration_s, 3),
                "frames": result.frames,
                "speed": speed,
                "limits": {k: list(v) for k, v in result.limits.items()},
                "silent": result.silent,
                "notes": notes,
            }
        )
        return
    console.print(move_verdict(result, to), highlight=False)
    console.print(move_table(result, speed))
    for note in notes:
        err_console.print(f"[yellow]{note}[/]")


def _move_stopped(log: MoveLog) -> str:
    """What a move had done when a signal ended it, for its error line."""
    if not log.started:
        return f"{NOTHING_SENT} (the move had not started)"
    n = log.frames
    return f"the move was stopped with a hold after {n} frame{'s' if n != 1 else ''}"


def _relax_stopped(sent: list[int]) -> str:
    """What a relax had done when a signal ended it, for its error line."""
    if not sent:
        return f"{NOTHING_SENT} (torque is as it was)"
    return f"torque-off went to servo(s) {', '.join(map(str, sent))} only: see `servotool servo read`"


@servo_app.command("hold")
def hold_cmd(bus: str = BusOption, json_out: bool = JsonOption, dry_run: DryRunOpt = False) -> None:
    """Stop every servo where it is and hold it there (torque on).

    Each servo is read back: a servo with a hardware error latched (torque off until a reboot, never sent)
    holds nothing: it is named and the exit is 1. A joint that does not answer is named, exit 3.

    On a bus with Operating Modes, every servo's mode is read first; unless all are in position mode,
    nothing is written and the exit is 2 (in velocity or PWM mode torque on would set a servo turning).
    servotool never changes the mode (EEPROM).
    """
    if dry_run:
        plan = MotionPlan(
            what="servo hold: every servo stopped where it is, torque on",
            joints="every servo that answers",
            motion="none: each holds its current position (read back after)",
            speeds="-",
            duration_s=0.0,
        )
        show_plan(plan, bus, dry_run=True, json_out=json_out)
    on_signal = "the hold was sent first: the servos hold where they are"
    with (
        bus_command(bus, keep_sim_pose=True, on_signal=lambda: on_signal) as dev,
        StopSignals() as signals,
        signals.deferring(),
    ):  # a signal never cuts a hold short
        result = hold(dev)
    if json_out:
        print_json({"device": bus, "held": result.held, "silent": result.silent})
        return
    console.print(f"holding servos {', '.join(map(str, result.held))}")
    for sid in result.silent:
        err_console.print(f"[yellow]servo {sid} silent (optional): not held[/]")


@servo_app.command("relax")
def relax_cmd(
    force: bool = typer.Option(
        False,
        "--force",
        help="Switch torque off even if the arm is not resting on "
        "itself: every joint that carries weight will drop.",
    ),
    tolerance: int | None = typer.Option(
        None,
        "--tolerance",
        min=0,
        max=200,
        help="Pulses the tuck joints may be from the tuck pose (default: the profile's, 25).",
    ),
    limits: Path | None = LimitsOption,
    bus: str = BusOption,
    json_out: bool = JsonOption,
    dry_run: DryRunOpt = False,
) -> None:
    """Switch torque off on every servo, only when the arm rests on itself in its tuck pose.

    Refused unless servos 2-4 are within --tolerance of the tuck pose (pretuck is within it), or --force.

    An arm_tuck_N pose in --limits replaces the profile's tuck pose. The torque state is read back: a servo
    still reporting torque on after three attempts is named, exit 1.
    """
    lf, problems = limits_problem(limits, bus)
    prof = url_profile(bus)
    if prof is None or not prof.tuck_pose:
        problems.append(f"--bus {bus}: relax needs a known arm profile (its tuck pose)")
    bad_tuck = lf.pose_problem(prof.tuck_pose) if lf and prof else None
    if bad_tuck:
        problems.append(bad_tuck)
    if problems:
        fail_all(problems)
    assert prof is not None
    tuck = {**prof.poses[prof.tuck_pose], **(lf.poses.get(prof.tuck_pose, {}) if lf else {})}
    tol = prof.tuck_tolerance if tolerance is None else tolerance
    if dry_run:
        show_plan(_relax_plan(tuck, prof.tuck_joints, tol, force), bus, dry_run=True, json_out=json_out)
    sent: list[int] = []
    with bus_command(bus, keep_sim_pose=True, on_signal=lambda: _relax_stopped(sent)) as dev:
        result = relax(
            dev, bus_clock(dev), tuck=tuck, joints=prof.tuck_joints, tolerance=tol, force=force, sent=sent
        )
    if json_out:
        print_json(
            {
                "device": bus,
                "pose": result.pose,
                "torque": result.torque,
                "still_on": result.still_on,
                "forced": result.forced,
                "attempts": result.attempts,
            }
        )
    else:
        _relax_verdict(result, tuck, prof.tuck_joints, tol)
    if result.still_on:
        who = ", ".join(map(str, result.still_on))
        fail(
            f"servo {who} still report{'s' if len(result.still_on) == 1 else ''} torque on after "
            f"{result.attempts} attempts: not relaxed",
            ExitCode.FAULT,
        )


def _relax_plan(tuck: Mapping[int, int], joints: tuple[int, ...], tol: int, force: bool) -> MotionPlan:
    """What a relax would do: torque off everywhere, refused away from the tuck pose unless forced."""
    pose = ", ".join(f"{sid}={tuck[sid]}" for sid in joints if sid in tuck)
    check = (
        "forced: every joint that carries weight drops"
        if force
        else (
            f"only if servos {', '.join(map(str, joints))} are within {tol} pulses of the tuck pose ({pose})"
        )
    )
    return MotionPlan(
        what="servo relax: torque off on every servo",
        joints="every servo of the arm",
        motion=f"none commanded (the arm must rest on itself): {check}",
        speeds="-",
        duration_s=0.0,
    )


def _relax_verdict(result: RelaxResult, tuck: dict[int, int], joints: tuple[int, ...], tol: int) -> None:
    """The verdict line of a relax: how many servos are off, and whether the arm was in its tuck pose or the
    relax was forced away from it (a servo still on is the caller's error line, not a verdict)."""
    if result.still_on:
        return
    off = [sid for sid, v in result.torque.items() if v is False]
    band = f"+-{tol} on servos {', '.join(map(str, joints))}"
    if tuck_check(result.pose, tuck, joints, tol) is None:
        place = f"in the tuck pose ({band}{', forced' if result.forced else ''})"
    else:
        place = f"forced: not in the tuck pose ({band})"
    silent = [sid for sid, v in result.torque.items() if v is None]
    tail = f"; servo {', '.join(map(str, silent))} not answering" if silent else ""
    console.print(f"torque off on {len(off)} servos, {place}{tail}", highlight=False)


@servo_app.command("forget")
def forget_cmd(bus: str = BusOption, json_out: bool = JsonOption) -> None:
    """Forget where a simulated arm was left: its next command starts it in its start pose again. Refused
    (exit 2) while another command drives that arm: it saves its pose when it ends."""
    try:
        with DeviceLock(lock_key(bus), name=lock_name_of(bus)):
            had = forget_sim_state(bus)
    except Refused as exc:
        fail(str(exc))
    if json_out:
        print_json({"device": bus, "forgotten": had})
    else:
        console.print(
            f"{bus}: {'pose forgotten' if had else 'no saved pose'}", highlight=False, soft_wrap=True
        )
