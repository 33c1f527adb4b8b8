"""A Franka robot that pylibfranka connects to unchanged: libfranka's TCP service on port 1337 of a loopback
address of its own, and the UDP state/command exchange every millisecond (real time).

pylibfranka dials port 1337 only, so each simulator binds its own address of 127.0.0.0/8 (127.0.0.2 and up,
the first free one) and many run side by side. One client at a time: a second Connect is refused by closing
it. A reflex latches robot_mode Reflex with its flag in current_errors and last_motion_errors until
AutomaticErrorRecovery clears it.

In lock-step (`lockstep=True`, what `clock=sim` runs) the robot's time is simulated: once the client answers
states in a motion, state N+1 goes out only after the command answering state N came (or the motion ended),
and each cycle advances the physics by exactly 1 ms, however long the client took. A lost packet (`drop`)
is then a state the client never sees: the next one comes 2 ms of robot time later. Outside a motion (and
before a motion's first command) libfranka only reads, so the states go out every millisecond of real time.
"""

from __future__ import annotations

import contextlib
import random
import select
import socket
import subprocess
import sys
import threading
import time
from dataclasses import dataclass

from servotool.devices.franka import codes
from servotool.devices.franka import protocol as p
from servotool.devices.franka.physics import MAX_MISSED, Check, Joints
from servotool.devices.franka.profiles import PROFILES, Profile, urdf_of
from servotool.errors import DeviceError

FIRST_ADDRESS = 2
LAST_ADDRESS = 254
# lock-step: the most states lost in a row (a gap of 4 ms at most; the robot gives up on the link at 20)
LOST_IN_ROW = 3
# lock-step: how long (wall time) the simulator waits for the answer to a state before it counts the
# cycle as lost (well under libfranka's own receive timeout, so a stalled client is judged by the robot)
LOCKSTEP_PATIENCE_S = 0.5
HANDOVER_S = 0.25  # how long a new client waits for the one before to finish going away
START_MODES = {"idle": "Idle", "user_stopped": "UserStopped", "reflex": "Reflex", "other": "Other"}


def bind_free_address(port: int = p.COMMAND_PORT) -> socket.socket:
    """A listening TCP socket on `port` of the first loopback address 127.0.0.N (N from 2) nobody holds."""
    for n in range(FIRST_ADDRESS, LAST_ADDRESS + 1):
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        try:
            sock.bind((f"127.0.0.{n}", port))
        except OSError:
            sock.close()
            continue
        sock.listen(2)
        return sock
    raise DeviceError(f"no loopback address 127.0.0.{FIRST_ADDRESS}-{LAST_ADDRESS} has port {port} free")


@dataclass
class Motion:
    command_id: int


class FrankaSim:
    """The simulator of one profile; `start()` serves until `close()`. `address` is where to dial it."""

    def __init__(
        self,
        profile: Profile,
        drop: float = 0.0,
        seed: int = 0,
        address: str = "",
        lockstep: bool = False,
        mode: str = "idle",
        reflex: tuple[str, float] | None = None,
    ) -> None:
        self.profile = profile
        self.drop = drop
        self.lockstep = lockstep
        # a reflex raised at a time after the connection (its name, seconds): rehearses a recorder
        self.scheduled_reflex = reflex
        self._reflex_due: int | None = None  # the message id it is due at
        self._rng = random.Random(seed)
        if address:
            self._listen = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            try:
                self._listen.bind((address, p.COMMAND_PORT))
            except OSError as exc:
                self._listen.close()
                raise DeviceError(f"cannot bind {address} port {p.COMMAND_PORT}: {exc.strerror}") from None
            self._listen.listen(2)
        else:
            self._listen = bind_free_address()
        self.address = self._listen.getsockname()[0]
        self.joints = Joints(profile)
        self.message_id = 0
        self.robot_mode = codes.MODE[START_MODES[mode]]
        # a robot that starts in Reflex has a reflex latched (a contact before the run)
        self.errors: tuple[bool, ...] = codes.flags_of(["joint_reflex"] if mode == "reflex" else [])
        self.last_motion_errors: tuple[bool, ...] = self.errors
        self.motion: Motion | None = None
        self.reflexes: list[Check] = []
        self.refused = 0  # clients refused while another one was connected
        self._lock = threading.Lock()
        self._session_ended = threading.Condition(self._lock)
        self._stop = threading.Event()
        self._tcp: socket.socket | None = None
        self._udp: socket.socket | None = None
        self._peer: tuple[str, int] | None = None
        self._threads: list[threading.Thread] = []

    # -- lifecycle -------------------------------------------------------------------------------------

    def start(self) -> FrankaSim:
        for target in (self._serve_tcp, self._serve_udp):
            t = threading.Thread(target=target, daemon=True, name=f"franka-sim-{target.__name__}")
            t.start()
            self._threads.append(t)
        return self

    def close(self) -> None:
        self._stop.set()
        with contextlib.suppress(OSError):
            self._listen.shutdown(socket.SHUT_RDWR)  # wakes the accept (a close alone does not)
        for sock in (self._listen, self._tcp, self._udp):
            if sock is not None:
                with contextlib.suppress(OSError):
                    sock.close()
        for t in self._threads:
            t.join(timeout=1.0)

    def __enter__(self) -> FrankaSim:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- TCP service -----------------------------------------------------------------------------------

    def _serve_tcp(self) -> None:
        """Accept clients while one is served (in a thread of its own): a second is closed at once."""
        while not self._stop.is_set():
            try:
                conn, _ = self._listen.accept()
            except OSError:
                return
            # a client that just went away may still be ending its session: it gets a moment to
            with self._session_ended:
                self._session_ended.wait_for(lambda: self._tcp is None, timeout=HANDOVER_S)
                busy = self._tcp is not None
                if not busy:
                    self._tcp = conn
            if busy:
                self.refused += 1
                with contextlib.suppress(OSError):
                    conn.close()  # one client per robot
                continue
            t = threading.Thread(
                target=self._serve_client, args=(conn,), daemon=True, name="franka-sim-client"
            )
            t.start()

    def _serve_client(self, conn: socket.socket) -> None:
        try:
            self._session(conn)
        except Exception:  # a client that goes away or sends garbage ends its own session only
            pass
        finally:
            with contextlib.suppress(OSError):
                conn.close()
            with self._session_ended:
                if self.motion is not None:
                    # the robot loses the client mid-motion as it loses its commands: the link reflex
                    self._reflex(Check("communication_constraints_violation", "the client went away"))
                self._tcp, self._peer, self.motion = None, None, None
                self._session_ended.notify_all()

    def _session(self, conn: socket.socket) -> None:
        buf = b""
        while not self._stop.is_set():
            chunk = conn.recv(4096)
            if not chunk:
                return
            buf += chunk
            while len(buf) >= p.HEADER_SIZE:
                header = p.decode_header(buf)
                if len(buf) < header.size:
                    break
                header, payload, buf = p.split_message(buf)
                self._handle(conn, header, payload)

    def _reply(self, command: int, command_id: int, payload: bytes) -> None:
        if self._tcp is not None:
            self._tcp.sendall(p.encode_message(command, command_id, payload))

    def _handle(self, conn: socket.socket, header: p.Header, payload: bytes) -> None:
        cmd, cid = p.Command(header.command), header.command_id
        if cmd is p.Command.CONNECT:
            version, udp_port = p.decode_connect_request(payload)
            status = p.connect_status_for(version)
            if status is p.ConnectStatus.SUCCESS:
                with self._lock:
                    self._peer = (conn.getpeername()[0], udp_port)
                    if self.scheduled_reflex is not None and self._reflex_due is None:
                        # counted in robot cycles: the same in real time and in lock-step
                        self._reflex_due = self.message_id + round(self.scheduled_reflex[1] / 0.001)
            self._reply(cmd, cid, p.encode_connect_response(status))
        elif cmd is p.Command.MOVE:
            req = p.decode_move_request(payload)
            with self._lock:
                ok = (
                    self.robot_mode == codes.MODE["Idle"]
                    and self.motion is None
                    and req.motion_generator_mode is p.MotionGeneratorMode.JOINT_POSITION
                    and req.controller_mode is p.ControllerMode.JOINT_IMPEDANCE
                )
                if ok:
                    self.motion = Motion(cid)
                    # libfranka waits for a state showing the motion, then reads a newer one before
                    # it answers: those two go out unprompted, every later one answers a command
                    self._in_loop, self._unprompted = False, 2
                    self.joints.start()
                    self._answered = self.message_id
                    self.robot_mode = codes.MODE["Move"]
                    self.last_motion_errors = (False,) * codes.N_ERRORS
            started = p.MoveStatus.MOTION_STARTED if ok else p.MoveStatus.COMMAND_NOT_POSSIBLE_REJECTED
            self._reply(cmd, cid, p.encode_status(started))
        elif cmd is p.Command.STOP_MOVE:
            with self._lock:
                motion, self.motion = self.motion, None
                if self.robot_mode == codes.MODE["Move"]:
                    self.robot_mode = codes.MODE["Idle"]
            if motion is not None:
                self._reply(p.Command.MOVE, motion.command_id, p.encode_status(p.MoveStatus.PREEMPTED))
            self._reply(cmd, cid, p.encode_status(p.StopMoveStatus.SUCCESS))
        elif cmd is p.Command.AUTOMATIC_ERROR_RECOVERY:
            with self._lock:
                self.errors = (False,) * codes.N_ERRORS
                if self.robot_mode == codes.MODE["Reflex"]:
                    self.robot_mode = codes.MODE["Idle"]
            self._reply(cmd, cid, p.encode_status(p.RecoveryStatus.SUCCESS))
        elif cmd is p.Command.SET_COLLISION_BEHAVIOR:
            p.decode_collision_behavior(payload)
            self._reply(cmd, cid, p.encode_status(self._setter_status()))
        elif cmd is p.Command.SET_JOINT_IMPEDANCE:
            p.decode_joint_impedance(payload)
            self._reply(cmd, cid, p.encode_status(self._setter_status()))
        elif cmd is p.Command.GET_ROBOT_MODEL:
            urdf = urdf_of(self.profile.model)
            self._reply(cmd, cid, p.encode_robot_model_response(p.SetterStatus.SUCCESS, urdf))
        else:
            # the other setters are accepted (their values do not change this model)
            self._reply(cmd, cid, p.encode_status(self._setter_status()))

    def _setter_status(self) -> p.SetterStatus:
        with self._lock:
            idle = self.motion is None
        return p.SetterStatus.SUCCESS if idle else p.SetterStatus.COMMAND_NOT_POSSIBLE_REJECTED

    # -- UDP exchange ----------------------------------------------------------------------------------

    def _serve_udp(self) -> None:
        self._udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self._udp.bind((self.address, 0))
        next_tick = time.monotonic()
        while not self._stop.is_set():
            with self._lock:
                peer = self._peer
                stepping = self.lockstep and self.motion is not None and self._unprompted <= 0
            if stepping and peer is not None:
                self._lockstep_cycle(peer)
                next_tick = time.monotonic()
                continue
            if peer is not None:
                self.cycle(peer)
            # a cycle this process was late for is never caught up in a burst of states (the robot's
            # time is its message count: a stall of the simulator slows its time, it loses no cycle)
            next_tick = max(next_tick + 0.001, time.monotonic() + (0.0005 if self.lockstep else 0.0))
            self._drain_until(next_tick)

    def _lockstep_cycle(self, peer: tuple[str, int]) -> None:
        """One cycle of simulated time: wait for the answer to the last state, then step 1 ms; a state the
        drop draw loses is not sent, and the next cycle follows at once: up to LOST_IN_ROW states in a row may
        be lost, so the client sees gaps of 2 to 4 ms."""
        self._await_answer(time.monotonic() + LOCKSTEP_PATIENCE_S)
        lost = 0
        while lost < LOST_IN_ROW and self.drop and self._rng.random() < self.drop:
            self.cycle(peer, send=False)
            lost += 1
        self.cycle(peer)

    def _await_answer(self, deadline: float) -> None:
        """Take commands until the one answering the newest state came, the motion ended or deadline."""
        while not self._stop.is_set() and time.monotonic() < deadline:
            with self._lock:
                if self.motion is None or self._peer is None:
                    return
                pending = self._pending
            if pending is not None and pending.message_id >= self.message_id:
                return
            self._drain_until(min(deadline, time.monotonic() + 0.01), first_only=True)

    def _drain_until(self, deadline: float, first_only: bool = False) -> None:
        """Take the commands that arrive before the next tick; the newest answering the last state counts.
        first_only: return after the first command taken."""
        udp = self._udp
        while udp is not None:
            wait = deadline - time.monotonic()
            if wait <= 0:
                return
            try:
                ready, _, _ = select.select([udp], [], [], wait)
            except (OSError, ValueError):
                return
            if not ready:
                return
            try:
                data = udp.recv(2048)
            except OSError:
                return
            if self.drop and not self.lockstep and self._rng.random() < self.drop:
                continue
            try:
                cmd = p.decode_command(data)
            except p.FrankaProtocolError:
                continue
            # a late answer still counts once: the newest command of a state not answered before
            if self._answered < cmd.message_id <= self.message_id:
                self._pending = cmd
                if first_only:
                    return

    _pending: p.RobotCommand | None = None
    _answered = 0
    _in_loop = False  # the client answers states in this motion
    _unprompted = 0  # lock-step: states of this motion still to send before waiting for answers

    def cycle(self, peer: tuple[str, int], send: bool = True) -> None:
        """One millisecond: judge the command answering the last state, move the joints, send the state
        (unless `send` is false: the state is lost on its way)."""
        with self._lock:
            cmd, self._pending = self._pending, None
            if cmd is not None:
                self._in_loop = True
            # nothing is judged before the client's first answer in this motion: libfranka reads the
            # states of its start before it answers one
            moving = self.motion is not None and self.robot_mode == codes.MODE["Move"]
            if moving and self._in_loop and self.message_id > 0:
                self._judge(cmd)
            self._scheduled()
            self.joints.step()
            self.message_id += 1
            state = self._state()
            if self.motion is not None and self._unprompted > 0:
                self._unprompted -= 1
        if self._udp is not None and send:
            with contextlib.suppress(OSError):
                self._udp.sendto(p.encode_state(state), peer)

    def _judge(self, cmd: p.RobotCommand | None) -> None:
        if cmd is None:
            self.joints.miss()
            if self.joints.missed_in_row >= MAX_MISSED:
                self._reflex(
                    Check(
                        "communication_constraints_violation",
                        f"{self.joints.missed_in_row} commands in a row lost",
                    )
                )
            return
        self._answered = cmd.message_id
        check = self.joints.check(cmd.q_c, cmd.motion_generation_finished)
        if check is not None:
            self._reflex(check)
            return
        self.joints.accept(cmd.q_c)
        if cmd.motion_generation_finished:
            motion, self.motion = self.motion, None
            self.robot_mode = codes.MODE["Idle"]
            if motion is not None:
                self._send_move_result(motion.command_id, p.MoveStatus.SUCCESS)

    def _scheduled(self) -> None:
        """Raise the scheduled reflex once its time has come (once per simulator)."""
        due, scheduled = self._reflex_due, self.scheduled_reflex
        if due is None or scheduled is None or self.message_id < due:
            return
        self._reflex_due = None
        self.scheduled_reflex = None
        self._reflex(Check(scheduled[0], f"scheduled {scheduled[1]:g} s after the connection"))

    def _reflex(self, check: Check) -> None:
        self.reflexes.append(check)
        flags = codes.flags_of([check.name])
        self.errors = flags
        self.last_motion_errors = flags
        self.robot_mode = codes.MODE["Reflex"]
        self.joints.dq = [0.0] * len(self.joints.dq)  # the brakes hold the arm where it is
        self.joints.q_d = list(self.joints.q)
        motion, self.motion = self.motion, None
        if motion is not None:
            self._send_move_result(motion.command_id, p.MoveStatus.REFLEX_ABORTED)

    def _send_move_result(self, command_id: int, status: p.MoveStatus) -> None:
        with contextlib.suppress(OSError):
            self._reply(p.Command.MOVE, command_id, p.encode_status(status))

    def _state(self) -> p.RobotState:
        j = self.joints
        moving = self.motion is not None
        floats = {
            "q": tuple(j.q),
            "q_d": tuple(j.q_d),
            "dq": tuple(j.dq),
            "dq_d": tuple(j.dq_d),
            "ddq_d": tuple(j.ddq_d),
            "theta": tuple(j.q),
            "dtheta": tuple(j.dq),
            "O_T_EE": _IDENTITY,
            "O_T_EE_d": _IDENTITY,
            "O_T_EE_c": _IDENTITY,
            "F_T_EE": _IDENTITY,
            "EE_T_K": _IDENTITY,
            "F_T_NE": _IDENTITY,
            "NE_T_EE": _IDENTITY,
        }
        return p.RobotState(
            self.message_id,
            floats,
            motion_generator_mode=p.StateMotionMode.JOINT_POSITION if moving else p.StateMotionMode.IDLE,
            controller_mode=p.ControllerMode.JOINT_IMPEDANCE,
            errors=self.errors,
            reflex_reason=self.last_motion_errors,
            robot_mode=self.robot_mode,
            control_command_success_rate=j.success_rate() if moving else 0.0,
        )


_IDENTITY = (1.0, 0.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 1.0)


def spawn(
    name: str,
    drop: float = 0.0,
    seed: int = 0,
    address: str = "",
    timeout_s: float = 10.0,
    lockstep: bool = False,
    mode: str = "idle",
    reflex: tuple[str, float] | None = None,
) -> tuple[subprocess.Popen[str], str]:
    """The simulator in a process of its own and the address it serves on; DeviceError when it does not
    start within timeout_s. Closing the process's stdin stops it."""
    argv = [sys.executable, "-m", "servotool.devices.franka.sim", name, repr(drop), str(seed), address]
    argv += ["lockstep" if lockstep else "realtime", mode]
    if reflex is not None:
        argv += [reflex[0], repr(reflex[1])]
    proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    ready, _, _ = select.select([proc.stdout], [], [], timeout_s)
    line = proc.stdout.readline().strip() if ready else ""
    if not line:
        stop(proc)
        raise DeviceError(f"the {name} simulator did not start within {timeout_s:.0f} s")
    return proc, line


def stop(proc: subprocess.Popen[str]) -> None:
    """Stop a spawned simulator (idempotent)."""
    with contextlib.suppress(OSError, ValueError):
        if proc.stdin is not None:
            proc.stdin.close()
    try:
        proc.wait(timeout=5)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def start_sim(
    name: str,
    drop: float = 0.0,
    seed: int = 0,
    address: str = "",
    lockstep: bool = False,
    mode: str = "idle",
    reflex: tuple[str, float] | None = None,
) -> FrankaSim:
    """A running simulator of the profile `name` (KeyError names the known ones)."""
    if name not in PROFILES:
        raise KeyError(f"unknown Franka profile {name!r} (known: {', '.join(PROFILES)})")
    if mode not in START_MODES:
        raise KeyError(f"unknown start mode {mode!r} (known: {', '.join(START_MODES)})")
    return FrankaSim(PROFILES[name], drop, seed, address, lockstep, mode, reflex).start()


def main(argv: list[str] | None = None) -> int:
    """`python -m servotool.devices.franka.sim NAME [drop] [seed] [address] [lockstep|realtime] [mode]
    [reflex reflex_at]`: serve until stdin closes; the first line printed is the address to dial.
    pylibfranka holds the interpreter lock while it waits on the robot, so a simulator it talks to runs in
    a process of its own."""
    args = sys.argv[1:] if argv is None else argv
    sim = start_sim(
        args[0],
        float(args[1]) if len(args) > 1 else 0.0,
        int(args[2]) if len(args) > 2 else 0,
        args[3] if len(args) > 3 else "",
        len(args) > 4 and args[4] == "lockstep",
        args[5] if len(args) > 5 else "idle",
        (args[6], float(args[7])) if len(args) > 7 else None,
    )
    print(sim.address, flush=True)
    try:
        sys.stdin.read()
    finally:
        sim.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
