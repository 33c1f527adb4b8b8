"""A FAIRINO controller simulator that speaks the real wire protocols.

`FairinoSim` serves, on one host:

* XML-RPC (default port 20003, stdlib server, one thread per connection, HTTP/1.1 keep-alive);
* the CNDE state stream (default 20005): any configured subset of the known fields, at the configured period;
* UDP commands (default 20007): ServoJ (376), ServoMoveStart (689), ServoMoveEnd (690); each answered with a
  UDP frame holding the errcode as text when the profile's `udp_reply` is on (reply format unconfirmed).

Port 0 picks a free port; `.ports` reports what was bound. The joints follow physics.ControllerModel on the
simulator's own monotonic clock, advanced by a physics thread every `physics_ms` and at every command and
state sample. Every fault latched is put on `.faults` (a queue of FaultEvent) and passed to `on_fault`.

In lock-step (`lockstep=` a servotool.clock.FakeClock) there is no physics thread and no state-frame timer:
time is the FakeClock's, the clock stops at every instant a state frame is due and the simulator sends it
then, sampled at that instant. `LockStep` (below) ties the clients opened on it to the same clock, so that
time only moves once the simulator has taken every command sent, and the clients have taken every frame
sent: each command is applied at the simulated time it was sent, whatever the load on the machine.
`open_url` opens `sim:` URLs: the simulator, then the real client connected to it.

Several clients, as on a real controller: any number of XML-RPC sessions and UDP senders drive the one
controller. Enable, servo mode and faults are the controller's, not a session's (a second client's
RobotEnable is a no-op on an enabled arm, its ServoMoveEnd ends everyone's servo mode), and every ServoJ is
executed in arrival order whoever sent it, so two interleaved streams make the setpoint jumps that latch the
runaway. The state stream shows what another client needs to see before it enables: drives enabled, servo
mode (`sim_servo_mode`, simulator only), the ServoJ count rising, the joints moving. `servoj_senders()` and
`stats["sender_switches"]` tell a test who streamed.

It serves the vendor's Python SDK (V3.9.x RPC class) unchanged, which needs the default ports. Differences
from a real controller: ServoJ without ServoMoveStart is accepted at once (a real one may block for seconds);
several CNDE clients may connect at once unless `cnde_clients` limits them (the campaign saw a controller
serve one; how it refuses the next is unconfirmed: the simulator closes the connection); only the fields in
fields.FIELDS exist (others are NOT_FOUND; with `sim_fields` off, fields.SIM_FIELDS too), and the shape of a
refusal naming an unknown field is the profile's `cnde_refusal`. `close_rpc()` (or `rpc_close_after`) closes
the XML-RPC port for good, as a controller whose command link dies while its state stream and UDP port go on.
"""

from __future__ import annotations

import contextlib
import math
import queue
import socket
import socketserver
import sys
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any
from xmlrpc.server import SimpleXMLRPCRequestHandler, SimpleXMLRPCServer

from servotool.clock import FakeClock
from servotool.devices.fairino import protocol as p
from servotool.devices.fairino.client import (
    CLIENT_PARAMS,
    DEFAULT_SILENCE_S,
    FairinoArm,
    check_watchdog,
    client_kwargs,
)
from servotool.devices.fairino.cnde_server import CndeSession
from servotool.devices.fairino.codes import ErrCode
from servotool.devices.fairino.fields import FIELDS, SIM_FIELDS
from servotool.devices.fairino.physics import ControllerModel, FaultEvent, Snapshot
from servotool.devices.fairino.profiles import ProfileError, SimProfile, valid_params, with_overrides
from servotool.devices.fairino.stream import SIM_SUBSCRIPTION
from servotool.devices.url import DeviceURL, DeviceURLError, guessed, sim_clock
from servotool.errors import DeviceError

FIRMWARE = "V3.9.6"
POLL_S = 0.01  # how often the serving threads look at the stop flag: stop() returns within a few of these


class SimError(DeviceError):
    """The FAIRINO simulator could not start (port in use, bad host) or was used in the wrong state."""


@dataclass(frozen=True)
class SimPorts:
    rpc: int
    cnde: int
    udp: int


class _RpcHandler(SimpleXMLRPCRequestHandler):
    rpc_paths = ("/", "/RPC2")
    protocol_version = "HTTP/1.1"  # keep-alive: a 100 Hz ServoJ stream reuses one connection
    disable_nagle_algorithm = True
    timeout = 30  # idle keep-alive connections are dropped after this many seconds

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib signature
        pass

    def handle(self) -> None:
        # one thread per connection: the commands it carries are told apart from another session's
        _caller.name = f"rpc {self.client_address[0]}:{self.client_address[1]}"
        super().handle()


_caller = threading.local()  # the XML-RPC session of the current request thread


class _RpcServer(socketserver.ThreadingMixIn, SimpleXMLRPCServer):
    daemon_threads = True
    allow_reuse_address = True
    block_on_close = False

    def __init__(self, addr: tuple[str, int]) -> None:
        self.open_requests: set[socket.socket] = set()
        self._req_lock = threading.Lock()
        super().__init__(addr, requestHandler=_RpcHandler, logRequests=False, allow_none=True)

    def process_request(self, request: Any, client_address: Any) -> None:
        with self._req_lock:
            self.open_requests.add(request)
        super().process_request(request, client_address)

    def shutdown_request(self, request: Any) -> None:
        with self._req_lock:
            self.open_requests.discard(request)
        super().shutdown_request(request)

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that went away mid-request (reset, broken pipe, timed out) is no error of the simulator:
        nothing is printed. Anything else is reported as socketserver does."""
        if isinstance(sys.exc_info()[1], OSError):
            return
        super().handle_error(request, client_address)

    def drop_connections(self) -> None:
        with self._req_lock:
            reqs, self.open_requests = list(self.open_requests), set()
        for r in reqs:
            _hard_close(r)


def _hard_close(sock: socket.socket) -> None:
    with contextlib.suppress(OSError):
        sock.shutdown(socket.SHUT_RDWR)
    with contextlib.suppress(OSError):
        sock.close()


class FairinoSim:
    """The simulator. `profile` is a SimProfile or a profile name; `overrides` change its parameters
    (strings as in URLs, or typed values; unknown names raise profiles.ProfileError).

    Lifecycle: `start()` binds and starts daemon threads (raises SimError if a port is taken), `stop()`
    closes every socket and joins the threads; also a context manager. Not restartable.

    `lockstep`: a FakeClock that is the simulator's time (then `clock` is not used): see the module docstring.
    """

    def __init__(
        self,
        profile: SimProfile | str = "fr3",
        *,
        host: str = "127.0.0.1",
        rpc_port: int = 20003,
        cnde_port: int = 20005,
        udp_port: int = 20007,
        overrides: Mapping[str, Any] | None = None,
        on_fault: Callable[[FaultEvent], None] | None = None,
        clock: Callable[[], float] = time.monotonic,
        lockstep: FakeClock | None = None,
    ) -> None:
        self.profile = with_overrides(profile, overrides)
        self.lockstep = lockstep
        self.link: LockStep | None = None  # the clients in lock-step with it (set by LockStep)
        if lockstep is not None:
            clock = lockstep.now
        self.host = host
        self._want = SimPorts(rpc_port, cnde_port, udp_port)
        self._ports: SimPorts | None = None
        self._clock = clock
        self._on_fault = on_fault
        self.faults: queue.Queue[FaultEvent] = queue.Queue()
        self._lock = threading.Lock()
        self._model = ControllerModel(self.profile, clock())
        self._stop = threading.Event()
        self._started = False
        self._threads: list[threading.Thread] = []
        self._sessions: set[CndeSession] = set()
        self._sessions_lock = threading.Lock()
        self._paused = False
        self._garbled = False
        self._thawed = threading.Event()  # cleared while frozen (fault injection): XML-RPC calls wait
        self._thawed.set()
        self._rpc: _RpcServer | None = None
        self._cnde_sock: socket.socket | None = None
        self._udp_sock: socket.socket | None = None
        self.stats = {
            "udp_frames": 0,
            "udp_bad": 0,
            "cnde_clients": 0,
            "rpc_calls": 0,
            "sender_switches": 0,
            "cnde_refused": 0,
        }
        self._senders: dict[str, float] = {}  # ServoJ sender -> time of its last command (sim clock)
        self._last_sender: str | None = None
        self._taken = threading.Condition()  # lock-step: counts of what the UDP port took and answered
        self._datagrams = 0
        self._answered: dict[tuple[str, int], int] = {}
        # the state fields this controller has
        self._fields = (
            FIELDS if self.profile.sim_fields else {k: v for k, v in FIELDS.items() if k not in SIM_FIELDS}
        )
        self._rpc_closed = False
        self._servoj_taken = 0

    # --- lifecycle --------------------------------------------------------------------------------------

    def start(self) -> FairinoSim:
        if self._started:
            raise SimError("simulator already started")
        self._started = True
        try:
            self._bind()
        except BaseException:
            self._close_sockets()
            raise
        rpc = self._rpc
        assert rpc and self._cnde_sock and self._udp_sock
        self._ports = SimPorts(
            rpc.server_address[1], self._cnde_sock.getsockname()[1], self._udp_sock.getsockname()[1]
        )
        self._spawn(lambda: rpc.serve_forever(poll_interval=POLL_S), "rpc")
        self._spawn(self._accept_loop, "cnde-accept")
        self._spawn(self._udp_loop, "udp")
        if self.lockstep is None:
            self._spawn(self._physics_loop, "physics")
        else:
            self.lockstep.on_advance(self._on_advance)
            self.lockstep.wake_at(self._next_frame_due)
        return self

    def _bind(self) -> None:
        host, want = self.host, self._want
        try:
            self._rpc = _RpcServer((host, want.rpc))
        except OSError as exc:
            raise SimError(f"cannot bind XML-RPC port {want.rpc} on {host}: {exc.strerror or exc}") from None
        self._register_rpc(self._rpc)
        cnde = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._cnde_sock = cnde
        cnde.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            cnde.bind((host, want.cnde))
        except OSError as exc:
            raise SimError(f"cannot bind CNDE port {want.cnde} on {host}: {exc.strerror or exc}") from None
        cnde.listen(8)
        cnde.settimeout(POLL_S)
        udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self._udp_sock = udp
        try:
            udp.bind((host, want.udp))
        except OSError as exc:
            raise SimError(f"cannot bind UDP port {want.udp} on {host}: {exc.strerror or exc}") from None
        udp.settimeout(POLL_S)

    def _spawn(self, target: Callable[[], None], name: str) -> None:
        th = threading.Thread(target=target, name=f"fairino-sim-{name}", daemon=True)
        th.start()
        self._threads.append(th)

    def stop(self) -> None:
        """Stop serving; every client connection is cut. Idempotent; returns within about a second."""
        if self._stop.is_set():
            return
        self._stop.set()
        self._thawed.set()  # a call held by freeze() returns
        if self._rpc is not None and self._ports is not None:
            self._rpc.shutdown()
        with self._sessions_lock:
            sessions = list(self._sessions)
        for s in sessions:
            s.close()
        self._close_sockets()
        me = threading.current_thread()
        for th in self._threads:
            if th is not me:
                th.join(timeout=1.0)

    def _close_sockets(self) -> None:
        if self._rpc is not None:
            self._rpc.drop_connections()
            self._rpc.server_close()
        for s in (self._cnde_sock, self._udp_sock):
            if s is not None:
                s.close()

    def __enter__(self) -> FairinoSim:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def running(self) -> bool:
        return self._started and not self._stop.is_set()

    @property
    def ports(self) -> SimPorts:
        """The bound ports; raises SimError before start()."""
        if self._ports is None:
            raise SimError("simulator not started")
        return self._ports

    def address(self) -> dict[str, Any]:
        """What the simulator serves, as plain data (for printing or JSON)."""
        pr = self.profile
        return {
            "host": self.host,
            "rpc_port": self.ports.rpc,
            "cnde_port": self.ports.cnde,
            "udp_port": self.ports.udp,
            "profile": pr.name,
            "lag_ms": pr.lag_ms,
            "tau_ms": pr.tau_ms,
            "noise_deg": pr.noise_deg,
            "state_ms": pr.state_ms,
            "enable_ms": pr.enable_ms,
            "joint_speed_limits": list(pr.joint_speed_limits),
            "runaway": pr.runaway,
            "runaway_band_deg": [pr.runaway_min_deg, pr.runaway_max_deg],
            "seed": pr.seed,
            "url": f"fairino://{self.host}?rpc_port={self.ports.rpc}&cnde_port={self.ports.cnde}"
            f"&udp_port={self.ports.udp}",
        }

    # --- model access -----------------------------------------------------------------------------------

    def snapshot(self) -> Snapshot:
        """The controller state now (draws encoder noise like a state frame does)."""
        with self._lock:
            return self._model.sample(self._clock())

    def servoj_senders(self, within_s: float = 1.0) -> list[str]:
        """The ServoJ senders (an XML-RPC session or a UDP source address) heard within the last `within_s`.
        A real controller executes them all, interleaved, whoever sent them."""
        now = self._clock()
        with self._lock:
            return sorted(s for s, t in self._senders.items() if now - t <= within_s)

    def _note_sender(self, sender: str) -> None:
        with self._lock:
            self._senders[sender] = self._clock()
            if self._last_sender is not None and sender != self._last_sender:
                # consecutive setpoints from two senders: the interleaving that makes setpoint jumps
                self.stats["sender_switches"] += 1
            self._last_sender = sender

    def hold_stream(self, paused: bool) -> None:
        """Fault injection: withhold (True) or resume (False) CNDE data frames, sockets left open."""
        self._paused = bool(paused)

    def garble_stream(self, garbled: bool) -> None:
        """Fault injection: send every CNDE data frame one byte short (True), a stream that keeps coming but
        that no client can read, or whole again (False)."""
        self._garbled = bool(garbled)

    def freeze(self, frozen: bool) -> None:
        """Fault injection: a controller that stops answering (True) with its sockets left open, as a
        frozen process or a black-holed link looks to a client: no state frame is sent and every XML-RPC
        call waits, unanswered, until thawed (False) or the simulator stops."""
        self.hold_stream(frozen)
        if frozen:
            self._thawed.clear()
        else:
            self._thawed.set()

    def close_rpc(self) -> None:
        """Fault injection: close the XML-RPC port for good (its open connections are cut, new ones refused),
        while the state stream and the UDP port go on: a controller whose command link died mid-run."""
        if self._rpc_closed or self._rpc is None:
            return
        self._rpc_closed = True
        rpc = self._rpc
        if self._ports is not None:
            rpc.shutdown()  # the accept loop ends (requests are served on threads of their own)
        rpc.server_close()
        rpc.drop_connections()

    def _count_servoj(self) -> None:
        """Count one ServoJ taken; closes the XML-RPC port when the profile's rpc_close_after is reached."""
        limit = self.profile.rpc_close_after
        self._servoj_taken += 1
        if limit and self._servoj_taken >= limit:
            self.close_rpc()

    def _command(self, fn: Callable[..., int], *args: Any) -> int:
        with self._lock:
            err = int(fn(self._clock(), *args))
            events = self._model.drain_events()
        for ev in events:
            self.faults.put(ev)
            if self._on_fault is not None:
                # a listener's bug must not take the controller down
                with contextlib.suppress(Exception):
                    self._on_fault(ev)
        return err

    def _state_values(self) -> dict[str, Any]:
        now = self._clock()
        with self._lock:
            s = self._model.sample(now)
            t0 = self._model.start_time
        lt = time.localtime()
        ms = int((time.time() % 1.0) * 1000)
        moving = any(abs(v) > 1e-6 for v in s.qd)
        return {
            "program_state": 1,
            "robot_state": 2 if moving else 1,
            "main_code": s.main_code,
            "sub_code": s.sub_code,
            "robot_mode": s.mode,
            "actual_joint_pos": s.q,
            "actual_joint_vel": s.qd,
            "rbt_enable_state": 1 if s.enabled else 0,
            "robot_time": (lt.tm_year, lt.tm_mon, lt.tm_mday, lt.tm_hour, lt.tm_min, lt.tm_sec, ms),
            "motion_done": 0 if moving else 1,
            "last_servoJ_target": s.last_target,
            "servoJ_cmd_num": s.cmd_num,
            "target_joint_pos": s.target,
            "target_joint_vel": s.qd,
            "udp_cmd_state": 1 if self.stats["udp_frames"] else 0,
            "servo_state": 0,  # the vendor's meaning: an auxiliary servo drive's state; none is fitted
            "timestamp_us": int(max(0.0, s.t - t0) * 1e6),
            "sim_servo_mode": 1 if s.servo_active else 0,
        }

    # --- XML-RPC ----------------------------------------------------------------------------------------

    def _register_rpc(self, server: _RpcServer) -> None:
        m = self._model

        def counted(fn: Callable[..., Any]) -> Callable[..., Any]:
            def call(*args: Any) -> Any:
                self._thawed.wait()
                if self._stop.is_set():
                    raise SimError("the simulator stopped")
                self.stats["rpc_calls"] += 1
                return fn(*args)

            call.__name__ = fn.__name__
            return call

        def servo_j(*args: Any) -> int:
            if len(args) != 8:
                return int(ErrCode.PARAM_COUNT)
            joints, _axes, _acc, _vel, cmd_t = args[:5]
            try:
                q = [float(x) for x in joints]
                cmd_t = float(cmd_t)
            except (TypeError, ValueError):
                return int(ErrCode.OUT_OF_RANGE)
            self._note_sender(getattr(_caller, "name", "rpc"))
            err = self._command(m.servo_j, q, cmd_t)
            self._count_servoj()
            return err

        def joint_pos_deg(flag: int = 1) -> list[Any]:
            return [0, *self.snapshot().q]

        def joint_pos_rad(flag: int = 1) -> list[Any]:
            return [0, *(math.radians(x) for x in self.snapshot().q)]

        def error_code() -> list[int]:
            with self._lock:
                return [0, self._model.main_code, self._model.sub_code]

        table: dict[str, Callable[..., Any]] = {
            "RobotEnable": lambda state: self._command(m.robot_enable, int(state)),
            "Mode": lambda state: self._command(m.set_mode, int(state)),
            "ResetAllError": lambda: self._command(m.reset_all_errors),
            "StopMotion": lambda: self._command(m.stop_motion),
            "ServoMoveStart": lambda: self._command(m.servo_start),
            "ServoMoveEnd": lambda: self._command(m.servo_end),
            "ServoJ": servo_j,
            "GetActualJointPosDegree": joint_pos_deg,
            "GetActualJointPosRadian": joint_pos_rad,
            "GetRobotErrorCode": error_code,
            "GetControllerIP": lambda: [0, self.host],
            "GetJointSoftLimitDeg": lambda flag=1: [0, *(v for lh in self.profile.joint_ranges for v in lh)],
            "GetSoftwareVersion": lambda: [0, f"SIM-{self.profile.name}", FIRMWARE, FIRMWARE],
        }
        for name, fn in table.items():
            server.register_function(counted(fn), name)

    # --- CNDE -------------------------------------------------------------------------------------------

    def _accept_loop(self) -> None:
        assert self._cnde_sock is not None
        while not self._stop.is_set():
            try:
                conn, peer = self._cnde_sock.accept()
            except TimeoutError:
                continue
            except OSError:
                break
            session = CndeSession(
                conn,
                self._state_values,
                lambda: self._paused,
                f"SIM-{self.profile.name} {FIRMWARE}",
                self._clock,
                self.profile.state_ms,
                timed=self.lockstep is None,
                garbled=lambda: self._garbled,
                table=self._fields,
                refusal=self.profile.cnde_refusal,
            )
            session.peer = peer
            with self._sessions_lock:
                if self._stop.is_set():
                    _hard_close(conn)
                    break
                limit = self.profile.cnde_clients
                if limit and len(self._sessions) >= limit:
                    # a controller that serves one state-stream client: the newcomer is cut off at once
                    self.stats["cnde_refused"] += 1
                    _hard_close(conn)
                    continue
                self._sessions.add(session)
                self.stats["cnde_clients"] += 1
            th = threading.Thread(target=self._run_session, args=(session,), daemon=True, name="fairino-cnde")
            th.start()
            self._threads.append(th)

    def _run_session(self, session: CndeSession) -> None:
        try:
            session.run()
        finally:
            with self._sessions_lock:
                self._sessions.discard(session)

    # --- UDP --------------------------------------------------------------------------------------------

    def _udp_loop(self) -> None:
        assert self._udp_sock is not None
        sock = self._udp_sock
        while not self._stop.is_set():
            try:
                data, addr = sock.recvfrom(65535)
            except TimeoutError:
                continue
            except OSError:
                break
            answered = self._udp_datagram(sock, data, addr)
            with self._taken:
                self._datagrams += 1
                if answered:
                    key = (str(addr[0]), int(addr[1]))
                    self._answered[key] = self._answered.get(key, 0) + 1
                self._taken.notify_all()

    def _udp_datagram(self, sock: socket.socket, data: bytes, addr: Any) -> bool:
        """Execute one datagram; True when an answer was sent back."""
        try:
            frame = p.decode_udp(data)
        except p.UdpFrameError:
            self.stats["udp_bad"] += 1
            return False
        self.stats["udp_frames"] += 1
        err = self._udp_command(frame, f"udp {addr[0]}:{addr[1]}")
        if err is None or not self.profile.udp_reply:
            return False
        try:
            sock.sendto(p.encode_udp(frame.count, frame.cmd_id, str(err)), addr)
        except OSError:
            return False  # the sender may have gone away: UDP is fire and forget
        return True

    def _udp_command(self, frame: p.UdpFrame, sender: str) -> int | None:
        m = self._model
        if frame.cmd_id == p.CmdId.SERVO_J:
            try:
                cmd = p.decode_servoj(frame.content)
            except p.UdpFrameError:
                self.stats["udp_bad"] += 1
                return int(ErrCode.PARAM_COUNT)
            self._note_sender(sender)
            err = self._command(m.servo_j, cmd.joints, cmd.cmd_t)
            self._count_servoj()
            return err
        if frame.cmd_id == p.CmdId.SERVO_MOVE_START:
            return self._command(m.servo_start)
        if frame.cmd_id == p.CmdId.SERVO_MOVE_END:
            return self._command(m.servo_end)
        return None

    # --- lock-step ----------------------------------------------------------------------------------------

    def await_datagrams(self, count: int, timeout_s: float) -> None:
        """Lock-step: return once the UDP port has taken `count` datagrams in all (executed and answered);
        SimError after `timeout_s` of real time (a datagram lost on loopback, or a stopped simulator)."""
        with self._taken:
            if not self._taken.wait_for(lambda: self._datagrams >= count or not self.running, timeout_s):
                raise SimError(
                    f"lock-step: the simulator took {self._datagrams} of {count} UDP commands "
                    f"in {timeout_s:g} s"
                )

    def answers_sent_to(self, addr: tuple[str, int]) -> int:
        """UDP answers sent to `addr` so far."""
        with self._taken:
            return self._answered.get((str(addr[0]), int(addr[1])), 0)

    def frames_sent_to(self, addr: tuple[str, int]) -> int | None:
        """State data frames sent to the CNDE client at `addr` so far; None when no session serves it."""
        with self._sessions_lock:
            for s in self._sessions:
                if tuple(s.peer) == tuple(addr):
                    return s.frames_sent
        return None

    def _next_frame_due(self) -> float | None:
        if not self.running:
            return None
        with self._sessions_lock:
            due = [t for s in self._sessions if (t := s.next_due()) is not None]
        return min(due) if due else None

    def _on_advance(self, t: float) -> None:
        if not self.running:
            return
        with self._lock:
            self._model.advance(t)
        with self._sessions_lock:
            sessions = list(self._sessions)
        for s in sessions:
            s.emit_due(t)

    # --- physics ----------------------------------------------------------------------------------------

    def _physics_loop(self) -> None:
        dt = self.profile.physics_ms / 1000.0
        deadline = self._clock()
        while not self._stop.is_set():
            deadline += dt
            delay = deadline - self._clock()
            if delay > 0:
                self._stop.wait(delay)
            else:
                deadline = self._clock()
            with self._lock:
                self._model.advance(self._clock())


# --- lock-step wiring and sim: URLs ---------------------------------------------------------------------

LOCKSTEP_TIMEOUT_S = 10.0  # real seconds a lock-step wait may take before it fails (never hangs)


class LockStep:
    """One simulator, the clients connected to it and the FakeClock they share, moving in lock-step.

    Before the clock moves on (its barrier), the simulator has executed every UDP command the clients sent
    and each client has taken every answer to them; at each instant the clock stops (after the simulator
    has sent the state frames due then), each client has taken every state frame sent to it. A wait that
    does not end within `timeout_s` of real time raises (SimError or DeviceError): lock-step never hangs.
    """

    def __init__(self, sim: FairinoSim, clock: FakeClock, timeout_s: float = LOCKSTEP_TIMEOUT_S) -> None:
        if sim.lockstep is not clock:
            raise SimError("lock-step needs the simulator to run on the same FakeClock")
        self.sim, self.clock, self.timeout_s = sim, clock, float(timeout_s)
        self.arms: list[FairinoArm] = []
        sim.link = self
        clock.attach(self._barrier)
        clock.on_advance(self._after)  # registered after the simulator's own listener (start())

    def add(self, arm: FairinoArm) -> FairinoArm:
        """Take `arm` (connected to this simulator, on this clock) into the lock-step; returns it."""
        self.arms.append(arm)
        return arm

    def connect(self, **kwargs: Any) -> FairinoArm:
        """Another client of this simulator, on the same clock, connected as another program would connect
        (by its address: a real client of a `fairino://` controller, not announced as simulated); keyword
        arguments go to FairinoArm (model, transport, enable_wait_s, ...)."""
        ports = self.sim.ports
        arm = FairinoArm(
            self.sim.host,
            rpc_port=ports.rpc,
            cnde_port=ports.cnde,
            udp_port=ports.udp,
            state_ms=self.sim.profile.state_ms,
            clock=self.clock,
            url=self.sim.address()["url"],
            state_fields=SIM_SUBSCRIPTION,
            **kwargs,
        )
        return self.add(arm)

    def _live(self) -> list[FairinoArm]:
        return [a for a in self.arms if a.streaming]

    def _barrier(self) -> None:
        arms = self._live()
        if not arms or not self.sim.running:
            return
        self.sim.await_datagrams(sum(a.datagrams_sent for a in self.arms), self.timeout_s)
        for arm in arms:
            addr = arm.command_address
            if addr is not None:
                arm.settle(replies=self.sim.answers_sent_to(addr), timeout_s=self.timeout_s)

    def _after(self, t: float) -> None:
        running = self.sim.running
        for arm in self._live():
            # a stopped simulator sends nothing more: the client's silence rule still holds, in simulated time
            sent = self.sim.frames_sent_to(arm.state_address) if running else None
            arm.settle(states=sent, timeout_s=self.timeout_s)


def open_url(parsed: DeviceURL, now: Callable[[], float] = time.monotonic, **kwargs: Any) -> FairinoArm:
    """Open `sim:fr3|fr20|simmachine[?param=value...]`: simulator parameters from profiles.PARAM_HELP, the
    client's transport, silence_ms and timeout_ms, and `clock=sim` (simulated time: the simulator and the
    client in lock-step on a FakeClock, as fast as the machine allows; the arm's `clock` is then that clock,
    and every run on the arm must use it). A caller's clock (`clock=`) follows devices.url.sim_clock: a
    FakeClock is used the same way, another clock stamps the frames, one with `clock=sim` is refused. Starts a
    FairinoSim on free loopback ports and connects the real client to it; unknown parameters or models
    raise DeviceURLError listing the valid ones before anything is opened; extra keyword arguments go to
    FairinoArm."""
    params = dict(parsed.params)
    kwargs = dict(kwargs)
    given = sim_clock(params, parsed.raw, kwargs.pop("clock", None))  # every family's sim: URL rule
    clock = given if isinstance(given, FakeClock) else None
    if given is not None and clock is None:
        kwargs["now"] = given.now  # real time, stamped by the caller's clock
    client = client_kwargs(parsed, CLIENT_PARAMS, params)
    unknown = sorted(set(params) - set(valid_params()))
    if unknown:
        valid = ", ".join(sorted({*valid_params(), *CLIENT_PARAMS, "clock"}))
        known = {*valid_params(), *CLIENT_PARAMS, "clock"}
        raise DeviceURLError(f"{parsed.raw}: unknown parameter(s) {guessed(unknown, known)}; valid: {valid}")
    try:
        profile = with_overrides(parsed.target, params)
    except ProfileError as exc:
        raise DeviceURLError(f"{parsed.raw}: {exc}") from None
    check_watchdog(parsed.raw, profile.state_ms, client.get("silence_s", DEFAULT_SILENCE_S))
    stamp = kwargs.pop("now", now)
    if clock is not None:
        stamp = clock.now  # stamps are the simulated time, like everything else
        kwargs["clock"] = clock
    sim = FairinoSim(profile, host="127.0.0.1", rpc_port=0, cnde_port=0, udp_port=0, lockstep=clock).start()
    link = LockStep(sim, clock) if clock is not None else None
    try:
        arm = FairinoArm(
            "127.0.0.1",
            rpc_port=sim.ports.rpc,
            cnde_port=sim.ports.cnde,
            udp_port=sim.ports.udp,
            state_ms=profile.state_ms,
            now=stamp,
            enable_wait_s=profile.enable_ms / 1000.0 + 0.02,
            model=profile.name,
            simulated=True,
            url=parsed.raw,
            joint_speed_limits=profile.joint_speed_limits,
            joint_ranges=profile.joint_ranges,
            nominal_lag_ms=profile.lag_ms,
            sim=sim,
            state_fields=SIM_SUBSCRIPTION,
            **{**client, **kwargs},
        )
    except BaseException:
        sim.stop()
        raise
    if link is not None:
        link.add(arm)
    return arm
