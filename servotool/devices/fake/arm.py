"""An in-process arm: the `Arm` protocol with no controller behind it, exact on a FakeClock.

The joints follow the setpoints sent, each reached `lag_s` after it was sent and linear in between: a
steady stream is followed exactly, lag_s behind; a setpoint after a pause is one command period's motion
(before the first setpoint the arm holds its start pose). A state frame is sampled every `state_s` of the
clock, on a fixed grid from the moment the arm was opened. On a FakeClock a frame comes in when the clock
advances to or past its instant (as a simulator's frame is delivered while time moves); on another clock, at
the first call that reads the arm after its instant.

It checks what it is sent as a real arm does (joint count, finite values, the joint ranges: ValueError,
never clamped), and keeps a real arm's failure modes at hand for tests:

* a lost link: `lose(reason)`, or `lose_after` (`?lose_after=N`: once N setpoints are taken): every later
  call raises ConnectionLost (the frames received before it are still handed out once);
* a stalled state stream: `stall = (from, to)` drops the frames of that span of the clock (to None: for
  good); a silence longer than `silence_s` is a lost link, as a real client's watchdog makes it;
* another owner: `busy` (`?busy=1`), what `busy_reason()` answers.

Each call that changes the arm's mode (enable, servo_start, warm_up, servo_end, disable, reset_faults, close)
is appended to `calls` by name, so a test can tell what a run did to the arm.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Callable, Sequence
from typing import Any

from servotool.clock import Clock, FakeClock
from servotool.devices.arm import JointRanges, Reply, StateFrame
from servotool.devices.fake.params import JOINT_RANGE, JOINT_SPEED_LIMIT, ArmParams
from servotool.devices.url import DeviceURLError
from servotool.errors import ConnectionLost, DeviceError

# the start pose of the first six joints (deg); any further joint starts at 0
START_POSE = (0.0, -90.0, 90.0, -90.0, -90.0, 0.0)
BUSY_REASON = "another client streams setpoints to it (simulated)"


class FakeArm:
    """A position-streamed arm computed in-process; see the module docstring.

    clock: a FakeClock to run in lock-step on (also offered as `.clock`, so a run streams on it), or any
    Clock to stamp with; `now` stamps instead when no clock is given (default: the host's monotonic time).
    """

    def __init__(
        self,
        clock: Clock | None = None,
        *,
        now: Callable[[], float] | None = None,
        url: str = "sim:fake-arm",
        n_joints: int = 6,
        lag_s: float = 0.05,
        state_s: float = 0.008,
        silence_s: float = 0.1,
        reply: bool = False,
        lose_after: int | None = None,
        busy: str | None = None,
        bad_q1: tuple[float, int] | None = None,
        pose: Sequence[float] | None = None,
    ) -> None:
        if now is None:
            if clock is None:
                import time

                now = time.monotonic
            else:
                now = clock.now
        self._now = now
        self.clock: FakeClock | None = clock if isinstance(clock, FakeClock) else None
        self.url = url
        self.model = "fake-arm"
        self.simulated = True
        self.n_joints = int(n_joints)
        self.joint_speed_limits = (JOINT_SPEED_LIMIT,) * self.n_joints
        self.nominal_lag_ms: float | None = lag_s * 1e3
        self.lag_s = float(lag_s)
        self.state_s = float(state_s)
        self.silence_s = float(silence_s)
        self.reply = reply
        self.lose_after = lose_after
        self.busy = busy
        self._bad_q1 = bad_q1  # (value, every Nth frame): a frame no arm could send, for the range check
        start = (
            tuple(float(x) for x in pose)
            if pose is not None
            else tuple(START_POSE[j] if j < len(START_POSE) else 0.0 for j in range(self.n_joints))
        )
        if len(start) != self.n_joints:
            raise ValueError(f"start pose has {len(start)} joints, the arm {self.n_joints}")
        t0 = self._now()
        # what was sent, oldest first; the start pose stands as a setpoint long executed
        self.sent_t: list[float] = [t0 - 1.0]
        self.sent_q: list[tuple[float, ...]] = [start]
        # the commanded path the joints follow lag_s behind: through each setpoint at its send time
        self._path_t: list[float] = list(self.sent_t)
        self._path_q: list[tuple[float, ...]] = list(self.sent_q)
        self.frames: list[StateFrame] = []  # received, not yet polled
        self.calls: list[str] = []
        self.sends = 0  # setpoints offered (refused ones too)
        self.taken = 0  # setpoints taken
        self.stall: tuple[float, float | None] | None = None
        self.enabled = False
        self.servo_active = False
        self.lost: str | None = None
        self._closed = False
        self._last_frame_t = t0
        self._t0 = t0
        self._k = 0
        # the pose read as the link opened: the newest state before the first frame of the stream comes in
        self._latest: StateFrame | None = self._frame(t0)
        self._lose_when_due()
        if self.clock is not None:
            self.clock.on_advance(self._advance)

    @property
    def joint_ranges(self) -> JointRanges:
        return (JOINT_RANGE,) * self.n_joints

    @property
    def state_period_s(self) -> float:
        return self.state_s

    # -- the arm's physics -----------------------------------------------------------------------------------

    def measured(self, t: float) -> tuple[float, ...]:
        """The joints at time t: each setpoint reached lag_s after it was sent, linear in between."""
        x = t - self.lag_s
        i = bisect.bisect_right(self._path_t, x)
        if i >= len(self._path_t):
            return self._path_q[-1]
        if i == 0:
            return self._path_q[0]
        ta, tb = self._path_t[i - 1], self._path_t[i]
        qa, qb = self._path_q[i - 1], self._path_q[i]
        w = (x - ta) / (tb - ta)
        return tuple(a + (b - a) * w for a, b in zip(qa, qb, strict=True))

    def _command(self, now: float, q: tuple[float, ...], period_s: float) -> None:
        """Add a setpoint to the path: from where the path is one command period before it (or since the
        setpoint before, when that is later), so that a setpoint after a pause is one period's motion."""
        since = now - period_s
        if since > self._path_t[-1]:
            self._path_t.append(since)
            self._path_q.append(self._path_q[-1])
        if now <= self._path_t[-1]:  # two setpoints at one instant: the newer one stands
            self._path_t.pop()
            self._path_q.pop()
        self._path_t.append(now)
        self._path_q.append(q)

    def _frame(self, t: float) -> StateFrame:
        """The state frame sampled at t (joint 1 reading the injected bad value in every Nth frame)."""
        q = self.measured(t)
        if self._bad_q1 is not None and self._k > 0 and self._k % self._bad_q1[1] == 0:
            q = (self._bad_q1[0], *q[1:])
        return StateFrame(t=t, q=q, device_time_s=t)

    def _catch_up(self) -> None:
        """On a clock that does not tell the arm when it moves: take in the frames due by now."""
        if self.clock is None:
            self._advance(self._now())

    def _advance(self, now: float) -> None:
        """Take in every frame whose instant has come (none once the link is lost or the arm closed)."""
        if self._closed or self.lost is not None:
            return
        while self._t0 + self._k * self.state_s <= now + 1e-12:
            t = self._t0 + self._k * self.state_s
            self._k += 1
            if self.stall is not None and self.stall[0] <= t and (self.stall[1] is None or t < self.stall[1]):
                continue
            frame = self._frame(t)
            self._last_frame_t = t
            self._latest = frame
            self.frames.append(frame)

    # -- failures --------------------------------------------------------------------------------------------

    def lose(self, reason: str = "link lost (simulated)") -> None:
        """Fault injection: the link goes down; every later call raises ConnectionLost(reason)."""
        if self.lost is None:
            self.lost = f"{self.url}: {reason}"

    def _check(self) -> None:
        if self._closed:
            raise DeviceError(f"{self.url}: the arm is closed")
        if self.lost is not None:
            raise ConnectionLost(self.lost)

    def _joints(self, q: Sequence[float], what: str) -> tuple[float, ...]:
        """q as floats, or ValueError for a wrong joint count, a value that is not finite or one outside its
        joint's range (refused, never clamped)."""
        if len(q) != self.n_joints:
            raise ValueError(f"{what} needs {self.n_joints} joint values, got {len(q)}")
        joints = tuple(float(x) for x in q)
        if not all(math.isfinite(x) for x in joints):
            raise ValueError(f"{what} joint values must be finite")
        for j, (x, (lo, hi)) in enumerate(zip(joints, self.joint_ranges, strict=True)):
            if not lo <= x <= hi:
                raise ValueError(f"{what}: J{j + 1} {x:g} deg outside its range {lo:g}..{hi:g}")
        return joints

    # -- the Arm protocol ------------------------------------------------------------------------------------

    def busy_reason(self) -> str | None:
        self._check()
        return self.busy

    def enable(self, timeout_s: float = 5.0) -> None:
        self.calls.append("enable")
        self._check()
        self.enabled = True

    def disable(self) -> int:
        self.calls.append("disable")
        self._check()
        self.enabled = self.servo_active = False
        return 0

    def servo_start(self) -> int:
        self.calls.append("servo_start")
        self._check()
        self.servo_active = True
        return 0

    def servo_end(self) -> int:
        self.calls.append("servo_end")
        self._check()
        self.servo_active = False
        return 0

    def servo_j(self, q: Sequence[float], cmd_period_s: float) -> Reply | None:
        """Take one setpoint (executed lag_s later); a Reply at once when `reply`, else None."""
        self.sends += 1
        self._check()
        joints = self._joints(q, "a setpoint")
        if not (cmd_period_s > 0 and math.isfinite(cmd_period_s)):
            raise ValueError(f"command period must be > 0 s, got {cmd_period_s!r}")
        self._catch_up()  # frames due before this setpoint are sampled without it
        now = self._now()
        self.sent_t.append(now)
        self.sent_q.append(joints)
        self._command(now, joints, float(cmd_period_s))
        self.taken += 1
        self._lose_when_due()  # this setpoint is taken; the link is down for the next call
        return Reply(now, 0) if self.reply else None

    def _lose_when_due(self) -> None:
        if self.lose_after is not None and self.taken >= self.lose_after:
            self.lose(f"link lost after {self.lose_after} setpoints (simulated)")

    def warm_up(
        self, q_hold: Sequence[float] | None = None, cmd_period_s: float = 0.01, timeout_s: float = 5.0
    ) -> float:
        """The fake executes a stream from its first setpoint: nothing to wait for (0 s)."""
        self.calls.append("warm_up")
        self._check()
        if q_hold is not None:
            self._joints(q_hold, "the held pose")
        return 0.0

    def poll_states(self) -> list[StateFrame]:
        """The frames received since the last call; ConnectionLost when none came and the link is lost or
        has been silent for over silence_s."""
        if self._closed:
            self._check()
        self._catch_up()
        out, self.frames = self.frames, []
        if out:
            return out
        self._check()
        silent = self._now() - self._last_frame_t
        if silent > self.silence_s:
            self.lose(f"no state frame for {silent * 1000:.0f} ms")
            self._check()
        return out

    def latest_state(self) -> StateFrame | None:
        """The newest frame received; before the stream's first, the pose read as the link opened."""
        self._check()
        self._catch_up()
        return self._latest

    def replies(self) -> list[Reply]:
        return []

    def reset_faults(self) -> int:
        self.calls.append("reset_faults")
        self._check()
        return 0

    def close(self) -> None:
        if not self._closed:
            self.calls.append("close")
        self._closed = True

    def __enter__(self) -> FakeArm:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def open_fake_arm(url: str, params: ArmParams, clock: Clock | None, **kwargs: Any) -> FakeArm:
    """The fake arm of a parsed URL. kwargs: `now` (stamps on the host's time base when no FakeClock is
    used), `transport` ("rpc": every setpoint is answered, as `reply=1`; "udp" or "": not)."""
    transport = kwargs.pop("transport", "")
    if transport not in ("", "udp", "rpc"):
        raise DeviceURLError(f"{url}: transport {transport!r}: want udp or rpc")
    now = kwargs.pop("now", None)
    if kwargs:
        raise TypeError(f"unexpected keyword(s) for the fake arm: {', '.join(sorted(kwargs))}")
    if clock is not None:
        now = clock.now  # a FakeClock: simulated time; another clock: real time, stamped by it
    return FakeArm(
        clock,
        now=now,
        url=url,
        n_joints=params.joints,
        lag_s=params.lag_s,
        state_s=params.state_s,
        silence_s=params.silence_s,
        reply=params.reply or transport == "rpc",
        lose_after=params.lose_after,
        busy=BUSY_REASON if params.busy else None,
        bad_q1=None if params.bad_q1 is None else (params.bad_q1, params.bad_every),
    )
