"""The record loop: monitor a device at ~30 Hz on absolute deadlines, feed the flight recorder, publish
each capture as it is ready. Read only: it never commands motion, torque, EEPROM or a REBOOT.

Frame k starts at start + k * period (clock.sleep_until; a late frame skips the deadlines it missed and
counts them as overruns). Each frame: the recorder's plan, the fast sweep, the context sweep when the
recorder wants one, the status read when due, then -- where a control loop would write its goals -- the
captures whose tail is complete are published. Connecting only inspects the destination (its size and any
leftover temporary files, as warnings); the folder is created by the first publication.

A device where no axis answers for a second (silence.py) is a lost device; an axis that stops answering,
or answers again, is a warning.

Every ending (duration reached, a stop request from Ctrl-C or SIGTERM, a lost device, a capture that could
not be written -- a full disk, a file where the folder was --, an error of our own) goes through one path:
the recorder is told the connection is closing, the device is closed (the driver's disconnect attempt), then
any capture still open is published with the tail it really observed.
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
import signal
import threading
from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from servotool.clock import Clock
from servotool.devices.arm import DeviceError as ArmDeviceError
from servotool.errors import SIGNAL_EXITS, DeviceError, ExitCode, SettingsError, signal_name
from servotool.io.captures import inspect_destination, publish_capture
from servotool.readings import BadFrames
from servotool.recorder import Capture, FlightRecorder, RecorderEvent, RecorderSettings, Sweep
from servotool.recorder.frames import AxisKey
from servotool.recorder.source import StatusUnsupported, TelemetrySource
from servotool.runs.readable import device_readable
from servotool.runs.recorder.silence import Silence
from servotool.runs.signals import StopSignals

COMPLETE = "complete"
INTERRUPTED = "interrupted"
CONNECTION_LOST = "connection-lost"
DEVICE_ERROR = "device-error"
PUBLISH_FAILED = "publish-failed"  # a capture could not be written (a full disk, the folder made a file)


@dataclass(frozen=True)
class RecordSettings:
    """duration_s: how long to record (None: until stopped); rate_hz: the loop rate; dest: capture folder."""

    dest: Path
    duration_s: float | None = None
    rate_hz: float = 30.0
    recorder: RecorderSettings = field(default_factory=RecorderSettings)

    def __post_init__(self) -> None:
        if self.duration_s is not None and not (math.isfinite(self.duration_s) and self.duration_s > 0):
            raise SettingsError(f"--duration must be a number of seconds > 0, not {self.duration_s}")
        if not (math.isfinite(self.rate_hz) and 1.0 <= self.rate_hz <= 1000.0):
            raise SettingsError(f"rate must be 1-1000 Hz, not {self.rate_hz}")


@dataclass
class PublishedCapture:
    """A capture on disk: its path, header, and how long publishing it took (ms, for the log: the file
    cannot hold its own write time)."""

    path: Path
    header: dict[str, Any]
    write_ms: float = 0.0


@dataclass
class RecordProgress:
    """What the loop saw this frame, for a live view (t: s since the start)."""

    t: float
    frames: int
    fast: Sweep | None
    context: Sweep | None
    latched: dict[Any, int]
    window_open: bool
    fast_count: int
    context_count: int
    captures: list[PublishedCapture]
    events: list[RecorderEvent]
    overruns: int
    # each axis's newest answered sample and its time (an axis silent in the newest sweep shows it, stale)
    last_answers: dict[Any, tuple[float, Any]] = field(default_factory=dict)


@dataclass
class RecordOutcome:
    """How the loop ended: status (complete, interrupted, connection-lost, device-error, publish-failed),
    reason, counts."""

    status: str
    reason: str | None
    frames: int
    duration_s: float
    overruns: int
    captures: list[PublishedCapture]
    events: list[RecorderEvent]
    warnings: list[str]
    publish_errors: list[str]
    latched: dict[Any, int]
    signal: int | None = None
    t0: float = 0.0  # the clock's time at the start (event times minus t0: seconds into the recording)
    # sweeps with a value no device could report: those values were left out of the recording
    bad_frames: int = 0
    bad_note: str | None = None

    @property
    def exit_code(self) -> int:
        if self.status == INTERRUPTED:
            return SIGNAL_EXITS.get(self.signal or signal.SIGINT, ExitCode.INTERRUPTED)
        if self.status in (CONNECTION_LOST, DEVICE_ERROR):
            return ExitCode.DEVICE
        if self.status == PUBLISH_FAILED:
            return ExitCode.FAULT
        return ExitCode.DONE


class StopRequest:
    """A stop flag another thread (or a test) can set; the loop checks it every frame."""

    def __init__(self) -> None:
        self._event = threading.Event()
        self.signal: int | None = None

    def set(self, signum: int | None = None) -> None:
        if self.signal is None:
            self.signal = signum
        self._event.set()

    def __bool__(self) -> bool:
        return self._event.is_set()


class _Loop:
    """One recording session's state; run_record drives it."""

    def __init__(
        self,
        source: TelemetrySource,
        clock: Clock,
        settings: RecordSettings,
        on_progress: Callable[[RecordProgress], None] | None,
        publish: Callable[[Path, Capture], Path],
        on_warning: Callable[[str], None] | None = None,
    ) -> None:
        self.source, self.clock, self.settings = source, clock, settings
        self.on_warning = on_warning
        self.warnings: list[str] = []
        self.dest_seen = settings.dest.is_dir()  # once it exists, its disappearing is news
        rec_settings = settings.recorder
        if source.status_every_frame:  # the status rides in every frame: no poll to schedule or defer
            rec_settings = dataclasses.replace(rec_settings, status_period_s=0.0)
        rec_settings = cycle_ring(rec_settings, source.sweep_rate_hz)
        self.rec = FlightRecorder(rec_settings)
        self.on_progress = on_progress
        self.publish = publish
        # what a publication runs under: run_record makes signals only counted there, so a capture the
        # recorder handed over is published and reported whole whatever comes (a third Ctrl-C included)
        self.shield: Callable[[], AbstractContextManager[Any]] = contextlib.nullcontext
        self.captures: list[PublishedCapture] = []
        self.events: list[RecorderEvent] = []
        self.publish_errors: list[str] = []
        self.frames = 0
        self.overruns = 0
        self.last_fast: Sweep | None = None
        self.last_context: Sweep | None = None
        self.silence = Silence(clock.now())
        self.readable = device_readable(source.url)
        self.bad = BadFrames()

    def warn(self, text: str) -> None:
        self.warnings.append(text)
        if self.on_warning is not None:
            self.on_warning(text)

    def publish_all(self, caps: list[Capture]) -> None:
        """Publish each capture; a failure is recorded (the loop then stops) and the next one is tried. A
        destination removed since it existed is made again (the evidence first) and said in a warning."""
        dest = self.settings.dest
        for cap in caps:
            removed = self.dest_seen and not dest.is_dir()
            t0 = self.clock.now()
            with self.shield():
                try:
                    path = self.publish(dest, cap)
                except OSError as exc:
                    why = "not a folder" if dest.exists() and not dest.is_dir() else exc.strerror or str(exc)
                    self.publish_errors.append(
                        f"capture {cap.name} could not be published in {dest} "
                        f"({why}); recording stopped, captures already published are "
                        "kept"
                    )
                    continue
                self.captures.append(PublishedCapture(path, cap.header, (self.clock.now() - t0) * 1000.0))
            self.dest_seen = True
            if removed:
                self.warn(
                    f"capture folder {dest} was removed during the recording: made again for {path.name}"
                )

    def checked(self, sweep: Sweep | None) -> Sweep | None:
        """The sweep with every position or target no device could report left out (None), counted as one
        bad frame; the first one is said in a warning as it comes."""
        if sweep is None:
            return None
        axes = dict(sweep.axes)
        bad = False
        for axis, sample in sweep.axes.items():
            if sample is None:
                continue
            ch = _channel(axis)
            values = {"position": sample.position, "target": sample.target}
            wrong = {k: v for k, v in values.items() if v is not None and not self.readable.admits(v, ch)}
            if wrong:
                bad = True
                name, value = next(iter(wrong.items()))
                self.bad.add(f"axis {axis} {name}", value)
                axes[axis] = dataclasses.replace(sample, **dict.fromkeys(wrong))
        if not bad:
            return sweep
        if self.bad.count == 1:
            self.warn(f"a reading no device could report was left out ({self.bad.examples[0]})")
        return dataclasses.replace(sweep, axes=axes)

    def frame(self) -> None:
        src, rec = self.source, self.rec
        now = self.clock.now()
        plan = rec.plan(now, leg_sweep=True)
        answered: dict[Any, bool] = {}  # which axes answered this frame (an axis not read is not in it)
        fast = src.read_fast()
        for sweep in [fast] if isinstance(fast, Sweep) else fast or ():
            checked = self.checked(sweep)
            if checked is None:
                continue
            rec.on_sweep(checked)
            self.last_fast = checked
            _book(answered, checked.axes)
        if plan.context:
            ctx = self.checked(src.read_context())
            if ctx is not None:
                rec.on_sweep(ctx)
                self.last_context = ctx
                _book(answered, ctx.axes)
        if plan.status or src.status_every_frame:
            try:
                answers = src.read_status()
            except StatusUnsupported as exc:
                rec.status_unsupported(self.clock.now(), str(exc))
            else:
                rec.on_status(self.clock.now(), answers)
                _book(answered, answers)
        # read only: no goals are written here; this is where a control loop writes its goals
        self.publish_all(rec.after_goal_write(self.clock.now()))
        self.frames += 1
        for text in self.silence.frame(self.clock.now(), answered):  # DeviceSilent: the device is lost
            self.warn(text)

    def progress(self, t0: float, new_events: list[RecorderEvent]) -> RecordProgress:
        rec = self.rec
        return RecordProgress(
            self.clock.now() - t0,
            self.frames,
            self.last_fast,
            self.last_context,
            rec.latched,
            rec.window_open,
            rec.fast_count,
            rec.context_count,
            list(self.captures),
            new_events,
            self.overruns,
            rec.last_answers,
        )

    def loop(self, stopped: Callable[[], bool]) -> None:
        period = 1.0 / self.settings.rate_hz
        t0 = self.clock.now()
        end = math.inf if self.settings.duration_s is None else t0 + self.settings.duration_s
        k = 0
        # a capture that could not be written ends the recording: the next one would be lost the same way
        while not stopped() and not self.publish_errors and self.clock.now() < end:
            self.frame()
            new = self.rec.drain_events()
            self.events.extend(new)
            if self.on_progress is not None:
                self.on_progress(self.progress(t0, new))
            k += 1
            deadline = t0 + k * period
            now = self.clock.now()
            if now > deadline + period:
                missed = math.floor((now - deadline) / period)
                self.overruns += missed
                k += missed
                deadline = t0 + k * period
            self.clock.sleep_until(min(deadline, end))


def _book(answered: dict[Any, bool], values: Mapping[Any, Any]) -> None:
    for axis, value in values.items():
        answered[axis] = answered.get(axis, False) or value is not None


def cycle_ring(settings: RecorderSettings, sweep_rate_hz: float | None) -> RecorderSettings:
    """The recorder's settings for a source handing over `sweep_rate_hz` sweeps a second (None: one a
    frame, unchanged): a fast ring keeping the same seconds of lead-up as the nominal one."""
    if sweep_rate_hz is None or sweep_rate_hz <= settings.nominal_rate_hz:
        return settings
    return dataclasses.replace(settings, fast_len=math.ceil(settings.fast_span_s * sweep_rate_hz))


def _publish(dest: Path, cap: Capture) -> Path:
    return publish_capture(dest, cap.name, cap.header, cap.samples)


def _stopped(stop: StopRequest, signals: StopSignals) -> bool:
    if signals.requested is not None:
        stop.set(signals.requested)
    return bool(stop)


def run_record(
    source: TelemetrySource,
    clock: Clock,
    settings: RecordSettings,
    *,
    stop: StopRequest | None = None,
    on_progress: Callable[[RecordProgress], None] | None = None,
    on_warning: Callable[[str], None] | None = None,
    publish: Callable[[Path, Capture], Path] = _publish,
    handle_signals: bool = True,
) -> RecordOutcome:
    """Record until the duration passes, `stop` is set, a signal comes (SIGINT, SIGTERM, SIGHUP: handled
    while the loop runs, in the main thread) or the device is lost; close the source whatever happens and
    publish what is still open after closing it. Never raises for a device failure or a signal: the
    outcome says how it ended and carries the exit code (3 lost device, 130/143/129 signals)."""
    stop = stop if stop is not None else StopRequest()
    loop = _Loop(source, clock, settings, on_progress, publish, on_warning)
    warnings = inspect_destination(settings.dest).warnings()
    for w in warnings:
        if on_warning is not None:
            on_warning(w)
    t0 = clock.now()
    status, reason = COMPLETE, None
    loop.rec.connect(t0, source.describe())
    with StopSignals(enabled=handle_signals) as signals:
        loop.shield = lambda: signals.deferring(raise_after=False)
        try:
            with signals.latching():
                loop.loop(lambda: _stopped(stop, signals))
            if _stopped(stop, signals):
                status, reason = INTERRUPTED, _signal_reason(stop.signal)
        except KeyboardInterrupt as exc:  # a third signal, or Ctrl-C outside the handlers
            stop.set(getattr(exc, "signum", signal.SIGINT))
            status, reason = INTERRUPTED, _signal_reason(stop.signal)
        except (DeviceError, ArmDeviceError) as exc:
            status, reason = CONNECTION_LOST, str(exc)
        finally:
            with signals.deferring(raise_after=False):
                loop.rec.begin_disconnect(clock.now())
                try:
                    source.close()  # the driver's disconnect attempt; the record loop never switches torque
                finally:  # even when closing raised: the evidence is flushed
                    loop.publish_all(loop.rec.on_disconnect(clock.now(), torque_off=None))
                    loop.events.extend(loop.rec.drain_events())
    if status == COMPLETE and loop.publish_errors:  # in the loop, or the capture still open at the ending
        status, reason = PUBLISH_FAILED, loop.publish_errors[0]
    return RecordOutcome(
        status,
        reason,
        loop.frames,
        clock.now() - t0,
        loop.overruns,
        loop.captures,
        loop.events,
        warnings + loop.warnings,
        loop.publish_errors,
        loop.rec.latched,
        stop.signal if status == INTERRUPTED else None,
        t0,
        loop.bad.count,
        loop.bad.note(),
    )


def _channel(axis: AxisKey) -> int:
    """The reading channel of an axis: an arm's joint `jN` is channel N-1; a bus's servo (an id) is read
    against the one span every servo shares (-1)."""
    if isinstance(axis, str) and axis[:1] == "j" and axis[1:].isdigit():
        return int(axis[1:]) - 1
    return -1


def _signal_reason(signum: int | None) -> str:
    if signum is None:
        return "stopped"
    return signal_name(signum)
