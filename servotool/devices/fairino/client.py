"""`FairinoArm`: the client for a FAIRINO controller, real or simulated (devices.arm.Arm).

Transports: XML-RPC for commands that need an answer (enable, mode, servo start/end, reset, and ServoJ when
transport=rpc), UDP for ServoJ when transport=udp (fire and forget: no return code; reply frames, if the
controller sends any, are collected by `replies()`), and the CNDE stream for state. One background thread reads
the state stream and the UDP replies and stamps each frame on arrival with the `now` clock it was given.

Link loss (state stream closed or reset, no state frame for `silence_s`, an XML-RPC call failing or timing out,
the UDP port refused) is reported as one ConnectionLost, raised by the next call (poll_states / replies first
hand over what arrived before the loss). Nothing blocks longer than its timeout.
"""

from __future__ import annotations

import collections
import contextlib
import http.client
import math
import select
import socket
import threading
import time
import xmlrpc.client
from collections.abc import Callable, Sequence
from typing import Any

from servotool.devices.arm import ConnectionLost, DeviceError, Reply, StateFrame
from servotool.devices.fairino import protocol as p
from servotool.devices.fairino.codes import ErrCode, describe_errcode, describe_fault
from servotool.devices.fairino.profiles import PROFILES, ProfileError, valid_params, with_overrides
from servotool.devices.fairino.rpc import server_proxy
from servotool.devices.fairino.sim import FairinoSim
from servotool.devices.registry import DeviceURL, DeviceURLError

REQUIRED_FIELDS = ("actual_joint_pos", "main_code", "sub_code")
# used when the controller has them; a controller answering NOT_FOUND for one is configured without it
OPTIONAL_FIELDS = (
    "rbt_enable_state",
    "last_servoJ_target",
    "servoJ_cmd_num",
    "actual_joint_vel",
    "robot_state",
    "timestamp_us",
)
# a model not named in the URL gets the lowest known limits, so speed bounds derived from them stay safe
CONSERVATIVE_LIMITS = (120.0, 120.0, 120.0, 180.0, 180.0, 180.0)
_CMD_NAMES = {int(c): n for c, n in ((p.CmdId.SERVO_J, "ServoJ"), (p.CmdId.SERVO_MOVE_START, "ServoMoveStart"),
                                      (p.CmdId.SERVO_MOVE_END, "ServoMoveEnd"))}
_MAX_FRAMES = 65536


class FairinoArm:
    """A connected FAIRINO controller. Joint values in degrees, times in seconds on `now`.

    Connecting (in the constructor) opens the state stream first, configures it (period `state_ms`),
    then checks XML-RPC with GetControllerIP; any failure raises DeviceError and leaves nothing open.
    `sim` is an embedded FairinoSim that close() stops.
    """

    def __init__(
        self,
        host: str,
        *,
        transport: str = "udp",
        rpc_port: int = 20003,
        cnde_port: int = 20005,
        udp_port: int = 20007,
        state_ms: int = 8,
        now: Callable[[], float] = time.monotonic,
        silence_s: float = 0.1,
        rpc_timeout_s: float = 0.5,
        connect_timeout_s: float = 2.0,
        enable_wait_s: float = 1.5,
        model: str = "fairino",
        simulated: bool = False,
        url: str | None = None,
        joint_speed_limits: Sequence[float] = CONSERVATIVE_LIMITS,
        sim: FairinoSim | None = None,
    ) -> None:
        if transport not in ("udp", "rpc"):
            raise ValueError(f"transport must be udp or rpc, not {transport!r}")
        if not 1 <= int(state_ms) <= 1000:
            raise ValueError(f"state_ms {state_ms} outside 1..1000")
        self.url = url or f"fairino://{host}"
        self.model = model
        self.simulated = simulated
        self.n_joints = 6
        self.joint_speed_limits = tuple(float(v) for v in joint_speed_limits)
        self.transport = transport
        self.host = host
        self.sim = sim
        self.state_ms = int(state_ms)
        self.silence_s = float(silence_s)
        self.enable_wait_s = float(enable_wait_s)
        self._now = now
        self._ports = (rpc_port, cnde_port, udp_port)
        self._timeout = float(connect_timeout_s)
        self._lock = threading.Lock()
        self._rpc_lock = threading.Lock()
        self._frames: collections.deque[StateFrame] = collections.deque(maxlen=_MAX_FRAMES)
        self._replies: collections.deque[Reply] = collections.deque(maxlen=_MAX_FRAMES)
        self._codes: collections.deque[tuple[int, int]] = collections.deque(maxlen=256)  # (seq, errcode)
        self._code_seq = 0
        self._latest: StateFrame | None = None
        self._cmd_num: int | None = None
        self._lost: str | None = None
        self._closing = threading.Event()
        self._closed = False
        self._udp_count = 0
        self.bad_frames = 0
        self._cnde: socket.socket | None = None
        self._udp: socket.socket | None = None
        self._reader: threading.Thread | None = None
        self._proxy, self._transport = server_proxy(host, rpc_port, rpc_timeout_s)
        self.fields: tuple[str, ...] = ()
        try:
            self._connect()
        except BaseException:
            self.close()
            raise

    # --- connection ---------------------------------------------------------------------------------------

    def _connect(self) -> None:
        host, (rpc_port, cnde_port, udp_port) = self.host, self._ports
        try:
            self._cnde = socket.create_connection((host, cnde_port), timeout=self._timeout)
        except OSError as exc:
            raise DeviceError(f"{self.url}: cannot open the state stream (port {cnde_port}): {exc}") from None
        self._cnde.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        splitter = p.FrameSplitter()
        pending: list[p.CndeFrame] = []
        names = list(REQUIRED_FIELDS + OPTIONAL_FIELDS)
        status, text = self._configure(names, splitter, pending)
        if status != p.MessageStatus.OK:
            types = text.split(",")
            missing = [n for n, t in zip(names, types, strict=False) if t == p.NOT_FOUND]
            if any(n in REQUIRED_FIELDS for n in missing) or not missing:
                raise DeviceError(f"{self.url}: the controller refused the state configuration: {text!r}")
            names = [n for n in names if n not in missing]
            status, text = self._configure(names, splitter, pending)
            if status != p.MessageStatus.OK:
                raise DeviceError(f"{self.url}: the controller refused the state configuration: {text!r}")
        try:
            self._layout = p.StateLayout.from_types(names, text.split(","))
        except p.FrameError as exc:
            raise DeviceError(f"{self.url}: unreadable configuration reply: {exc}") from None
        self.fields = tuple(names)
        self._send_cnde(p.FrameType.START)
        deadline = time.monotonic() + self._timeout
        while True:
            frame = self._await_frame(splitter, pending, deadline, "the stream start")
            if frame.type == p.FrameType.MESSAGE:
                status, text = p.decode_message(frame.data)
                if status != p.MessageStatus.OK:
                    raise DeviceError(f"{self.url}: the controller refused to start the stream: {text!r}")
                break
            if frame.type == p.FrameType.OUTPUT_DATA:
                pending.insert(0, frame)
                break
        try:
            self._proxy.GetControllerIP()
        except (OSError, http.client.HTTPException, xmlrpc.client.Error) as exc:
            raise DeviceError(f"{self.url}: XML-RPC (port {rpc_port}) does not answer: {exc}") from None
        if self.transport == "udp":
            self._udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            self._udp.connect((host, udp_port))
            self._udp.setblocking(False)
        self._cnde.settimeout(None)
        self._cnde.setblocking(False)
        self._last_rx = time.monotonic()
        t = self._now()
        for frame in pending:
            if frame.type == p.FrameType.OUTPUT_DATA:
                self._on_state(frame.data, t)
        self._reader = threading.Thread(target=self._read_loop, args=(splitter,), daemon=True,
                                        name="fairino-state")
        self._reader.start()

    def _send_cnde(self, ftype: int, data: bytes = b"") -> None:
        assert self._cnde is not None
        self._cnde.sendall(p.encode_frame(ftype, data))

    def _configure(self, names: list[str], splitter: p.FrameSplitter,
                   pending: list[p.CndeFrame]) -> tuple[int, str]:
        self._send_cnde(p.FrameType.OUTPUT_CONFIG, p.encode_output_config(self.state_ms, names))
        deadline = time.monotonic() + self._timeout
        while True:
            frame = self._await_frame(splitter, pending, deadline, "the state configuration")
            if frame.type == p.FrameType.MESSAGE:
                return p.decode_message(frame.data)

    def _await_frame(self, splitter: p.FrameSplitter, pending: list[p.CndeFrame], deadline: float,
                     what: str) -> p.CndeFrame:
        assert self._cnde is not None
        while True:
            if pending:
                return pending.pop(0)
            left = deadline - time.monotonic()
            if left <= 0:
                raise DeviceError(f"{self.url}: no answer to {what} within {self._timeout:.1f} s")
            self._cnde.settimeout(left)
            try:
                chunk = self._cnde.recv(65536)
            except TimeoutError:
                continue
            except OSError as exc:
                raise DeviceError(f"{self.url}: state stream failed during {what}: {exc}") from None
            if not chunk:
                raise DeviceError(f"{self.url}: the controller closed the state stream during {what}")
            pending.extend(splitter.feed(chunk))

    # --- background reader --------------------------------------------------------------------------------

    def _read_loop(self, splitter: p.FrameSplitter) -> None:
        cnde, udp = self._cnde, self._udp
        assert cnde is not None
        socks = [cnde] + ([udp] if udp is not None else [])
        try:
            while not self._closing.is_set():
                readable, _, _ = select.select(socks, [], [], 0.01)
                t = self._now()
                if cnde in readable:
                    try:
                        chunk = cnde.recv(65536)
                    except BlockingIOError:
                        chunk = None
                    except OSError as exc:
                        self._lose(f"state stream failed: {exc}")
                        return
                    if chunk == b"":
                        self._lose("the controller closed the state stream")
                        return
                    if chunk:
                        for frame in splitter.feed(chunk):
                            if frame.type == p.FrameType.OUTPUT_DATA:
                                self._on_state(frame.data, t)
                                self._last_rx = time.monotonic()
                if udp is not None and udp in readable and not self._drain_udp(udp, t):
                    return
                silent = time.monotonic() - self._last_rx
                if silent > self.silence_s and not self._closing.is_set():
                    self._lose(f"no state frame for {silent * 1000:.0f} ms")
                    return
        except (OSError, ValueError) as exc:
            if not self._closing.is_set():
                self._lose(f"state reader failed: {exc}")

    def _drain_udp(self, udp: socket.socket, t: float) -> bool:
        while True:
            try:
                data = udp.recv(65535)
            except BlockingIOError:
                return True
            except ConnectionRefusedError:
                self._lose("the controller's UDP command port refused the stream")
                return False
            except OSError as exc:
                self._lose(f"UDP command port failed: {exc}")
                return False
            try:
                frame = p.decode_udp(data)
                code = int(frame.content.strip())
            except (p.FrameError, ValueError):
                self.bad_frames += 1
                continue
            reply = Reply(t, code, _CMD_NAMES.get(frame.cmd_id, str(frame.cmd_id)))
            with self._lock:
                self._replies.append(reply)
                self._code_seq += 1
                self._codes.append((self._code_seq, code))

    def _on_state(self, data: bytes, t: float) -> None:
        try:
            v = self._layout.unpack(data)
        except p.FrameError:
            self.bad_frames += 1
            return
        stamp = v.get("timestamp_us")
        frame = StateFrame(
            t=t,
            q=tuple(v["actual_joint_pos"]),
            main_code=int(v["main_code"]),
            sub_code=int(v["sub_code"]),
            enabled=bool(v.get("rbt_enable_state", 1)),
            setpoint=tuple(v["last_servoJ_target"]) if "last_servoJ_target" in v else None,
            device_time_s=stamp * 1e-6 if stamp is not None else None,
        )
        with self._lock:
            self._frames.append(frame)
            self._latest = frame
            if "servoJ_cmd_num" in v:
                self._cmd_num = int(v["servoJ_cmd_num"])

    def _lose(self, why: str) -> None:
        with self._lock:
            if self._lost is None and not self._closed:
                self._lost = f"{self.url}: connection lost: {why}"
        # a call blocked on XML-RPC fails at once instead of waiting for its timeout
        self._transport.abort()

    def _check(self) -> None:
        if self._closed:
            raise DeviceError(f"{self.url}: the client is closed")
        if self._lost is not None:
            raise ConnectionLost(self._lost)

    # --- XML-RPC ------------------------------------------------------------------------------------------

    def _call(self, method: str, *args: Any) -> Any:
        self._check()
        with self._rpc_lock:
            try:
                return getattr(self._proxy, method)(*args)
            except xmlrpc.client.Fault as exc:
                raise DeviceError(f"{self.url}: {method} refused: {exc.faultString}") from None
            except (OSError, http.client.HTTPException, xmlrpc.client.ProtocolError) as exc:
                if self._lost is None:
                    why = "timed out" if isinstance(exc, TimeoutError) else f"failed ({exc})"
                    self._lose(f"XML-RPC {method} {why}")
                raise ConnectionLost(self._lost or f"{self.url}: connection lost") from None

    def _code(self, method: str, *args: Any) -> int:
        result = self._call(method, *args)
        if isinstance(result, (list, tuple)):
            result = result[0]
        return int(result)

    # --- Arm ----------------------------------------------------------------------------------------------

    def enable(self, timeout_s: float = 5.0, wait_window: bool = True) -> None:
        """RobotEnable(1) and Mode(0) (automatic), then wait out the enable window (`enable_wait_s`, at most
        timeout_s) until the state reports the drives enabled. Raises DeviceError when refused or if the
        state does not report enabled in time. The window is only nominal: warm_up() checks execution."""
        start = time.monotonic()
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
            now = time.monotonic()
            latest = self._latest
            if now >= until and latest is not None and latest.enabled:
                return
            if now - start > timeout_s:
                raise DeviceError(f"{self.url}: drives not reported enabled within {timeout_s:.1f} s")
            time.sleep(min(0.01, max(0.0, until - now)) or 0.01)

    def disable(self) -> int:
        """RobotEnable(0); returns the errcode (not raised: disabling is part of every cleanup)."""
        return self._code("RobotEnable", 0)

    def servo_start(self) -> int:
        """ServoMoveStart over XML-RPC (whatever the transport, to get its answer); returns the errcode."""
        return self._code("ServoMoveStart")

    def servo_end(self) -> int:
        return self._code("ServoMoveEnd")

    def reset_faults(self) -> int:
        """ResetAllError; returns the errcode (14 while the controller is still rejecting commands)."""
        return self._code("ResetAllError")

    def stop_motion(self) -> int:
        return self._code("StopMotion")

    def servo_j(self, q: Sequence[float], cmd_period_s: float) -> Reply | None:
        """Send one setpoint (deg) with its command period (s). transport=rpc: returns the Reply (errcode as
        answered); transport=udp: returns None (replies, if the controller sends any, come by replies())."""
        self._check()
        if len(q) != self.n_joints:
            raise ValueError(f"ServoJ needs {self.n_joints} joint values, got {len(q)}")
        joints = [float(x) for x in q]
        if not all(math.isfinite(x) for x in joints):
            raise ValueError("ServoJ joint values must be finite")
        if self.transport == "rpc":
            err = self._code("ServoJ", joints, [0.0] * 4, 0.0, 0.0, float(cmd_period_s), 0.0, 0.0, 0)
            reply = Reply(self._now(), err, "ServoJ")
            with self._lock:
                self._code_seq += 1
                self._codes.append((self._code_seq, err))
            return reply
        content = p.encode_servoj(p.ServoJCommand(tuple(joints), cmd_t=float(cmd_period_s)))
        frame = p.encode_udp(self._udp_count, p.CmdId.SERVO_J, content)
        self._udp_count = (self._udp_count + 1) & 0xFFFF
        assert self._udp is not None
        try:
            self._udp.send(frame)
        except OSError as exc:
            self._lose(f"UDP command send failed: {exc}")
            raise ConnectionLost(self._lost or f"{self.url}: connection lost") from None
        return None

    def poll_states(self) -> list[StateFrame]:
        """The state frames received since the last call, oldest first (host receive time in .t)."""
        with self._lock:
            frames = list(self._frames)
            self._frames.clear()
        if not frames:
            self._check()
        return frames

    def latest_state(self) -> StateFrame | None:
        self._check()
        return self._latest

    def replies(self) -> list[Reply]:
        """UDP reply frames received since the last call (empty with transport=rpc: servo_j returns those)."""
        with self._lock:
            out = list(self._replies)
            self._replies.clear()
        if not out:
            self._check()
        return out

    @property
    def servoj_count(self) -> int | None:
        """The controller's count of ServoJ commands it took (servoJ_cmd_num), when the stream carries it."""
        return self._cmd_num

    def wait_state(self, timeout_s: float = 1.0) -> StateFrame:
        """The newest state frame, waiting up to timeout_s for a first one; raises DeviceError if none."""
        end = time.monotonic() + timeout_s
        while True:
            latest = self.latest_state()
            if latest is not None:
                return latest
            if time.monotonic() > end:
                raise DeviceError(f"{self.url}: no state frame within {timeout_s:.1f} s")
            time.sleep(0.002)

    def warm_up(
        self,
        q_hold: Sequence[float] | None = None,
        cmd_period_s: float = 0.01,
        timeout_s: float = 5.0,
        settle_ticks: int = 5,
        hold_tol_deg: float = 0.5,
    ) -> float:
        """Start servo mode and stream the held pose until the controller executes the stream; returns the
        seconds it took. q_hold defaults to the measured pose.

        Accepted when, over the last `settle_ticks` command ticks: no command was answered 101 (the
        enable window), the controller's ServoJ count advanced by at least settle_ticks - 2 (it takes the
        stream; a disabled or not-ready controller does not count), its last taken target equals q_hold
        (0.01 deg) and the measured pose stayed within hold_tol_deg of q_hold. Without servoJ_cmd_num in
        the stream, settle_ticks consecutive answers 0 are required instead (transport=rpc or UDP replies).

        Raises DeviceError on timeout, on errcode 14 or a latched fault (reset first), or if the arm moves
        away from q_hold; servo mode is left on after success so the caller can stream at once.
        """
        settle_ticks = max(3, int(settle_ticks))
        start = time.monotonic()
        if q_hold is None:
            q_hold = self.wait_state(timeout_s).q
        hold = tuple(float(x) for x in q_hold)
        window: collections.deque[tuple[bool, int | None]] = collections.deque(maxlen=settle_ticks + 1)
        started = False
        seen_seq = self._code_seq
        last_code: int | None = None
        deadline = time.monotonic()
        while True:
            if time.monotonic() - start > timeout_s:
                raise DeviceError(
                    f"{self.url}: warm-up timed out after {timeout_s:.1f} s: the controller did not execute "
                    f"the hold stream (last answer: {last_code})"
                )
            deadline += cmd_period_s
            delay = deadline - time.monotonic()
            if delay > 0:
                time.sleep(delay)
            if not started:
                err = self.servo_start()
                if err == ErrCode.OK:
                    started = True
                elif err != ErrCode.NOT_ENABLED:
                    raise DeviceError(f"{self.url}: ServoMoveStart answered {describe_errcode(err)}")
                continue
            self.servo_j(hold, cmd_period_s)
            with self._lock:
                codes = [c for s, c in self._codes if s > seen_seq]
                seen_seq = self._code_seq
                state, count = self._latest, self._cmd_num
            if codes:
                last_code = codes[-1]
            if ErrCode.FAILED in codes:
                raise DeviceError(f"{self.url}: warm-up refused ({describe_errcode(ErrCode.FAILED)}); reset first")
            if state is not None and (state.main_code or state.sub_code):
                raise DeviceError(f"{self.url}: warm-up: {describe_fault(state.main_code, state.sub_code)}")
            if state is not None and max(abs(a - b) for a, b in zip(state.q, hold, strict=True)) > hold_tol_deg:
                raise DeviceError(f"{self.url}: the arm moved more than {hold_tol_deg} deg while holding")
            ok = all(c == ErrCode.OK for c in codes) and (bool(codes) or count is not None)
            window.append((ok, count))
            if len(window) <= settle_ticks or not all(o for o, _ in list(window)[1:]):
                continue
            if count is not None:
                first = window[0][1]
                if first is None or count - first < settle_ticks - 2:
                    continue
                target = state.setpoint if state is not None else None
                if target is not None and max(abs(a - b) for a, b in zip(target, hold, strict=True)) > 0.01:
                    continue
            return time.monotonic() - start

    def close(self) -> None:
        """Stop the reader, close every socket, stop the embedded simulator. Idempotent, never raises."""
        if self._closed:
            return
        self._closed = True
        self._closing.set()
        if self._reader is not None and self._reader is not threading.current_thread():
            self._reader.join(timeout=1.0)
        for s in (self._cnde, self._udp):
            if s is not None:
                with contextlib.suppress(OSError):
                    s.close()
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

# URL parameter -> FairinoArm keyword and converter
_CLIENT_PARAMS: dict[str, tuple[str, Callable[[str], Any]]] = {
    "transport": ("transport", str),
    "silence_ms": ("silence_s", lambda v: float(v) / 1000.0),
    "timeout_ms": ("rpc_timeout_s", lambda v: float(v) / 1000.0),
}
_REAL_PARAMS: dict[str, tuple[str, Callable[[str], Any]]] = {
    **_CLIENT_PARAMS,
    "rpc_port": ("rpc_port", int),
    "cnde_port": ("cnde_port", int),
    "udp_port": ("udp_port", int),
    "state_ms": ("state_ms", int),
    "model": ("model", str),
}


def _client_kwargs(parsed: DeviceURL, table: dict[str, tuple[str, Callable[[str], Any]]],
                   params: dict[str, str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key in [k for k in params if k in table]:
        name, conv = table[key]
        raw = params.pop(key)
        try:
            out[name] = conv(raw)
        except ValueError:
            raise DeviceURLError(f"{parsed.raw}: parameter {key}={raw!r} is not valid") from None
    if out.get("transport", "udp") not in ("udp", "rpc"):
        raise DeviceURLError(f"{parsed.raw}: transport must be udp or rpc")
    return out


def open_url(parsed: DeviceURL, now: Callable[[], float] = time.monotonic, **kwargs: Any) -> FairinoArm:
    """Open `fairino://HOST[?transport=udp|rpc&rpc_port=&cnde_port=&udp_port=&state_ms=&silence_ms=&timeout_ms=
    &model=fr3|fr20]` or `sim:fr3|fr20|simmachine[?param=value...]` (simulator parameters from
    profiles.PARAM_HELP plus transport, silence_ms, timeout_ms). A sim URL starts a FairinoSim on free
    loopback ports and connects this same client to it. Unknown parameters raise DeviceURLError listing the
    valid ones; extra keyword arguments go to FairinoArm."""
    params = dict(parsed.params)
    if parsed.simulated:
        client = _client_kwargs(parsed, _CLIENT_PARAMS, params)
        unknown = sorted(set(params) - set(valid_params()))
        if unknown:
            valid = ", ".join(sorted(set(valid_params()) | set(_CLIENT_PARAMS)))
            raise DeviceURLError(f"{parsed.raw}: unknown parameter(s) {', '.join(unknown)}; valid: {valid}")
        try:
            profile = with_overrides(parsed.target, params)
        except ProfileError as exc:
            raise DeviceURLError(f"{parsed.raw}: {exc}") from None
        sim = FairinoSim(profile, host="127.0.0.1", rpc_port=0, cnde_port=0, udp_port=0).start()
        try:
            return FairinoArm(
                "127.0.0.1",
                rpc_port=sim.ports.rpc,
                cnde_port=sim.ports.cnde,
                udp_port=sim.ports.udp,
                state_ms=profile.state_ms,
                now=now,
                enable_wait_s=profile.enable_ms / 1000.0 + 0.02,
                model=profile.name,
                simulated=True,
                url=parsed.raw,
                joint_speed_limits=profile.joint_speed_limits,
                sim=sim,
                **{**client, **kwargs},
            )
        except BaseException:
            sim.stop()
            raise
    host = parsed.target
    if not host or "/" in host:
        raise DeviceURLError(f"{parsed.raw}: expected fairino://HOST")
    client = _client_kwargs(parsed, _REAL_PARAMS, params)
    if params:
        raise DeviceURLError(
            f"{parsed.raw}: unknown parameter(s) {', '.join(sorted(params))}; valid: {', '.join(sorted(_REAL_PARAMS))}"
        )
    model = client.pop("model", "fairino")
    limits = PROFILES[model].joint_speed_limits if model in PROFILES else CONSERVATIVE_LIMITS
    return FairinoArm(host, now=now, model=model, url=parsed.raw, joint_speed_limits=limits, **{**client, **kwargs})
