"""The client side of the CNDE state stream: configure, start, and read frames in a background thread.

Each data frame becomes a StateFrame stamped with the host clock `now` when its bytes arrive. The stream is
declared lost (once, through `on_lost`) when the controller closes or resets it, or sends no readable data
frame for `silence_s` on the `watch` clock (checked every 10 ms, and at each `check_silence()`).
"""

from __future__ import annotations

import collections
import contextlib
import logging
import re
import select
import socket
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

from servotool.devices import trace
from servotool.devices.arm import StateFrame
from servotool.devices.fairino import protocol as p
from servotool.devices.fairino.codes import decode_fault, motion_state
from servotool.devices.fairino.fields import SIM_FIELDS
from servotool.errors import DeviceError

_log = logging.getLogger(__name__)

REQUIRED_FIELDS = ("actual_joint_pos", "main_code", "sub_code")
# used when the controller has them (all in the vendor SDK's table); a controller answering NOT_FOUND is
# configured without them
OPTIONAL_FIELDS = (
    "rbt_enable_state",
    "last_servoJ_target",
    "servoJ_cmd_num",
    "actual_joint_vel",
    "robot_state",
)
_TRACE = trace.logger("fairino")  # state frames at debug level (devices.trace)
# what a client of the simulator asks for: the simulator's own fields too (never asked of a real controller)
SIM_SUBSCRIPTION = (*REQUIRED_FIELDS, *OPTIONAL_FIELDS, *SIM_FIELDS)
_NAME_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*", re.ASCII)
MAX_FRAMES = 65536  # frames kept between two polls (about 9 minutes at 8 ms); the oldest are dropped


class StateStream:
    """A started CNDE subscription. The constructor connects and configures (raises DeviceError, leaving
    nothing open); `poll()` drains frames; `close()` stops the reader and closes the socket."""

    def __init__(
        self,
        host: str,
        port: int,
        *,
        period_ms: int,
        now: Callable[[], float],
        silence_s: float,
        timeout_s: float,
        on_lost: Callable[[str], None],
        label: str,
        fields: Sequence[str] = REQUIRED_FIELDS + OPTIONAL_FIELDS,
        watch: Callable[[], float] = time.monotonic,
    ) -> None:
        self._now = now
        self._watch = watch
        self.frames_in = 0  # data frames taken, readable or not
        self._arrived = threading.Condition()
        self._silence = silence_s
        self._timeout = timeout_s
        self._on_lost = on_lost
        self._label = label
        self._lock = threading.Lock()
        self._frames: collections.deque[StateFrame] = collections.deque(maxlen=MAX_FRAMES)
        self._closing = threading.Event()
        self._gone = False  # the loss was reported
        self.latest: StateFrame | None = None
        self.cmd_num: int | None = None
        self.bad_frames = 0
        self._bad_at_rx = 0  # bad_frames when the last readable frame came
        self._splitter = p.FrameSplitter()
        self._pending: list[p.CndeFrame] = []
        self.missing: tuple[str, ...] = ()  # the fields asked for that the controller has not
        try:
            self._sock = socket.create_connection((host, port), timeout=timeout_s)
        except OSError as exc:
            raise DeviceError(f"{label}: cannot open the state stream (port {port}): {exc}") from None
        try:
            self._sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            self.fields, self._layout = self._subscribe(list(fields), period_ms)
            self._start()
        except BaseException:
            self._sock.close()
            raise
        self._sock.setblocking(False)
        self.local_address: tuple[str, int] = self._sock.getsockname()[:2]
        self._last_rx = watch()
        t = now()
        for frame in self._pending:
            if frame.type == p.FrameType.OUTPUT_DATA:
                self._on_data(frame.data, t)
                self.frames_in += 1
        self._pending.clear()
        self._reader = threading.Thread(target=self._read_loop, daemon=True, name="fairino-state")
        self._reader.start()

    # --- set-up -------------------------------------------------------------------------------------------

    def _subscribe(self, names: list[str], period_ms: int) -> tuple[tuple[str, ...], p.StateLayout]:
        """Configure `names`; a refusal that mentions NOT_FOUND, in whatever shape, drops the optional fields
        it names (every optional one when it names none) and asks again: only a refusal of the required
        fields (REQUIRED_FIELDS) raises. What was dropped is in `self.missing` and said in one warning."""
        asked = list(names)
        while True:  # each refusal raises or leaves fewer names: it ends
            status, text = self._configure(names, period_ms)
            if status == p.MessageStatus.OK:
                break
            missing = _missing(names, text)
            if missing is None:
                raise DeviceError(f"{self._label}: the controller refused the state configuration: {text!r}")
            required = [n for n in missing if n in REQUIRED_FIELDS]
            if required or all(n in REQUIRED_FIELDS for n in names):
                raise DeviceError(
                    f"{self._label}: the controller has not the state fields every run needs "
                    f"({', '.join(required or REQUIRED_FIELDS)}): {text[:200]!r}"
                )
            # a refusal that names none of the fields asked for drops every optional one
            names = (
                [n for n in names if n not in missing]
                if missing
                else [n for n in names if n in REQUIRED_FIELDS]
            )
        self.missing = tuple(n for n in asked if n not in names)
        if self.missing:
            _log.warning(
                "%s: the controller answered NOT_FOUND: going on without the state field(s) %s",
                self._label,
                ", ".join(self.missing),
            )
        try:
            return tuple(names), p.StateLayout.from_types(names, text.split(","))
        except p.CndeFrameError as exc:
            raise DeviceError(f"{self._label}: unreadable configuration reply: {exc}") from None

    def _configure(self, names: list[str], period_ms: int) -> tuple[int, str]:
        config = p.encode_output_config(period_ms, names)
        self._send(p.encode_frame(p.FrameType.OUTPUT_CONFIG, config))
        deadline = time.monotonic() + self._timeout
        while True:
            frame = self._next_frame(deadline, "the state configuration")
            if frame.type == p.FrameType.MESSAGE:
                return p.decode_message(frame.data)

    def _start(self) -> None:
        self._send(p.encode_frame(p.FrameType.START))
        deadline = time.monotonic() + self._timeout
        while True:
            frame = self._next_frame(deadline, "the stream start")
            if frame.type == p.FrameType.OUTPUT_DATA:
                # some controllers answer a start with data directly
                self._pending.insert(0, frame)
                return
            if frame.type == p.FrameType.MESSAGE:
                status, text = p.decode_message(frame.data)
                if status != p.MessageStatus.OK:
                    raise DeviceError(f"{self._label}: the controller refused to start the stream: {text!r}")
                return

    def _next_frame(self, deadline: float, what: str) -> p.CndeFrame:
        while not self._pending:
            left = deadline - time.monotonic()
            if left <= 0:
                raise DeviceError(f"{self._label}: no answer to {what} within {self._timeout:.1f} s")
            self._sock.settimeout(left)
            try:
                chunk = self._sock.recv(65536)
                if _TRACE.isEnabledFor(trace.DEBUG):
                    trace.frame(_TRACE, "rx", chunk, "state")
            except TimeoutError:
                continue
            except OSError as exc:
                raise DeviceError(
                    f"{self._label}: state stream failed during {what}: {exc} (a controller may serve one "
                    "state-stream client: is another program connected to it?)"
                ) from None
            if not chunk:
                raise DeviceError(
                    f"{self._label}: the controller closed the state stream during {what} (a controller may "
                    "serve one state-stream client: is another program connected to it?)"
                )
            self._pending.extend(self._splitter.feed(chunk))
        return self._pending.pop(0)

    def _send(self, frame: bytes) -> None:
        if _TRACE.isEnabledFor(trace.DEBUG):
            trace.frame(_TRACE, "tx", frame, "state")
        self._sock.sendall(frame)

    # --- reading ------------------------------------------------------------------------------------------

    def _read_loop(self) -> None:
        sock = self._sock
        try:
            while not self._closing.is_set():
                readable, _, _ = select.select([sock], [], [], 0.01)
                if readable:
                    t = self._now()
                    try:
                        chunk = sock.recv(65536)
                        if _TRACE.isEnabledFor(trace.DEBUG):
                            trace.frame(_TRACE, "rx", chunk, "state")
                    except BlockingIOError:
                        chunk = None
                    if chunk == b"":
                        self._lose("the controller closed the state stream")
                        return
                    self._take(chunk or b"", t)
                if not self.check_silence():
                    return
        except (OSError, ValueError) as exc:
            self._lose(f"state stream failed: {exc}")
        finally:
            with self._arrived:
                self._arrived.notify_all()

    def _take(self, chunk: bytes, t: float) -> None:
        frames = [f for f in self._splitter.feed(chunk) if f.type == p.FrameType.OUTPUT_DATA]
        for frame in frames:
            # only a frame that can be read keeps the link alive: unreadable ones reach no run (its guard
            # judges fresh poses only), so a stream of them is as silent as no stream at all
            if self._on_data(frame.data, t):
                self._last_rx, self._bad_at_rx = self._watch(), self.bad_frames
        if frames:
            with self._arrived:
                self.frames_in += len(frames)
                self._arrived.notify_all()

    def check_silence(self) -> bool:
        """False (and the stream declared lost) when no data frame came for more than `silence_s`, or the
        stream was already lost."""
        if self._gone:
            return False
        silent = self._watch() - self._last_rx
        if silent > self._silence:
            bad = self.bad_frames - self._bad_at_rx
            if bad:
                self._lose(f"no readable state frame for {silent * 1000:.0f} ms ({bad} unreadable)")
            else:
                self._lose(f"no state frame for {silent * 1000:.0f} ms")
            return False
        return True

    def await_frames(self, count: int, timeout_s: float) -> bool:
        """Wait until `count` data frames in all were taken (True), the reader ended (True: the loss is
        reported) or `timeout_s` of real time passed (False)."""
        with self._arrived:
            return self._arrived.wait_for(
                lambda: self.frames_in >= count or not self._reader.is_alive(), timeout_s
            )

    def _lose(self, why: str) -> None:
        # once: the reader and a lock-step check may both find the silence, and the client must hear it once
        with self._lock:
            first = not self._gone and not self._closing.is_set()
            self._gone = True
        if first:
            self._on_lost(why)

    def _on_data(self, data: bytes, t: float) -> bool:
        """Take one data frame: True when it could be read (and is queued), False when counted as bad."""
        try:
            v = self._layout.unpack(data)
        except p.CndeFrameError:
            self.bad_frames += 1
            return False
        frame = _frame(v, t)
        with self._lock:
            self._frames.append(frame)
            self.latest = frame
            if "servoJ_cmd_num" in v:
                self.cmd_num = int(v["servoJ_cmd_num"])
        return True

    def poll(self) -> list[StateFrame]:
        with self._lock:
            out = list(self._frames)
            self._frames.clear()
        return out

    def snapshot(self) -> tuple[StateFrame | None, int | None]:
        """(latest frame, servoJ_cmd_num) read together."""
        with self._lock:
            return self.latest, self.cmd_num

    def close(self) -> None:
        self._closing.set()
        if self._reader is not threading.current_thread():
            self._reader.join(timeout=1.0)
        with contextlib.suppress(OSError):
            self._sock.close()


def _missing(names: Sequence[str], text: str) -> list[str] | None:
    """The fields a configuration refusal says the controller has not: None when it does not mention
    NOT_FOUND (a refusal for another reason); from a type list (NOT_FOUND in a field's place), or the names
    it quotes; empty when it names none (a bare NOT_FOUND)."""
    if p.NOT_FOUND not in text.upper():
        return None
    types = [t.strip().upper() for t in text.split(",")]
    if len(types) == len(names):
        listed = [n for n, t in zip(names, types, strict=True) if t == p.NOT_FOUND]
        if listed:
            return listed
    quoted = set(_NAME_RE.findall(text))
    return [n for n in names if n in quoted]


def _frame(v: dict[str, Any], t: float) -> StateFrame:
    """A StateFrame from one decoded data frame (optional fields None when not subscribed), the latch and
    the motion state decoded into the neutral Fault and MotionState."""
    stamp = v.get("timestamp_us")
    cmd_num = v.get("servoJ_cmd_num")
    robot_state = v.get("robot_state")
    # servo mode is the simulator's own field: a controller's `servo_state` is an auxiliary drive's state
    servo = v.get("sim_servo_mode")
    return StateFrame(
        t=t,
        q=tuple(v["actual_joint_pos"]),
        fault=decode_fault(int(v["main_code"]), int(v["sub_code"])),
        enabled=bool(v.get("rbt_enable_state", 1)),
        setpoint=tuple(v["last_servoJ_target"]) if "last_servoJ_target" in v else None,
        device_time_s=stamp * 1e-6 if stamp is not None else None,
        qd=tuple(v["actual_joint_vel"]) if "actual_joint_vel" in v else None,
        motion=motion_state(robot_state) if robot_state is not None else None,
        cmd_num=int(cmd_num) if cmd_num is not None else None,
        servo_active=bool(servo) if servo is not None else None,
    )
