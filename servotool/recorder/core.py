"""`FlightRecorder`: the pure core a control loop embeds. No I/O, no clock of its own: every call is given
the time, and captures come back as data for the caller to publish.

One frame of the host loop, in order:

    plan = rec.plan(now, leg_sweep=True)      # status poll due? context (neck) read wanted?
    ... read the legs; rec.on_sweep(sweep)    # fast ring (neck sweeps: held for the context ring)
    ... if plan.status: rec.on_status(now, {axis: bits or None})
    ... write the goals
    for cap in rec.after_goal_write(now): publish(cap)

Disconnect: `rec.begin_disconnect(now)` (parking may still run frames; captures are held), then the driver's
torque-off / disconnect attempt, then `rec.on_disconnect(now, torque_off=ok)` returns what to publish, an
open window flushed early with the shorter tail it really observed.

Latch rules (each tested on scripted telemetry):
* each axis's first answer on a connection is its baseline: a latch present then is logged, no capture;
* a later non-zero answer on an axis known clean opens a capture, or joins the open one while its window
  (tail_s after detection, extended by joiners up to max_tail_s) is still open; after it closes a new axis
  opens another; at most max_captures per connection;
* more bits on an already latched axis are logged, never captured;
* recovery needs that axis's own zero answer: silence (None) or an absent axis is no evidence;
* known latches survive reconnects (an unchanged latch is not a new incident); nothing here ever asks for
  a REBOOT.

Groups are independent: a servo that does not answer is None in its own sweep (its rows are stale, with
the time it last answered in `last_answers`), and never keeps another group out. A context entry is taken
at the end of the frame whose plan asked for the context read, so a frame made long by a silent servo's
timeouts cannot take the entry before the neck was read; an entry taken between reads (a trigger) holds
the newest neck sweep read, stamped with its own time.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable, Mapping
from typing import Any

from servotool.recorder.capture import Capture, ContextEntry, OpenCapture, TriggerAxis, assemble
from servotool.recorder.frames import AxisKey, AxisSample, FramePlan, RecorderEvent, Sweep
from servotool.recorder.settings import RecorderSettings


class FlightRecorder:
    """Bounded rings, latch tracking and capture assembly. Memory is bounded by the ring counts alone."""

    def __init__(
        self, settings: RecorderSettings | None = None, wall_time: Callable[[], float] = time.time
    ) -> None:
        self.settings = settings or RecorderSettings()
        self._wall_time = wall_time
        s = self.settings
        self._fast: deque[Sweep] = deque(maxlen=s.fast_len)
        self._context: deque[ContextEntry] = deque(maxlen=s.context_len)
        self._log: deque[RecorderEvent] = deque(maxlen=s.event_log_len)
        self._new: deque[RecorderEvent] = deque(maxlen=s.event_log_len)
        self._latched: dict[AxisKey, int] = {}  # survives reconnects
        self._baselined: set[AxisKey] = set()
        self._last_clean: dict[AxisKey, float] = {}
        self._open: OpenCapture | None = None
        self._ready: list[Capture] = []
        self._device: dict[str, Any] = {}
        self._connected = False
        self._closing = False
        self.disabled: str | None = None
        self.captures_opened = 0
        self._status_due = 0.0
        self._deferred = 0
        self._context_due = 0.0
        self._last_legs: Sweep | None = None
        self._last_neck: Sweep | None = None
        self._context_planned: bool | None = None  # None: no plan() call yet (a caller without plans)
        self._last_answers: dict[AxisKey, tuple[float, AxisSample]] = {}

    # --- lifecycle ------------------------------------------------------------------------------------------

    def connect(self, now: float, device: Mapping[str, Any] | None = None) -> None:
        """Start a connection: empty rings, no baselines, a fresh capture budget; known latches stay."""
        self._fast.clear()
        self._context.clear()
        self._baselined.clear()
        self._last_clean.clear()
        self._open, self._ready = None, []
        self._device = dict(device or {})
        self._connected, self._closing = True, False
        self.disabled = None if self.settings.enabled else "recording is switched off (settings)"
        self.captures_opened = 0
        self._status_due = now  # the baseline poll is due at once
        self._deferred = 0
        self._context_due = now + self.settings.context_period_s
        self._last_legs = self._last_neck = None
        self._context_planned = None
        self._last_answers.clear()

    def status_unsupported(self, now: float, reason: str) -> None:
        """The device cannot report hardware errors: recording is off for this connection."""
        self.disabled = reason
        self._open = None
        self._event(now, "disabled", None, 0, f"recording disabled for this connection: {reason}")

    def begin_disconnect(self, now: float) -> None:
        """From now on captures are held (parking frames may still run) until `on_disconnect`."""
        self._closing = True

    def on_disconnect(self, now: float, torque_off: bool | None = None) -> list[Capture]:
        """Call after the driver's torque-off / disconnect attempt (torque_off: True done, False failed,
        None not attempted). Returns every capture to publish, an open window flushed with its real tail."""
        self._close_due(now)
        if self._open is not None:
            self._finish(now, "disconnect", torque_off)
        out, self._ready = self._ready, []
        self._connected = self._closing = False
        return out

    # --- one frame ------------------------------------------------------------------------------------------

    def plan(self, now: float, leg_sweep: bool = True) -> FramePlan:
        """What to read this frame besides the legs. Call once per frame: a due status poll waits for a frame
        without a leg sweep, but at most max_defer_frames frames."""
        if self.disabled is not None or not self._connected:
            return FramePlan()
        s = self.settings
        status = False
        if s.status_period_s == 0:
            status = True
        elif now >= self._status_due:
            if not leg_sweep or self._deferred >= s.max_defer_frames:
                status = True
            else:
                self._deferred += 1
        self._context_planned = now >= self._context_due
        return FramePlan(status=status, context=self._context_planned)

    def on_sweep(self, sweep: Sweep) -> None:
        """Leg sweeps go to the fast ring; context groups (the neck) wait for the next context entry."""
        if self.disabled is not None:
            return
        if sweep.group in self.settings.context_groups:
            self._last_neck = sweep
        else:
            self._fast.append(sweep)
            self._last_legs = sweep
        for axis, sample in sweep.axes.items():
            if sample is not None:
                self._last_answers[axis] = (sweep.t, sample)

    def on_status(self, now: float, answers: Mapping[AxisKey, int | None]) -> None:
        """Hardware-error answers of one poll (axis -> bits; None or absent: no answer, no evidence)."""
        if self.disabled is not None or not self._connected:
            return
        self._status_due = now + self.settings.status_period_s
        self._deferred = 0
        self._close_due(now)
        new = [axis for axis, bits in answers.items() if bits is not None and self._answer(now, axis, bits)]
        if new:
            self._context.append(self._context_entry(now, trigger=True))
        for axis in new:
            self._trigger(now, axis)

    def after_goal_write(self, now: float) -> list[Capture]:
        """End of frame, after the goals went out: the context timer, and captures whose tail is complete
        (held while disconnecting). The caller publishes what comes back."""
        if self.disabled is not None or not self._connected:
            return []
        # the periodic entry closes the frame that read the context for it (see the module docstring)
        due = self._context_planned if self._context_planned is not None else now >= self._context_due
        self._context_planned = False
        if due:
            self._context.append(self._context_entry(now))
            self._context_due += self.settings.context_period_s
            if self._context_due <= now:
                self._context_due = now + self.settings.context_period_s
        self._close_due(now)
        if self._closing:
            return []
        out, self._ready = self._ready, []
        return out

    # --- views ----------------------------------------------------------------------------------------------

    @property
    def latched(self) -> dict[AxisKey, int]:
        """Known hardware-error latches (axis -> bits), kept across reconnects."""
        return dict(self._latched)

    @property
    def window_open(self) -> bool:
        return self._open is not None

    @property
    def fast_count(self) -> int:
        return len(self._fast)

    @property
    def context_count(self) -> int:
        return len(self._context)

    @property
    def last_answers(self) -> dict[AxisKey, tuple[float, AxisSample]]:
        """Each axis's newest answered sample and its time, this connection: what a view shows, marked
        stale, for an axis silent in the newest sweep."""
        return dict(self._last_answers)

    def last_clean(self, axis: AxisKey) -> float | None:
        return self._last_clean.get(axis)

    def drain_events(self) -> list[RecorderEvent]:
        """Events since the last drain, oldest first (bounded: the oldest are dropped first)."""
        out = list(self._new)
        self._new.clear()
        return out

    # --- rules ----------------------------------------------------------------------------------------------

    def _answer(self, now: float, axis: AxisKey, bits: int) -> bool:
        """Apply one axis's answer; True when it is a new latch that may open or join a capture."""
        prior = self._latched.get(axis, 0)
        if axis not in self._baselined:
            self._baselined.add(axis)
            if bits:
                self._latched[axis] = bits
                kind = "still-latched" if prior else "baseline-latch"
                text = f"axis {axis} latched 0x{bits:02x} at connection: no capture"
                self._event(now, kind, axis, bits, text)
                return False
        if not bits:
            if prior:
                del self._latched[axis]
                self._event(now, "recovered", axis, 0, f"axis {axis} answered no hardware error")
            self._last_clean[axis] = now
            return False
        if not prior:
            self._latched[axis] = bits
            return True
        if bits != prior:
            kind = "more-bits" if bits & ~prior else "changed"
            self._latched[axis] = bits | prior if kind == "more-bits" else bits
            self._event(now, kind, axis, bits, f"axis {axis} latched 0x{prior:02x} now reports 0x{bits:02x}")
        return False

    def _trigger(self, now: float, axis: AxisKey) -> None:
        s = self.settings
        trig = TriggerAxis(axis, self._latched[axis], self._last_clean.get(axis), now)
        if self._open is not None:
            self._open.join(trig, s)
            text = f"axis {axis} latched 0x{trig.bits:02x}: joins the capture"
            self._event(now, "join", axis, trig.bits, text)
            return
        if self.captures_opened >= s.max_captures:
            self._event(
                now,
                "capture-limit",
                axis,
                trig.bits,
                f"axis {axis} latched 0x{trig.bits:02x}: capture limit ({s.max_captures}) reached",
            )
            return
        self.captures_opened += 1
        self._open = OpenCapture(now, self._wall_time(), now + s.tail_s, [trig])
        self._event(now, "latch", axis, trig.bits, f"axis {axis} latched 0x{trig.bits:02x}: capture opened")

    def _close_due(self, now: float) -> None:
        if self._open is not None and now >= self._open.window_end:
            self._finish(now, "tail-complete", None)

    def _finish(self, now: float, end: str, torque_off: bool | None) -> None:
        assert self._open is not None
        cap = assemble(
            self._open,
            self._fast,
            self._context,
            self._log,
            now=now,
            end=end,
            torque_off=torque_off,
            settings=self.settings,
            device=self._device,
        )
        self._open = None
        self._ready.append(cap)
        self._event(now, "capture-ready", None, 0, f"capture {cap.name} ready ({end})")

    def _context_entry(self, now: float, trigger: bool = False) -> ContextEntry:
        return ContextEntry(now, self._last_legs, self._last_neck, dict(self._latched), trigger)

    def _event(self, now: float, kind: str, axis: AxisKey | None, bits: int, text: str) -> None:
        ev = RecorderEvent(now, kind, axis, bits, text)
        self._log.append(ev)
        self._new.append(ev)
