"""Moving, holding and relaxing a bus-servo arm: the checks first, then the frames, in time.

Rules kept here:
* refuse, never clamp: a goal or any sample of the move outside the limits refuses the whole move before a
  single frame is sent (`Refused`); the limits are the servos' stored limits intersected with the configured
  ones;
* a joint servo that does not answer refuses (its position is unknown); an optional servo (the claw) that does
  not answer is carried at its last known pulse, left out of the move and reported;
* moves are minimum-jerk trajectories sampled every period (40 ms) and sent as period-long move frames on
  absolute deadlines; a requested abort holds the arm at once;
* the moving servos are read after every frame: a joint that misses LOST_READS reads in a row is lost, the
  move stops there, the others are held and read back, and only those are said to hold (hold_lost); a bus
  where no servo answers is a lost device (BusSilent, exit 3), never a move to refuse;
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
from servotool.devices.bus import (
    Bus,
    GoalKeepingBus,
    LatchingBus,
    ModeCheckedBus,
    PoseAtOnceBus,
    ServoRecord,
    TorqueGatedBus,
    read_records,
)
from servotool.errors import ConnectionLost, Refused, RunFault
from servotool.motion.limits import JointLimits
from servotool.motion.quintic import Trajectory, duration_for
from servotool.runs.bus.reads import CheckedReads, bus_readable
from servotool.runs.plan import MotionPlan

MAX_SPEED = 300.0  # pulses/s: the arm's ceiling (72 deg/s); moves default to 250
MIN_SPEED = 1.0  # pulses/s: below it a move lasts for ever (1e-300 planned 1e302 s, sampled whole)
DEFAULT_SPEED = 250.0
PERIOD_S = 0.04
LOST_READS = 3  # reads in a row a moving joint may miss before it is lost: one lost answer is no lost servo
RECOVER_S = 1.0  # how long a lost servo is given to answer again, so its pending goal can be overwritten
READS_PER_FRAME = 2  # servos read after each frame on a bus that reads one servo per exchange

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
    impossible value is left out and read again. BusSilent (exit 3) when none answers; Refused if a joint
    servo is silent; a silent optional servo is carried (if ever read)."""
    ids = tuple(bus.ids if ids is None else ids)
    optional = set(bus.optional_ids)
    read = read or CheckedReads(bus).position
    raw = {sid: read(sid) for sid in ids}
    silent = [sid for sid, v in raw.items() if v is None]
    if silent and len(silent) == len(raw):  # nobody answers: the bus is lost, not a move to refuse
        raise BusSilent(
            f"no servo answered: servo {_ids(silent)} not answering, nothing sent (check the bus's power, "
            "cable, baud rate and ids)"
        )
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


@dataclass
class _Silence:
    """The reads each moving joint missed in a row during a move, and what is known of it: the last
    position it answered with and the last goal it was sent."""

    joints: tuple[int, ...]
    ids: tuple[int, ...]
    misses: dict[int, int] = field(default_factory=dict)
    first_miss: dict[int, float] = field(default_factory=dict)
    sent: dict[int, int] = field(default_factory=dict)
    turn: int = 0  # where the next read of a bus that reads one servo per exchange starts

    def read(self, bus: Bus, now: float) -> list[int]:
        """Read the moving servos once: all of them in one exchange on a PoseAtOnceBus, else the next
        READS_PER_FRAME joints in turn (each read costs an exchange of its own, and the frames must keep
        their period). The joints that have now missed LOST_READS of their reads in a row."""
        if isinstance(bus, PoseAtOnceBus):
            pose, asked = bus.read_pose_at_once(self.ids), self.joints
        else:
            n = len(self.joints)
            asked = tuple(self.joints[(self.turn + i) % n] for i in range(min(READS_PER_FRAME, n)))
            self.turn = (self.turn + len(asked)) % max(n, 1)
            pose = bus.read_pose(asked)
        readable = bus_readable(bus)  # a value no servo could report is no answer to count on
        for sid in asked:
            value = pose.get(sid)
            if value is None or not readable.admits(value):
                self.misses[sid] = self.misses.get(sid, 0) + 1
                self.first_miss.setdefault(sid, now)
            else:
                self.misses[sid] = 0
                self.first_miss.pop(sid, None)
        return [sid for sid in self.joints if self.misses.get(sid, 0) >= LOST_READS]


def _stream(
    bus: Bus,
    clock: Clock,
    traj: Trajectory,
    check: JointLimits,
    period_s: float,
    aborted: Callable[[], bool],
    on_progress: Callable[[float, dict[int, int]], None] | None,
    log: MoveLog,
    silence: _Silence,
) -> tuple[bool, list[int]]:
    """Send the frames on absolute deadlines, reading the moving servos after each: (aborted, lost
    joints). Stops at the end of the trajectory, at an abort (the arm held) or when a joint is lost."""
    period_ms = int(round(period_s * 1000))
    t0 = clock.now()
    k = 0
    while True:
        if aborted():
            bus.hold()
            return True, []
        targets = servo_pose(traj.at(k * period_s))
        # cannot happen after plan_move; never send it if it does
        if check.check(as_pose(targets)) is not None:
            raise Refused(f"internal: sample {targets} left the limits; arm held")
        bus.move(targets, period_ms)
        silence.sent.update(targets)
        log.frames += 1
        if on_progress is not None:
            on_progress(clock.now() - t0, targets)
        lost = silence.read(bus, clock.now())
        if lost:
            return False, lost
        if traj.done(k * period_s):
            return False, []
        k += 1
        clock.sleep_until(t0 + k * period_s)


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
    recover_s: float = RECOVER_S,
) -> MoveResult:
    """Move to `goal` ({servo id: pulse}) along a minimum-jerk trajectory capped at `speed` pulses/s.

    Everything is checked before the first frame (Refused: nothing was sent). Frames go out every period_s on
    absolute deadlines of `clock`, and the moving servos are read after each: a joint that misses
    LOST_READS reads in a row ends the move with MoveServoLost (see _lose: the others held and confirmed,
    the lost one waited for up to `recover_s`). An abort request sends a hold at once and ends the move
    (aborted=True). From the first frame on, an exception (a signal, a lost link) sends a hold before it
    passes on, while the move settles and its end is read back too; before it, nothing was sent.
    `on_progress(t, targets)` is called after each frame sent; `log` (see MoveLog) tells a caller which of
    the two an exception met.
    """
    armpose = read_arm(bus)
    skipped = {sid: p for sid, p in goal.items() if sid in armpose.silent}
    live_goal = {sid: int(p) for sid, p in goal.items() if sid not in armpose.silent}
    traj = plan_move(armpose.pose, live_goal, limits, speed, period_s)
    _refuse_unmovable(bus, live_goal)
    check = pulse_limits({sid: limits[sid] for sid in live_goal})
    optional = set(bus.optional_ids)
    silence = _Silence(tuple(sid for sid in live_goal if sid not in optional), tuple(live_goal))
    log = log if log is not None else MoveLog()
    t0 = clock.now()
    try:
        log.started = True  # from here any way out sends a hold, but the move's own end
        stopped, lost = _stream(
            bus, clock, traj, check, period_s, abort_check(abort_requested), on_progress, log, silence
        )
        duration = clock.now() - t0
        if not stopped and not lost:
            clock.sleep(settle_s)
        final = {} if lost else CheckedReads(bus).pose(live_goal)
    except BaseException:
        # Ctrl-C or a lost link mid-move or while it settles: try to stop the arm where it is, and report
        # the original error
        with contextlib.suppress(Exception):
            bus.hold()
        raise
    lost = lost or [sid for sid, pulse in final.items() if pulse is None and sid not in optional]
    if lost:
        raise _lose(bus, clock, lost, silence, t0, recover_s, period_s)
    _refuse_latched(bus, final, live_goal)
    return MoveResult(
        start={sid: armpose.pose[sid] for sid in live_goal},
        goal=live_goal,
        final=final,
        duration_s=duration,
        frames=log.frames,
        silent=armpose.silent,
        carried=armpose.carried,
        skipped=skipped,
        limits={sid: limits[sid] for sid in live_goal},
        aborted=stopped,
    )


class MoveServoLost(ConnectionLost):
    """A servo the arm cannot do without stopped answering during a move (exit 3): the move stopped, the
    servos that answered were held and confirmed (`held`), `not_held` did not answer the hold, `recovered`
    answered again before the run gave up on them ({servo: the position its goal was set to}), and
    `detected_s` says how long after its first missed read each lost joint was called lost."""

    def __init__(
        self,
        text: str,
        *,
        lost: list[int],
        held: list[int],
        not_held: list[int],
        recovered: dict[int, int],
        detected_s: dict[int, float],
    ) -> None:
        super().__init__(text)
        self.lost, self.held, self.not_held = lost, held, not_held
        self.recovered, self.detected_s = recovered, detected_s


def _confirmed_hold(bus: Bus, ids: list[int]) -> tuple[list[int], list[int]]:
    """Hold `ids` and read each back: (held: answered with no hardware error latched, the others)."""
    with contextlib.suppress(Exception):  # a hold that fails half-way is judged by the reads below
        bus.hold(ids)
    answered = [sid for sid in ids if bus.read_position(sid) is not None]
    latched = _latches(bus, answered)
    held = [sid for sid in answered if sid not in latched]
    return held, [sid for sid in ids if sid not in held]


def _recover(
    bus: Bus, clock: Clock, lost: list[int], recover_s: float, period_s: float
) -> tuple[dict[int, int], dict[int, int]]:
    """Wait up to recover_s for lost servos to answer again; each that does has its pending goal
    overwritten by the position it reads then (GoalKeepingBus), or is held (other buses). ({servo: the
    position it holds, confirmed}, {servo: the position its goal was set to, but not holding: torque off
    or a hardware error latched})."""
    pending, out, unheld = list(lost), {}, {}
    deadline = clock.now() + recover_s
    while pending:
        for sid in list(pending):
            if isinstance(bus, GoalKeepingBus):
                pos = bus.overwrite_goal(sid)
                # its goal can go no further; it holds there only with torque on and no latched error
                if pos is not None and (bus.read_torque(sid) is not True or _latches(bus, [sid])):
                    unheld[sid] = int(pos)
                    pending.remove(sid)
                    continue
            else:
                held, _ = _confirmed_hold(bus, [sid])
                pos = bus.last_position.get(sid) if held else None
            if pos is not None:
                out[sid] = int(pos)
                pending.remove(sid)
        if not pending or clock.now() + period_s > deadline:
            break
        clock.sleep(period_s)
    return out, unheld


@dataclass
class LostHold:
    """How an arm that lost servos was left: `held` confirmed holding (answered the hold's read-back, no
    hardware error latched; a lost servo that answered again with its pending goal overwritten and torque
    on), `not_held` the others, `recovered` {lost servo that answered again: the position its goal was set
    to}, and `text` saying so servo by servo."""

    held: list[int]
    not_held: list[int]
    recovered: dict[int, int]
    text: str


def hold_lost(
    bus: Bus,
    clock: Clock,
    lost: list[int],
    sent: Mapping[int, int],
    *,
    recover_s: float = RECOVER_S,
    period_s: float = PERIOD_S,
) -> LostHold:
    """After servos were lost mid-motion: hold every other servo and read each back, give the lost ones
    recover_s to answer again (their pending goal overwritten then, see _recover), and say which servo
    holds and which does not. `sent` is the last goal each servo was sent (named for a lost one whose goal
    may still be pending)."""
    held, quiet = _confirmed_hold(bus, [sid for sid in bus.ids if sid not in lost])
    # those that did not answer the hold either (a stalled line) get the same second as the lost ones
    recovered, unheld = _recover(bus, clock, [*lost, *quiet], recover_s, period_s)
    late = [sid for sid in quiet if sid in recovered]
    held = [sid for sid in held + late if sid not in unheld]
    not_held = [sid for sid in quiet if sid not in recovered and sid not in unheld]
    gone = [sid for sid in lost if sid not in recovered and sid not in unheld]
    recovered = {sid: pos for sid, pos in recovered.items() if sid in lost}
    parts = [f"servos {_ids(held)} held" if held else "no servo held"]
    if late:
        parts[0] += f" ({_ids(late)} once they answered again)"
    if not_held:
        parts.append(f"servo {_ids(not_held)} did not answer the hold: not held")
    again = (
        "its pending goal overwritten by its position {pos}, held"
        if isinstance(bus, GoalKeepingBus)
        else "held at its position {pos}"
    )
    parts += [f"servo {sid} answered again: " + again.format(pos=pos) for sid, pos in recovered.items()]
    parts += [
        f"servo {sid} answered again: its pending goal overwritten by its position {pos}, but its torque "
        "is off or a hardware error latched: not held"
        for sid, pos in unheld.items()
    ]
    parts += [_not_held(bus, sid, sent.get(sid)) for sid in gone]
    return LostHold(
        held=held + list(recovered),
        not_held=not_held + list(unheld) + gone,
        recovered={**recovered, **unheld},
        text="; ".join(parts),
    )


def _lose(
    bus: Bus,
    clock: Clock,
    lost: list[int],
    silence: _Silence,
    t0: float,
    recover_s: float,
    period_s: float,
) -> MoveServoLost:
    """The end of a move that lost joints: stopped there, the arm held as hold_lost says."""
    now = clock.now()
    detected = {sid: now - silence.first_miss.get(sid, now) for sid in lost}
    after = hold_lost(bus, clock, lost, silence.sent, recover_s=recover_s, period_s=period_s)
    return MoveServoLost(
        f"servo {_ids(lost)} stopped answering {silence.first_miss.get(lost[0], now) - t0:.2f} s into the "
        f"move ({LOST_READS} reads missed in a row): the move stopped there; {after.text}",
        lost=lost,
        held=after.held,
        not_held=after.not_held,
        recovered=after.recovered,
        detected_s=detected,
    )


def _not_held(bus: Bus, sid: int, goal: int | None) -> str:
    if isinstance(bus, GoalKeepingBus) and goal is not None:
        return (
            f"servo {sid} not answering: not held, and its last goal {goal} may still be pending (it may "
            "move there when it answers again; check its cable and power before anything else)"
        )
    return f"servo {sid} not answering: not held (position unknown; check its cable)"


def _ids(ids: Iterable[int]) -> str:
    return ", ".join(map(str, ids))


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
    requests is written, so the servos are left exactly as they were. Returns the rounds done; BusSilent
    (exit 3) once no servo has answered LOST_READS rounds in a row."""
    stopped = abort_check(stop)
    t0 = clock.now()
    n = quiet = 0
    while not stopped() and (rounds is None or n < rounds):
        records = read_records(bus)
        on_records(records)
        quiet = quiet + 1 if all(r.silent for r in records.values()) else 0
        if quiet >= LOST_READS:
            raise BusSilent(
                f"no servo answered {LOST_READS} reads in a row (every {period_s:g} s): servo "
                f"{_ids(records)} not answering; the bus is lost (check its power and cable)"
            )
        n += 1
        clock.sleep_until(t0 + n * period_s)
    return n


class BusSilent(ConnectionLost):
    """No servo of the bus answers: the device is lost (exit 3)."""


def refuse_silent_bus(records: Mapping[int, ServoRecord]) -> None:
    """BusSilent, naming every servo, when none of `records` answered: a bus where nobody answers is a
    device that could not be reached, not a read that is done."""
    if records and all(r.silent for r in records.values()):
        raise BusSilent(
            f"no servo answered: servo {_ids(records)} not answering (check the bus's power, cable, "
            "baud rate and ids)"
        )
