"""Moving, holding and relaxing a bus-servo arm: the checks first, then the frames, in time.

Rules kept here:
* refuse, never clamp: a goal or any sample of the move outside the limits refuses the whole move before a
  single frame is sent (`Refused`); the limits are the servos' stored limits intersected with the configured
  ones;
* a joint servo that does not answer refuses (its position is unknown); an optional servo (the claw) that does
  not answer is carried at its last known pulse, left out of the move and reported;
* moves are minimum-jerk trajectories sampled every period (40 ms) and sent as period-long move frames on
  absolute deadlines; a requested abort holds the arm at once;
* torque off only when the arm rests on itself (the tuck pose, within a tolerance on the tuck joints), or
  forced.
"""

from __future__ import annotations

import contextlib
import math
import re
import threading
from collections.abc import Callable, Hashable, Iterable, Mapping
from dataclasses import dataclass, field

from servotool.clock import Clock
from servotool.devices.bus import Bus, LatchingBus, ModeCheckedBus, ServoRecord, TorqueGatedBus, read_records
from servotool.errors import ConnectionLost, Refused, RunFault
from servotool.motion.limits import JointLimits
from servotool.motion.quintic import Trajectory, duration_for
from servotool.runs.bus.reads import CheckedReads
from servotool.runs.plan import MotionPlan

MAX_SPEED = 300.0  # pulses/s: the arm's ceiling (72 deg/s); moves default to 250
MIN_SPEED = 1.0  # pulses/s: below it a move lasts for ever (1e-300 planned 1e302 s, sampled whole)
DEFAULT_SPEED = 250.0
PERIOD_S = 0.04

Abort = Callable[[], bool] | threading.Event | None


def abort_check(abort: Abort) -> Callable[[], bool]:
    """A callable for either form of abort request (a callable returning True, or an Event that is set)."""
    if abort is None:
        return lambda: False
    if isinstance(abort, threading.Event):
        return abort.is_set
    return abort


def pulse_limits(limits: Mapping[int, tuple[int, int]]) -> JointLimits:
    """The limit checker of a servo limit table (pulses)."""
    table: dict[Hashable, tuple[float, float]] = {
        sid: (float(lo), float(hi)) for sid, (lo, hi) in limits.items()
    }
    return JointLimits(table, unit="pulses")


def as_pose(pose: Mapping[int, int]) -> dict[Hashable, float]:
    """A servo pose as the motion modules take it."""
    return {sid: float(v) for sid, v in pose.items()}


def servo_pose(sample: Mapping[Hashable, int]) -> dict[int, int]:
    """A trajectory sample back as {servo id: pulse}."""
    return {k: int(v) for k, v in sample.items() if isinstance(k, int)}


_WHOLE = re.compile(r"\s*[+-]?[0-9]+\s*")


def parse_goal(spec: str, poses: Mapping[str, Mapping[int, int]]) -> dict[int, int]:
    """A named pose ("rest") or "id=pulse,..." ("2=700,3=200") -> {servo id: pulse}. ValueError on bad
    text."""
    text = spec.strip()
    if not text:
        raise ValueError("empty goal: give a pose name or id=pulse,...")
    if "=" not in text:
        if text not in poses:
            raise ValueError(f"unknown pose {text!r} (poses: {', '.join(sorted(poses))})")
        return {int(k): int(v) for k, v in poses[text].items()}
    goal: dict[int, int] = {}
    for part in text.split(","):
        key, sep, value = part.partition("=")
        # int() alone also reads "1_000" and non-ASCII digits ("１２" is 12): only plain decimal digits count
        if not (_WHOLE.fullmatch(key) and _WHOLE.fullmatch(value)):
            raise ValueError(f"goal item {part.strip()!r}: want id=pulse with whole numbers")
        sid, pulse = int(key), int(value)
        if not sep or sid in goal:
            raise ValueError(f"goal item {part.strip()!r} is malformed or repeated")
        goal[sid] = pulse
    return goal


def intersect_limits(
    stored: Mapping[int, tuple[int, int] | None],
    configured: Mapping[int, tuple[int, int]] | None,
    span: tuple[int, int],
) -> dict[int, tuple[int, int]]:
    """Per servo: the stored limit intersected with the configured one (if any), and with `span` (the bus's
    position range). A servo without a stored limit (silent) gets none. Refused
    when an intersection is empty."""
    out: dict[int, tuple[int, int]] = {}
    for sid, pair in stored.items():
        if pair is None:
            continue
        lo, hi = max(pair[0], span[0]), min(pair[1], span[1])
        if configured and sid in configured:
            lo, hi = max(lo, configured[sid][0]), min(hi, configured[sid][1])
        if lo > hi:
            raise Refused(
                f"servo {sid}: configured limits {configured[sid] if configured else ''} do not "
                f"overlap its stored limits {pair}"
            )
        out[sid] = (lo, hi)
    return out


def read_limits(
    bus: Bus, configured: Mapping[int, tuple[int, int]] | None = None, ids: Iterable[int] | None = None
) -> dict[int, tuple[int, int]]:
    """The stored limits read from each servo, intersected with `configured` (see intersect_limits)."""
    ids = tuple(bus.ids if ids is None else ids)
    return intersect_limits({sid: bus.read_stored_limits(sid) for sid in ids}, configured, bus.position_range)


@dataclass
class ArmPose:
    """A pose as read: positions of answering servos, silent optional servos carried at their last known
    pulse."""

    pose: dict[int, int]
    silent: list[int]
    carried: dict[int, int] = field(default_factory=dict)


def read_arm(
    bus: Bus, ids: Iterable[int] | None = None, read: Callable[[int], int | None] | None = None
) -> ArmPose:
    """Read every servo through the range check (`read`, a run's own CheckedReads, when given): an
    impossible value is left out and read again. Refused if a joint servo is silent; a silent optional servo
    is carried (if ever read)."""
    ids = tuple(bus.ids if ids is None else ids)
    optional = set(bus.optional_ids)
    read = read or CheckedReads(bus).position
    raw = {sid: read(sid) for sid in ids}
    silent = [sid for sid, v in raw.items() if v is None]
    joints = [sid for sid in silent if sid not in optional]
    if joints:
        raise Refused(
            f"joint servo(s) {', '.join(map(str, joints))} not answering: position unknown, "
            "nothing moves until they answer (check the cable)"
        )
    pose = {sid: int(v) for sid, v in raw.items() if v is not None}
    carried = {sid: int(bus.last_position[sid]) for sid in silent if sid in bus.last_position}
    return ArmPose(pose=pose, silent=silent, carried=carried)


@dataclass
class MoveResult:
    start: dict[int, int]
    goal: dict[int, int]
    final: dict[int, int | None]
    duration_s: float
    frames: int
    silent: list[int]
    carried: dict[int, int]
    skipped: dict[int, int]  # goal entries left out because their servo is silent
    limits: dict[int, tuple[int, int]]
    aborted: bool = False


@dataclass
class MoveLog:
    """What a move has done so far, readable while it runs and after it raised: `started` once nothing
    but a hold can end it (a frame sent, or the hold of an abort or an exception), `frames` sent."""

    started: bool = False
    frames: int = 0


def plan_move(
    start: Mapping[int, int],
    goal: Mapping[int, int],
    limits: Mapping[int, tuple[int, int]],
    speed: float,
    period_s: float = PERIOD_S,
) -> Trajectory:
    """The minimum-jerk trajectory from start to goal, after checking the goal and every sample against the
    limits and the speed against MIN_SPEED <= speed <= MAX_SPEED. Raises Refused with the reason."""
    if not (math.isfinite(speed) and MIN_SPEED <= speed <= MAX_SPEED):
        raise Refused(f"speed {speed:g} pulses/s outside [{MIN_SPEED:g}, {MAX_SPEED:g}]")
    if not goal:
        raise Refused("goal names no servo that can move")
    missing = [sid for sid in goal if sid not in start]
    if missing:
        raise Refused(f"servo(s) {', '.join(map(str, missing))} not on this arm")
    known = {sid: limits[sid] for sid in goal if sid in limits}
    if not known:
        raise Refused("no limits known for any servo of the goal")
    check = pulse_limits(known)
    reason = check.check(as_pose(goal))
    if reason:
        raise Refused(f"goal refused: {reason.replace('joint', 'servo')}")
    traj = Trajectory(as_pose({sid: start[sid] for sid in goal}), as_pose(goal), speed, 0.0, period=period_s)
    reason = check.check_path(traj.samples(period_s))
    if reason:
        raise Refused(
            f"move refused (is the current pose outside the limits?): {reason.replace('joint', 'servo')}"
        )
    return traj


def move_plan(goal: Mapping[int, int], speed: float, span: tuple[int, int] | None) -> MotionPlan:
    """A move's plan before the bus opens: the goal and the speed cap; the start pose is read only once the
    bus is open, so the duration is that of the longest move the span allows (an upper bound)."""
    longest = abs(span[1] - span[0]) if span is not None else 0
    return MotionPlan(
        what=f"servo move, {len(goal)} servo(s) along one minimum-jerk trajectory",
        joints=f"servo(s) {', '.join(map(str, goal))}",
        motion="to " + ", ".join(f"{sid}={pulse}" for sid, pulse in goal.items()) + " (pulses), from where "
        "they are; the goal and every sample checked against the limits first",
        speeds=f"up to {speed:g} pulses/s (the peak speed)",
        duration_s=duration_for(longest, speed) if longest and speed > 0 else 0.0,
        at_most=True,
        extra="the longest move the span allows",
    )


def _refuse_unmovable(bus: Bus, live_goal: Mapping[int, int]) -> None:
    """Raises before the first frame when a goal servo would not go to its goal: not in position mode,
    a hardware error latched, or its torque off."""
    if isinstance(bus, ModeCheckedBus):  # a velocity- or PWM-mode servo would turn, not go to its goal
        bus.require_position_mode(live_goal)
    latched = _latches(bus, live_goal)
    if latched:
        raise MoveServoLatched(
            f"servo {_named(latched)}: hardware error latched, its torque stays off "
            "until a reboot (which a move never sends); nothing moved"
        )
    limp = bus.unpowered(live_goal) if isinstance(bus, TorqueGatedBus) else []
    if limp:
        raise MoveServoUnpowered(
            f"servo {', '.join(map(str, limp))}: torque off, a goal would not move it; "
            "nothing moved (`servotool servo hold` switches it on where it is)"
        )


def move_to(
    bus: Bus,
    clock: Clock,
    goal: Mapping[int, int],
    *,
    limits: Mapping[int, tuple[int, int]],
    speed: float = DEFAULT_SPEED,
    period_s: float = PERIOD_S,
    settle_s: float = 0.2,
    abort_requested: Abort = None,
    on_progress: Callable[[float, dict[int, int]], None] | None = None,
    log: MoveLog | None = None,
) -> MoveResult:
    """Move to `goal` ({servo id: pulse}) along a minimum-jerk trajectory capped at `speed` pulses/s.

    Everything is checked before the first frame (Refused: nothing was sent). Frames go out every period_s on
    absolute deadlines of `clock`. An abort request sends a hold at once and ends the move (aborted=True).
    From the first frame on, an exception (a signal, a lost link) sends a hold before it passes on, while
    the move settles and its end is read back too; before it, nothing was sent. `on_progress(t, targets)`
    is called after each frame sent; `log` (see MoveLog) tells a caller which of the two an exception met.
    """
    armpose = read_arm(bus)
    skipped = {sid: p for sid, p in goal.items() if sid in armpose.silent}
    live_goal = {sid: int(p) for sid, p in goal.items() if sid not in armpose.silent}
    traj = plan_move(armpose.pose, live_goal, limits, speed, period_s)
    _refuse_unmovable(bus, live_goal)
    check = pulse_limits({sid: limits[sid] for sid in live_goal})
    aborted = abort_check(abort_requested)
    period_ms = int(round(period_s * 1000))
    t0 = clock.now()
    k = frames = 0
    stopped = False
    log = log if log is not None else MoveLog()
    try:
        log.started = True  # from here any way out sends a hold, but the move's own end
        while True:
            if aborted():
                bus.hold()
                stopped = True
                break
            targets = servo_pose(traj.at(k * period_s))
            # cannot happen after plan_move; never send it if it does
            if check.check(as_pose(targets)) is not None:
                raise Refused(f"internal: sample {targets} left the limits; arm held")
            bus.move(targets, period_ms)
            frames = log.frames = frames + 1
            if on_progress is not None:
                on_progress(clock.now() - t0, targets)
            if traj.done(k * period_s):
                break
            k += 1
            clock.sleep_until(t0 + k * period_s)
        duration = clock.now() - t0
        if not stopped:
            clock.sleep(settle_s)
        final = CheckedReads(bus).pose(live_goal)
    except BaseException:
        # Ctrl-C or a lost link mid-move or while it settles: try to stop the arm where it is, and report
        # the original error
        with contextlib.suppress(Exception):
            bus.hold()
        raise
    _refuse_lost(bus, final)
    _refuse_latched(bus, final, live_goal)
    return MoveResult(
        start={sid: armpose.pose[sid] for sid in live_goal},
        goal=live_goal,
        final=final,
        duration_s=duration,
        frames=frames,
        silent=armpose.silent,
        carried=armpose.carried,
        skipped=skipped,
        limits={sid: limits[sid] for sid in live_goal},
        aborted=stopped,
    )


class MoveServoLost(ConnectionLost):
    """A servo the arm cannot do without stopped answering during a move: the arm was held (exit 3)."""


def _refuse_lost(bus: Bus, final: Mapping[int, int | None]) -> None:
    """Hold the arm and raise MoveServoLost when a moved servo outside the bus's optional ids (the claw)
    does not answer the read-back (the client has retried): a joint that lost power mid-move is no
    finished move."""
    lost = [sid for sid, pulse in final.items() if pulse is None and sid not in bus.optional_ids]
    if not lost:
        return
    with contextlib.suppress(Exception):
        bus.hold()
    raise MoveServoLost(
        f"servo {', '.join(map(str, lost))} stopped answering during the move (not read "
        "back at its end); arm held"
    )


class MoveServoLatched(Refused):
    """A goal servo had a hardware error latched before the move: refused, nothing sent (exit 2)."""


class MoveServoUnpowered(Refused):
    """A goal servo had its torque off before the move (it would take the goal and not move): refused,
    nothing sent (exit 2)."""


class MoveServoFault(RunFault):
    """A moved servo latched a hardware error during the move: the arm was held (exit 1)."""


def _latches(bus: Bus, ids: Iterable[int]) -> dict[int, str]:
    """{servo id: bits in words} of the servos among `ids` with a latched hardware error; {} on a bus
    whose servos latch none (LatchingBus)."""
    return bus.hardware_latches(ids) if isinstance(bus, LatchingBus) else {}


def _named(latched: Mapping[int, str]) -> str:
    return ", ".join(f"{sid} ({bits})" for sid, bits in latched.items())


def _refuse_latched(bus: Bus, final: Mapping[int, int | None], goal: Mapping[int, int]) -> None:
    """Hold the arm and raise MoveServoFault when a moved servo latched a hardware error during the move."""
    latched = _latches(bus, goal)
    if not latched:
        return
    with contextlib.suppress(Exception):
        bus.hold()
    what = ", ".join(f"{sid} latched hardware error {bits}" for sid, bits in latched.items())
    where = ", ".join(f"servo {sid} read back at {final.get(sid)}, goal {goal[sid]}" for sid in latched)
    raise MoveServoFault(f"servo {what} during the move ({where}); arm held")


class HoldServoFault(RunFault):
    """A servo asked to hold has a hardware error latched: its torque is off, so it holds nothing (exit 1)."""


class HoldServoLost(ConnectionLost):
    """A joint servo did not answer when the arm was held: whether it holds is unknown (exit 3)."""


@dataclass
class HoldResult:
    held: list[int]  # answered after the hold, no hardware error latched
    silent: list[int]  # optional servos (the claw) that did not answer: not held


def hold(bus: Bus, ids: Iterable[int] | None = None) -> HoldResult:
    """Hold the servos where they are (all by default), then read each one back.

    Only servos that answer after the hold, with no hardware error latched, are reported held. A servo with
    a hardware error latched (LatchingBus: torque off until a reboot, never sent here) raises
    HoldServoFault; a joint that does not answer raises HoldServoLost; the others are held either way. A
    silent optional servo (the claw) is reported in `silent`.
    """
    ids = list(bus.ids if ids is None else ids)
    bus.hold(ids)
    silent = [sid for sid in ids if bus.read_position(sid) is None]
    latched = _latches(bus, [sid for sid in ids if sid not in silent])
    held = [sid for sid in ids if sid not in silent and sid not in latched]
    others = f"servos {', '.join(map(str, held))} held" if held else "no servo held"
    joints = [sid for sid in silent if sid not in bus.optional_ids]
    quiet = f"; servo {', '.join(map(str, joints))} not answering, not held" if joints else ""
    if latched:
        raise HoldServoFault(
            f"servo {_named(latched)}: hardware error latched, its torque is off until a "
            f"reboot (never sent here), so it does not hold{quiet}; {others}"
        )
    if joints:
        raise HoldServoLost(
            f"servo {', '.join(map(str, joints))} not answering after the hold: not held "
            f"(position unknown; check its cable); {others}"
        )
    return HoldResult(held=held, silent=silent)


@dataclass
class RelaxResult:
    pose: dict[int, int | None]
    torque: dict[int, bool | None]
    still_on: list[int]
    forced: bool
    attempts: int


def tuck_check(
    pose: Mapping[int, int | None], tuck: Mapping[int, int], joints: Iterable[int], tolerance: int
) -> str | None:
    """None when every tuck joint is within tolerance of the tuck pose, else the reason."""
    off = []
    for j in joints:
        v = pose.get(j)
        if v is None:
            off.append(f"servo {j} not answering")
        elif abs(v - tuck[j]) > tolerance:
            off.append(f"servo {j} at {v} (tuck {tuck[j]})")
    if off:
        return f"the arm is not resting on itself (tuck pose +-{tolerance} pulses): " + ", ".join(off)
    return None


def relax(
    bus: Bus,
    clock: Clock,
    *,
    tuck: Mapping[int, int],
    joints: Iterable[int],
    tolerance: int,
    force: bool = False,
    attempts: int = 3,
    sent: list[int] | None = None,
) -> RelaxResult:
    """Switch torque off on every servo, verified by reading torque back, up to `attempts` times.

    Refused (nothing sent) unless the tuck joints are within `tolerance` pulses of the tuck pose (where the
    arm rests on itself), or force is given: with torque off every joint that carries weight drops.
    `sent` gets each servo id a torque-off is about to go to, so a caller whose relax an exception (a
    signal) cut short can say which servos may be limp.
    """
    joints = tuple(joints)
    pose = CheckedReads(bus).pose(bus.ids)  # an impossible read is no evidence of the tuck pose
    if not force:
        reason = tuck_check(pose, tuck, joints, tolerance)
        if reason:
            raise Refused(
                f"relax refused: {reason}; with torque off the arm would drop. Move to pretuck "
                "first (it lies within the tuck tolerance), or force it"
            )
    optional = set(bus.optional_ids)
    torque: dict[int, bool | None] = {}
    n = 0
    for n in range(1, attempts + 1):  # noqa: B007 - n is reported
        for sid in bus.ids:
            if torque.get(sid) is not False:
                if sent is not None and sid not in sent:
                    sent.append(sid)
                bus.torque_off(sid)
        clock.sleep(0.05)
        torque = {sid: bus.read_torque(sid) for sid in bus.ids}
        if all(v is False or (v is None and sid in optional) for sid, v in torque.items()):
            break
    still_on = [sid for sid, v in torque.items() if v is True]
    return RelaxResult(pose=pose, torque=torque, still_on=still_on, forced=force, attempts=n)


def move_problems(
    to: str,
    speed: float,
    poses: Mapping[str, Mapping[int, int]],
    ids: Iterable[int],
    reference_poses: Iterable[str] = (),
    *,
    span: tuple[int, int] | None,
    id_span: tuple[int, int] | None = None,
    mapped: Mapping[int, tuple[int, int]] | None = None,
    mapped_in: str = "the --limits file",
) -> list[str]:
    """Every problem of a move request found without the bus, one sentence each: a speed not finite or
    outside [MIN_SPEED, MAX_SPEED], a goal that does not parse, names a reference pose (not a command
    target), a servo the arm does not have (when `ids` are known), an id outside `id_span` (no single servo
    has it), or a pulse outside `span` (None: the bus tells, once open). With `mapped` (the limits of the
    --limits file `mapped_in`): a goal servo it has no limit for (its goal would be checked against the
    stored limits alone), or a goal outside its limit."""
    out: list[str] = []
    if not (math.isfinite(speed) and MIN_SPEED <= speed <= MAX_SPEED):
        out.append(f"--speed {speed:g} pulses/s outside [{MIN_SPEED:g}, {MAX_SPEED:g}]")
    name = to.strip()
    references = set(reference_poses)
    if name in references:
        out.append(
            f"pose {name!r} is a reference (where the arm rests with torque off), not a command "
            "target; move to pretuck, then relax"
        )
        return out
    try:  # an unknown name is answered with the poses a move can take: never a reference pose
        goal = parse_goal(to, {k: v for k, v in poses.items() if k not in references})
    except ValueError as exc:
        return [*out, str(exc)]
    known = set(ids)
    out += [
        f"servo {sid} is not on this arm ({', '.join(map(str, sorted(known)))})"
        for sid in goal
        if known and sid not in known
    ]
    if id_span is not None:
        out += [
            f"servo id {sid} outside {id_span[0]}-{id_span[1]}: no single servo has it (254 is the "
            "broadcast id)"
            for sid in goal
            if not id_span[0] <= sid <= id_span[1]
        ]
    if span is not None:
        out += [
            f"servo {sid} goal {pulse} outside {span[0]}-{span[1]} pulses"
            for sid, pulse in goal.items()
            if not span[0] <= pulse <= span[1]
        ]
    return out + _mapped_problems(goal, mapped, mapped_in)


def _mapped_problems(
    goal: Mapping[int, int], mapped: Mapping[int, tuple[int, int]] | None, where: str
) -> list[str]:
    if mapped is None:
        return []
    out = []
    missing = [sid for sid in goal if sid not in mapped]
    if missing:
        keys = ", ".join(f"arm_limit_{sid}" for sid in missing)
        out.append(
            f"{where}: no {keys}: servo(s) {', '.join(map(str, missing))} would be checked against "
            "the stored limits alone; map them (servotool sweep --servo ID) or leave out --limits"
        )
    out += [
        f"goal refused: servo {sid} goal {pulse} pulses outside limits [{lo}, {hi}] pulses of {where}"
        for sid, pulse in goal.items()
        if sid in mapped
        for lo, hi in [mapped[sid]]
        if not lo <= pulse <= hi
    ]
    return out


def watch(
    bus: Bus,
    clock: Clock,
    period_s: float,
    on_records: Callable[[dict[int, ServoRecord]], None],
    stop: Abort = None,
    rounds: int | None = None,
) -> int:
    """Read every servo (read_records) every period_s on absolute deadlines and hand each round to
    `on_records`, until `stop` is requested or `rounds` rounds are done. Read only: nothing but read
    requests is written, so the servos are left exactly as they were. Returns the rounds done."""
    stopped = abort_check(stop)
    t0 = clock.now()
    n = 0
    while not stopped() and (rounds is None or n < rounds):
        on_records(read_records(bus))
        n += 1
        clock.sleep_until(t0 + n * period_s)
    return n
