"""`FairinoArm`: the client for a FAIRINO controller, real or simulated (implements devices.arm.Arm).

Transports: XML-RPC for commands that need an answer (enable, mode, servo start/end, reset, and ServoJ when
transport=rpc), UDP for ServoJ when transport=udp (fire and forget: no return code; reply frames, if the
controller sends any, are collected by `replies()`), and the CNDE stream for state (stream.StateStream).
Frames and replies are stamped on arrival with the `now` clock the client was given. Its own waits (enable
window, warm-up, busy check) sleep on the `clock` it was given (the host monotonic clock by default), so a
simulator in lock-step on a FakeClock (sim.LockStep) moves with it; `settle()` is the hook such a lock-step
waits on.

Link loss (state stream closed or reset, no state frame for `silence_s`, an XML-RPC call failing or timing
out, the XML-RPC port found closed while UDP streams, the UDP port refused) is reported as one
ConnectionLost, raised by the next call (poll_states and replies first hand over what arrived before the
loss). Nothing blocks longer than its timeout.
"""

from __future__ import annotations

import collections
import contextlib
import http.client
import math
import socket
import threading
import time
import xmlrpc.client
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any
from xml.parsers.expat import ExpatError

from servotool.clock import Clock, MonotonicClock
from servotool.devices import trace
from servotool.devices.arm import (
    SETPOINT,
    Arm,
    CommandNames,
    EnablesCold,
    HasClock,
    HasStatePeriod,
    HasWatchdog,
    JointRanges,
    NamesCommands,
    Reply,
    ReportsJointRanges,
    ReportsOwner,
    StateFrame,
    WarmsUp,
)
from servotool.devices.fairino import protocol as p
from servotool.devices.fairino.busy import busy_evidence
from servotool.devices.fairino.codes import ErrCode, describe_errcode, describe_fault
from servotool.devices.fairino.profiles import (
    CONSERVATIVE_LIMITS,
    CONSERVATIVE_RANGES,
    PROFILES,
)
from servotool.devices.fairino.rpc import closed_by_peer, kept_socket, port_answers, server_proxy
from servotool.devices.fairino.stream import OPTIONAL_FIELDS, REQUIRED_FIELDS, StateStream
from servotool.devices.url import DeviceURL, DeviceURLError, bounded, guessed
from servotool.errors import ConnectionLost, DeviceError

if TYPE_CHECKING:
    # the simulator imports this module (sim: URLs are opened there), never the other way round
    from servotool.devices.fairino.sim import FairinoSim

# what xmlrpc.client raises on an answer it cannot read (not XML, a number that is not one, no value)
UNREADABLE_ANSWER: tuple[type[Exception], ...] = (ExpatError, xmlrpc.client.ResponseError, ValueError)
# an optional call's failure, or a connect check's: no usable answer whatever the reason
NO_ANSWER: tuple[type[Exception], ...] = (
    OSError,
    http.client.HTTPException,
    xmlrpc.client.Error,
    *UNREADABLE_ANSWER,
)

# what a UDP reply answers: a setpoint (ServoJ), else the controller's name of the command
_CMD_NAMES = {
    int(p.CmdId.SERVO_J): SETPOINT,
    int(p.CmdId.SERVO_MOVE_START): "ServoMoveStart",
    int(p.CmdId.SERVO_MOVE_END): "ServoMoveEnd",
}


# the XML-RPC calls behind the Arm methods, as a run's notes quote them
COMMAND_NAMES = CommandNames(
    servo_start="ServoMoveStart",
    servo_end="ServoMoveEnd",
    disable="RobotEnable(0)",
    reset_faults="ResetAllError",
)

_TRACE = trace.logger("fairino")  # frames and calls at debug level (devices.trace)
# what a real controller is asked for: fields of the vendor SDK's table alone (fields.VENDOR_FIELDS)
REAL_SUBSCRIPTION = (*REQUIRED_FIELDS, *OPTIONAL_FIELDS)
DEFAULT_SILENCE_S = 0.1  # the lost-link watchdog when a URL sets no silence_ms
DEFAULT_STATE_MS = 8  # the state period a client asks for when a URL sets no state_ms


class FairinoArm:
    """A connected FAIRINO controller. Joint values in degrees, times in seconds on `now`.

    The constructor connects: the state stream first (configured at `state_ms`), then XML-RPC is checked
    with GetControllerIP, then the UDP socket is opened (transport=udp). Any failure raises DeviceError and
    leaves nothing open. `sim` is an embedded FairinoSim that close() stops.

    Timeouts: an XML-RPC ServoJ gets `rpc_timeout_s`, other commands `command_timeout_s`; a dead link is
    found sooner by the state-stream watchdog (`silence_s`, on `clock`), which aborts any call in flight.
    Once the link is lost, a cleanup call (servo_end, disable) waits at most `cleanup_timeout_s` for its
    answer: it is still tried once, but a frozen controller must not hold the exit for the whole
    `command_timeout_s` of each call.

    `clock`: what the client's waits sleep on and the watchdog measures with (default: the host monotonic
    clock); when given, it is also `now` unless that is given too, and it is offered to runs as `.clock`.
    """

    def __init__(
        self,
        host: str,
        *,
        transport: str = "udp",
        rpc_port: int = 20003,
        cnde_port: int = 20005,
        udp_port: int = 20007,
        state_ms: int = DEFAULT_STATE_MS,
        now: Callable[[], float] | None = None,
        clock: Clock | None = None,
        silence_s: float = DEFAULT_SILENCE_S,
        rpc_timeout_s: float = 0.5,
        command_timeout_s: float = 5.0,
        cleanup_timeout_s: float = 0.5,
        connect_timeout_s: float = 2.0,
        enable_wait_s: float = 1.5,
        model: str = "fairino",
        simulated: bool = False,
        url: str | None = None,
        joint_speed_limits: Sequence[float] = CONSERVATIVE_LIMITS,
        joint_ranges: JointRanges = CONSERVATIVE_RANGES,
        nominal_lag_ms: float | None = None,
        sim: FairinoSim | None = None,
        state_fields: Sequence[str] | None = None,
    ) -> None:
        if transport not in ("udp", "rpc"):
            raise ValueError(f"transport must be udp or rpc, not {transport!r}")
        if not 1 <= int(state_ms) <= 1000:
            raise ValueError(f"state_ms {state_ms} outside 1..1000")
        self.url = url or f"fairino://{host}"
        self.command_names = COMMAND_NAMES
        self.model = model
        self.simulated = simulated
        self.n_joints = 6
        self.joint_speed_limits = tuple(float(v) for v in joint_speed_limits)
        self._profile_ranges = tuple((float(lo), float(hi)) for lo, hi in joint_ranges)
        self.nominal_lag_ms = nominal_lag_ms
        self._controller_ranges: JointRanges | None = None
        self._servo_on = False  # this client started servo mode
        self._sent = 0  # ServoJ commands this client sent
        self.transport = transport
        self.host = host
        self.sim = sim
        self.enable_wait_s = float(enable_wait_s)
        self._state_period_s = int(state_ms) / 1000.0
        self._silence_s = float(silence_s)
        self._timeouts = (float(rpc_timeout_s), float(command_timeout_s))
        self.cleanup_timeout_s = min(float(cleanup_timeout_s), float(command_timeout_s))
        self.clock = clock  # a run on this arm streams on it (a lock-step simulator's FakeClock)
        self._clock: Clock = clock or MonotonicClock(spin_s=0.0)
        now = now or (clock.now if clock is not None else time.monotonic)
        self._now = now
        self._init_link_state()
        self._stream: StateStream | None = None
        self._rpc_port = int(rpc_port)
        self._proxy, self._transport = server_proxy(host, rpc_port, rpc_timeout_s)
        try:
            self._stream = StateStream(
                host,
                cnde_port,
                period_ms=int(state_ms),
                now=now,
                silence_s=float(silence_s),
                timeout_s=float(connect_timeout_s),
                on_lost=self._lose,
                label=self.url,
                watch=self._clock.now,
                fields=tuple(state_fields or REAL_SUBSCRIPTION),
            )
            self._check_rpc(rpc_port, float(connect_timeout_s))
            self._controller_ranges = self._read_soft_limits()
            if transport == "udp":
                self._open_udp(udp_port)
        except BaseException:
            self.close()
            raise

    def _init_link_state(self) -> None:
        """The counters, locks, reply queues and (not yet open) sockets of the link, all set before it
        connects so that close() can run from any point of the connection."""
        self.datagrams_sent = 0  # UDP datagrams sent (a lock-step simulator waits until it took them all)
        self.answers_received = 0  # UDP frames received from the controller, readable or not
        self._rx = threading.Condition()
        self._lock = threading.Lock()
        self._rpc_lock = threading.Lock()
        self._replies: collections.deque[Reply] = collections.deque(maxlen=65536)
        self._codes: collections.deque[tuple[int, int]] = collections.deque(maxlen=256)  # (seq, errcode)
        self._code_seq = 0
        self._lost: str | None = None
        self._rpc_only = False  # the link was lost on XML-RPC alone: UDP and the state stream may still go
        self._stop_channel = False  # after such a loss, a braked stop may go out over UDP (open_stop_channel)
        self._closed = False
        self._closing = threading.Event()
        self._udp_count = 0
        self.bad_replies = 0
        self._udp: socket.socket | None = None
        self._udp_reader: threading.Thread | None = None
        self._udp_address: tuple[str, int] | None = None

    def _check_rpc(self, port: int, timeout_s: float) -> None:
        try:
            with self._rpc_lock:
                self._transport.set_timeout(timeout_s)
                self._proxy.GetControllerIP()
        except NO_ANSWER as exc:
            raise DeviceError(f"{self.url}: XML-RPC (port {port}) does not answer: {exc}") from None

    def _open_udp(self, port: int) -> None:
        self._udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self._udp.connect((self.host, port))
        self._udp_address = self._udp.getsockname()[:2]
        self._udp.settimeout(0.01)  # close() waits at most this for the reader
        self._udp_reader = threading.Thread(target=self._udp_loop, daemon=True, name="fairino-udp")
        self._udp_reader.start()

    @property
    def fields(self) -> tuple[str, ...]:
        """The state fields the controller streams to this client."""
        return self._stream.fields if self._stream else ()

    @property
    def missing_fields(self) -> tuple[str, ...]:
        """The state fields asked for that the controller answered NOT_FOUND (the client does without)."""
        return self._stream.missing if self._stream else ()

    @property
    def joint_ranges(self) -> JointRanges:
        """(lo, hi) per joint, deg: the controller's soft limits (GetJointSoftLimitDeg) when it reported
        usable ones at connect, else the model profile's datasheet ranges (profiles.py)."""
        return self._controller_ranges or self._profile_ranges

    @property
    def joint_ranges_source(self) -> str:
        """ "controller" or "profile": where joint_ranges come from."""
        return "controller" if self._controller_ranges else "profile"

    def _read_soft_limits(self) -> JointRanges | None:
        # optional: an older controller without the call, or an answer that is not 6 finite lo < hi pairs,
        # leaves the profile's ranges in force
        try:
            with self._rpc_lock:
                answer = self._proxy.GetJointSoftLimitDeg(1)
        except NO_ANSWER:
            return None
        return soft_limits_from_answer(answer, self.n_joints)

    # --- link ---------------------------------------------------------------------------------------------

    def _udp_loop(self) -> None:
        udp = self._udp
        assert udp is not None
        while not self._closing.is_set():
            try:
                data = udp.recv(65535)
                if _TRACE.isEnabledFor(trace.DEBUG):
                    trace.frame(_TRACE, "rx", data, "udp")
            except TimeoutError:
                continue
            except ConnectionRefusedError:
                self._lose("the controller's UDP command port refused the stream")
                return
            except OSError as exc:
                if not self._closing.is_set():
                    self._lose(f"UDP command port failed: {exc}")
                return
            self._take_reply(data, self._now())
            with self._rx:
                self.answers_received += 1
                self._rx.notify_all()

    def _take_reply(self, data: bytes, t: float) -> None:
        try:
            frame = p.decode_udp(data)
            code = int(frame.content.strip())
        except (p.UdpFrameError, ValueError):
            self.bad_replies += 1
            return
        with self._lock:
            self._replies.append(Reply(t, code, _CMD_NAMES.get(frame.cmd_id, str(frame.cmd_id))))
            self._code_seq += 1
            self._codes.append((self._code_seq, code))

    # --- lock-step hooks ----------------------------------------------------------------------------------

    @property
    def connected(self) -> bool:
        """Open and not lost."""
        return not self._closed and self._lost is None

    @property
    def state_address(self) -> tuple[str, int]:
        """This end of the state stream (host, port)."""
        assert self._stream is not None
        return self._stream.local_address

    @property
    def command_address(self) -> tuple[str, int] | None:
        """This end of the UDP command socket (host, port); None with transport=rpc."""
        return self._udp_address

    def settle(self, states: int | None = None, replies: int | None = None, timeout_s: float = 10.0) -> None:
        """Return once the state stream has taken `states` data frames and the UDP port `replies` frames
        since connecting (None: no wait), then check the state watchdog: a lock-step simulator, having sent
        them, waits here before its clock moves on. Raises DeviceError after `timeout_s` of real time;
        returns at once on a closed or lost link (the next call reports it)."""
        if replies is not None:
            with self._rx:
                ok = self._rx.wait_for(
                    lambda: self.answers_received >= replies or not self.streaming, timeout_s
                )
            if not ok:
                raise DeviceError(
                    f"{self.url}: {self.answers_received} of {replies} UDP answers in {timeout_s:g} s"
                )
        if self._stream is not None and self.streaming:
            if states is not None and not self._stream.await_frames(states, timeout_s):
                have = self._stream.frames_in
                raise DeviceError(f"{self.url}: {have} of {states} state frames in {timeout_s:g} s")
            self._stream.check_silence()

    @property
    def streaming(self) -> bool:
        """Setpoints and state still flow: connected, or a braked stop let through after losing XML-RPC."""
        return self.connected or (self._stop_channel and self._rpc_only and not self._closed)

    def _lose(self, why: str, rpc: bool = False) -> None:
        with self._lock:
            first = self._lost is None and not self._closed
            if first:
                self._lost = f"{self.url}: connection lost: {why}"
                self._rpc_only = rpc
            elif not rpc:  # the state stream or UDP failed too: no channel is left for a stop
                self._rpc_only = self._stop_channel = False
                self._lost = f"{self._lost}; then {why}"
        if first:
            # a call blocked on XML-RPC fails at once instead of waiting for its timeout (once: a cleanup
            # call made after the loss must not be cut by a later report of it)
            self._transport.abort()
        with self._rx:
            self._rx.notify_all()

    def _watch_rpc(self) -> None:
        """With transport=udp no XML-RPC call goes out while a run streams, so the command link is watched
        from the state polls: the kept connection closed by the controller and its port refusing a new one
        is a lost link (found before the stream ends, not by the servo end after it). A connection closed
        while the port still takes new ones was only idle: the next call opens another."""
        if self.transport != "udp" or self._lost is not None or self._closed:
            return
        if not self._rpc_lock.acquire(blocking=False):
            return  # a call is in flight: it finds a failure itself
        try:
            sock = kept_socket(self._transport)
            if sock is None or not closed_by_peer(sock):
                return
            with contextlib.suppress(Exception):
                self._transport.close()
            if not port_answers(self.host, self._rpc_port, self.cleanup_timeout_s):
                self._lose(f"the controller closed its XML-RPC port ({self._rpc_port})", rpc=True)
        finally:
            self._rpc_lock.release()

    def _check(self, stream: bool = False) -> None:
        """DeviceError once closed, ConnectionLost once lost; `stream` (UDP setpoints, state reads): not
        after a loss of XML-RPC alone once open_stop_channel let the braked stop through."""
        if self._closed:
            raise DeviceError(f"{self.url}: the client is closed")
        if self._lost is not None and not (stream and self._stop_channel and self._rpc_only):
            raise ConnectionLost(self._lost)

    def open_stop_channel(self) -> str | None:
        """After a lost link: when only XML-RPC was lost (its port closed, a call failed or timed out) while
        setpoints go by UDP and the state stream still brings frames, let UDP ServoJ and the state reads
        through from now on, so the braked stop still reaches the controller, and say over what; else None
        (and nothing changes). A later failure of UDP or the state stream closes it again."""
        with self._lock:
            stream = self._stream
            alive = stream is not None and stream.latest is not None
            if self._lost is None or not self._rpc_only or self.transport != "udp" or not alive:
                return None
            if self._udp is None or self._closed:
                return None
            self._stop_channel = True
        return "UDP ServoJ, with the state stream, which still answer"

    # --- XML-RPC ------------------------------------------------------------------------------------------

    def _call(self, method: str, *args: Any, cleanup: bool = False) -> Any:
        """One XML-RPC call. A lost link refuses it, except a `cleanup` call (ServoMoveEnd, RobotEnable(0)):
        a silent state stream says nothing of XML-RPC, so ending servo mode is still tried, once, waiting
        at most `cleanup_timeout_s` for the answer (ConnectionLost naming the call when none comes)."""
        if cleanup and self._closed:
            raise DeviceError(f"{self.url}: the client is closed")
        if not cleanup:
            self._check()
        after_loss = self._lost is not None
        timeout = self._timeouts[0] if method == "ServoJ" else self._timeouts[1]
        if after_loss:
            timeout = self.cleanup_timeout_s
        with self._rpc_lock:
            self._transport.set_timeout(timeout)
            try:
                if _TRACE.isEnabledFor(trace.DEBUG):
                    trace.call(_TRACE, method, args)
                answer = getattr(self._proxy, method)(*args)
                if _TRACE.isEnabledFor(trace.DEBUG):
                    trace.answer(_TRACE, method, answer)
                return answer
            except xmlrpc.client.Fault as exc:
                raise DeviceError(f"{self.url}: {method} refused: {exc.faultString}") from None
            except UNREADABLE_ANSWER as exc:
                raise DeviceError(
                    f"{self.url}: {method} answered something that is not XML-RPC "
                    f"({type(exc).__name__}: {exc})"
                ) from None
            except (OSError, http.client.HTTPException, xmlrpc.client.ProtocolError) as exc:
                timed_out = isinstance(exc, TimeoutError)
                if after_loss:
                    why = f"got no answer within {timeout:g} s" if timed_out else f"failed ({exc})"
                    raise ConnectionLost(f"{self.url}: {method} {why} after the link was lost") from None
                if self._lost is None:
                    why = "timed out" if timed_out else f"failed ({exc})"
                    self._lose(f"XML-RPC {method} {why}", rpc=method != "ServoJ" or self.transport == "udp")
                raise ConnectionLost(self._lost or f"{self.url}: connection lost") from None

    def _code(self, method: str, *args: Any, cleanup: bool = False) -> int:
        """The error code a call answers (an int, or a list whose first item is one). DeviceError for an
        answer that holds no whole number there."""
        result = self._call(method, *args, cleanup=cleanup)
        code = result[0] if isinstance(result, (list, tuple)) and result else result
        if isinstance(code, float) and code.is_integer():
            code = int(code)
        if isinstance(code, bool) or not isinstance(code, int):
            raise DeviceError(f"{self.url}: {method} answered {result!r:.60}, not an error code")
        return code

    # --- Arm ----------------------------------------------------------------------------------------------

    def enable_cold(self) -> None:
        """Enable without waiting out the enable window (EnablesCold)."""
        self.enable(wait_window=False)

    def enable(self, timeout_s: float = 5.0, wait_window: bool = True) -> None:
        """RobotEnable(1) and Mode(0) (automatic), then wait out the enable window (`enable_wait_s`, at most
        timeout_s) until the state reports the drives enabled. Raises DeviceError when refused or if the
        state does not report enabled in time. The window is only nominal: warm_up() checks execution."""
        clock = self._clock
        start = clock.now()
        err = self._code("RobotEnable", 1)
        if err != ErrCode.OK:
            raise DeviceError(f"{self.url}: RobotEnable(1) answered {describe_errcode(err)}")
        err = self._code("Mode", 0)
        if err != ErrCode.OK:
            raise DeviceError(f"{self.url}: Mode(0) answered {describe_errcode(err)}")
        if not wait_window:
            return
        until = start + min(self.enable_wait_s, timeout_s)
        while True:
            self._check()
            now = clock.now()
            latest = self._stream.latest if self._stream else None
            if now >= until and latest is not None and latest.enabled:
                return
            if now - start > timeout_s:
                raise DeviceError(f"{self.url}: drives not reported enabled within {timeout_s:.1f} s")
            clock.sleep(min(0.01, max(0.0, until - now)) or 0.01)

    def disable(self) -> int:
        """RobotEnable(0); returns the errcode (not raised: disabling is part of every cleanup)."""
        return self._code("RobotEnable", 0, cleanup=True)

    def servo_start(self) -> int:
        """ServoMoveStart over XML-RPC (whatever the transport, to get its answer); returns the errcode."""
        code = self._code("ServoMoveStart")
        self._servo_on = self._servo_on or code == ErrCode.OK
        return code

    def servo_end(self) -> int:
        """ServoMoveEnd over XML-RPC; returns the errcode."""
        code = self._code("ServoMoveEnd", cleanup=True)
        self._servo_on = False
        return code

    def busy_reason(self, window_s: float = 0.2) -> str | None:
        """Why another owner holds the arm, or None when it is free: the state frames of `window_s` (at least
        three state periods) are read without being consumed (poll_states still returns them) and judged
        by busy.busy_evidence: another client's ServoJ stream, servo mode this client did not start, the
        arm in motion. Call it after connecting and before enabling. Raises DeviceError when no state
        frame comes within a second, ConnectionLost when the link is lost."""
        first = self.wait_state(1.0)
        sent0 = self._sent
        frames = [first]
        end = self._clock.now() + max(float(window_s), 3 * self._state_period_s)
        while self._clock.now() < end:
            self._clock.sleep(0.002)
            latest = self.latest_state()
            if latest is not None and latest.t != frames[-1].t:
                frames.append(latest)
        return busy_evidence(frames, own_commands=self._sent - sent0, own_servo=self._servo_on)

    def reset_faults(self) -> int:
        """ResetAllError; returns the errcode (14 while the controller is still rejecting commands)."""
        return self._code("ResetAllError")

    def stop_motion(self) -> int:
        return self._code("StopMotion")

    def servo_j(self, q: Sequence[float], cmd_period_s: float) -> Reply | None:
        """Send one setpoint (deg) with its command period (s). transport=rpc: returns the Reply (errcode as
        answered); transport=udp: returns None (replies, if the controller sends any, come by replies())."""
        self._check(stream=self.transport == "udp")
        if len(q) != self.n_joints:
            raise ValueError(f"ServoJ needs {self.n_joints} joint values, got {len(q)}")
        joints = [float(x) for x in q]
        if not all(math.isfinite(x) for x in joints):
            raise ValueError("ServoJ joint values must be finite")
        if self.transport == "rpc":
            self._sent += 1
            err = self._code("ServoJ", joints, [0.0] * 4, 0.0, 0.0, float(cmd_period_s), 0.0, 0.0, 0)
            reply = Reply(self._now(), err, SETPOINT)
            with self._lock:
                self._code_seq += 1
                self._codes.append((self._code_seq, err))
            return reply
        self._sent += 1
        content = p.encode_servoj(p.ServoJCommand(tuple(joints), cmd_t=float(cmd_period_s)))
        frame = p.encode_udp(self._udp_count, p.CmdId.SERVO_J, content)
        self._udp_count = (self._udp_count + 1) & 0xFFFF
        assert self._udp is not None
        try:
            if _TRACE.isEnabledFor(trace.DEBUG):
                trace.frame(_TRACE, "tx", frame, "udp")
            self._udp.send(frame)
            self.datagrams_sent += 1
        except OSError as exc:
            self._lose(f"UDP command send failed: {exc}")
            raise ConnectionLost(self._lost or f"{self.url}: connection lost") from None
        return None

    def poll_states(self) -> list[StateFrame]:
        """The state frames received since the last call, oldest first (host receive time in .t)."""
        if self._closed:
            self._check()
        self._watch_rpc()
        frames = self._stream.poll() if self._stream else []
        if not frames:
            self._check(stream=True)
        return frames

    def latest_state(self) -> StateFrame | None:
        self._check(stream=True)
        return self._stream.latest if self._stream else None

    def replies(self) -> list[Reply]:
        """UDP reply frames received since the last call (empty with transport=rpc: servo_j returns those)."""
        if self._closed:
            self._check()
        with self._lock:
            out = list(self._replies)
            self._replies.clear()
        if not out:
            self._check(stream=True)
        return out

    @property
    def silence_s(self) -> float:
        """The lost-link watchdog (s): no readable state frame for this long is a lost link."""
        return self._silence_s

    @property
    def state_period_s(self) -> float:
        """The state period this client asked the controller for (s); what it keeps is measured by a run."""
        return self._state_period_s

    @property
    def servoj_count(self) -> int | None:
        """The controller's count of ServoJ commands it took (servoJ_cmd_num), when the stream carries it."""
        return self._stream.cmd_num if self._stream else None

    def wait_state(self, timeout_s: float = 1.0) -> StateFrame:
        """The newest state frame, waiting up to timeout_s for a first one; raises DeviceError if none."""
        end = self._clock.now() + timeout_s
        while True:
            latest = self.latest_state()
            if latest is not None:
                return latest
            if self._clock.now() > end:
                raise DeviceError(f"{self.url}: no state frame within {timeout_s:.1f} s")
            self._clock.sleep(0.002)

    def warm_up(
        self,
        q_hold: Sequence[float] | None = None,
        cmd_period_s: float = 0.01,
        timeout_s: float = 5.0,
        settle_ticks: int = 5,
        hold_tol_deg: float = 0.5,
    ) -> float:
        """Start servo mode and stream the held pose until the controller executes the stream; returns the
        seconds it took. q_hold defaults to the measured pose. ServoMoveStart answered 101 is retried.

        Accepted when, over the last `settle_ticks` (>= 3) command ticks: no command was answered other
        than 0 (101 marks the enable window), the controller's ServoJ count (servoJ_cmd_num) advanced by at
        least settle_ticks - 2 (a controller that drops the commands does not count them), the last target
        it reports taking equals q_hold (0.01 deg), and the measured pose stayed within hold_tol_deg of
        q_hold. Without servoJ_cmd_num in the stream, settle_ticks answers of 0 in a row are required
        instead (transport=rpc, or UDP replies).

        Raises DeviceError on timeout, on errcode 14 or a latched fault (reset first), or if the arm moves
        away from q_hold. Servo mode stays on after success, so the caller can stream at once. The UDP
        replies to the warm-up's own commands are consumed (they are its evidence, not the caller's).
        """
        try:
            return self._warm_up(q_hold, cmd_period_s, timeout_s, settle_ticks, hold_tol_deg)
        finally:
            with self._lock:
                self._replies.clear()

    def _warm_up(
        self,
        q_hold: Sequence[float] | None,
        cmd_period_s: float,
        timeout_s: float,
        settle_ticks: int,
        hold_tol_deg: float,
    ) -> float:
        assert self._stream is not None
        settle_ticks = max(3, int(settle_ticks))
        clock = self._clock
        start = clock.now()
        hold = tuple(float(x) for x in (q_hold if q_hold is not None else self.wait_state(timeout_s).q))
        # per tick: (all answers since the previous tick were 0 and there is evidence, ServoJ count)
        window: collections.deque[tuple[bool, int | None]] = collections.deque(maxlen=settle_ticks + 1)
        started = False
        seen_seq = self._code_seq
        last_code: int | None = None
        deadline = clock.now()
        while clock.now() - start <= timeout_s:
            deadline += cmd_period_s
            clock.sleep_until(deadline)
            if not started:
                err = self.servo_start()
                if err not in (ErrCode.OK, ErrCode.NOT_ENABLED):
                    raise DeviceError(f"{self.url}: ServoMoveStart answered {describe_errcode(err)}")
                started = err == ErrCode.OK
                continue
            self.servo_j(hold, cmd_period_s)
            with self._lock:
                codes = [c for seq, c in self._codes if seq > seen_seq]
                seen_seq = self._code_seq
            state, count = self._stream.snapshot()
            last_code = codes[-1] if codes else last_code
            if ErrCode.FAILED in codes:
                raise DeviceError(f"{self.url}: warm-up got {describe_errcode(ErrCode.FAILED)}; reset first")
            if state is not None and state.fault is not None:
                raise DeviceError(f"{self.url}: warm-up: {describe_fault(*state.fault.codes)}")
            if state is not None and _max_diff(state.q, hold) > hold_tol_deg:
                raise DeviceError(f"{self.url}: the arm moved more than {hold_tol_deg} deg while holding")
            window.append((all(c == ErrCode.OK for c in codes) and (bool(codes) or count is not None), count))
            if len(window) <= settle_ticks or not all(ok for ok, _ in list(window)[1:]):
                continue
            if count is not None:
                first = window[0][1]
                if first is None or count - first < settle_ticks - 2:
                    continue
                taken = state.setpoint if state is not None else None
                if taken is not None and _max_diff(taken, hold) > 0.01:
                    continue
            return clock.now() - start
        hint = ""
        if self._stream.cmd_num is None and last_code is None:
            hint = " (no servoJ_cmd_num in the state and no command answers: try transport=rpc)"
        raise DeviceError(
            f"{self.url}: warm-up timed out after {timeout_s:.1f} s: the controller did not execute the hold "
            f"stream (last answer: {last_code}){hint}"
        )

    def close(self) -> None:
        """Stop the readers, close every socket, stop the embedded simulator. Idempotent, never raises."""
        if self._closed:
            return
        self._closed = True
        self._closing.set()
        with self._rx:
            self._rx.notify_all()
        if self._stream is not None:
            self._stream.close()
        if self._udp_reader is not None:
            self._udp_reader.join(timeout=1.0)
        if self._udp is not None:
            with contextlib.suppress(OSError):
                self._udp.close()
        self._transport.abort()
        with contextlib.suppress(Exception):
            self._transport.close()
        if self.sim is not None:
            self.sim.stop()

    def __enter__(self) -> FairinoArm:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        kind = "SIMULATED " if self.simulated else ""
        return f"<FairinoArm {kind}{self.model} {self.url} transport={self.transport}>"


# --- URLs ---------------------------------------------------------------------------------------------------

# URL parameter -> FairinoArm keyword and converter. Every number is bounded: a NaN or infinite silence_ms
# would never compare greater than a silence, so the lost-link watchdog would never fire.
CLIENT_PARAMS: dict[str, tuple[str, Callable[[str], Any]]] = {
    "transport": ("transport", str),
    "silence_ms": ("silence_s", bounded(10, 2000, " ms", scale=1e-3)),
    "timeout_ms": ("rpc_timeout_s", bounded(1, 10000, " ms", scale=1e-3)),
}
_PORT = bounded(1, 65535, "", integer=True)
_REAL_PARAMS: dict[str, tuple[str, Callable[[str], Any]]] = {
    **CLIENT_PARAMS,
    "rpc_port": ("rpc_port", _PORT),
    "cnde_port": ("cnde_port", _PORT),
    "udp_port": ("udp_port", _PORT),
    "state_ms": ("state_ms", bounded(1, 1000, " ms", integer=True)),
    "model": ("model", str),
}


def check_watchdog(url: str, state_ms: int, silence_s: float) -> None:
    """DeviceURLError (before anything opens) when the lost-link watchdog does not outlast two state periods:
    every healthy wait between two frames would read as a lost link, once the robot is enabled."""
    if silence_s * 1e3 < 2 * state_ms - 1e-9:
        raise DeviceURLError(
            f"{url}: silence_ms {silence_s * 1e3:g} (the lost-link watchdog) is shorter than two state "
            f"periods (state_ms {state_ms}): set silence_ms to at least {2 * state_ms} or lower state_ms"
        )


def client_kwargs(
    parsed: DeviceURL, table: dict[str, tuple[str, Callable[[str], Any]]], params: dict[str, str]
) -> dict[str, Any]:
    """The FairinoArm keywords of the URL parameters in `table` (taken out of `params`). DeviceURLError
    naming the parameter and its bounds for a value that is not valid (before anything is opened)."""
    out: dict[str, Any] = {}
    for key in [k for k in params if k in table]:
        name, conv = table[key]
        raw = params.pop(key)
        try:
            out[name] = conv(raw)
        except ValueError as exc:
            why = str(exc) if str(exc).startswith("want ") else "not a valid value"
            raise DeviceURLError(f"{parsed.raw}: parameter {key}={raw!r}: {why}") from None
    if out.get("transport", "udp") not in ("udp", "rpc"):
        raise DeviceURLError(f"{parsed.raw}: transport must be udp or rpc")
    return out


def real_url_settings(parsed: DeviceURL) -> tuple[str, str, dict[str, Any]]:
    """(host, model, FairinoArm keywords) of a `fairino://` URL, checked whole without opening anything:
    DeviceURLError for a simulator URL, a missing host, an unknown parameter or model, or a value out of
    its bounds (campaign checks ask this before a run; open_url asks it first)."""
    if parsed.simulated:
        # the simulator is none of the real client's business: devices.registry opens sim: URLs through sim.py
        raise DeviceURLError(f"{parsed.raw}: a simulator URL: open it with devices.registry.open_arm")
    params = dict(parsed.params)
    host = parsed.target
    if not host or "/" in host:
        raise DeviceURLError(f"{parsed.raw}: expected fairino://HOST")
    client = client_kwargs(parsed, _REAL_PARAMS, params)
    if params:
        unknown, valid = guessed(sorted(params), _REAL_PARAMS), ", ".join(sorted(_REAL_PARAMS))
        raise DeviceURLError(f"{parsed.raw}: unknown parameter(s) {unknown}; valid: {valid}")
    model = client.pop("model", "fairino")
    if model != "fairino" and model not in PROFILES:
        raise DeviceURLError(f"{parsed.raw}: unknown model {model!r} (known: {', '.join(PROFILES)})")
    check_watchdog(
        parsed.raw, client.get("state_ms", DEFAULT_STATE_MS), client.get("silence_s", DEFAULT_SILENCE_S)
    )
    return host, model, client


def open_url(parsed: DeviceURL, now: Callable[[], float] = time.monotonic, **kwargs: Any) -> FairinoArm:
    """Open `fairino://HOST[?transport=udp|rpc&rpc_port=&cnde_port=&udp_port=&state_ms=&silence_ms=&timeout_ms=
    &model=fr3|fr20]`, a real controller (`sim:` URLs are opened by sim.open_url, through the registry).
    Unknown parameters or models raise DeviceURLError listing the valid ones, before anything is opened;
    extra keyword arguments go to FairinoArm."""
    host, model, client = real_url_settings(parsed)
    if hasattr(kwargs.get("clock"), "attach"):
        raise DeviceURLError(f"{parsed.raw}: a real controller runs in real time, not on a simulated clock")
    limits: tuple[float, ...] = CONSERVATIVE_LIMITS
    ranges: JointRanges = CONSERVATIVE_RANGES
    lag_ms: float | None = None
    if model in PROFILES:
        prof = PROFILES[model]
        limits, ranges, lag_ms = prof.joint_speed_limits, prof.joint_ranges, prof.lag_ms
    return FairinoArm(
        host,
        now=now,
        model=model,
        url=parsed.raw,
        joint_speed_limits=limits,
        joint_ranges=ranges,
        nominal_lag_ms=lag_ms,
        **{**client, **kwargs},
    )


def _max_diff(a: Sequence[float], b: Sequence[float]) -> float:
    return max(abs(x - y) for x, y in zip(a, b, strict=True))


def soft_limits_from_answer(answer: Any, n_joints: int = 6) -> JointRanges | None:
    """The ranges in a GetJointSoftLimitDeg answer, `[err, j1min, j1max, ..., j6min, j6max]` (the values
    may also come as one nested list), or None when err is not 0 or the values are not n_joints finite
    (lo, hi) pairs with lo < hi."""
    if not isinstance(answer, (list, tuple)) or not answer or answer[0] != 0:
        return None
    flat = list(answer[1]) if len(answer) == 2 and isinstance(answer[1], (list, tuple)) else list(answer[1:])
    try:
        values = [float(x) for x in flat]
    except (TypeError, ValueError):
        return None
    if len(values) != 2 * n_joints or not all(math.isfinite(v) for v in values):
        return None
    pairs = tuple((values[2 * j], values[2 * j + 1]) for j in range(n_joints))
    return pairs if all(lo < hi for lo, hi in pairs) else None


if TYPE_CHECKING:
    # mypy proves here that the client implements the whole Arm interface and every capability
    def _implements_arm(
        arm: FairinoArm,
    ) -> tuple[
        Arm,
        ReportsJointRanges,
        ReportsOwner,
        WarmsUp,
        HasWatchdog,
        HasStatePeriod,
        HasClock,
        NamesCommands,
        EnablesCold,
    ]:
        return arm, arm, arm, arm, arm, arm, arm, arm, arm
