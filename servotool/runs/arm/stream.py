"""The streaming loop every arm run uses: setpoints on absolute deadlines, everything stamped, a safe ending.

One loop, one clock. Tick k is sent at start + k * period (clock.sleep_until, never sleep(period), so there
is no drift), and the time recorded for it is the actual send: when a fire-and-forget transport has handed
the setpoint to the OS, or the start of a call that the controller answers (the answer gets its own row).
State frames carry the time the client received them, on the same clock, and the controller's own
timestamp. Every tick the loop records what it sent (`cmd`), what came back (`state`, `reply`), new fault
latches (`fault`) and divergence guard trips (`guard`), with t = 0 at the run start.

An arm paced by its device (devices.arm.PacedByDevice: a controller with a cycle of its own, whose every
state asks for the answering setpoint) is streamed without sleeping: each servo_j waits for the next state
cycle, and that is one tick. Tick k is then the k-th state cycle, t = 0 at the first one, and the time
recorded is the time the arm's frames carry (on a lock-step simulator, the robot's own). Lateness is the
controller's time between two ticks' states beyond one cycle: a cycle the host missed is a gap of two
cycles, counted in the outcome's lost_cycles.

However a run ends early (Ctrl-C, a lost connection, a controller fault, a guard trip, a controller that
keeps rejecting commands, an exception in our own code), it ends the same way, `Streamer.braked_stop`: a
`stop` row naming the reason, then a braking stop from the stream's current velocity, its speed falling by
a_max * period per tick (the shaper's acceleration bound; StreamShaper.prime starts at rest, so it cannot
continue a moving stream), then the last pose held while the arm comes to rest, all recorded. Ending the
servo mode, closing the CSV and disabling the robot belong to the run skeleton (runs/arm/run.py), which
does them whatever happened here.

Ctrl-C, SIGTERM and SIGHUP are taken as a request, not an exception, while the loop runs (runs/signals.py):
the first starts the stop, a second one skips waiting for the arm to come to rest, a third raises.

Memory is flat however long the stream: the plan is the only per-tick array (built by the caller), rows go
straight to the writer, lateness is kept as bounded statistics (runs/arm/lateness.py) and the recent poses for
the rest check in a window of fixed length.
"""

from __future__ import annotations

import contextlib
import math
from collections import deque
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from servotool import realtime_interp
from servotool.clock import Clock
from servotool.devices.arm import (
    Arm,
    ConnectionLost,
    DeviceError,
    Fault,
    Reply,
    StateFrame,
    StopsAfterPartialLoss,
    clock_of,
    device_cycle_of,
    device_settings_of,
    echoes_setpoints,
    fault_codes,
    state_columns_of,
    watchdog_of,
)
from servotool.errors import Refused, signal_label
from servotool.io.csvlog import CsvLogWriter, QueuedCsvLogWriter, RecordingBehind, run_file_name, unique_path
from servotool.motion.defaults import A_MAX_DEG_S2, CMD_PERIOD_S, V_MAX_DEG_S
from servotool.motion.stream_shapers import OtgStreamShaper
from servotool.readings import HEADER_KEY, BadFrames, header_spans
from servotool.runs.arm.lateness import LatenessStats
from servotool.runs.arm.prepare import Prepared, RunRefused, finish, prepare, wait_for_state
from servotool.runs.outcome import RunStatus, StreamOutcome
from servotool.runs.readable import device_readable
from servotool.runs.signals import StopSignals

# the CSV columns of a latched fault's codes (Fault.codes, padded with 0), the same for every family
FAULT_COLUMNS = ("main_code", "sub_code")
# the CSV header's `clock` of a run on an arm in simulated time (a lock-step simulator)
SIMULATED_CLOCK = "simulated: every time in this file, lateness included, is the simulator's lock-step time"
# the CSV header's `pacing` of a run on an arm paced by its device
DEVICE_PACED = "by the device: each tick answers one state cycle of {ms:g} ms; no sleep between ticks"
PHASE_STOP = "stop"
PHASE_REST = "rest"
PHASE_SETTLE = "settle"
# how long an early end waits for a jerk-limited generator to land on its frozen target
LAND_TIMEOUT_S = 5.0
STALE_NOTE = "the guard left unjudged"
# this many bad state frames in a row end the run: the pose is unknown (a runaway past every range must not
# leave the guard blind), while a lone impossible frame is only left out
BAD_RUN_MAX = 5
# a note counts the unjudged ticks when the link was lost, or when this many in a row were (a tick or two of
# a late frame on a loaded host is no news: the next fresh frame is judged)
STALE_NOTE_RUN = 5

# outcome statuses (the enum's members, under the names callers have always imported)
COMPLETE = RunStatus.COMPLETE
INTERRUPTED = RunStatus.INTERRUPTED
FAULT = RunStatus.FAULT
CONNECTION_LOST = RunStatus.CONNECTION_LOST
GUARD = RunStatus.GUARD
REJECTED = RunStatus.REJECTED
DEVICE_ERROR = RunStatus.DEVICE_ERROR
ERROR = RunStatus.ERROR

# the rest check looks at most this many recent state frames (a 1 kHz state stream over a 0.2 s window)
RECENT_FRAMES_MAX = 256
# the guard judges the newest state frame while it is at most this many state periods old (its tuning
# allows one period of frame age; the second absorbs delivery jitter), and never less than one command period
FRESH_STATE_PERIODS = 2.0
# the longest the controller may go without a setpoint before the stream counts as stalled, when neither the
# stop settings nor the arm (its lost-link watchdog) say; never less than STALL_PERIODS command periods
STALL_S = 0.1
STALL_PERIODS = 3.0

__all__ = [
    "COMPLETE",
    "CONNECTION_LOST",
    "DEVICE_ERROR",
    "ERROR",
    "FAULT",
    "GUARD",
    "INTERRUPTED",
    "PHASE_REST",
    "PHASE_STOP",
    "REJECTED",
    "Prepared",
    "RunRefused",
    "RunStatus",
    "StopSettings",
    "StreamOutcome",
    "StreamPlan",
    "Streamer",
    "TickInfo",
    "columns",
    "finish",
    "prepare",
    "record_stream",
    "stream",
    "units",
    "wait_for_state",
]


def _said(fault: Fault) -> str:
    """A fault as a run's end names it: its name, then what it means when its family's table says more."""
    return str(fault) if fault.text and fault.text != fault.name else fault.name


def columns(n_joints: int, raw: bool, echo: bool = False, extra: Sequence[str] = ()) -> list[str]:
    """CSV columns of a streamed run: q = setpoint on the wire (cmd) or measured (state); r = raw target;
    with echo, e = the controller's echo of the setpoint it executes and success = the share of recent
    setpoints it received (state rows); then the arm's extra per-cycle state columns (state rows only)."""
    cols = ["t", "event", "seq", "pass", "phase"]
    cols += [f"q{j + 1}" for j in range(n_joints)]
    if raw:
        cols += [f"r{j + 1}" for j in range(n_joints)]
    if echo:
        cols += [*(f"e{j + 1}" for j in range(n_joints)), "success"]
    cols += ["errcode", *FAULT_COLUMNS, "dev_t", *extra, "info"]
    return cols


def units(
    n_joints: int, raw: bool, echo: bool = False, extra: Mapping[str, str] | None = None
) -> dict[str, str]:
    """The units line of a streamed run's CSV header (the arm's extra state columns with theirs)."""
    u = {"t": "s", "dev_t": "s (the controller's own clock, when its state frames carry one)"}
    u.update({f"q{j + 1}": "deg" for j in range(n_joints)})
    if raw:
        u.update({f"r{j + 1}": "deg" for j in range(n_joints)})
    if echo:
        u.update({f"e{j + 1}": "deg (the setpoint the controller executes)" for j in range(n_joints)})
        u["success"] = "share 0..1 of the recent setpoints the controller received"
    u.update(extra or {})
    return u


@dataclass
class StreamPlan:
    """What to stream: one raw target per tick (ticks x joints, deg) with its pass index and phase label.

    With a shaper the targets go through it and both are recorded (q = shaped, r = raw); without, the
    targets are the setpoints.
    """

    targets: np.ndarray
    pass_index: np.ndarray | None = None
    phase: np.ndarray | None = None

    def __post_init__(self) -> None:
        self.targets = np.asarray(self.targets, dtype=float)
        if self.targets.ndim != 2 or len(self.targets) == 0:
            raise ValueError("a stream plan needs a non-empty (ticks x joints) array of targets")
        if not np.all(np.isfinite(self.targets)):
            raise ValueError("a stream plan holds non-finite targets")
        n = len(self.targets)
        for name in ("pass_index", "phase"):
            arr = getattr(self, name)
            if arr is not None and len(arr) != n:
                raise ValueError(f"{name} has {len(arr)} labels for {n} ticks")

    def __len__(self) -> int:
        return len(self.targets)


@dataclass
class StopSettings:
    """How an early end brings the stream to rest.

    a_max / v_max: braking deceleration and the speed cap of the stop (deg/s^2, deg/s). The arm is at rest
    when, after at least min_rest_s of holding, every joint's last rest_window_s of samples spans at most
    rest_tol_deg; the wait gives up after rest_timeout_s (the arm may be sweeping on its own).
    """

    a_max: float = A_MAX_DEG_S2
    v_max: float = V_MAX_DEG_S
    min_rest_s: float = 0.3
    rest_window_s: float = 0.1
    rest_tol_deg: float = 0.02
    rest_timeout_s: float = 3.0
    max_consecutive_rejects: int = 25
    # non-moving commands every stream ends on (0: none needed): the controller refuses a finish on a
    # moving command
    settle_cycles: int = 0
    # the loop reaching a tick later than this after the last setpoint went out (the process suspended or
    # starved) ends the run there; None: the arm's lost-link watchdog (silence_s), else STALL_S
    stall_s: float | None = None


@dataclass
class TickInfo:
    """Progress of the loop, passed to on_tick: tick k of n, t since run start (s)."""

    k: int
    n: int
    t: float
    pass_index: int
    phase: str
    setpoint: np.ndarray
    measured: np.ndarray | None


class _StopRequest(Exception):
    def __init__(self, status: RunStatus, reason: str) -> None:
        super().__init__(reason)
        self.status = status
        self.reason = reason


GIL_SWITCH_S = 0.0005


@contextmanager
def _no_gc_pauses() -> Iterator[None]:
    """Keep the interpreter from stalling the loop while streaming (servotool.realtime_interp).

    The cyclic garbage collector is held back: a collection can take a large part of a tick, and the loop
    creates no reference cycles, so reference counting frees everything meanwhile. The GIL switch interval
    is shortened: another Python thread (a transport's reader, an embedded simulator) otherwise keeps the
    interpreter for up to 5 ms when a deadline comes.
    """
    with realtime_interp.held(GIL_SWITCH_S):
        yield


class Streamer:
    """Stream a plan to an arm on a clock, recording into a CsvLogWriter-like writer (anything with write()).

    The arm must already be executing the stream (warm-up done) at the pose the plan starts from, and a
    shaper, when given, primed there. `guard` (motion.guard.DivergenceGuard) is checked after every send with
    the setpoint just sent, the newest measured pose and the stream's velocity; its trip ends the run. The
    guard judges only a fresh pose: one that came since the previous check, or is at most `fresh_s` old
    (FRESH_STATE_PERIODS state periods, `state_period_s`, the command period when not given; at least one
    command period). An older one is stale: the state stream has stalled, which the device's lost-link
    watchdog decides, and a pose from before the stall is not compared with setpoints sent after it (ticks
    left unjudged so are counted in a note when the link was lost or STALE_NOTE_RUN of them came in a row).
    on_tick(TickInfo) is called every `tick_every` ticks and on_pass(index) when the pass label changes:
    both must return quickly (they run inside the loop).
    """

    def __init__(
        self,
        arm: Arm,
        clock: Clock,
        writer: Any,
        *,
        period_s: float = CMD_PERIOD_S,
        shaper: Any = None,
        guard: Any = None,
        stop: StopSettings | None = None,
        record_raw: bool | None = None,
        on_tick: Callable[[TickInfo], None] | None = None,
        on_pass: Callable[[int], None] | None = None,
        tick_every: int = 5,
        catch_sigint: bool = True,
        signals: StopSignals | None = None,
        state_period_s: float | None = None,
    ) -> None:
        if not (period_s > 0 and math.isfinite(period_s)):
            raise ValueError(f"command period must be > 0 s, got {period_s!r}")
        self.cycle_s = device_cycle_of(arm)
        if self.cycle_s is not None and abs(period_s - self.cycle_s) > 1e-9:
            raise ValueError(
                f"command period {period_s * 1e3:g} ms: this arm's controller sets the pace, one setpoint "
                f"every {self.cycle_s * 1e3:g} ms cycle"
            )
        self.fresh_s = fresh_limit(float(period_s), state_period_s)
        self.arm = arm
        self.clock = clock_of(arm) or clock  # an arm in simulated time moves only on its own clock
        self.writer = writer
        self.period = float(period_s)
        self.shaper = shaper
        self.guard = guard
        self.stop = stop or StopSettings()
        self.record_raw = shaper is not None if record_raw is None else record_raw
        self.on_tick = on_tick
        self.on_pass = on_pass
        self.tick_every = max(1, int(tick_every))
        self.catch_sigint = catch_sigint
        self.signals = signals  # the command's; without, the loop installs its own for its length
        self.n_joints = int(arm.n_joints)
        # what a state frame can say: one beyond it is a bad frame, recorded as it came and counted, never
        # the guard's, the rest check's or the braked stop's pose
        self.readable = device_readable(arm.url)
        self.bad = BadFrames()
        self._bad_run = 0  # bad state frames in a row
        self.record_echo = echoes_setpoints(arm)
        # the per-joint column names, made once: every tick's rows use them
        self._q_cols = tuple(f"q{j + 1}" for j in range(self.n_joints))
        self._r_cols = tuple(f"r{j + 1}" for j in range(self.n_joints))
        self._e_cols = tuple(f"e{j + 1}" for j in range(self.n_joints))
        self.lateness = LatenessStats(self.period / 2)
        self.stall_s = stall_limit(self.period, self.stop.stall_s, watchdog_of(arm))
        self._init_tracking()

    def _init_tracking(self) -> None:
        """What the loop keeps track of while it streams, as before its first tick."""
        self._last_send_t: float | None = None
        self._last_cycle_t: float | None = None  # the controller's time of the last tick's state (paced)
        self._lost_cycles = 0
        self._t0 = 0.0
        self._last_q: np.ndarray | None = None
        self._last_t = -math.inf  # when the frame of _last_q was received
        self._new_frames = False  # frames came since the previous guard check
        self._stale_ticks = 0  # guard checks left out on a stale frame
        self._stale_run = (0, 0)  # (current, longest) run of consecutive ones
        self._recent: deque[tuple[float, np.ndarray]] = deque(maxlen=RECENT_FRAMES_MAX)
        self._latched: Fault | None = None  # the fault of the newest state frame
        self._fault: Fault | None = None  # the first fault latched during the run
        self._fault_t: float | None = None
        self._guard_t: float | None = None
        self._guard_reason: str | None = None
        self._rejects = 0
        self._consecutive_rejects = 0
        self._last_err = 0
        self._seq = 0
        self._sigint: StopSignals | None = None
        self._prev_setpoint: np.ndarray | None = None
        self._plan: StreamPlan | None = None
        self._k = 0  # ticks of the plan sent so far
        self._started = False
        self._stopping = False
        self._write_error: str | None = None  # the recording failed (a full disk): the run ends, braked
        self._echo: tuple[float, ...] | None = None  # a new state's echo of the command taken, not yet used
        self._dev_t: float | None = None  # the controller time of the newest state
        self._dev_period: float | None = None  # the controller time between the newest two states
        self._next_k = 0  # the deadline index after the last setpoint sent
        self._still = 0  # how many times in a row the last setpoint went out unchanged
        self._behind: str | None = None  # the recording fell behind (a slow disk): the run ends, braked

    @property
    def start_time(self) -> float:
        """The clock reading of the run start (t = 0 in the CSV); set when run() begins."""
        return self._t0

    @property
    def streaming(self) -> bool:
        """True once the plan started and until it completed or went through the braked stop."""
        return self._started and not self._stopping

    # -- recording -------------------------------------------------------------------------------------------

    def _rel(self, t: float) -> float:
        return t - self._t0

    def _state_rows(self, frames: Sequence[StateFrame]) -> list[dict[str, Any]]:
        """State rows, plus a fault row whenever the controller's codes change to a fault."""
        rows: list[dict[str, Any]] = []
        for f in frames:
            q = np.asarray(f.q, dtype=float)
            if self._readable(f.q):
                self._last_q, self._last_t, self._new_frames = q, f.t, True
                self._echo_of(f)
                self._recent.append((f.t, q))
            t = self._rel(f.t)
            codes = fault_codes(f.fault)
            row = {"t": t, "event": "state", "dev_t": f.device_time_s}
            row.update(zip(FAULT_COLUMNS, codes, strict=True))
            # plain floats (the writer's fastest); joints past the arm's are left out
            row.update(zip(self._q_cols, q.tolist(), strict=False))
            if self.record_echo:
                row.update(zip(self._e_cols, f.setpoint or (), strict=False))
                row["success"] = f.success_rate
            if f.extra:
                row.update(f.extra)
            rows.append(row)
            if f.fault != self._latched:
                if f.fault is not None:
                    rows.append({"t": t, "event": "fault", **dict(zip(FAULT_COLUMNS, codes, strict=True))})
                    if self._fault is None:
                        self._fault, self._fault_t = f.fault, t
                self._latched = f.fault
        return rows

    def _readable(self, q: Sequence[float]) -> bool:
        """True when every joint of a state frame can be a reading; else the bad frame is counted."""
        j = self.readable.first_bad(list(q)[: self.n_joints])
        if j is not None:
            self.bad.add(f"q{j + 1}", q[j])
            self._bad_run += 1
        else:
            self._bad_run = 0
        return j is None

    def _echo_of(self, f: StateFrame) -> None:
        """Keep what a generator re-anchors on: the frame's echo of the command taken, and the controller
        time since the previous frame (the measured period)."""
        if f.setpoint is not None:
            self._echo = f.setpoint
        if f.device_time_s is not None:
            if self._dev_t is not None:
                self._dev_period = f.device_time_s - self._dev_t
            self._dev_t = f.device_time_s

    def _write_frames(
        self, frames: Sequence[StateFrame], replies: Sequence[Reply], extra: Sequence[dict[str, Any]]
    ) -> None:
        rows = list(extra) + self._state_rows(frames)
        for r in replies:
            info = "" if r.to_setpoint else r.command
            rows.append({"t": self._rel(r.t), "event": "reply", "errcode": r.errcode, "info": info})
            self._count_reply(r.errcode)
        rows.sort(key=lambda row: row["t"])  # stable: a cmd keeps its place before its own reply
        for row in rows:
            self._write(row)

    def _write(self, row: dict[str, Any]) -> None:
        """Write one row. A recording that cannot be written (a full disk, an I/O error) never stops a
        tick: the failure is kept, rows are dropped from then on, and the next health check ends the run
        through the braked stop."""
        if self._write_error is not None:
            return
        try:
            self.writer.write(row)
        except RecordingBehind as exc:  # the row was kept; the run ends before the backlog grows more
            self._behind = self._behind or str(exc)
        except OSError as exc:
            self._write_error = f"the recording cannot be written: {exc.strerror or exc}"

    def _count_reply(self, errcode: int) -> None:
        if errcode != 0:
            self._rejects += 1
            self._consecutive_rejects += 1
            self._last_err = errcode
        else:
            self._consecutive_rejects = 0

    def _cmd_row(
        self, t: float, pass_index: int, phase: str, q: np.ndarray, raw: np.ndarray | None
    ) -> dict[str, Any]:
        row: dict[str, Any] = {
            "t": self._rel(t),
            "event": "cmd",
            "seq": self._seq,
            "pass": pass_index,
            "phase": phase,
        }
        row.update(zip(self._q_cols, q.tolist(), strict=False))
        if self.record_raw and raw is not None:
            row.update(zip(self._r_cols, raw.tolist(), strict=False))
        self._seq += 1
        return row

    def _poll(self) -> tuple[list[StateFrame], list[Reply]]:
        """The frames and replies received since the last poll. Raises the device's error only when no frame
        came: frames taken must reach the CSV (a lost link is reported again by the next call)."""
        frames = list(self.arm.poll_states())
        try:
            replies = list(self.arm.replies())
        except DeviceError:
            if not frames:
                raise
            replies = []
        return frames, replies

    def _record_unpolled(self) -> None:
        """After a lost link: record the frames that came since the last poll (the send that found the loss
        comes before its tick's poll), so that nothing received is missing from the CSV."""
        try:
            frames, replies = self._poll()
        except DeviceError:
            return
        self._write_frames(frames, replies, [])

    # -- one tick --------------------------------------------------------------------------------------------

    def _send(
        self, k_deadline: int, setpoint: np.ndarray, raw: np.ndarray | None, pass_index: int, phase: str
    ) -> None:
        self._still = self._still + 1 if self._same_as_last(setpoint) else 1
        self._next_k = k_deadline + 1
        if self.cycle_s is not None:
            self._send_paced(setpoint, raw, pass_index, phase)
            return
        deadline = self._t0 + k_deadline * self.period
        self.clock.sleep_until(deadline)
        t_call = self.clock.now()
        self.lateness.add(t_call - deadline)
        reply = self.arm.servo_j([float(x) for x in setpoint], self.period)
        # the actual send time: a fire-and-forget transport has handed the datagram to the OS when the call
        # returns (its encoding time is not part of the lag); an answered call sent it somewhere inside the
        # call, recorded as its start (the analysis uses the answer's time for the rest)
        t_send = self.clock.now() if reply is None else t_call
        self._record_send(t_send, reply, setpoint, raw, pass_index, phase)

    def _record_send(
        self,
        t_send: float,
        reply: Reply | None,
        setpoint: np.ndarray,
        raw: np.ndarray | None,
        pass_index: int,
        phase: str,
        frames: list[StateFrame] | None = None,
    ) -> None:
        """Record a setpoint sent at t_send with what came back, then judge it (the guard)."""
        self._last_send_t = t_send
        cmd = self._cmd_row(t_send, pass_index, phase, setpoint, raw)
        try:
            polled, replies = self._poll()
        except DeviceError:
            # the setpoint went out: it is recorded even when the link fails right after it
            self._write_frames(frames or [], [reply] if reply is not None else [], [cmd])
            raise
        if reply is not None:
            replies.append(reply)
        self._write_frames((frames or []) + polled, replies, [cmd])
        velocity = (setpoint - self._prev_setpoint) / self.period if self._prev_setpoint is not None else None
        self._prev_setpoint = setpoint
        self._check_guard(setpoint, velocity)

    def _same_as_last(self, setpoint: np.ndarray) -> bool:
        return self._prev_setpoint is not None and bool(np.array_equal(setpoint, self._prev_setpoint))

    def _shaped(self, raw: np.ndarray) -> np.ndarray:
        """The shaper's next setpoint toward raw; a generator first hears what the newest state said (its
        echo of the command taken, once, and the measured period)."""
        assert self.shaper is not None
        if isinstance(self.shaper, OtgStreamShaper):
            self.shaper.observe(self._echo, self._dev_period)
            self._echo, self._dev_period = None, None
        return np.asarray(self.shaper.step(raw), dtype=float)

    def _send_paced(self, setpoint: np.ndarray, raw: np.ndarray | None, pass_index: int, phase: str) -> None:
        """One tick on an arm paced by its device: servo_j waits for the next state cycle and answers it.
        The tick is recorded at that state's time; the first tick's is t = 0."""
        assert self.cycle_s is not None
        first = self._last_send_t is None
        reply = self.arm.servo_j([float(x) for x in setpoint], self.period)
        t_send = self.clock.now()
        if first:
            self._t0 = t_send
        frames = list(self.arm.poll_states())
        cycle_t = next((f.device_time_s for f in reversed(frames) if f.device_time_s is not None), None)
        if cycle_t is not None:
            if self._last_cycle_t is not None:
                gap = cycle_t - self._last_cycle_t
                # to the nanosecond: a controller's time is whole cycles, its float sum is not quite
                self.lateness.add(round(gap - self.cycle_s, 9))
                self._lost_cycles += max(0, round(gap / self.cycle_s) - 1)
            self._last_cycle_t = cycle_t
        self._record_send(t_send, reply, setpoint, raw, pass_index, phase, frames)

    def _check_guard(self, setpoint: np.ndarray, velocity: np.ndarray | None) -> None:
        if self.guard is None or self._guard_t is not None or self._last_q is None:
            return
        fresh = self._new_frames or self.clock.now() - self._last_t <= self.fresh_s
        self._new_frames = False
        run = 0 if fresh else self._stale_run[0] + 1
        self._stale_run = (run, max(run, self._stale_run[1]))
        if not fresh:
            self._stale_ticks += 1
            return
        if self.shaper is not None and self.shaper.velocity is not None and not self._stopping:
            v = self.shaper.velocity
        else:
            v = velocity if velocity is not None else np.zeros(self.n_joints)
        verdict = self.guard.check(setpoint, self._last_q[: self.n_joints], v)
        if verdict is not None:
            t = self.clock.now()
            self._guard_t, self._guard_reason = self._rel(t), verdict.reason
            self._write({"t": self._rel(t), "event": "guard", "info": verdict.reason})

    def _health(self) -> None:
        """Raise _StopRequest when the run must end now."""
        if self._sigint is not None and self._sigint.requested is not None:
            raise _StopRequest(INTERRUPTED, self._sigint.reason() or "Ctrl-C")
        if self._write_error is not None or self._behind is not None:
            raise _StopRequest(ERROR, self._write_error or self._behind or "")
        if self._fault is not None:
            raise _StopRequest(FAULT, f"controller fault {_said(self._fault)}")
        if self._guard_t is not None:
            raise _StopRequest(GUARD, f"divergence guard: {self._guard_reason}")
        if self._bad_run >= BAD_RUN_MAX:
            raise _StopRequest(
                DEVICE_ERROR,
                f"{self._bad_run} state frames in a row read what the arm cannot report "
                f"({self.bad.examples[-1]}): its pose is unknown",
            )
        if self._consecutive_rejects >= self.stop.max_consecutive_rejects:
            raise _StopRequest(
                REJECTED,
                f"the controller rejected {self._consecutive_rejects} commands in a "
                f"row (last errcode {self._last_err})",
            )

    def _stall_gap(self, k: int) -> float | None:
        """Wait for tick k's deadline; the time since the last setpoint went out when it is over `stall_s`
        (the loop stalled: the ticks missed meanwhile, sent back to back, would be that stretch of the plan
        at once), else None. An arm paced by its device is not waited for: its next servo_j waits."""
        if self.cycle_s is None:
            self.clock.sleep_until(self._t0 + k * self.period)
        if self._last_send_t is None:
            return None
        gap = self.clock.now() - self._last_send_t
        return gap if gap > self.stall_s else None

    def _now_k(self, k: int) -> int:
        """Tick k, or the first tick whose deadline has not passed when k's is long gone."""
        return max(k, math.ceil((self.clock.now() - self._t0) / self.period - 1e-9))

    def _check_stall(self, k: int) -> None:
        """Raise _StopRequest when the loop stalled before tick k (see _stall_gap)."""
        gap = self._stall_gap(k)
        if gap is not None:
            raise _StopRequest(
                ERROR,
                f"the stream stalled: no setpoint went out for {gap * 1e3:.0f} ms (over "
                f"{self.stall_s * 1e3:.0f} ms: the process was suspended or starved)",
            )

    def _tick(self, plan: StreamPlan, k: int, passes: np.ndarray, phases: np.ndarray) -> None:
        """Send tick k of the plan (after the health and stall checks) and report progress."""
        self._health()
        self._check_stall(k)
        raw = plan.targets[k]
        setpoint = self._shaped(raw) if self.shaper is not None else raw.copy()
        p, phase = int(passes[k]), str(phases[k])
        if self.on_pass is not None and (k == 0 or p != int(passes[k - 1])):
            self.on_pass(p)
        self._send(k, setpoint, raw, p, phase)
        self._k = k + 1
        n = len(plan)
        if self.on_tick is not None and (k % self.tick_every == 0 or k == n - 1):
            self.on_tick(TickInfo(k, n, self._rel(self.clock.now()), p, phase, setpoint, self._last_q))

    # -- the run ---------------------------------------------------------------------------------------------

    def _begin(self, plan: StreamPlan) -> None:
        if plan.targets.shape[1] != self.n_joints:
            raise ValueError(f"plan has {plan.targets.shape[1]} joints, the arm {self.n_joints}")
        start = self.arm.latest_state()
        if start is not None and self._readable(start.q):
            self._last_q, self._last_t = np.asarray(start.q, dtype=float), start.t
        self.arm.poll_states()  # frames from before the run start (the warm-up) are not part of it
        self.arm.replies()
        self._plan, self._k = plan, 0
        self._t0 = self.clock.now()
        self._started = True

    def _loop(self, plan: StreamPlan) -> tuple[RunStatus, str | None]:
        """Send every tick; how the loop ended. Every early end is turned into a status here, our own
        exceptions included, so that the braked stop always follows."""
        n = len(plan)
        passes = plan.pass_index if plan.pass_index is not None else np.full(n, -1)
        phases = plan.phase if plan.phase is not None else np.full(n, "", dtype=object)
        try:
            for k in range(n):
                self._tick(plan, k, passes, phases)
            self._health()
        except _StopRequest as req:
            return req.status, req.reason
        except KeyboardInterrupt as exc:  # Ctrl-C, or SIGTERM / SIGHUP as a StopSignal
            return INTERRUPTED, signal_label(exc)
        except ConnectionLost as exc:
            return CONNECTION_LOST, f"connection lost: {exc}"
        except DeviceError as exc:
            return self._refusal(exc)
        except Exception as exc:  # a bug of ours must still end through the braked stop
            return ERROR, f"internal error: {type(exc).__name__}: {exc}"
        return COMPLETE, None

    def _refusal(self, exc: DeviceError) -> tuple[RunStatus, str]:
        """A device that refused a command: when its state, read since, latched a fault, the run ended on
        that fault (by its name, as the controller calls it); else on the device error."""
        self._record_unpolled()
        if self._fault is not None:
            return FAULT, f"controller fault {self._fault.name}"
        return DEVICE_ERROR, f"device error: {exc}"

    def run(self, plan: StreamPlan) -> StreamOutcome:
        """Stream the plan; returns how it ended (never raises for the reasons listed in the module docstring,
        except a third Ctrl-C). Rows are written as they happen."""
        self._begin(plan)
        own = StopSignals(self.catch_sigint) if self.signals is None else None
        signals = self.signals or own
        assert signals is not None
        with own or contextlib.nullcontext(), signals.latching(), _no_gc_pauses():
            self._sigint = signals
            try:
                status, reason = self._loop(plan)
                outcome = StreamOutcome(status=status, reason=reason, ticks_sent=self._k)
                if status != COMPLETE:
                    self.braked_stop(outcome)
                    self._fault_first(outcome)
                else:
                    self._settle(outcome, self._plan_end())
                    self._drain_tail(outcome)
                self._backstop_row()
            finally:
                self._sigint = None
        return self.summarise(outcome)

    def _fault_first(self, outcome: StreamOutcome) -> None:
        """A controller that refuses the stream on a fault it latches (its reply an error, its next state the
        fault) ended the run on that fault, not on a failing device: the fault names the end."""
        if outcome.status == DEVICE_ERROR and self._fault is not None:
            outcome.status = FAULT
            said = (outcome.reason or "").removeprefix("device error: ")
            outcome.reason = f"controller fault {_said(self._fault)} (the device: {said})"

    def summarise(self, outcome: StreamOutcome) -> StreamOutcome:
        """Fill the outcome's timing, fault, guard, reject and lateness fields from the loop's counters."""
        late = self.lateness
        outcome.late_ticks = late.late_ticks
        outcome.max_late_ms = late.max_s * 1e3
        outcome.mean_late_ms = late.mean_s * 1e3
        outcome.p50_late_ms = late.quantile_s(0.5) * 1e3
        outcome.p99_late_ms = late.quantile_s(0.99) * 1e3
        outcome.t_end = self._rel(self.clock.now())
        outcome.fault = self._fault.padded_codes if self._fault is not None else None
        outcome.fault_t = self._fault_t
        outcome.guard_reason, outcome.guard_t = self._guard_reason, self._guard_t
        outcome.rejects = self._rejects
        outcome.bad_frames = self.bad.count
        bad = self.bad.note()
        if bad and not any(n.startswith(bad.split(" (")[0]) for n in outcome.notes):
            outcome.notes.append(bad)
        self._backstop_figures(outcome)
        outcome.lost_cycles = self._lost_cycles if self.cycle_s is not None else None
        worth_saying = outcome.link_lost or self._stale_run[1] >= STALE_NOTE_RUN
        if self._stale_ticks and worth_saying and not any(n.startswith(STALE_NOTE) for n in outcome.notes):
            outcome.notes.append(
                f"{STALE_NOTE} {self._stale_ticks} ticks: the newest state frame was more "
                f"than {self.fresh_s * 1e3:.0f} ms old (a stalled state stream)"
            )
        return outcome

    def _backstop_figures(self, outcome: StreamOutcome) -> None:
        """The backstop's largest alteration and how many commands it altered, when one ran."""
        shaper = self.shaper
        if isinstance(shaper, OtgStreamShaper) and shaper.backstop is not None:
            outcome.backstop_alteration_deg = shaper.backstop.max_alteration
            outcome.backstop_altered = shaper.backstop.altered_cycles

    def _backstop_row(self) -> None:
        """A `backstop` row after the stream: the largest change the backstop made to a command, in the
        joints' unit, and how many of the commands it changed (0 on a generator run that kept its limits)."""
        shaper = self.shaper
        if isinstance(shaper, OtgStreamShaper) and shaper.backstop is not None:
            b = shaper.backstop
            self._write(
                {
                    "t": self._rel(self.clock.now()),
                    "event": "backstop",
                    "info": f"largest alteration {b.max_alteration:.6g} deg; "
                    f"{b.altered_cycles} of {b.cycles} commands altered",
                }
            )

    def _drain_tail(self, outcome: StreamOutcome) -> None:
        self._stopping = True  # complete: nothing left to stop
        try:
            frames, replies = self._poll()
            self._write_frames(frames, replies, [])
        except DeviceError as exc:
            outcome.notes.append(f"the last state frames could not be read: {exc}")

    # -- the one early end -----------------------------------------------------------------------------------

    def _stream_velocity(self) -> np.ndarray:
        """The velocity the stream has now: the shaper's, or for an unshaped plan the last tick's on the
        wire. Only where that tick was itself a jump beyond a_max * period (a raw step: a one-tick spike,
        not a motion to brake from) does the stop start from the next tick's velocity when it is smaller.
        Braking from the wire's own velocity keeps the stop's first tick within a_max * period of it (from
        the next tick's, a stream already slowing down would change speed by its own slowing plus a_max)."""
        if self.shaper is not None and self.shaper.velocity is not None:
            return np.asarray(self.shaper.velocity, dtype=float)
        plan, last = self._plan, self._k - 1
        if plan is None or last < 1 or last >= len(plan):
            return np.zeros(self.n_joints)
        v = (plan.targets[last] - plan.targets[last - 1]) / self.period
        before = (plan.targets[last - 1] - plan.targets[last - 2]) / self.period if last >= 2 else 0.0
        jump = np.abs(v - before) > self.stop.a_max * self.period * (1 + 1e-9)
        if last + 1 < len(plan):
            v_next = (plan.targets[last + 1] - plan.targets[last]) / self.period
            v = np.where(jump & (np.abs(v_next) < np.abs(v)), v_next, v)
        return np.asarray(v, dtype=float)

    def braked_stop(self, outcome: StreamOutcome) -> None:
        """The one way a stream ends early: a `stop` row naming outcome.reason, the braking ticks, then the
        last pose held until the arm is at rest (or rest_timeout_s). Runs once: a second call does nothing.
        Never raises for a device failure, Ctrl-C or a lost link during the stop: notes say what was cut."""
        if self._stopping:
            return
        self._stopping = True
        if outcome.status in (CONNECTION_LOST, DEVICE_ERROR):
            # before the stop row: they came before it (a refusing device's last state names why)
            self._record_unpolled()
        self._write({"t": self._rel(self.clock.now()), "event": "stop", "info": outcome.reason})
        if outcome.status == CONNECTION_LOST:
            outcome.at_rest, outcome.link_lost = None, True
            # a link lost on its command channel alone can still carry the braking ticks
            channel = self.arm.open_stop_channel() if isinstance(self.arm, StopsAfterPartialLoss) else None
            if channel is None:
                return
            outcome.notes.append(f"the braked stop went out over {channel}")
        if self._prev_setpoint is None:
            start = self.arm.latest_state()
            if start is None or not self._readable(start.q):
                outcome.notes.append("no setpoint was sent and no pose is known: nothing to stop")
                return
            self._prev_setpoint = np.asarray(start.q, dtype=float)[: self.n_joints]
        # the next free deadline on the same grid: the stop continues the stream's rhythm
        next_k = self._now_k(self._k)
        try:
            if self._generates():
                next_k = self._land(next_k, outcome, self._frozen_target())
            else:
                next_k = self._brake(next_k, outcome)
            self._hold_until_rest(next_k, outcome)
            self._settle(outcome)
        except KeyboardInterrupt as exc:
            outcome.notes.append(f"{exc or 'Ctrl-C'} during the stop: stop sequence cut short")
        except ConnectionLost as exc:
            outcome.link_lost = True
            self._record_unpolled()
            outcome.notes.append(f"connection lost during the stop: {exc}")
        except DeviceError as exc:
            outcome.notes.append(f"device error during the stop: {exc}")

    def _brake(self, next_k: int, outcome: StreamOutcome) -> int:
        """Each tick the speed drops by at most a_max * period, so the velocity never jumps; returns the
        next free deadline index."""
        assert self._prev_setpoint is not None
        s = self._prev_setpoint.copy()
        v = np.clip(self._stream_velocity(), -self.stop.v_max, self.stop.v_max)
        dv = self.stop.a_max * self.period
        while np.any(v != 0.0):
            # stalled while braking (after its first tick: a stop may follow a stall): go on from now
            if outcome.stop_ticks and self._stall_gap(next_k) is not None:
                outcome.notes.append("the stream stalled during the stop; its ticks were not caught up")
                next_k = self._now_k(next_k)
            v = np.sign(v) * np.maximum(np.abs(v) - dv, 0.0)
            s = s + v * self.period
            self._send(next_k, s, None, -1, PHASE_STOP)
            next_k += 1
            outcome.stop_ticks += 1
        return next_k

    def _generates(self) -> bool:
        """The stream runs through a jerk-limited generator, which brings itself to rest."""
        return isinstance(self.shaper, OtgStreamShaper) and self.shaper.primed

    def _frozen_target(self) -> np.ndarray:
        """Where an early end freezes a generator's target: where its command is."""
        assert isinstance(self.shaper, OtgStreamShaper) and self.shaper.position is not None
        return self.shaper.position

    def _plan_end(self) -> np.ndarray | None:
        plan = self._plan
        return None if plan is None or self._k == 0 else plan.targets[min(self._k, len(plan)) - 1]

    def _landed(self, target: np.ndarray) -> bool:
        """The shaper is at rest on target: a generator exactly, another shaper at zero velocity."""
        shaper = self.shaper
        if isinstance(shaper, OtgStreamShaper):
            return shaper.at_target
        if shaper is None or shaper.velocity is None or shaper.position is None:
            return True
        v, p = np.asarray(shaper.velocity), np.asarray(shaper.position)
        return bool(np.all(v == 0.0) and np.allclose(p, target, rtol=0.0, atol=1e-9))

    def _land(self, next_k: int, outcome: StreamOutcome, target: np.ndarray) -> int:
        """Step the shaper toward a frozen target until it has landed there (within its limits: a
        generator brakes, and comes back if it passes); gives up after LAND_TIMEOUT_S (a note says so).
        Returns the next free deadline index."""
        assert self.shaper is not None
        for _ in range(max(1, int(math.ceil(LAND_TIMEOUT_S / self.period)))):
            if self._landed(target):
                return next_k
            self._send(next_k, self._shaped(target), target, -1, PHASE_STOP)
            next_k += 1
            outcome.stop_ticks += 1
        outcome.notes.append(f"the shaper had not landed {LAND_TIMEOUT_S:g} s after the stop")
        return next_k

    def _settle(self, outcome: StreamOutcome, target: np.ndarray | None = None) -> None:
        """Where the arm needs it (StopSettings.settle_cycles), end on a command that does not move, sent
        settle_cycles times in a row: a controller refuses to finish a motion on a moving command. A
        shaper still moving toward `target` lands first. Never raises for a device failure or a stop
        signal: a note says what was cut."""
        n = self.stop.settle_cycles
        if n <= 0 or self._prev_setpoint is None or outcome.link_lost:
            return
        try:
            next_k = self._now_k(self._next_k)
            if target is not None and self.shaper is not None:
                next_k = self._land(next_k, outcome, target)
            held = self._prev_setpoint.copy()
            while self._still < n:
                self._send(next_k, held, None, -1, PHASE_SETTLE)
                next_k += 1
                outcome.stop_ticks += 1
        except KeyboardInterrupt as exc:
            outcome.notes.append(f"{exc or 'Ctrl-C'} during the settle: it was cut short")
        except ConnectionLost as exc:
            outcome.link_lost = True
            outcome.notes.append(f"connection lost during the settle: {exc}")
        except DeviceError as exc:
            outcome.notes.append(f"device error during the settle: {exc}")

    def _hold_until_rest(self, next_k: int, outcome: StreamOutcome) -> None:
        """Hold the pose while the arm comes to rest (or a runaway finishes its sweep)."""
        assert self._prev_setpoint is not None
        s = self._prev_setpoint.copy()
        t_hold = self.clock.now()
        while True:
            now = self.clock.now()
            held = now - t_hold
            if held >= self.stop.rest_timeout_s:
                outcome.at_rest = False
                wait = self.stop.rest_timeout_s
                outcome.notes.append(f"the arm was still moving {wait:g} s after the stop")
                return
            if held >= self.stop.min_rest_s and self._at_rest(now):
                outcome.at_rest = True
                return
            if self._sigint is not None and self._sigint.count >= 2:
                outcome.at_rest = None
                outcome.notes.append("a second stop signal: stopped waiting for the arm to come to rest")
                return
            self._send(next_k, s, None, -1, PHASE_REST)
            next_k += 1
            outcome.stop_ticks += 1

    def _at_rest(self, now: float) -> bool:
        recent = [q for t, q in self._recent if t >= now - self.stop.rest_window_s]
        if len(recent) < 3:
            return False
        arr = np.array(recent)
        return bool(np.all(np.ptp(arr, axis=0) <= self.stop.rest_tol_deg))


def fresh_limit(period_s: float, state_period_s: float | None) -> float:
    """The age (s) up to which the guard judges the newest state frame: FRESH_STATE_PERIODS state periods
    (the command period standing in for an unknown one), and at least one command period."""
    state = state_period_s if state_period_s is not None and 0 < state_period_s < math.inf else period_s
    return max(FRESH_STATE_PERIODS * state, period_s)


def stall_limit(period_s: float, stall_s: float | None, silence_s: float | None) -> float:
    """The stall bound (s): `stall_s` when given, else the arm's lost-link watchdog (the same silence
    judged from our side), else STALL_S; at least STALL_PERIODS command periods."""
    if stall_s is None:
        watchdog = silence_s if isinstance(silence_s, (int, float)) and 0 < silence_s < math.inf else None
        stall_s = STALL_S if watchdog is None else float(watchdog)
    return max(float(stall_s), STALL_PERIODS * period_s)


def stream(arm: Arm, clock: Clock, writer: Any, plan: StreamPlan, **kwargs: Any) -> StreamOutcome:
    """Convenience: Streamer(arm, clock, writer, **kwargs).run(plan)."""
    return Streamer(arm, clock, writer, **kwargs).run(plan)


def record_stream(
    arm: Arm,
    clock: Clock,
    plan: StreamPlan,
    *,
    mode: str,
    out_dir: Path,
    config: dict[str, Any],
    header: dict[str, Any],
    command: str | None,
    record_raw: bool = False,
    **streamer_kwargs: Any,
) -> tuple[Path, StreamOutcome]:
    """Stream `plan` into a new servotool-csv file `<mode>_<device>_<stamp>.csv` in out_dir (never
    overwriting), header extras `header`; a run that ends early gets the end line `interrupted: <reason>`.
    Returns the file and how the stream ended; streamer_kwargs go to Streamer (period_s, shaper, guard...)."""
    with open_run_csv(
        arm, mode=mode, out_dir=out_dir, config=config, header=header, command=command, record_raw=record_raw
    ) as writer:
        outcome = Streamer(arm, clock, writer, record_raw=record_raw, **streamer_kwargs).run(plan)
        if not outcome.complete:
            writer.interrupt(outcome.reason or str(outcome.status))
    return Path(writer.path), outcome


def open_run_csv(
    arm: Arm,
    *,
    mode: str,
    out_dir: Path,
    config: dict[str, Any],
    header: dict[str, Any],
    command: str | None,
    record_raw: bool,
) -> CsvLogWriter:
    """A new servotool-csv file `<mode>_<device>_<stamp>.csv` in out_dir (never overwriting: a name another
    process takes between the check and the open gives the next free one) with the columns and units of a
    streamed run. RecordingNotCreated (nothing recorded, nothing moved) when the file cannot be made."""
    if clock_of(arm) is not None:
        # every time of the file (lateness included) is simulated time: the header says so
        header = {**header, "clock": SIMULATED_CLOCK}
    spans = header_spans(device_readable(arm.url))
    if spans:  # what the device can report: a reader leaves out rows beyond it, as it does non-finite ones
        header = {**header, HEADER_KEY: spans}
    cycle = device_cycle_of(arm)
    writer = CsvLogWriter
    if cycle is not None:
        header = {**header, "pacing": DEVICE_PACED.format(ms=cycle * 1e3)}
        # a tick answers the device's cycle: a row must never wait for the disk there
        writer = QueuedCsvLogWriter
    settings = device_settings_of(arm)
    if settings:
        header = {**header, "device_settings": settings}
    extra = state_columns_of(arm)
    for _ in range(100):
        path = unique_path(Path(out_dir), run_file_name(mode, arm.url))
        try:
            return writer(
                path,
                device=arm.url,
                simulated=arm.simulated,
                config=config,
                units=units(arm.n_joints, raw=record_raw, echo=echoes_setpoints(arm), extra=extra),
                columns=columns(arm.n_joints, raw=record_raw, echo=echoes_setpoints(arm), extra=tuple(extra)),
                command=command,
                extra=header,
            )
        except FileExistsError:
            continue
        except OSError as exc:
            raise RecordingNotCreated(
                f"{out_dir}: cannot create the recording ({exc.strerror or exc}); nothing was recorded"
            ) from None
    raise RecordingNotCreated(f"{out_dir}: every name for the recording was taken; nothing was recorded")


class RecordingNotCreated(Refused):
    """The run's CSV could not be created (a full disk, a folder gone read-only since the settings were
    checked): the run ends before its stream, the arm was only held."""
