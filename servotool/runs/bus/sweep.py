"""Limit mapping: slow sweeps of one joint at a time toward its stored limit, stopped by a stall, the stored
limit or a key press, with the arm held at every stop and the joint brought back to where it started.

Per joint and direction: read the whole arm (a silent joint servo or a pose outside the current limits
refuses), then every period send the joint's command start + dir * speed * t (whole pulses, never past the
servo's stored limit, never outside 0-1000) as one period-long move frame and read the joint back. The sweep
stops when analysis.sweep's stall test fires, when the command has reached the stored limit and the joint is
there, or when an abort is requested. At a stop the arm is held at once (one hold frame for every servo), the
stop is read back after a short settle and the limit is set `inside` pulses inside it. Then a minimum-jerk
move brings the joint back to its start before the next sweep. An abort holds the arm and ends the whole run:
no frame but the hold follows it.

Every commanded pulse passes one guard before it is written: inside the stored limit and 0-1000, else the arm
is held and the run raises. Nothing here writes EEPROM (the protocol cannot encode it).
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
import statistics
from collections.abc import Callable, Iterator, Mapping
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from typing import Any, Protocol

from servotool.analysis.sweep import (
    DIRECTIONS,
    LIMIT_REASONS,
    STOP_ABORT,
    STOP_AT_LIMIT,
    STOP_SILENT,
    STOP_STALL,
    STOP_STORED,
    FoundLimit,
    StallCriterion,
    StallDetector,
    SweepResult,
    direction_sign,
    limit_from_stop,
    merge_found,
)
from servotool.analysis.sweep_files import MAX_INSIDE
from servotool.clock import Clock
from servotool.devices.bus import Bus
from servotool.errors import ConnectionLost, ExitCode, Refused, RunFault, SettingsError
from servotool.motion.quintic import Trajectory, duration_for
from servotool.runs.bus.reads import CheckedReads
from servotool.runs.bus.servo import (
    LOST_READS,
    MAX_SPEED,
    MIN_SPEED,
    Abort,
    abort_check,
    as_pose,
    hold_lost,
    intersect_limits,
    pulse_limits,
    read_arm,
    servo_pose,
)
from servotool.runs.plan import MotionPlan

CSV_COLUMNS = ("t", "event", "joint", "direction", "cmd", "read")
CSV_UNITS = {"t": "s", "cmd": "pulse", "read": "pulse"}


@dataclass(frozen=True)
class SweepConfig:
    """joints: servo ids to sweep; directions: "down" and/or "up"; speed pulses/s; inside pulses; period_s:
    command period; return_speed: cap of the move back to the start (pulses/s); settle_s: wait after a hold
    before the stop is read; limit_tol: read-back within this many pulses of the stored limit counts as
    having reached it; limit_wait_s: how long to wait for that after the command got there."""

    joints: tuple[int, ...]
    directions: tuple[str, ...] = ("down", "up")
    speed: float = 25.0
    inside: int = 20
    period_s: float = 0.04
    return_speed: float = 100.0
    settle_s: float = 0.3
    limit_tol: int = 2
    limit_wait_s: float = 1.0
    criterion: StallCriterion = field(default_factory=StallCriterion)

    def __post_init__(self) -> None:
        problems = sweep_problems(self)
        if problems:
            raise SweepSettingsError(problems)


class SweepSettingsError(SettingsError):
    """A sweep configuration with problems; `problems` lists them one sentence each."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__("; ".join(problems))
        self.problems = problems


def _finite_in(name: str, value: float, lo: float, hi: float, unit: str, open_lo: bool = False) -> str | None:
    ok = math.isfinite(value) and (lo < value if open_lo else lo <= value) and value <= hi
    if ok:
        return None
    return f"{name} {value:g} {unit} outside {'(' if open_lo else '['}{lo:g}, {hi:g}]"


NO_JOINTS = "no joints to sweep"


def sweep_problems(cfg: SweepConfig) -> list[str]:
    """Every problem of a sweep configuration, one sentence each (empty when it can run): no joints, an
    unknown direction, a speed, return speed or period not finite or out of range, an inside margin outside
    0-200 pulses, timings not finite or negative."""
    out: list[str] = []
    if not cfg.joints:
        out.append(NO_JOINTS)
    if len(set(cfg.joints)) != len(cfg.joints):
        out.append(f"joints {list(cfg.joints)} name a servo twice")
    out += [f"direction {d!r}: want up or down" for d in cfg.directions if d not in DIRECTIONS]
    if not cfg.directions:
        out.append("no direction to sweep")
    checks = [
        _finite_in("sweep speed", cfg.speed, MIN_SPEED, MAX_SPEED, "pulses/s"),
        _finite_in("return speed", cfg.return_speed, MIN_SPEED, MAX_SPEED, "pulses/s"),
        _finite_in("period", cfg.period_s, 0.01, 0.5, "s"),
        _finite_in("settle time", cfg.settle_s, 0.0, 5.0, "s"),
        _finite_in("limit wait", cfg.limit_wait_s, 0.0, 10.0, "s"),
    ]
    out += [c for c in checks if c]
    if not 0 <= cfg.inside <= MAX_INSIDE:
        out.append(f"inside {cfg.inside} pulses outside [0, {MAX_INSIDE}]")
    if cfg.limit_tol < 0:
        out.append(f"limit tolerance {cfg.limit_tol} pulses is negative")
    return out


@dataclass(frozen=True)
class SweepEvent:
    """Progress report: kind is "plan" (before the first sweep; `message` is the estimated duration and
    `seconds` its length), "start", "tick", "stop", "return" or "done". `index` counts sweeps from 0 of
    `count`; `fraction` is how far this sweep's command has gone from its start toward the stored limit
    (0-1), so a whole run's progress is (index + fraction) / count."""

    kind: str
    joint: int | None = None
    direction: str | None = None
    t: float = 0.0
    cmd: int | None = None
    read: int | None = None
    message: str = ""
    index: int = 0
    count: int = 0
    fraction: float = 0.0
    seconds: float = 0.0


@dataclass
class SweepRun:
    """A whole run: the sweeps in order, the limits they imply, and how the run ended."""

    results: list[SweepResult]
    stored: dict[int, tuple[int, int]]
    limits: dict[int, tuple[int, int]]
    start_pose: dict[int, int]
    aborted: bool = False
    error: str | None = None
    # what `error` ends the command with: 2 refused before motion, 1 a fault found during the run, 3 a swept
    # servo that stopped answering mid-run (the link to it is lost)
    exit_code: ExitCode = ExitCode.USAGE
    found: dict[int, FoundLimit] = field(default_factory=dict)
    # reads no servo could report (a valid checksum, an impossible value): counted, left out of every test
    bad_frames: int = 0
    bad_note: str | None = None

    @property
    def fault(self) -> bool:
        """The error came up after motion began (a fault or a lost servo), not as a refusal before it."""
        return self.error is not None and self.exit_code != ExitCode.USAGE

    def as_dict(self) -> dict:
        return {
            "aborted": self.aborted,
            "error": self.error,
            "fault": self.fault,
            "exit_code": int(self.exit_code) if self.error else None,
            "start_pose": self.start_pose,
            "bad_frames_left_out": self.bad_frames,
            "stored_limits": {k: list(v) for k, v in self.stored.items()},
            "limits_before": {k: list(v) for k, v in self.limits.items()},
            "found": {
                k: {
                    "lo": f.lo,
                    "hi": f.hi,
                    "lo_source": f.lo_source,
                    "hi_source": f.hi_source,
                    "lo_detail": f.lo_detail,
                    "hi_detail": f.hi_detail,
                }
                for k, f in self.found.items()
            },
            "sweeps": [r.as_dict() for r in self.results],
        }


class SweepAborted(RunFault):
    """The stop key or a stop signal ended the run: the arm was held where it stopped and nothing followed
    the hold. `reason` names what stopped it ("Ctrl-C", "SIGTERM", "SIGHUP" or "stop key")."""

    def __init__(self, message: str, reason: str = "stop key") -> None:
        super().__init__(message)
        self.reason = reason


class SweepFault(RunFault):
    """Something found during the run (after motion began) ended it; the arm was held."""


class SweepNotRecorded(SweepFault):
    """The sweep's CSV could not be written (a full disk): the arm was held and the run ended."""


class _GuardedWriter:
    """A RowWriter whose write failure (OSError) ends the sweep as SweepNotRecorded, the arm held."""

    def __init__(self, inner: RowWriter) -> None:
        self._inner = inner

    def write(self, **row: Any) -> None:
        try:
            self._inner.write(**row)
        except OSError as exc:
            raise SweepNotRecorded(_not_recorded(exc)) from None

    def interrupt(self, reason: str) -> None:
        self._inner.interrupt(reason)


def _not_recorded(exc: OSError) -> str:
    return f"the sweep's recording cannot be written ({exc.strerror or exc}); arm held"


@contextlib.contextmanager
def _recording(factory: WriterFactory, res: SweepResult) -> Iterator[RowWriter]:
    """The sweep's writer, from creation to its end line; any failure to write it (opening, a row, the end
    line) is SweepNotRecorded. Errors of the sweep itself (a serial port failing) pass through as they are."""
    raised: BaseException | None = None
    try:
        with factory(res) as writer:
            try:
                yield _GuardedWriter(writer)
            except BaseException as exc:
                raised = exc
                raise
    except OSError as exc:
        if exc is raised:
            raise
        raise SweepNotRecorded(_not_recorded(exc)) from None


class SweepServoLost(ConnectionLost):
    """A swept servo stopped answering after motion began (exit 3, the link to that servo is lost, not a
    refusal): `held` the servos whose hold was confirmed, `not_held` the others."""

    def __init__(
        self, text: str, *, held: list[int] | None = None, not_held: list[int] | None = None
    ) -> None:
        super().__init__(text)
        self.held, self.not_held = held or [], not_held or []


class RowWriter(Protocol):
    """Where a sweep's rows go (a CsvLogWriter): one call per row, columns as keywords."""

    def write(self, **row: Any) -> Any: ...

    def interrupt(self, reason: str) -> None: ...


WriterFactory = Callable[[SweepResult], AbstractContextManager[RowWriter]]


class _Sweeper:
    def __init__(
        self,
        bus: Bus,
        clock: Clock,
        config: SweepConfig,
        abort: Callable[[], bool],
        on_event: Callable[[SweepEvent], None] | None,
        stop_reason: Callable[[], str | None] | None = None,
    ) -> None:
        self.bus, self.clock, self.cfg = bus, clock, config
        self.abort = abort
        self._stop_reason = stop_reason or (lambda: None)
        self._report = on_event or (lambda e: None)
        self.index = 0
        self.count = len(config.joints) * len(config.directions)
        self.t0 = clock.now()
        self.stored: dict[int, tuple[int, int]] = {}
        self.span = bus.position_range
        self.sent: dict[int, int] = {}  # the last goal sent to each servo
        # every read of the run passes the bus's range check: a bad frame never reaches the stall test
        self.reads = CheckedReads(bus, on_bad=self._bad_row)
        self.read = self.reads.position
        self.writer: RowWriter | None = None  # the current sweep's CSV, where bad frames are recorded

    def now(self) -> float:
        return self.clock.now() - self.t0

    def _bad_row(self, sid: int, value: int) -> None:
        if self.writer is not None:  # recorded as it came, on a row of its own that no analysis reads
            self.writer.write(t=self.now(), event="bad", joint=sid, read=value)

    def aborted(self, message: str) -> SweepAborted:
        return SweepAborted(message, self._stop_reason() or "stop key")

    def on_event(self, event: SweepEvent) -> None:
        self._report(dataclasses.replace(event, index=self.index, count=self.count))

    def lost(self, joint: int, what: str) -> SweepServoLost:
        """The swept servo is lost: the others held and read back, it given a moment to answer again (its
        pending goal then overwritten), each named as holding or not (servo.hold_lost)."""
        after = hold_lost(self.bus, self.clock, [joint], self.sent, period_s=self.cfg.period_s)
        return SweepServoLost(f"{what}; {after.text}", held=after.held, not_held=after.not_held)

    # every move frame of the run goes through here
    def send(self, joint: int, pulse: int) -> None:
        lo, hi = self.stored[joint]
        span_lo, span_hi = self.span
        if not (max(lo, span_lo) <= pulse <= min(hi, span_hi)):
            self.bus.hold()
            raise RunFault(
                f"refusing to command servo {joint} to {pulse}: outside stored limit "
                f"[{lo}, {hi}] or {span_lo}-{span_hi} (arm held)"
            )
        self.bus.move({joint: pulse}, int(round(self.cfg.period_s * 1000)))
        self.sent[joint] = pulse

    def read_stop(self, joint: int) -> int | None:
        reads = [r for r in (self.read(joint) for _ in range(3)) if r is not None]
        return int(statistics.median(reads)) if reads else None

    def sweep(self, res: SweepResult, writer: RowWriter) -> None:
        cfg, sign, joint = self.cfg, res.sign, res.joint
        self.writer = writer
        det = StallDetector(sign, cfg.speed, cfg.criterion)
        res.lead_threshold, res.progress_threshold = det.K, det.E
        t_start = self.clock.now()
        reached_at: float | None = None
        arrived_at: float | None = None
        k = 0
        while True:
            if self.abort():
                return self.stop(res, writer, STOP_ABORT)
            elapsed = k * cfg.period_s
            cmd = int(round(res.start + sign * cfg.speed * elapsed))
            if sign * (cmd - res.bound) >= 0:
                cmd = res.bound
                reached_at = elapsed if reached_at is None else reached_at
            self.send(joint, cmd)
            t_cmd = self.now()
            writer.write(t=t_cmd, event="cmd", joint=joint, direction=res.direction, cmd=cmd)
            read = self.read(joint)
            t_read = self.now()
            writer.write(t=t_read, event="state", joint=joint, direction=res.direction, read=read)
            res.t.append(round(t_read, 6))
            res.cmd.append(cmd)
            res.read.append(read)
            span = res.bound - res.start
            frac = min(1.0, max(0.0, (cmd - res.start) / span)) if span else 1.0
            self.on_event(SweepEvent("tick", joint, res.direction, t_read, cmd, read, fraction=frac))
            if read is None:
                return self.stop(res, writer, STOP_SILENT)
            if self.abort():
                return self.stop(res, writer, STOP_ABORT)
            if det.update(t_read, cmd, read):
                return self.stop(res, writer, STOP_STALL)
            if reached_at is not None:
                if abs(read - res.bound) <= cfg.limit_tol:
                    # at its own stored limit the servo stops by itself: let it finish arriving, then hold
                    arrived_at = elapsed if arrived_at is None else arrived_at
                    if elapsed - arrived_at >= cfg.settle_s:
                        return self.stop(res, writer, STOP_STORED)
                if elapsed - reached_at >= cfg.limit_wait_s:
                    res.notes.append(
                        f"settled at {read}, {abs(read - res.bound)} pulses short of the stored limit"
                    )
                    return self.stop(res, writer, STOP_STORED)
            k += 1
            self.clock.sleep_until(t_start + k * cfg.period_s)

    def stop(self, res: SweepResult, writer: RowWriter, reason: str) -> None:
        self.bus.hold()  # first, before anything else: the arm stops where it is
        t_hold = self.now()
        writer.write(t=t_hold, event="hold", joint=res.joint, direction=res.direction)
        # a stop asked for by a signal is named so (the key is STOP_ABORT itself): not 'by key' for a SIGTERM
        said = f"aborted by {self._stop_reason()}" if reason == STOP_ABORT and self._stop_reason() else reason
        res.reason, res.stop_t = said, round(t_hold, 6)
        # a read right after the hold: on a simulated bus this also pins the hold to the time it was sent
        first = self.read(res.joint)
        writer.write(t=self.now(), event="state", joint=res.joint, direction=res.direction, read=first)
        if reason != STOP_ABORT:
            self.clock.sleep(self.cfg.settle_s)
        res.stop = self.read_stop(res.joint) if first is not None else None
        writer.write(t=self.now(), event="stop", joint=res.joint, direction=res.direction, read=res.stop)
        if res.stop is not None and reason in LIMIT_REASONS:
            res.limit = limit_from_stop(res.stop, res.sign, res.inside)
        self.on_event(
            SweepEvent(
                "stop",
                res.joint,
                res.direction,
                t_hold,
                read=res.stop,
                message=reason + (f": limit {res.limit}" if res.limit is not None else ""),
            )
        )
        if reason == STOP_ABORT:
            raise self.aborted("stop requested: the arm was held where it stopped")

    def go_back(self, res: SweepResult, writer: RowWriter) -> None:
        """Minimum-jerk move of the swept joint from its stop back to its start pose."""
        self.writer = writer
        lo, hi = self.stored[res.joint]
        here = self.read(res.joint)
        if here is None:
            raise self.lost(res.joint, f"servo {res.joint} went silent after its sweep")
        # a read can sit a pulse or two beyond the stored limit (noise): never command that
        here = min(max(here, lo, self.span[0]), hi, self.span[1])
        traj = Trajectory(
            as_pose({res.joint: here}),
            as_pose({res.joint: res.start}),
            self.cfg.return_speed,
            0.0,
            period=self.cfg.period_s,
        )
        self.on_event(
            SweepEvent(
                "return",
                res.joint,
                res.direction,
                self.now(),
                cmd=res.start,
                message=f"back to {res.start} in {traj.T:.1f} s",
            )
        )
        t_start = self.clock.now()
        k = misses = 0
        while True:
            if self.abort():
                self.bus.hold()
                writer.write(t=self.now(), event="hold", joint=res.joint, direction=res.direction)
                raise self.aborted("stop requested on the way back: the arm was held")
            pulse = servo_pose(traj.at(k * self.cfg.period_s))[res.joint]
            self.send(res.joint, pulse)
            writer.write(t=self.now(), event="cmd", joint=res.joint, direction=res.direction, cmd=pulse)
            read = self.read(res.joint)
            writer.write(t=self.now(), event="state", joint=res.joint, direction=res.direction, read=read)
            misses = misses + 1 if read is None else 0
            if misses >= LOST_READS:  # the way back reads its servo too: never streamed to blind
                raise self.lost(res.joint, f"servo {res.joint} stopped answering on its way back")
            if traj.done(k * self.cfg.period_s):
                break
            k += 1
            self.clock.sleep_until(t_start + k * self.cfg.period_s)
        self.clock.sleep(self.cfg.settle_s)
        res.returned_to = self.read(res.joint)


def check_pose(pose: Mapping[int, int], limits: Mapping[int, tuple[int, int]]) -> str | None:
    """None when every read servo with a limit is inside it, else the reason."""
    reason = (
        pulse_limits(limits).check(as_pose({k: v for k, v in pose.items() if k in limits}))
        if limits
        else "no limits known"
    )
    return None if reason is None else reason.replace("joint", "servo", 1)


def sweep_plan(
    cfg: SweepConfig,
    span: tuple[int, int] | None,
    starts: Mapping[int, int] | None = None,
    stored: Mapping[int, tuple[int, int]] | None = None,
) -> MotionPlan:
    """The sweeps' plan. Without the start pose and the stored limits (before the bus opens) each joint's
    sweeps are taken to cover its whole span (down and up from any pose add up to it): an upper bound.
    With them, each sweep's travel to its stored limit; still an upper bound, as a sweep ends at a stall."""
    known = starts is not None and stored is not None
    total = sum(_joint_bound_s(cfg, joint, span, starts, stored) for joint in cfg.joints)
    where = "toward each servo's stored limit" + ("" if known else " (the whole span taken)")
    return MotionPlan(
        what=f"sweep, {len(cfg.joints) * len(cfg.directions)} sweep(s)",
        joints=f"servo(s) {', '.join(map(str, cfg.joints)) or 'none'}",
        motion=f"{' then '.join(cfg.directions)} from the current pose {where}, back to the start after "
        f"each; limits {cfg.inside} pulses inside each stop",
        speeds=f"{cfg.speed:g} pulses/s sweeping, {cfg.return_speed:g} pulses/s back",
        duration_s=total,
        at_most=True,
        extra="less where a joint stalls first",
    )


def _joint_bound_s(
    cfg: SweepConfig,
    joint: int,
    span: tuple[int, int] | None,
    starts: Mapping[int, int] | None,
    stored: Mapping[int, tuple[int, int]] | None,
) -> float:
    """One joint's sweeps at their longest: out at the sweep speed, the settle and the wait at the limit,
    back along a minimum-jerk move (whose time grows with its length)."""
    if starts is not None and stored is not None and joint in starts and joint in stored:
        travels = []
        for direction in cfg.directions:
            bound = stored[joint][1] if direction_sign(direction) > 0 else stored[joint][0]
            if span is not None:
                bound = min(max(bound, span[0]), span[1])
            travels.append(abs(bound - starts[joint]))
    else:
        travels = [abs(span[1] - span[0]) if span is not None else 0]
    waits = len(cfg.directions) * (cfg.settle_s + cfg.limit_wait_s)
    return sum(t / cfg.speed + duration_for(t, cfg.return_speed) for t in travels if t) + waits


def run_sweeps(
    bus: Bus,
    clock: Clock,
    config: SweepConfig,
    *,
    configured: Mapping[int, tuple[int, int]] | None = None,
    abort_requested: Abort = None,
    writer_factory: WriterFactory | None = None,
    on_event: Callable[[SweepEvent], None] | None = None,
    stop_reason: Callable[[], str | None] | None = None,
) -> SweepRun:
    """Sweep each configured joint in each direction; see the module doc.

    Refused (nothing moved) when a swept servo is not on the arm, a joint servo is silent, a stored limit
    cannot be read, the arm's pose is outside the current limits (stored intersected with `configured`), or
    a servo has its torque off (a limp joint sags once the arm moves off its rest, out of its limits).
    `writer_factory(result)` gives a context-managed writer (CSV) per sweep; `on_event` gets progress;
    `stop_reason()` names a requested stop ("Ctrl-C", "SIGTERM", ...) for the CSV's end line. A problem found
    after motion began ends the run as a fault (`exit_code` 1), a swept servo that stops answering as a
    lost link (`exit_code` 3); either way the arm is held first and the sweep's CSV ends naming the cause.
    Any other exception, Ctrl-C included, holds the arm before it propagates.
    """
    abort = abort_check(abort_requested)
    sweeper = _Sweeper(bus, clock, config, abort, on_event, stop_reason)
    unknown = [j for j in config.joints if j not in bus.ids]
    if unknown:
        raise Refused(
            f"servo(s) {', '.join(map(str, unknown))} not on this arm ({', '.join(map(str, bus.ids))})"
        )
    armpose = read_arm(bus, read=sweeper.read)
    stored_raw = {sid: bus.read_stored_limits(sid) for sid in bus.ids if sid in armpose.pose}
    missing = [j for j in config.joints if stored_raw.get(j) is None]
    if missing:
        raise Refused(f"stored limit of servo(s) {', '.join(map(str, missing))} could not be read")
    stored = {sid: pair for sid, pair in stored_raw.items() if pair is not None}
    sweeper.stored = stored
    limits = intersect_limits(stored, configured, bus.position_range)
    reason = check_pose(armpose.pose, limits)
    if reason:
        raise Refused(f"sweep refused: the arm starts outside the current limits: {reason}")
    limp = [sid for sid in bus.ids if sid in armpose.pose and bus.read_torque(sid) is False]
    if limp:
        raise Refused(
            f"sweep refused: servo(s) {', '.join(map(str, limp))} have torque off (relaxed): "
            "a limp joint sags out of its limits once the arm moves; hold the arm first "
            "(servotool servo hold)"
        )
    run = SweepRun(results=[], stored=stored, limits=limits, start_pose=dict(armpose.pose))
    plan = sweep_plan(config, bus.position_range, armpose.pose, stored)
    sweeper.on_event(SweepEvent("plan", t=sweeper.now(), message=plan.estimate(), seconds=plan.duration_s))
    factory = writer_factory or (lambda res: nullcontext(_NullWriter()))
    try:
        for joint in config.joints:
            for direction in config.directions:
                _one(bus, sweeper, run, joint, direction, limits, factory)
                sweeper.index += 1
    except SweepAborted:
        run.aborted = True
    except BaseException as exc:
        # hold first; if the link itself is gone the hold cannot go out, and the original error matters more
        with contextlib.suppress(Exception):
            bus.hold()
        if isinstance(exc, (Refused, SweepFault, SweepServoLost)):
            run.error, run.exit_code = str(exc), exc.exit_code
        else:
            raise
    run.bad_frames, run.bad_note = sweeper.reads.bad.count, sweeper.reads.bad.note()
    if not run.error and not run.aborted:
        sweeper.on_event(SweepEvent("done", t=sweeper.now(), message="all sweeps done"))
    try:
        run.found = merge_found(run.results, dict(configured or {}), stored)
    except ValueError as exc:
        run.error = run.error or str(exc)
    return run


def _one(
    bus: Bus,
    sweeper: _Sweeper,
    run: SweepRun,
    joint: int,
    direction: str,
    limits: Mapping[int, tuple[int, int]],
    factory: WriterFactory,
) -> None:
    cfg = sweeper.cfg
    armpose = read_arm(bus, read=sweeper.read)
    reason = check_pose(armpose.pose, limits)
    if reason:
        # the whole arm was checked before anything moved: a pose out of limits now came up during the run
        raise SweepFault(
            f"sweep of servo {joint} {direction} not started: the arm moved outside the current "
            f"limits during the run: {reason}; arm held"
        )
    sign = direction_sign(direction)
    lo, hi = run.stored[joint]
    bound = min(max(hi if sign > 0 else lo, sweeper.span[0]), sweeper.span[1])
    start = armpose.pose[joint]
    res = SweepResult(
        joint=joint,
        direction=direction,
        speed=cfg.speed,
        inside=cfg.inside,
        start=start,
        bound=bound,
        stored=(lo, hi),
    )
    run.results.append(res)
    sweeper.on_event(
        SweepEvent(
            "start",
            joint,
            direction,
            sweeper.now(),
            cmd=bound,
            read=start,
            message=f"servo {joint} {direction} from {start} toward stored limit {bound}",
        )
    )
    with _recording(factory, res) as writer, _named_interrupt(writer):
        if sign * (bound - start) <= 0:
            res.reason, res.stop = STOP_AT_LIMIT, start
            res.limit = limit_from_stop(start, sign, cfg.inside)
            sweeper.on_event(
                SweepEvent("stop", joint, direction, sweeper.now(), read=start, message=STOP_AT_LIMIT)
            )
            return
        sweeper.sweep(res, writer)
        if res.reason == STOP_SILENT:
            raise sweeper.lost(joint, f"servo {joint} stopped answering during its sweep")
        sweeper.go_back(res, writer)


@contextlib.contextmanager
def _named_interrupt(writer: RowWriter) -> Iterator[None]:
    """A requested stop closes the CSV as `interrupted: <what stopped it>` (Ctrl-C, SIGTERM, ...)."""
    try:
        yield
    except SweepAborted as exc:
        writer.interrupt(exc.reason)
        raise


class _NullWriter:
    def write(self, **row: Any) -> None:
        pass

    def interrupt(self, reason: str) -> None:
        pass


def sweep_config_dict(config: SweepConfig) -> dict:
    """Every resolved setting, for the CSV header."""
    c = config.criterion
    return {
        "mode": "sweep",
        "joints": list(config.joints),
        "directions": list(config.directions),
        "speed": config.speed,
        "inside": config.inside,
        "period_s": config.period_s,
        "return_speed": config.return_speed,
        "settle_s": config.settle_s,
        "limit_tol": config.limit_tol,
        "limit_wait_s": config.limit_wait_s,
        "stall_window_s": c.window_s,
        "stall_follow_s": c.follow_s,
        "stall_lead_min": c.lead_min,
        "stall_progress_frac": c.progress_frac,
        "stall_progress_min": c.progress_min,
    }


def directions_for(choice: str) -> tuple[str, ...]:
    """--direction up|down|both -> the directions in sweep order."""
    if choice == "both":
        return ("down", "up")
    if choice not in DIRECTIONS:
        raise SettingsError(f"--direction {choice!r}: want up, down or both")
    return (choice,)
