"""FrankaArm: the Arm protocol over pylibfranka (imported here only).

The stream is paced by the robot: `servo_j` waits in readOnce for the next 1 ms state (recording it), then
writes the setpoint answering that state. `servo_end` writes the last setpoint again with motion_finished
set: the robot refuses a finish on a moving command, so a run's last setpoints must already be at rest.
Every state read is kept as a Cycle with the robot's own names (robot_mode, the error flags).

Between servo_start and the warm-up's first setpoint, and between the end of the warm-up and the stream's
first tick (while the run builds its plan and opens its CSV), a thread of this arm answers every state
with the last setpoint (the robot's own q_d before any): the robot must get a command every cycle once a
motion has started, or it ends the motion (communication_constraints_violation). The next call that
drives the motion (servo_j, servo_end, warm_up, close) takes over from it within one cycle.

The arm is paced by the device (`cycle_s`: one servo_j is one state cycle). On a lock-step simulator
(`clock=sim`) it carries the run's clock (`clock`, a FakeClock) and moves it to the robot's time at every
state it reads, so the run's timeline is the robot's.
"""

from __future__ import annotations

import math
import platform
import threading
import time
from collections import defaultdict, deque
from collections.abc import Sequence
from typing import Any, NamedTuple

import pylibfranka as pf

from servotool import realtime_interp
from servotool.clock import Clock, DeviceTime, FakeClock
from servotool.devices import trace
from servotool.devices.arm import ConnectionLost, Fault, MotionState, Reply, StateFrame
from servotool.devices.franka import codes
from servotool.devices.franka.family import (
    DEFAULT_FORCE_THRESHOLDS,
    DEFAULT_TORQUE_THRESHOLDS,
    collision_of,
    facts,
)
from servotool.devices.url import DeviceURL, DeviceURLError
from servotool.errors import DeviceError, ExitCode

CYCLE_S = 0.001  # the robot's state and command cycle


class NotReady(DeviceError):
    """The robot answers but its robot_mode says it cannot take a motion (the user stop pressed, FCI off, a
    reflex latched): refused before anything moved, as a busy arm is (exit 2), not a device lost."""

    exit_code = ExitCode.USAGE


HOLD_SWITCH_S = 0.0005  # the interpreter's switch interval while the holder answers the robot's states
# pylibfranka shows no bytes: the trace has what went through its calls (devices.trace, debug level)
_TRACE = trace.logger("franka")

# what to do about a robot that is not ready for a motion, by its robot_mode
NOT_READY = {
    "UserStopped": "the user stop is pressed: release it (and activate FCI in Desk)",
    "Reflex": "a reflex is latched: clear it (error recovery) first",
    "Guiding": "the arm is being guided by hand: let go and leave guiding mode",
    "Other": "FCI is not active: activate it in Desk",
    "AutomaticErrorRecovery": "the error recovery is still running: wait for it",
    "Move": "another motion runs on it",
}


class Cycle(NamedTuple):
    """One state as the robot sent it, in its own units (rad, rad/s, Nm, s) and names (a tuple: one is
    made every millisecond)."""

    t: float
    time_s: float
    q: tuple[float, ...]
    q_d: tuple[float, ...]
    dq: tuple[float, ...]
    tau_J: tuple[float, ...]
    robot_mode: str
    control_command_success_rate: float
    current_errors: tuple[str, ...]
    last_motion_errors: tuple[str, ...]


def _names(errors: Any) -> tuple[str, ...]:
    if not errors:  # libfranka's Errors is true when any flag is set: the 41 look-ups only then
        return ()
    return tuple(name for name in codes.ERROR_NAMES if bool(getattr(errors, name, False)))


# the newest states kept as Cycles (the readiness check, the warm-up and the held pose read the last one):
# a short window, so a long run's memory stays flat from its first cycles
CYCLES_KEPT = 64
# the per-cycle values a run's CSV records besides q, the robot's clock (dev_t), the echoed command q_d and
# the success rate (the e and success columns every echoing arm has), by the robot's names
JOINT_VALUES = (("dq", "deg/s"), ("tau_J", "Nm"))
STATE_COLUMNS: dict[str, str] = {
    **{f"{name}{j + 1}": unit for name, unit in JOINT_VALUES for j in range(7)},
    "robot_mode": "the robot's mode by its libfranka name (Idle, Move, Reflex, ...)",
    "current_errors": "the error flags set now, by libfranka name, space-separated",
    "last_motion_errors": "the error flags that ended the last motion, by libfranka name, space-separated",
}


_DQ, _TAU_J = ([f"{name}{j + 1}" for j in range(7)] for name, _ in JOINT_VALUES)


def state_extra(cycle: Cycle, dq_deg: Sequence[float] | None = None) -> dict[str, float | str]:
    """A cycle's values under STATE_COLUMNS: dq in deg/s, tau_J in Nm, the mode and the flags by name.
    dq_deg: the cycle's dq already in degrees (the state frame's), converted here when not given."""
    dq = dq_deg if dq_deg is not None else tuple(map(math.degrees, cycle.dq))
    out: dict[str, float | str] = dict(zip(_DQ, dq, strict=True))
    out.update(zip(_TAU_J, cycle.tau_J, strict=True))
    out["robot_mode"] = cycle.robot_mode
    out["current_errors"] = " ".join(cycle.current_errors)
    out["last_motion_errors"] = " ".join(cycle.last_motion_errors)
    return out


def _rounded(values: Sequence[float]) -> list[float]:
    return [round(x, 6) for x in values]


def _refused(url: str, host: str, exc: BaseException) -> DeviceError:
    """A connection the robot did not take, with libfranka's own words: the robot serves one client."""
    if isinstance(exc, pf.NetworkException):
        return DeviceError(
            f"{url}: {host} refused the connection ({exc}); the robot takes one client at a time: is another "
            "program connected to it (busy)?"
        )
    return DeviceError(f"{url}: {exc}")


def _device_error(url: str, exc: BaseException) -> DeviceError:
    """pylibfranka's exception as ours: a network failure is a lost link, anything else the robot's no."""
    if isinstance(exc, pf.NetworkException):
        return ConnectionLost(f"{url}: {exc}")
    return DeviceError(f"{url}: {exc}")


_MOTION: dict[str, MotionState] = defaultdict(
    lambda: MotionState.UNKNOWN, {m: MotionState(v) for m, v in codes.MOTION_STATE_OF_MODE.items()}
)


def realtime_kernel() -> bool:
    """The running kernel is a real-time (PREEMPT_RT) one, as libfranka's kEnforce requires."""
    return "PREEMPT_RT" in platform.version() or "PREEMPT RT" in platform.version()


class FrankaArm:
    """A Franka arm (or its simulator) through pylibfranka; see the module's docstring for the pacing."""

    def __init__(
        self,
        url: str,
        host: str,
        model: str,
        simulated: bool,
        realtime_ignore: bool,
        torque_thresholds: Sequence[float] = DEFAULT_TORQUE_THRESHOLDS,
        force_thresholds: Sequence[float] = DEFAULT_FORCE_THRESHOLDS,
        on_close: Any = None,
        now: Any = None,
        clock: Clock | None = None,
    ) -> None:
        self.url, self.model, self.simulated = url, model, simulated
        self.host = host
        self.clock: Clock | None = clock if isinstance(clock, FakeClock) else None
        self._device_time = DeviceTime(clock) if isinstance(clock, FakeClock) else None
        self._now = clock.now if clock is not None else now or time.monotonic
        self.n_joints = 7
        self.joint_speed_limits: tuple[float, ...] = ()
        self.joint_ranges: tuple[tuple[float, float], ...] = ()
        self.nominal_lag_ms: float | None = None  # a simulator's is its profile's (open_url)
        self.realtime = "ignore" if realtime_ignore else "enforce"
        self.collision_thresholds = (tuple(torque_thresholds), tuple(force_thresholds))
        self._on_close = on_close
        self.sim_process: Any = None  # the simulator's process, when this arm started one
        if not realtime_ignore and not realtime_kernel():
            raise DeviceError(
                f"{url}: this kernel is not real-time and libfranka refuses to run on it; "
                "install a PREEMPT_RT kernel, or add ?realtime=ignore to the URL to run anyway"
            )
        config = pf.RealtimeConfig.kIgnore if realtime_ignore else pf.RealtimeConfig.kEnforce
        try:
            self._robot: Any = pf.Robot(host, config)
            self._robot.set_collision_behavior(
                list(torque_thresholds),
                list(torque_thresholds),
                list(force_thresholds),
                list(force_thresholds),
            )
        except Exception as exc:  # pylibfranka's exceptions share no base we may name here
            raise _refused(url, host, exc) from None
        self._control: Any = None
        self._ended: str | None = None  # why the robot ended the last motion (a reflex), once it did
        self._last_q: list[float] | None = None
        self.cycles: deque[Cycle] = deque(maxlen=CYCLES_KEPT)
        self._unread: list[StateFrame] = []
        self._latest: StateFrame | None = None
        self._closed = False
        self._holder: tuple[threading.Event, threading.Thread] | None = None
        self._held_error: DeviceError | None = None  # what ended the motion while the holder answered
        self.held_cycles = 0  # states the holder answered (the gaps before the warm-up and the stream)

    # -- state ------------------------------------------------------------------------------------------

    def device_settings(self) -> dict[str, Any]:
        """What this arm set or waived on the robot, for a run's CSV header."""
        torque, force = self.collision_thresholds
        return {
            "realtime": self.realtime,
            "collision_behavior": {"torque_thresholds_nm": list(torque), "force_thresholds": list(force)},
        }

    @property
    def echoes_setpoints(self) -> bool:
        """Every state carries q_d (the command the robot executes) and control_command_success_rate."""
        return True

    @property
    def cycle_s(self) -> float:
        """The robot's cycle (s): each servo_j waits for the next state and answers it."""
        return CYCLE_S

    @property
    def state_period_s(self) -> float:
        """The state period (s): the robot sends one state per cycle; a run measures what it keeps (a
        frame's age for the guard) and falls back on this when a poll holds too few frames to measure."""
        return CYCLE_S

    @property
    def state_columns(self) -> dict[str, str]:
        """The per-cycle values each state frame carries for the CSV (StateFrame.extra), with units."""
        return STATE_COLUMNS

    def _record(self, state: Any, unread: bool = True) -> StateFrame:
        robot_t = float(state.time.to_sec())
        t = self._device_time.follow(robot_t) if self._device_time is not None else self._now()
        mode = state.robot_mode.name
        errors = _names(state.current_errors)
        cycle = Cycle(
            t,
            robot_t,
            tuple(state.q),
            tuple(state.q_d),
            tuple(state.dq),
            tuple(state.tau_J),
            mode,
            float(state.control_command_success_rate),
            errors,
            _names(state.last_motion_errors),
        )
        self.cycles.append(cycle)
        if _TRACE.isEnabledFor(trace.DEBUG):
            _TRACE.debug("rx state time=%.3f robot_mode=%s q=%s", robot_t, mode, _rounded(cycle.q))
        fault = None
        if errors:
            fault = Fault((codes.ERROR_INDEX[errors[0]] + 1,), errors[0], ", ".join(errors))
        setpoint, qd = tuple(map(math.degrees, cycle.q_d)), tuple(map(math.degrees, cycle.dq))
        frame = StateFrame(
            t,
            tuple(map(math.degrees, cycle.q)),
            fault=fault,
            enabled=True,
            setpoint=setpoint,
            device_time_s=cycle.time_s,
            qd=qd,
            motion=_MOTION[mode],
            success_rate=cycle.control_command_success_rate,
            extra=state_extra(cycle, qd),
        )
        if unread:
            self._unread.append(frame)
        self._latest = frame
        return frame

    def read(self) -> StateFrame:
        """One state outside a motion (read_once)."""
        try:
            return self._record(self._robot.read_once())
        except Exception as exc:
            raise _device_error(self.url, exc) from None

    def poll_states(self) -> list[StateFrame]:
        """The states read since the last call; outside a motion, one read_once (at most a cycle's wait)
        when none was: the robot sends state every millisecond whether or not a motion runs."""
        if not self._unread and self._control is None and not self._closed:
            self.read()
        frames, self._unread = self._unread, []
        return frames

    def latest_state(self) -> StateFrame | None:
        if self._latest is None and self._control is None and not self._closed:
            self.read()
        return self._latest

    def replies(self) -> list[Reply]:
        return []

    # -- motion -----------------------------------------------------------------------------------------

    def enable(self, timeout_s: float = 5.0) -> None:
        """The drives are the robot's own: check it is ready for a motion (robot_mode Idle: the user stop
        released, FCI active); NotReady (a DeviceError, exit 2) naming the robot_mode and what to do
        otherwise."""
        self.read()
        problem = self.not_ready()
        if problem is not None:
            raise NotReady(f"{self.url}: {problem}; nothing was moved")

    def not_ready(self) -> str | None:
        """Why the robot's newest state says it cannot take a motion, or None when robot_mode is Idle."""
        mode = self.cycles[-1].robot_mode if self.cycles else "Other"
        if mode == "Idle":
            return None
        return f"robot_mode is {mode}, not Idle: {NOT_READY.get(mode, 'the robot is not ready')}"

    def disable(self) -> int:
        return 0

    def servo_start(self) -> int:
        """Start the joint position motion; the holder answers its states until the warm-up takes over."""
        self._take_over()
        try:
            self._control = self._robot.start_joint_position_control(pf.ControllerMode.JointImpedance)
            self._ended = None
            self._last_q = None
        except Exception as exc:
            raise _device_error(self.url, exc) from None
        self._hold()
        return 0

    # -- the holder: every state answered while no stream does ---------------------------------------------

    def _hold(self) -> None:
        """Answer every state with the last setpoint from a thread of this arm until _take_over."""
        if self._control is None or self._holder is not None:
            return
        stop = threading.Event()
        thread = threading.Thread(target=self._answer_states, args=(stop,), name="franka-hold", daemon=True)
        self._holder = (stop, thread)
        # the run's own thread (building its plan) would otherwise keep the interpreter for up to 5 ms
        # when a state comes, or for a whole cyclic collection: the holder must answer within the cycle
        realtime_interp.hold(HOLD_SWITCH_S)
        thread.start()

    def _answer_states(self, stop: threading.Event) -> None:
        while not stop.is_set() and self._control is not None:
            try:
                self._write(self._last_q, finished=False, unread=False)
            except DeviceError as exc:
                self._held_error = exc
                return
            self.held_cycles += 1

    def _take_over(self) -> None:
        """Stop the holder (it finishes the cycle it is in: at most one state's wait); raise what ended the
        motion meanwhile."""
        if self._holder is None:
            return
        stop, thread = self._holder
        stop.set()
        thread.join()
        self._holder = None
        realtime_interp.release()
        error, self._held_error = self._held_error, None
        if error is not None:
            raise error

    def warm_up(
        self, q_hold: Sequence[float] | None = None, cmd_period_s: float = 0.001, timeout_s: float = 5.0
    ) -> float:
        """Start the motion if needed and stream the held pose until the robot reports robot_mode Move;
        the seconds it took. DeviceError on a reflex or when it does not within timeout_s."""
        start = time.monotonic()
        if self._control is None:
            self.servo_start()
        self._take_over()
        hold: list[float] | None = list(q_hold) if q_hold is not None else None
        if hold is None and self.cycles:
            hold = [math.degrees(x) for x in self.cycles[-1].q_d]  # the robot's radians, servo_j's degrees
        while time.monotonic() - start < timeout_s:
            if hold is None:
                state, _ = self._control.readOnce()
                hold = [math.degrees(x) for x in state.q_d]
            self.servo_j(hold)
            if self.cycles[-1].robot_mode == "Move":
                self._hold()  # until the stream's first tick: the run builds its plan meanwhile
                return time.monotonic() - start
        mode = self.cycles[-1].robot_mode
        raise DeviceError(f"{self.url}: robot_mode {mode} after {timeout_s:g} s, not Move")

    def servo_j(self, q: Sequence[float], cmd_period_s: float = 0.001) -> Reply | None:
        """Wait for the next state (one cycle), then command q (deg) as its answer."""
        if len(q) != self.n_joints or not all(math.isfinite(x) for x in q):
            raise ValueError(f"a setpoint of {self.n_joints} finite joints, not {list(q)!r}")
        if self._holder is not None:
            self._take_over()
        if self._control is None:
            if self._ended is not None:
                raise DeviceError(
                    f"{self.url}: the motion has ended ({self._ended}); the robot holds the arm"
                )
            raise DeviceError(f"{self.url}: servo_j before servo_start")
        self._write([math.radians(x) for x in q], finished=False)
        return None

    def _write(self, q_rad: list[float] | None, finished: bool, unread: bool = True) -> None:
        """Read the next state and answer it with q_rad (rad; None: the robot's own q_d, the command it
        executes)."""
        try:
            state, _ = self._control.readOnce()
            self._record(state, unread)
            if q_rad is None:
                q_rad = list(state.q_d)
            command = pf.JointPositions(q_rad)
            command.motion_finished = finished
            if _TRACE.isEnabledFor(trace.DEBUG):
                _TRACE.debug("tx JointPositions q_c=%s motion_finished=%s", _rounded(q_rad), finished)
            self._control.writeOnce(command)
        except Exception as exc:
            self._control = None
            error = _device_error(self.url, exc)
            self._ended = str(exc)
            if not isinstance(error, ConnectionLost):
                self._record_reflex()
            raise error from None
        self._last_q = q_rad

    def _record_reflex(self) -> None:
        """After the robot ended a motion: its state once, so that the reflex it latched is recorded by its
        flag's name (a fault frame). Nothing when the state cannot be read."""
        try:
            self._record(self._robot.read_once())
        except Exception:  # the motion's own error is the one reported
            return

    def servo_end(self) -> int:
        """Finish the motion on the last setpoint (the held pose when none was sent)."""
        try:
            self._take_over()
        except DeviceError:
            return 1
        if self._control is None:
            return 0
        q = self._last_q if self._last_q is not None else list(self.cycles[-1].q_d)
        try:
            self._write(q, finished=True)
        except DeviceError:
            return 1
        self._control = None
        return 0

    def reset_faults(self) -> int:
        try:
            self._take_over()
            self._robot.automatic_error_recovery()
        except Exception:
            return 1
        return 0

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self.servo_end()
        self._robot = None
        if self._on_close is not None:
            self._on_close()

    def __enter__(self) -> FrankaArm:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def open_url(parsed: DeviceURL, **kwargs: Any) -> FrankaArm:
    """A FrankaArm of a franka:// URL, or of a sim: URL's simulator started in a process of its own (its
    parameters checked by the family first)."""
    f = facts(parsed)
    # a command's --rpc: a Franka has one command path, the real-time link; checked before a simulator starts
    if kwargs.pop("transport", "") not in ("", "udp"):
        raise DeviceURLError(
            f"{parsed.raw}: --rpc: a Franka takes setpoints over its real-time link only; leave it out"
        )
    collision = collision_of(parsed)
    kwargs = {"torque_thresholds": collision.torque, "force_thresholds": collision.force, **kwargs}
    if parsed.simulated:
        from servotool.devices.franka.family import sim_reflex, sim_settings
        from servotool.devices.franka.profiles import PROFILES
        from servotool.devices.franka.sim import spawn, stop

        sim = sim_settings(parsed)
        lockstep = isinstance(kwargs.get("clock"), FakeClock)
        proc, host = spawn(
            parsed.target,
            sim.drop,
            sim.seed,
            sim.address,
            lockstep=lockstep,
            mode=sim.mode,
            reflex=sim_reflex(parsed),
        )
        try:
            arm = FrankaArm(parsed.raw, host, f.model, True, True, on_close=lambda: stop(proc), **kwargs)
            arm.sim_process = proc
            arm.realtime = "not needed (a simulator)"
            arm.nominal_lag_ms = PROFILES[parsed.target].ramp_lag_ms
        except BaseException:
            stop(proc)
            raise
        arm.joint_speed_limits, arm.joint_ranges = f.joint_speed_limits, f.joint_ranges
        return arm
    ignore = parsed.params.get("realtime") == "ignore"
    arm = FrankaArm(parsed.raw, parsed.target, f.model, False, ignore, **kwargs)
    arm.joint_speed_limits, arm.joint_ranges = f.joint_speed_limits, f.joint_ranges
    return arm
