"""The simulated controller's joint behaviour, on an explicit time axis (no threads, no sockets, no clock).

Model, per profile (see profiles.py for the parameters):

* Tracking: every accepted setpoint s_k received at time t_k becomes a knot (t_k + L, s_k); the reference
  is the piecewise-linear curve through the knots, so the measured pose is the received stream delayed by
  L and linearly interpolated between setpoints (never sample-and-hold, which would bias the lag by half a
  period). A knot follows its predecessor by at most 1.5 command periods: after a pause the joint holds,
  then moves to the new setpoint within one period. Then an optional first-order lag (tau) and Gaussian
  encoder noise.
* Enable window: after RobotEnable(1) returns 0, ServoJ answers 101 for `enable_ms`; the setpoint is
  dropped.
* Anchor: when a stream (re)starts (servo start, first command after enabling, after a fault window or a
  reset), the controller takes its resting target as the previous setpoint with zero velocity, so the
  first command's distance from it counts as a jump.
* Speed check (`speed_check`): a command whose position step exceeds `refuse_step_deg`, or implies more
  than `refuse_speed_factor` times a joint's maximum speed, is refused with no motion; it latches that
  axis's command-speed fault and every command answers 14 until ResetAllError.
* Runaway (`runaway`): d = max over joints of |step_k - step_k-1| (the change of per-command increment,
  i.e. the setpoint velocity discontinuity, in degrees per received command). Below `runaway_min_deg`
  nothing happens; at or above `runaway_max_deg` it always fires; in between it fires with probability
  rising linearly across the band (drawn from the seeded generator). The thresholds apply per received
  command whatever cmdT is: they were measured at 10 ms only. Firing latches main 1 / sub 32 at that
  instant and the command is not executed. Every joint whose jump is at least `runaway_min_deg` then
  sweeps by itself, starting after the lag, at min(|jump| / cmdT, joint maximum) in the jump's direction,
  for a travel of `travel_min`..`travel_max` times the jump (drawn), and stops. Every command answers 14
  until both `reject_ms` and the sweep are over; then commands are accepted again from a fresh anchor on
  the resting pose, with the codes still latched until ResetAllError. ResetAllError inside that window is
  itself rejected (a reset cannot arrest the sweep).
"""

from __future__ import annotations

import math
import random
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass

from servotool.devices.fairino.codes import RUNAWAY_FAULT, ErrCode, describe_fault, speed_limit_fault
from servotool.devices.fairino.profiles import N_JOINTS, SimProfile

Vec = tuple[float, ...]

# a knot more than this many command periods after the previous one starts with a hold (the stream paused)
_PAUSE_PERIODS = 1.5


@dataclass(frozen=True)
class FaultEvent:
    """A fault the controller latched. t: seconds since the model started; joint: 0-based.

    kind "runaway": step_deg is the velocity jump (deg per command), speed_deg_s and travel_deg the sweep.
    kind "refused": step_deg is the refused position step; nothing moved.
    """

    t: float
    kind: str
    main: int
    sub: int
    joint: int
    step_deg: float
    speed_deg_s: float = 0.0
    travel_deg: float = 0.0

    @property
    def text(self) -> str:
        what = describe_fault(self.main, self.sub)
        if self.kind == "runaway":
            return (
                f"{what}; joint {self.joint + 1} jump {self.step_deg:+.3f} deg/command, sweeping "
                f"{self.travel_deg:.1f} deg at {self.speed_deg_s:.0f} deg/s"
            )
        return f"{what}; joint {self.joint + 1} step {self.step_deg:+.3f} deg refused, no motion"


@dataclass(frozen=True)
class Snapshot:
    """The controller's state at time t (s). q: measured (deg, with noise); qd: deg/s; target: the delayed,
    interpolated reference the joints are following; last_target: the last accepted setpoint."""

    t: float
    q: Vec
    qd: Vec
    target: Vec
    last_target: Vec
    cmd_num: int
    main_code: int
    sub_code: int
    enabled: bool
    mode: int
    servo_active: bool
    rejecting: bool


class ControllerModel:
    """One simulated controller. Every method takes the current time t (s, non-decreasing; an earlier t is
    treated as the latest one seen). Commands return an ErrCode value. Not thread-safe: callers lock."""

    def __init__(self, profile: SimProfile, t0: float = 0.0) -> None:
        self.p = profile
        self._lag = profile.lag_ms / 1000.0
        self._tau = profile.tau_ms / 1000.0
        self._dt = profile.physics_ms / 1000.0
        self._vmax = tuple(float(v) for v in profile.joint_speed_limits)
        self._t0 = t0
        self._t = t0
        pose = tuple(float(x) for x in profile.initial_pose)
        self._knots: deque[tuple[float, Vec]] = deque([(t0, pose)])
        self._y = list(pose)
        self._qd: Vec = (0.0,) * N_JOINTS
        self._fault_rng = random.Random(f"fairino-faults-{profile.seed}")
        self._noise_rng = random.Random(f"fairino-noise-{profile.seed}")
        self.enabled = False
        self.mode = 0
        self._ready_at = math.inf
        self._servo = False
        self._anchor_pending = True
        self._prev: Vec = pose
        self._prev_step: Vec = (0.0,) * N_JOINTS
        self._last_target: Vec = pose
        self._cmd_num = 0
        self.main_code = 0
        self.sub_code = 0
        self._blocked = False
        self._reject_until = -math.inf
        self._events: list[FaultEvent] = []

    # --- time -------------------------------------------------------------------------------------------

    def advance(self, t: float) -> float:
        """Move the physics to time t (clamped to be non-decreasing); returns the model time."""
        if t <= self._t:
            return self._t
        if self._tau <= 0:
            self._prune(t)
            ref = self._reference(t)
            self._y = list(ref)
            self._qd = self._slope(t)
        else:
            prev_t = self._t
            while prev_t < t:
                h = min(self._dt, t - prev_t)
                prev_t += h
                self._prune(prev_t)
                ref = self._reference(prev_t)
                k = 1.0 - math.exp(-h / self._tau)
                old = self._y
                self._y = [y + k * (r - y) for y, r in zip(old, ref, strict=True)]
                self._qd = tuple((y - o) / h for y, o in zip(self._y, old, strict=True))
        self._t = t
        return t

    def _prune(self, t: float) -> None:
        knots = self._knots
        while len(knots) >= 2 and knots[1][0] <= t:
            knots.popleft()

    def _reference(self, t: float) -> Vec:
        knots = self._knots
        t0, q0 = knots[0]
        if len(knots) == 1 or t <= t0:
            return q0
        t1, q1 = knots[1]
        a = (t - t0) / (t1 - t0)
        return tuple(x0 + a * (x1 - x0) for x0, x1 in zip(q0, q1, strict=True))

    def _slope(self, t: float) -> Vec:
        knots = self._knots
        if len(knots) < 2 or t < knots[0][0]:
            return (0.0,) * N_JOINTS
        (t0, q0), (t1, q1) = knots[0], knots[1]
        return tuple((x1 - x0) / (t1 - t0) for x0, x1 in zip(q0, q1, strict=True))

    def _final(self) -> Vec:
        """Where the joints come to rest once every queued knot is executed."""
        return self._knots[-1][1]

    def _append(self, t: float, q: Vec) -> None:
        last_t = self._knots[-1][0]
        if t <= last_t:
            # never a zero-width segment: a knot at the same instant replaces the last one
            self._knots[-1] = (last_t, q)
        else:
            self._knots.append((t, q))

    # --- queries ----------------------------------------------------------------------------------------

    @property
    def time(self) -> float:
        return self._t

    @property
    def start_time(self) -> float:
        return self._t0

    def rejecting(self, t: float) -> bool:
        return t < self._reject_until

    def sample(self, t: float) -> Snapshot:
        """State at t (advances the model first); draws encoder noise."""
        self.advance(t)
        noise = self.p.noise_deg
        q = tuple(y + (self._noise_rng.gauss(0.0, noise) if noise > 0 else 0.0) for y in self._y)
        return Snapshot(
            t=self._t,
            q=q,
            qd=self._qd,
            target=self._reference(self._t),
            last_target=self._last_target,
            cmd_num=self._cmd_num,
            main_code=self.main_code,
            sub_code=self.sub_code,
            enabled=self.enabled,
            mode=self.mode,
            servo_active=self._servo,
            rejecting=self.rejecting(self._t),
        )

    def drain_events(self) -> list[FaultEvent]:
        out, self._events = self._events, []
        return out

    # --- commands ---------------------------------------------------------------------------------------

    def _gate(self, t: float) -> int | None:
        """Common refusal for commands: a runaway window answers 14 to everything."""
        self.advance(t)
        if self.rejecting(self._t):
            return ErrCode.FAILED
        return None

    def robot_enable(self, t: float, state: int) -> int:
        if (err := self._gate(t)) is not None:
            return err
        if state == 1:
            if not self.enabled:
                self.enabled = True
                self._ready_at = self._t + self.p.enable_ms / 1000.0
                self._anchor_pending = True
            return ErrCode.OK
        if state == 0:
            if self.enabled:
                self._halt()
                self.enabled = False
                self._ready_at = math.inf
            return ErrCode.OK
        return ErrCode.OUT_OF_RANGE

    def set_mode(self, t: float, mode: int) -> int:
        if (err := self._gate(t)) is not None:
            return err
        if mode not in (0, 1):
            return ErrCode.OUT_OF_RANGE
        self.mode = mode
        return ErrCode.OK

    def servo_start(self, t: float) -> int:
        if (err := self._gate(t)) is not None:
            return err
        if not self.enabled:
            return ErrCode.NOT_ENABLED
        if self._blocked:
            return ErrCode.FAILED
        self._servo = True
        self._anchor_pending = True
        return ErrCode.OK

    def servo_end(self, t: float) -> int:
        if (err := self._gate(t)) is not None:
            return err
        self._servo = False
        self._anchor_pending = True
        return ErrCode.OK

    def stop_motion(self, t: float) -> int:
        if (err := self._gate(t)) is not None:
            return err
        self._halt()
        return ErrCode.OK

    def reset_all_errors(self, t: float) -> int:
        if (err := self._gate(t)) is not None:
            return err
        self.main_code = self.sub_code = 0
        self._blocked = False
        self._anchor_pending = True
        return ErrCode.OK

    def _halt(self) -> None:
        # drop the queued setpoints: the joints stop where the reference is now
        here = self._reference(self._t)
        self._knots = deque([(self._t, here)])
        self._servo = False
        self._anchor_pending = True

    def _anchor(self, cmd_t: float) -> None:
        # the resting target acts as a setpoint received one period before the first command, so the
        # first command is executed over one period like any other
        rest = self._final()
        self._append(self._t + self._lag - cmd_t, rest)
        self._prev = rest
        self._prev_step = (0.0,) * N_JOINTS
        self._anchor_pending = False

    def servo_j(self, t: float, q: Sequence[float], cmd_t: float) -> int:
        """One ServoJ setpoint (deg) with its command period cmd_t (s)."""
        if (err := self._gate(t)) is not None:
            return err
        if len(q) != N_JOINTS:
            return ErrCode.PARAM_COUNT
        q = tuple(float(x) for x in q)
        if not all(math.isfinite(x) for x in q) or not (0 < cmd_t < 1.0):
            return ErrCode.OUT_OF_RANGE
        if not self.enabled or self._t < self._ready_at:
            return ErrCode.NOT_ENABLED
        if self._blocked:
            return ErrCode.FAILED
        if self._anchor_pending:
            self._anchor(cmd_t)
        self._servo = True
        step = tuple(a - b for a, b in zip(q, self._prev, strict=True))
        jump = tuple(a - b for a, b in zip(step, self._prev_step, strict=True))
        if self.p.speed_check and self._refused(step, cmd_t):
            return ErrCode.FAILED
        if self.p.runaway and self._runs_away(jump, cmd_t):
            return ErrCode.FAILED
        new_t = self._t + self._lag
        last_t, last_q = self._knots[-1]
        if new_t - last_t > _PAUSE_PERIODS * cmd_t:
            self._append(new_t - cmd_t, last_q)
        self._append(new_t, q)
        self._prev, self._prev_step = q, step
        self._last_target = q
        self._cmd_num += 1
        return ErrCode.OK

    def _refused(self, step: Vec, cmd_t: float) -> bool:
        worst, worst_ratio = -1, 0.0
        for j, s in enumerate(step):
            ratio = abs(s) / cmd_t / (self.p.refuse_speed_factor * self._vmax[j])
            if abs(s) > self.p.refuse_step_deg:
                ratio = max(ratio, 1.0 + abs(s))
            if ratio > 1.0 and ratio > worst_ratio:
                worst, worst_ratio = j, ratio
        if worst < 0:
            return False
        self.main_code, self.sub_code = speed_limit_fault(worst)
        self._blocked = True
        self._anchor_pending = True
        self._events.append(
            FaultEvent(self._t - self._t0, "refused", self.main_code, self.sub_code, worst, step[worst])
        )
        return True

    def _runs_away(self, jump: Vec, cmd_t: float) -> bool:
        lo, hi = self.p.runaway_min_deg, self.p.runaway_max_deg
        mags = [abs(x) for x in jump]
        d = max(mags)
        if d < lo:
            return False
        if d < hi and self._fault_rng.random() >= (d - lo) / (hi - lo):
            return False
        lead = mags.index(d)
        start = max(self._t + self._lag, self._knots[-1][0])
        rest = self._final()
        sweeps: dict[int, tuple[float, float, float]] = {}  # joint -> (direction, speed, travel)
        for j, m in enumerate(mags):
            if m >= lo or j == lead:
                speed = min(m / cmd_t, self._vmax[j])
                travel = self._fault_rng.uniform(self.p.travel_min, self.p.travel_max) * m
                sweeps[j] = (math.copysign(1.0, jump[j]), speed, travel)
        ends = sorted({start + tr / sp for _, sp, tr in sweeps.values()})
        for tk in [start, *ends]:
            q = list(rest)
            for j, (sign, sp, tr) in sweeps.items():
                q[j] = rest[j] + sign * min(sp * (tk - start), tr)
            self._append(tk, tuple(q))
        self.main_code, self.sub_code = RUNAWAY_FAULT
        self._reject_until = max(self._t + self.p.reject_ms / 1000.0, ends[-1])
        self._anchor_pending = True
        _, sp, tr = sweeps[lead]
        self._events.append(
            FaultEvent(self._t - self._t0, "runaway", self.main_code, self.sub_code, lead, jump[lead], sp, tr)
        )
        return True
