"""A Hiwonder-style board simulator that speaks the wire protocol on a pseudo-terminal.

`BoardSim` is the board and its servos (pure state + physics, advanced lazily to the time of each frame).
`PtyBoardServer` puts it behind a pty so the real pyserial client opens it like a serial port.

Physics (figures from the arm on the bench, all configurable, see sim_params):
* a move to pulse P in T ms: the servo interpolates from where it is (linear or smooth) and follows that with
  a first-order lag (lag_ms) and a top speed; the stored (EEPROM) limit silently caps the target;
* an obstacle is a pulse the joint cannot pass: it stalls there while the command moves on;
* stop/hold (0x03) freezes the target where the servo is;
* torque off: the joint goes limp and sags with gravity (joints 2-4 by default) toward a resting pulse, unless
  the arm rests on itself (within the profile's tuck tolerance of its tuck pose on the tuck joints); a move
  command switches torque back on;
* a silent servo neither answers nor moves (it lost power); replies can be corrupted (CRC) on purpose.

Time is the sim's own clock: any object with `now()` in seconds (the host monotonic clock by default). Pass a
`servotool.clock.FakeClock` shared with the run to run faster than real time in lock-step: physics and run
share one time base and nothing waits. Deterministic for a given seed.
"""

from __future__ import annotations

import math
import os
import random
import select
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Protocol

from servotool.devices.hiwonder import protocol as p
from servotool.devices.hiwonder.profiles import ArmProfile, get_profile
from servotool.devices.hiwonder.sim_params import ServoParams, SimParams, parse_sim_params
from servotool.devices.pty_server import PtyServer

SUBSTEP_S = 0.005


class _Now(Protocol):
    def now(self) -> float: ...


class _HostClock:
    def now(self) -> float:
        return time.monotonic()


def _smooth(u: float) -> float:
    u = min(1.0, max(0.0, u))
    return u * u * u * (10 - 15 * u + 6 * u * u)


class SimServo:
    """One servo's state. Positions are float pulses; reads round them."""

    def __init__(self, sid: int, params: ServoParams, t: float, shape: str) -> None:
        self.sid = sid
        self.params = params
        self.shape = shape
        self.pos = float(params.start)
        self.torque = params.torque
        self.seg_from = self.pos
        self.seg_to = self.pos
        self.seg_t0 = t
        self.seg_T = 0.0
        # an obstacle cannot be crossed, so the side the joint starts on is the side it stays on
        self._sides = {o: (1.0 if self.pos >= o else -1.0) for o in params.obstacles}
        self.dead = params.silent
        self.reads = 0  # position reads answered (bad_read counts them)

    def ideal(self, t: float) -> float:
        if self.seg_T <= 0:
            return self.seg_to
        u = (t - self.seg_t0) / self.seg_T
        s = _smooth(u) if self.shape == "smooth" else min(1.0, max(0.0, u))
        return self.seg_from + (self.seg_to - self.seg_from) * s

    def move(self, t: float, target: int, duration_s: float) -> None:
        # the stored limit caps the goal silently, as the real servo does
        capped = min(max(target, self.params.lo), self.params.hi)
        self.torque = True
        self.seg_from, self.seg_to, self.seg_t0, self.seg_T = self.pos, float(capped), t, max(0.0, duration_s)

    def hold(self, t: float) -> None:
        self.torque = True
        self.seg_from = self.seg_to = self.pos
        self.seg_t0, self.seg_T = t, 0.0

    def torque_off(self) -> None:
        if not self.params.ignore_torque_off:
            self.torque = False

    def _block(self, new: float) -> float:
        for o, side in self._sides.items():
            new = max(new, o) if side > 0 else min(new, o)
        return new

    def step(self, t: float, dt: float, resting: bool) -> None:
        if self.torque and not self.dead:
            target = self.ideal(t)
            tau = max(self.params.lag_ms, 0.0) / 1000.0
            gain = 1.0 if tau <= 0 else 1.0 - math.exp(-dt / tau)
            delta = (target - self.pos) * gain
            vmax = self.params.max_speed * dt
            delta = max(-vmax, min(vmax, delta))
            self.pos = self._block(self.pos + delta)
        elif not resting and not self._sagged() and self.params.sag_stop is not None:
            stop, step = self.params.sag_stop, self.params.sag_speed * dt
            new = min(self.pos + step, stop) if step > 0 else max(self.pos + step, stop)
            self.pos = self._block(new)

    def _sagged(self) -> bool:
        """No (further) sag: none configured, or the joint is at or beyond where gravity leaves it."""
        stop, speed = self.params.sag_stop, self.params.sag_speed
        if not speed or stop is None:
            return True
        return self.pos >= stop if speed > 0 else self.pos <= stop

    def still(self, t: float, resting: bool) -> bool:
        """Nothing about this servo will change until the next command."""
        if self.torque and not self.dead:
            return t >= self.seg_t0 + self.seg_T and abs(self.pos - self.seg_to) < 1e-3
        return resting or self._sagged()


@dataclass(frozen=True)
class Received:
    """A command the board took off the wire, with the sim time it arrived."""

    t: float
    command: p.Command


class BoardSim:
    """The board and its servos. Feed it frames with `handle`; it returns the reply bytes to send back."""

    def __init__(self, profile: ArmProfile, params: SimParams, clock: _Now | None = None) -> None:
        self.profile = profile
        self.params = params
        self.clock = clock or _HostClock()
        self._lock = threading.RLock()
        self._rng = random.Random(params.seed)
        self.t0 = self.clock.now()
        self._t = self.t0
        self.servos = {sid: SimServo(sid, sp, self.t0, params.shape) for sid, sp in params.servos.items()}
        self.received: list[Received] = []
        self.rejected: list[p.Frame] = []
        self.replies = 0
        self.corrupted = 0
        self.garbage = 0
        self.frames_seen = 0

    # --- physics -------------------------------------------------------------------------------------------

    def _resting(self) -> bool:
        rest = self.profile.poses.get(self.profile.tuck_pose, {})
        tol = self.profile.tuck_tolerance
        joints = [j for j in self.profile.tuck_joints if j in self.servos and j in rest]
        return bool(joints) and all(abs(self.servos[j].pos - rest[j]) <= tol for j in joints)

    def advance(self, t: float | None = None) -> None:
        """Integrate every servo up to sim time t (now by default). Time never runs backwards."""
        with self._lock:
            t = self.clock.now() if t is None else t
            while self._t < t:
                dt = min(SUBSTEP_S, t - self._t)
                self._t += dt
                resting = self._resting()
                for s in self.servos.values():
                    after, until = s.params.silent_after_s, s.params.silent_until_s
                    if not s.dead and after is not None and after <= self._t - self.t0 < (until or math.inf):
                        s.dead, s.torque = True, False  # a servo that goes silent has lost power
                    elif s.dead and until is not None and self._t - self.t0 >= until:
                        s.dead = False  # its power is back: it answers, limp, its old goal forgotten
                    s.step(self._t, dt, resting)
                if all(s.still(self._t, resting) for s in self.servos.values()):
                    # nothing moves: jump ahead, but not past a servo's scheduled loss of power
                    pending = [
                        self.t0 + s.params.silent_after_s
                        for s in self.servos.values()
                        if not s.dead and s.params.silent_after_s is not None
                    ] + [
                        self.t0 + s.params.silent_until_s
                        for s in self.servos.values()
                        if s.dead and s.params.silent_until_s is not None
                    ]
                    self._t = max(self._t, min([t, *[e - SUBSTEP_S for e in pending]]))

    def positions(self) -> dict[int, float]:
        """True (noise-free) positions now, for tests and inspection."""
        with self._lock:
            self.advance()
            return {sid: s.pos for sid, s in self.servos.items()}

    # --- wire ----------------------------------------------------------------------------------------------

    def handle(self, frame: p.Frame) -> bytes:
        """Apply one host frame; return the reply bytes (empty if the board sends nothing back)."""
        with self._lock:
            try:
                return self._apply(frame)
            finally:
                self.frames_seen += 1  # counted once applied: a lock-step clock waits for this

    def _apply(self, frame: p.Frame) -> bytes:
        t = self.clock.now()
        self.advance(t)
        try:
            cmd = p.decode_command(frame)
        except p.BoardFrameError:
            self.rejected.append(frame)
            return b""
        self.received.append(Received(t - self.t0, cmd))
        if isinstance(cmd, p.Move):
            for sid, pulse in cmd.targets.items():
                s = self.servos.get(sid)
                if s is not None and not s.dead:
                    s.move(t, pulse, cmd.duration_ms / 1000.0)
            return b""
        if isinstance(cmd, p.Stop):
            for sid in cmd.ids:
                s = self.servos.get(sid)
                if s is not None and not s.dead:
                    s.hold(t)
            return b""
        return self._request(cmd)

    def _request(self, cmd: p.ServoRequest) -> bytes:
        s = self.servos.get(cmd.servo_id)
        if s is None or s.dead:
            return b""
        sub = cmd.sub
        if sub == p.SubCommand.TORQUE_OFF:
            s.torque_off()
            return b""
        if sub == p.SubCommand.TORQUE_ON:
            s.hold(self._t)
            return b""
        value: int | tuple[int, int]
        if sub == p.SubCommand.READ_POSITION:
            noise = self._rng.randint(-s.params.noise, s.params.noise) if s.params.noise else 0
            value = max(-32768, min(32767, int(round(s.pos)) + noise))
            s.reads += 1
            if s.params.bad_read is not None and s.reads % s.params.bad_read_every == 0:
                value = s.params.bad_read  # a well-formed reply carrying a value no servo could report
        elif sub == p.SubCommand.READ_VOLTAGE:
            value = s.params.voltage_mv
        elif sub == p.SubCommand.READ_TEMPERATURE:
            value = s.params.temperature_c
        elif sub == p.SubCommand.READ_TORQUE:
            value = 1 if s.torque else 0
        elif sub == p.SubCommand.READ_ID:
            value = s.sid
        elif sub == p.SubCommand.READ_OFFSET:
            value = 0
        elif sub == p.SubCommand.READ_LIMIT:
            value = (s.params.lo, s.params.hi)
        else:
            return b""
        return self._corrupt(p.encode_reply(p.ServoReply(s.sid, sub, 0, value)))

    def _corrupt(self, raw: bytes) -> bytes:
        self.replies += 1
        every = self.params.crc_error_every
        bad = bool(every) and self.replies % every == 0
        if self.params.crc_error_rate > 0 and self._rng.random() < self.params.crc_error_rate:
            bad = True
        if bad:
            self.corrupted += 1
            raw = raw[:-1] + bytes([raw[-1] ^ 0x5A])
        if self.params.garbage_rate > 0 and self._rng.random() < self.params.garbage_rate:
            # line noise ahead of the reply: the host must skip it and still find the frame
            self.garbage += 1
            raw = bytes(self._rng.randrange(256) for _ in range(self._rng.randint(1, 16))) + raw
        return raw

    # --- inspection for tests ------------------------------------------------------------------------------

    def commands(self, kind: type | None = None) -> list[Received]:
        with self._lock:
            return [r for r in self.received if kind is None or isinstance(r.command, kind)]

    def set_silent(self, sid: int, silent: bool = True) -> None:
        """Make a servo stop answering (or answer again) from now on."""
        with self._lock:
            self.advance()
            self.servos[sid].dead = silent


class PtyBoardServer(PtyServer):
    """Serve a BoardSim on a pseudo-terminal from a background thread. `path` is the pty to open."""

    def __init__(self, sim: BoardSim) -> None:
        super().__init__()
        self.sim = sim
        self._parser = p.FrameParser()
        self._start("hiwonder-sim")

    def _serve(self) -> None:
        delay = self.sim.params.reply_delay_ms / 1000.0
        while not self._stop.is_set():
            ready, _, _ = select.select([self._master, self._wake_r], [], [], 0.5)
            if self._master not in ready:
                continue
            try:
                data = os.read(self._master, 4096)
            except (BlockingIOError, InterruptedError):
                continue
            except OSError:
                break
            for frame in self._parser.feed(data):
                out = self.sim.handle(frame)
                if out and delay > 0:
                    self._count(replied=False)  # a late reply (reply_ms) is late for the client's timeout too
                    time.sleep(delay)
                    if not self._send(out):
                        return
                    continue
                dropped = self.dropped_writes
                if out and not self._send(out):
                    return
                # written, not dropped: the client will get it
                self._count(replied=bool(out) and self.dropped_writes == dropped)


def start_sim(
    profile: str | ArmProfile, params: Mapping[str, str] | None = None, clock: _Now | None = None
) -> PtyBoardServer:
    """Resolve a profile and URL parameters, build the board and serve it on a new pty."""
    prof = get_profile(profile) if isinstance(profile, str) else profile
    return PtyBoardServer(BoardSim(prof, parse_sim_params(prof, params or {}), clock))
