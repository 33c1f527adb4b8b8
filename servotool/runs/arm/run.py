"""The one sequence every streamed arm run follows, with its hook points.

    check settings -> take ownership -> real-time request -> open/prepare (enable, warm-up accepted)
      -> record (stream into a new CSV) -> finish (braked stop, servo end, end line) -> analyse

A run is an `ArmRun` around a job (`RunJob`): the job says what to stream (its settings checks and the plan
built from the start pose), the skeleton does everything else in the same order for every job. `lag --ramp`
(runs/arm/ramp.py, RampJob) and `step` (runs/arm/step.py, StepJob) are jobs.

Hook points (each a method of ArmRun, documented where it is):

* `check_settings()` runs before any device opens (the CLI calls it before opening the arm; `run()` calls
  it again, which is cheap and keeps library callers safe). Settings validation belongs here.
* `take_ownership(arm)` runs after connecting and before the arm is enabled: the one-owner check and the
  goals against the joint ranges from the measured pose (runs/arm/preflight.py). It runs BEFORE the safe
  ending is armed: a refused run must not end the servo mode of, or disable, an arm that another client
  drives.
* `finish(arm)` is the single way out. `run()` calls it from a `finally`, so every exit goes through it:
  a stream still going is brought to rest by the Streamer's braked stop, the CSV gets its end line, the
  servo mode is ended and the robot disabled unless keep. Signal deferral for the ending belongs here.

Other users:

* a campaign step: build one job per step and call `ArmRun(job, ...).run(arm)` for each on one open arm,
  with `keep=True` on every step but the last so the robot stays enabled between steps; each step writes its
  own CSV and returns its own RunResult (`to_dict()` for the campaign's JSON).
* a recorder session: a job whose plan holds the start pose for the session's length (`phase` "hold")
  records the arm's state at the stream's rate through the same safe ending; `analyse=False` skips the
  analysis of a file that is not a ramp or step run.

Nothing here prints: progress goes to the callbacks (RunCallbacks), notes into the result.
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from servotool.clock import Clock
from servotool.devices.arm import Arm, clock_of, device_cycle_of
from servotool.errors import signal_label
from servotool.io.csvlog import CsvLogWriter
from servotool.motion.defaults import A_MAX_DEG_S2, CMD_PERIOD_S, V_MAX_DEG_S
from servotool.runs.arm.preflight import on_connect
from servotool.runs.arm.prepare import Ending, Prepared, RunRefused, end_servo, prepare
from servotool.runs.arm.realtime import realtime
from servotool.runs.arm.settings import Ranges
from servotool.runs.arm.stream import StopSettings, Streamer, StreamPlan, TickInfo, open_run_csv
from servotool.runs.offline.analyze import FileAnalysis, analyze_written
from servotool.runs.outcome import RunStatus, StreamOutcome
from servotool.runs.signals import StopSignals

DEFAULT_WARMUP_TIMEOUT_S = 10.0


@dataclass
class RunOptions:
    """What every arm run needs besides its plan (s, deg/s^2, deg/s)."""

    cmd_period_s: float = CMD_PERIOD_S
    a_max: float = A_MAX_DEG_S2  # the braked stop's deceleration
    v_max: float = V_MAX_DEG_S  # the braked stop's speed cap
    keep: bool = False  # leave the robot enabled at the end
    realtime: bool = True  # ask for SCHED_FIFO while the run lasts
    warmup_timeout_s: float = DEFAULT_WARMUP_TIMEOUT_S
    settle_cycles: int = 0  # non-moving commands every stream ends on (StopSettings.settle_cycles)


@dataclass
class StreamSetup:
    """What a job streams, built from the prepared start pose: the plan, the CSV header's config and extra
    keys, whether the raw targets are recorded, the shaper (primed) and the guard, and a status line."""

    plan: StreamPlan
    config: dict[str, Any]
    header: dict[str, Any] = field(default_factory=dict)
    record_raw: bool = False
    shaper: Any = None
    guard: Any = None
    message: str = ""


class RunJob(Protocol):
    """One kind of run: its mode (the CSV's `mode`), its options, its checks and its plan."""

    mode: str

    @property
    def options(self) -> RunOptions: ...

    def check_settings(self) -> None:
        """Refuse (RunRefused) settings that are wrong whatever the arm; touches no device."""

    def check_arm(self, arm: Arm) -> None:
        """Refuse (RunRefused) what this open arm cannot do (joint count, speed limits); sends nothing."""

    def build(self, arm: Arm, prep: Prepared) -> StreamSetup:
        """The stream to run from the prepared pose; may refuse (RunRefused) before anything streams."""

    def goal_problems(self, ranges: Ranges | None, start: Sequence[float] | None) -> list[str]:
        """Every goal of the run from `start` (deg) that lies outside `ranges` (per joint), one line each."""


@dataclass
class RunCallbacks:
    """Progress of a run, for a user interface: each must return quickly (on_tick and on_pass run inside
    the streaming loop)."""

    on_tick: Callable[[TickInfo], None] | None = None
    on_pass: Callable[[int], None] | None = None
    on_status: Callable[[str], None] | None = None

    def say(self, message: str) -> None:
        if self.on_status is not None:
            self.on_status(message)


@dataclass
class RunResult:
    """A finished run: its CSV, how the stream ended, the analysis of the file (or why there is none) and
    notes (fault resets, failed servo end, ...)."""

    path: Path
    outcome: StreamOutcome
    analysis: FileAnalysis | None
    analysis_error: str | None = None
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """The JSON form every command prints (keys fixed: scripts read them); the CLI appends `plot`."""
        return {
            "run": self.outcome.to_dict(),
            "notes": self.notes,
            "analysis": self.analysis.to_dict() if self.analysis else None,
            "analysis_error": self.analysis_error,
        }


def check_pace(arm: Arm, period_s: float) -> None:
    """RunRefused (nothing moved) when the arm's controller sets the pace (PacedByDevice) and the run's
    command period is not its cycle."""
    cycle = device_cycle_of(arm)
    if cycle is not None and abs(period_s - cycle) > 1e-9:
        raise RunRefused(
            f"--cmd-ms {period_s * 1e3:g}: {arm.url} sets the pace itself, one setpoint every "
            f"{cycle * 1e3:g} ms cycle (leave --cmd-ms out); nothing was moved"
        )


class ArmRun:
    """One run of `job` on an open arm; see the module docstring for the stages and hook points."""

    def __init__(
        self,
        job: RunJob,
        *,
        clock: Clock,
        out_dir: Path,
        command: str | None = None,
        callbacks: RunCallbacks | None = None,
        analyse: bool = True,
        signals: StopSignals | None = None,
    ) -> None:
        self.job = job
        self.clock = clock
        self.out_dir = Path(out_dir)
        self.command = command
        self.callbacks = callbacks or RunCallbacks()
        self.analyse_after = analyse
        self.signals = signals  # the command's stop signals: SIGTERM/SIGHUP end the stream like Ctrl-C
        self.notes: list[str] = []
        self._writer: CsvLogWriter | None = None
        self._streamer: Streamer | None = None
        self._outcome: StreamOutcome | None = None
        self._cut_short: BaseException | None = None

    # -- stage 1: check settings (hook) --------------------------------------------------------------------

    def check_settings(self) -> None:
        """HOOK, before any device opens: refuse settings that are wrong whatever the arm (RunRefused or
        SettingsError, exit 2). Pure: touches no device, no file."""
        self.job.check_settings()

    # -- stage 3: ownership (hook) -------------------------------------------------------------------------

    def take_ownership(self, arm: Arm) -> None:
        """HOOK, after connecting and before the arm is enabled: refuse (Refused) when someone else owns the
        arm or a goal from the measured pose leaves the joint ranges. Sends nothing. (The host-wide device
        lock is the caller's, before opening: runs/ownership.claim.)"""
        on_connect(arm, self.clock, self.job.goal_problems)

    # -- stage 4: open / prepare -----------------------------------------------------------------------------

    def open_and_prepare(self, arm: Arm) -> Prepared:
        """Enable, servo mode, warm-up: returns once the controller executes the held pose (DeviceError when
        it does not within the warm-up timeout; nothing recorded then)."""
        opts = self.job.options
        self.callbacks.say("warming up: waiting for the controller to execute the stream")
        prep = prepare(arm, self.clock, opts.cmd_period_s, opts.warmup_timeout_s)
        self.notes += prep.notes
        return prep

    # -- stage 5: record -------------------------------------------------------------------------------------

    def record(self, arm: Arm, prep: Prepared, realtime_outcome: str) -> StreamOutcome:
        """Build the job's stream and stream it into a new CSV (left open: `finish` closes it)."""
        opts = self.job.options
        setup = self.job.build(arm, prep)
        header = {"realtime": realtime_outcome, "warm_up_s": round(prep.warm_up_s, 3), **setup.header}
        self._writer = open_run_csv(
            arm,
            mode=self.job.mode,
            out_dir=self.out_dir,
            config=setup.config,
            header=header,
            command=self.command,
            record_raw=setup.record_raw,
        )
        if setup.message:
            self.callbacks.say(setup.message)
        self._streamer = Streamer(
            arm,
            self.clock,
            self._writer,
            period_s=opts.cmd_period_s,
            shaper=setup.shaper,
            guard=setup.guard,
            stop=StopSettings(a_max=opts.a_max, v_max=opts.v_max, settle_cycles=opts.settle_cycles),
            record_raw=setup.record_raw,
            on_tick=self.callbacks.on_tick,
            on_pass=self.callbacks.on_pass,
            signals=self.signals,
            state_period_s=prep.state_period_s,
        )
        self._outcome = self._streamer.run(setup.plan)
        return self._outcome

    # -- stage 6: finish (the single way out) ----------------------------------------------------------------

    def finish(self, arm: Arm) -> list[str]:
        """HOOK, the one way every run ends, from a `finally`: bring a stream still going to rest through the
        braked stop, close the CSV with its end line (complete, or interrupted with the reason), end servo
        mode and disable unless keep. Never raises for a device failure: returns notes. A stop signal arriving
        meanwhile is held back (counted, decides the exit code) so nothing cuts the safe ending short.
        Servo mode is ended (and the robot disabled) before the end line is written, each call tried once; a
        stop that finds the link lost makes the run a lost link, and after a lost link the reason says when
        that stop could not be confirmed and what the arm may still be."""
        deferred = self.signals.deferring(raise_after=False) if self.signals else contextlib.nullcontext()
        ending: Ending | None = None
        with deferred:
            try:
                self._stop_stream()
                if self._outcome is not None:
                    # the stop is tried before the end line (after a loss each call is bounded by the
                    # client's short timeout), so that the end line can say whether it was confirmed, and
                    # a link the stop finds lost (a command port gone while the state stream went on) is
                    # recorded as lost
                    ending = end_servo(arm, self.job.options.keep)
                    self._lost_at_end(ending)
                    if self._outcome.link_lost:
                        self._say_unconfirmed(ending)
                self._close_csv()
            finally:
                if ending is None:
                    ending = end_servo(arm, self.job.options.keep)
        return ending.notes

    def _lost_at_end(self, ending: Ending) -> None:
        """A stream that ended whole, or early for another reason, whose stop found the link lost: a lost
        link all the same (a complete run becomes one: exit 3)."""
        outcome = self._outcome
        if outcome is None or outcome.link_lost or ending.lost is None:
            return
        outcome.link_lost = True
        if outcome.complete:
            outcome.status, outcome.reason = RunStatus.CONNECTION_LOST, f"connection lost: {ending.lost}"

    def _say_unconfirmed(self, ending: Ending) -> None:
        """Add to the reason of a run whose link was lost that its stop could not be confirmed, and why, and
        in what state the arm may be left."""
        outcome = self._outcome
        if outcome is None or ending.confirmed:
            return
        why = "; ".join(ending.unconfirmed)
        left = ""
        if ending.disable_unconfirmed:
            left = "; the arm may still be enabled"
            left += " and in servo mode" if ending.servo_unconfirmed else ""
        elif ending.servo_unconfirmed:
            left = "; the arm may still be in servo mode"
        outcome.reason = f"{outcome.reason or outcome.status}{left}; the stop could not be confirmed: {why}"

    def _stop_stream(self) -> None:
        streamer = self._streamer
        if streamer is None or not streamer.streaming:
            return
        reason = "the run was cut short"
        if self._cut_short is not None:
            reason = f"{reason}: {type(self._cut_short).__name__} {self._cut_short}".rstrip()
        outcome = StreamOutcome(status=RunStatus.ERROR, reason=reason, ticks_sent=0)
        streamer.braked_stop(outcome)
        self._outcome = streamer.summarise(outcome)

    def _stop_reason(self) -> str | None:
        """The stop signal that cut the run short or came while it ended ("Ctrl-C", "SIGTERM", "SIGHUP"),
        else None."""
        if isinstance(self._cut_short, KeyboardInterrupt):
            return signal_label(self._cut_short)
        return self.signals.reason() if self.signals is not None else None

    def _close_csv(self) -> None:
        """Write the end line: complete, or interrupted with the reason. A stop signal that came as the stream
        ended (or while it is being closed) is named, as the exit code will name it."""
        if self._writer is None:
            return
        outcome, by_signal = self._outcome, self._stop_reason()
        if outcome is None:
            self._writer.interrupt(
                by_signal or f"no stream: {type(self._cut_short).__name__} {self._cut_short or ''}"
            )
        elif not outcome.complete:
            if by_signal and outcome.status != RunStatus.INTERRUPTED:
                # a lost link's stop comes before the end line: a signal during it decides the exit code
                outcome.reason = f"{outcome.reason or outcome.status}; {by_signal} came as the run ended"
            self._writer.interrupt(outcome.reason or str(outcome.status))
        elif by_signal:  # every tick was sent, then the signal came: the record says so, as the exit does
            self._outcome = dataclasses.replace(outcome, status=RunStatus.INTERRUPTED, reason=by_signal)
            self._writer.interrupt(by_signal)
        try:
            self._writer.close()
        except OSError as exc:  # a full disk: the stop is done; the file ends without its end line
            self.notes.append(
                f"the recording's end line could not be written ({exc.strerror or exc}): "
                "it reads back as interrupted"
            )

    # -- the whole run ---------------------------------------------------------------------------------------

    def run(self, arm: Arm) -> RunResult:
        """Check, prepare, record, finish and analyse; see the module docstring. Raises RunRefused before
        anything moves, DeviceError when the arm cannot be prepared (nothing recorded then). The robot is
        left out of servo mode, and disabled unless keep, whatever happens."""
        self.check_settings()
        self.job.check_arm(arm)
        check_pace(arm, self.job.options.cmd_period_s)
        self.clock = clock_of(arm) or self.clock  # an arm in simulated time moves only on its own clock
        self.take_ownership(arm)  # before the safe ending is armed: a refusal undoes nothing on the arm
        with realtime(self.job.options.realtime) as rt:
            try:
                prep = self.open_and_prepare(arm)
                self.record(arm, prep, rt)
            except BaseException as exc:
                self._cut_short = exc
                raise
            finally:
                self.notes += self.finish(arm)
        assert self._writer is not None and self._outcome is not None
        outcome = self._outcome  # as finish left it: a signal while it ended is named there
        path = Path(self._writer.path)
        self.notes += outcome.notes
        analysis, error = self.analyse(path)
        return RunResult(
            path=path, outcome=outcome, analysis=analysis, analysis_error=error, notes=self.notes
        )

    # -- stage 7: analyse ------------------------------------------------------------------------------------

    def analyse(self, path: Path) -> tuple[FileAnalysis | None, str | None]:
        """Read the CSV back and analyse it, so a live run reports exactly what `servotool analyze`
        recomputes from the file; (None, why) when it holds too little."""
        if not self.analyse_after:
            return None, "not analysed"
        return analyze_written(path)
