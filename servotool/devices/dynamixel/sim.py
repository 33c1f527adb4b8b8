"""A DYNAMIXEL Protocol 2.0 bus simulator (X-series register model) served on a pseudo-terminal.

`DxlSim` is the bus: one `SimAxis` per servo id (control-table image + physics), advanced lazily to the time
each packet arrives. It answers PING (unicast and broadcast), READ, WRITE, REG_WRITE/ACTION, SYNC READ,
SYNC WRITE, BULK READ, BULK WRITE and REBOOT like an XL330 does: status packets carry the Alert bit (0x80)
while Hardware Error Status is non-zero, sync and bulk reads answer in the order asked, silent servos never
answer, Status Return Level (68) is honoured; a frozen line (`freeze`) holds every packet and delivers
them in order when it thaws. FACTORY RESET is refused (Result Fail): it is not modelled.

Faults come from the URL (see sim_params) or at run time through `inject`, `overload`, `set_silent`,
`set_load`, `drop_next` and `corrupt_next`. `PtyDxlServer` serves a DxlSim on a pty so that dynamixel-sdk's
PortHandler/PacketHandler (or any other program) opens it like a serial port.

Time is the sim's clock (the host monotonic clock by default). Pass a `servotool.clock.FakeClock` shared with
the run to run in lock-step, faster than real time. Deterministic for a given seed (timing aside).
"""

from __future__ import annotations

import math
import os
import random
import select
import threading
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from servotool.clock import Clock, MonotonicClock
from servotool.devices.dynamixel import control_table as ct
from servotool.devices.dynamixel import protocol as p
from servotool.devices.dynamixel.control_table import HardwareError
from servotool.devices.dynamixel.physics import DEFAULT_PHYSICS, AxisPhysics, SimAxis
from servotool.devices.dynamixel.profiles import DxlProfile, get_profile
from servotool.devices.dynamixel.sim_params import DxlSimParams, parse_sim_params
from servotool.devices.pty_server import PtyServer

SUBSTEP_S = 0.005
IDLE_STEP_S = 0.25  # when every servo is settled only temperature drifts: coarse steps suffice
E = p.ErrorNumber


@dataclass
class _Overload:
    sid: int
    start: float  # sim seconds: the lead-up begins
    at: float  # the Overload bit latches
    peak_ma: float
    done: bool = False


class DxlSim:
    """The bus and its servos. Feed it packets with `handle`; it returns the status bytes to send back."""

    def __init__(
        self,
        profile: DxlProfile,
        params: DxlSimParams,
        clock: Clock | None = None,
        physics: AxisPhysics = DEFAULT_PHYSICS,
    ) -> None:
        self.profile = profile
        self.params = params
        self.clock: Clock = clock or MonotonicClock()
        self._lock = threading.RLock()
        self._rng = random.Random(params.seed)
        self.t0 = self.clock.now()
        self._t = 0.0  # sim seconds since t0
        torque = profile.start_torque if params.torque is None else params.torque
        self.axes: dict[int, SimAxis] = {
            sid: SimAxis(
                sid,
                profile.model_number,
                profile.start_position.get(sid, 2048),
                params.ambient_c,
                torque,
                physics,
            )
            for sid in profile.ids
        }
        for sid, axis in self.axes.items():
            axis.load_ma = profile.load_ma.get(sid, 0.0) + params.load_ma.get(sid, 0.0)
            axis.put(ct.OPERATING_MODE, params.modes.get(sid, ct.POSITION_MODE))
            axis.put(ct.GOAL_VELOCITY, params.goal_velocity.get(sid, 0))
            axis.put(ct.GOAL_PWM, params.goal_pwm.get(sid, 0))
            axis.settle()
        self.voltage = params.voltage - params.supply_ohm * sum(a.current for a in self.axes.values()) / 1000
        self._overloads = [
            _Overload(s.sid, max(0.0, s.at_s - params.overload_ramp_s), s.at_s, params.overload_ma)
            for s in params.overloads
        ]
        self._latches = sorted(((s.at_s, s.sid, s.bits) for s in params.latched), reverse=True)
        # (time, servo, silent from then on): a silence with an end answers again at its end
        self._silences = sorted(
            [(s.at_s, s.sid, True) for s in params.silent]
            + [(s.until_s, s.sid, False) for s in params.silent if math.isfinite(s.until_s)],
            reverse=True,
        )
        self._held: list[p.Packet] = []  # packets taken while the line is frozen, delivered when it thaws
        self._registered: dict[int, p.Write] = {}
        self._drop = 0
        self._corrupt = 0
        self.packets_seen = 0
        self.instructions: Counter[str] = Counter()
        self.replies = 0
        self.dropped = 0
        self.corrupted = 0
        self._apply_events()

    # --- time and physics -----------------------------------------------------------------------------------

    def now_s(self) -> float:
        """Sim seconds since the simulator started."""
        return self.clock.now() - self.t0

    def _next_event(self) -> float:
        times = [o.start if self._t < o.start else o.at for o in self._overloads if not o.done]
        times += [self._latches[-1][0]] if self._latches else []
        times += [self._silences[-1][0]] if self._silences else []
        return min(times, default=math.inf)

    def _apply_events(self) -> None:
        while self._latches and self._latches[-1][0] <= self._t:
            _, sid, bits = self._latches.pop()
            self.axes[sid].latch(bits)
        while self._silences and self._silences[-1][0] <= self._t:
            _, sid, silent = self._silences.pop()
            self.axes[sid].silent = silent
        for o in self._overloads:
            if o.done or self._t < o.start:
                continue
            axis = self.axes[o.sid]
            if self._t >= o.at:
                o.done, axis.extra_ma = True, 0.0
                axis.latch(int(HardwareError.OVERLOAD))
            elif axis.torque:
                span = o.at - o.start
                axis.extra_ma = o.peak_ma * ((self._t - o.start) / span if span > 0 else 1.0)

    def advance(self, t_s: float | None = None) -> None:
        """Integrate every servo up to sim time t_s (now by default). Time never runs backwards."""
        with self._lock:
            target = self.now_s() if t_s is None else t_s
            while self._t < target:
                still = all(a.still() for a in self.axes.values())
                dt = min(IDLE_STEP_S if still else SUBSTEP_S, target - self._t)
                dt = min(dt, max(self._next_event() - self._t, 1e-9))
                self._t += dt
                total_ma = 0.0
                for axis in self.axes.values():
                    axis.step(dt, self.params.ambient_c)
                    total_ma += axis.current
                self.voltage = self.params.voltage - self.params.supply_ohm * total_ma / 1000.0
                self._check_voltage()
                self._apply_events()

    def _check_voltage(self) -> None:
        for axis in self.axes.values():
            lo = axis.get(ct.XL330["Min Voltage Limit"]) / 10.0
            hi = axis.get(ct.XL330["Max Voltage Limit"]) / 10.0
            if not lo <= self.voltage <= hi and not axis.hardware_error & HardwareError.INPUT_VOLTAGE:
                axis.latch(int(HardwareError.INPUT_VOLTAGE))

    # --- the wire -------------------------------------------------------------------------------------------

    def handle(self, packet: p.Packet) -> bytes:
        """Apply one instruction packet; return the status bytes (empty when nobody answers)."""
        with self._lock:
            try:
                self.advance()
                if self._frozen():
                    self._held.append(packet)  # a stalled line: nothing answers, nothing is lost
                    return b""
                for held in self._held:  # the line thaws: what it held goes through first, answers lost
                    self._apply(held)
                self._held.clear()
                return self._apply(packet)
            finally:
                self.packets_seen += 1  # counted once applied: a lock-step clock waits for this

    def _frozen(self) -> bool:
        span = self.params.freeze
        return span is not None and span[0] <= self._t < span[1]

    def _alive(self, sid: int) -> SimAxis | None:
        axis = self.axes.get(sid)
        if axis is None or axis.silent or self._t < axis.silent_until:
            return None
        return axis

    def _status(self, axis: SimAxis, errnum: int, data: bytes = b"", level: int = 2) -> bytes:
        """One status packet from axis, unless its Status Return Level withholds it or it is lost."""
        if axis.table[ct.STATUS_RETURN_LEVEL.address] < level:
            return b""
        error = errnum | (p.ALERT if axis.hardware_error else 0)
        raw = p.encode_status(axis.sid, error, data)
        self.replies += 1
        if self._drop or (self.params.drop_rate and self._rng.random() < self.params.drop_rate):
            self._drop = max(0, self._drop - 1)
            self.dropped += 1
            return b""
        if self._corrupt or (self.params.crc_error_rate and self._rng.random() < self.params.crc_error_rate):
            self._corrupt = max(0, self._corrupt - 1)
            self.corrupted += 1
            return raw[:-1] + bytes([raw[-1] ^ 0x5A])
        return raw

    def _apply(self, packet: p.Packet) -> bytes:
        if packet.instruction == p.STATUS:
            return b""  # another device's answer on the shared line
        try:
            cmd = p.decode_instruction(packet)
        except p.DxlPacketError as exc:
            self.instructions["invalid"] += 1
            axis = self._alive(packet.id)
            return self._status(axis, exc.errnum) if axis is not None else b""
        self.instructions[type(cmd).__name__] += 1
        if isinstance(cmd, (p.SyncRead, p.SyncWrite, p.BulkRead, p.BulkWrite)):
            return self._group(cmd) if packet.id == p.BROADCAST_ID else b""
        if packet.id == p.BROADCAST_ID:
            out = [self._single(a, cmd, broadcast=True) for a in self.axes.values() if self._alive(a.sid)]
            return b"".join(out) if isinstance(cmd, p.Ping) else b""
        axis = self._alive(packet.id)
        return self._single(axis, cmd, broadcast=False) if axis is not None else b""

    def _single(self, axis: SimAxis, cmd: p.Command, broadcast: bool) -> bytes:
        if isinstance(cmd, p.Ping):
            data = ct.encode_value(ct.MODEL_NUMBER, axis.get(ct.MODEL_NUMBER))
            return self._status(axis, 0, data + bytes([axis.table[6]]), level=0)
        if isinstance(cmd, p.Read):
            return b"" if broadcast else self._read(axis, cmd.address, cmd.length)
        if isinstance(cmd, p.Write):
            if cmd.registered:
                errnum = self._check_write(axis, cmd.address, cmd.data)
                if not errnum:
                    self._registered[axis.sid] = cmd
            else:
                errnum = self._write(axis, cmd.address, cmd.data)
            return self._status(axis, errnum)
        if isinstance(cmd, p.Action):
            held = self._registered.pop(axis.sid, None)
            return self._status(axis, self._write(axis, held.address, held.data) if held else 0)
        if isinstance(cmd, p.Reboot):
            reply = self._status(axis, 0)  # answered before the servo restarts
            self._reboot(axis)
            return reply
        if isinstance(cmd, p.Clear):
            return self._status(axis, 0)  # multi-turn clear: nothing to do in position mode
        return self._status(axis, E.RESULT_FAIL)  # factory reset: not modelled, refused

    def _group(self, cmd: p.SyncRead | p.SyncWrite | p.BulkRead | p.BulkWrite) -> bytes:
        if isinstance(cmd, (p.SyncRead, p.BulkRead)):
            reads = (
                cmd.entries
                if isinstance(cmd, p.BulkRead)
                else [(s, cmd.address, cmd.length) for s in cmd.ids]
            )
            out = []
            for sid, address, length in reads:
                axis = self._alive(sid)
                if axis is not None:  # a silent servo leaves a gap; the next one answers in turn
                    out.append(self._read(axis, address, length))
            return b"".join(out)
        writes = cmd.entries if isinstance(cmd, p.BulkWrite) else [(s, cmd.address, d) for s, d in cmd.data]
        for sid, address, data in writes:
            axis = self._alive(sid)
            if axis is not None:
                self._write(axis, address, data)
        return b""

    # --- registers ------------------------------------------------------------------------------------------

    def _read(self, axis: SimAxis, address: int, length: int) -> bytes:
        if length == 0 or address + length > ct.TABLE_SIZE:
            return self._status(axis, E.ACCESS, level=1)
        noise = self.params.noise
        axis.refresh(
            self._t,
            self.voltage,
            self._rng.randint(-noise, noise) if noise > 0 and axis.torque else 0,
            self._rng.uniform(-1, 1) * self.params.current_noise_ma if axis.torque else 0.0,
        )
        return self._status(axis, 0, bytes(axis.table[address : address + length]), level=1)

    def _check_write(self, axis: SimAxis, address: int, data: bytes) -> int:
        """The error number a write would get (0: accepted)."""
        end = address + len(data)
        if not data or end > ct.TABLE_SIZE:
            return E.ACCESS
        for reg in ct.XL330.values():
            if reg.address >= end or reg.end <= address:
                continue
            if not reg.writable or (reg.eeprom and axis.torque):
                return E.ACCESS  # read-only, or EEPROM while torque is on (the ROM lock)
            if reg.address < address or reg.end > end:
                return E.DATA_LENGTH
            value = ct.decode_value(reg, data[reg.address - address : reg.end - address])
            errnum = self._check_value(axis, reg, value)
            if errnum:
                return errnum
        return 0

    def _check_value(self, axis: SimAxis, reg: ct.Register, value: int) -> int:
        if reg is ct.TORQUE_ENABLE:
            if value not in (0, 1):
                return E.DATA_RANGE
            if value and axis.hardware_error:
                return E.RESULT_FAIL  # a latched servo stays off until rebooted (reply code unconfirmed)
        return E.DATA_LIMIT if not self._within_limit(axis, reg, value) else 0

    @staticmethod
    def _within_limit(axis: SimAxis, reg: ct.Register, value: int) -> bool:
        """A goal within what the servo's mode and limits allow (other fields: always)."""
        mode = axis.get(ct.OPERATING_MODE)
        if reg is ct.GOAL_POSITION and mode == ct.POSITION_MODE:
            return axis.get(ct.MIN_POSITION_LIMIT) <= value <= axis.get(ct.MAX_POSITION_LIMIT)
        if reg is ct.GOAL_POSITION and mode in ct.MULTI_TURN_MODES:
            return ct.MULTI_TURN_RANGE[0] <= value <= ct.MULTI_TURN_RANGE[1]
        limit = {
            ct.GOAL_VELOCITY: ct.VELOCITY_LIMIT,
            ct.GOAL_PWM: ct.PWM_LIMIT,
            ct.GOAL_CURRENT: ct.CURRENT_LIMIT,
        }.get(reg)
        return limit is None or abs(value) <= axis.get(limit)

    def _write(self, axis: SimAxis, address: int, data: bytes) -> int:
        errnum = self._check_write(axis, address, data)
        if errnum:
            return errnum
        was_on = axis.torque
        axis.table[address : address + len(data)] = data
        now_on = axis.torque
        if now_on and not was_on:
            axis.torque_on()
        elif was_on and not now_on:
            axis.torque_off()
        return 0

    def _reboot(self, axis: SimAxis) -> None:
        axis.reboot()
        self._registered.pop(axis.sid, None)
        for o in self._overloads:
            if o.sid == axis.sid and not o.done and self._t >= o.start:
                o.done = True  # the lead-up in progress ends with the restart
        axis.silent_until = self._t + self.params.reboot_ms / 1000.0

    # --- run-time faults and inspection ---------------------------------------------------------------------

    def inject(self, sid: int, bits: int = int(HardwareError.OVERLOAD)) -> None:
        """Latch hardware-error bits on a servo now (its torque goes off until a reboot)."""
        with self._lock:
            self.advance()
            self.axes[sid].latch(bits)

    def overload(
        self,
        sid: int,
        latch_at_s: float | None = None,
        ramp_s: float | None = None,
        peak_ma: float | None = None,
    ) -> float:
        """Schedule an overload: the load rises over ramp_s, then the Overload bit latches at latch_at_s (sim
        seconds; default now + ramp). Returns the latch time."""
        with self._lock:
            self.advance()
            ramp = self.params.overload_ramp_s if ramp_s is None else ramp_s
            at = self._t + ramp if latch_at_s is None else latch_at_s
            self._overloads.append(
                _Overload(
                    sid, max(self._t, at - ramp), at, self.params.overload_ma if peak_ma is None else peak_ma
                )
            )
            return at

    def set_silent(self, sid: int, silent: bool = True) -> None:
        """Make a servo stop answering (or answer again) from now on."""
        with self._lock:
            self.advance()
            self.axes[sid].silent = silent

    def set_load(self, sid: int, load_ma: float) -> None:
        """The external load a servo carries, mA of holding current (the profile's standing load replaced)."""
        with self._lock:
            self.advance()
            self.axes[sid].load_ma = float(load_ma)

    def drop_next(self, n: int = 1) -> None:
        """Lose the next n status packets (missed frames)."""
        with self._lock:
            self._drop += n

    def corrupt_next(self, n: int = 1) -> None:
        """Send the next n status packets with a bad CRC."""
        with self._lock:
            self._corrupt += n

    def hardware_error(self, sid: int) -> int:
        with self._lock:
            self.advance()
            return self.axes[sid].hardware_error

    def latched(self) -> dict[int, int]:
        """Servos with a latched hardware error now, and their bits."""
        with self._lock:
            self.advance()
            return {sid: a.hardware_error for sid, a in self.axes.items() if a.hardware_error}

    def state(self, sid: int) -> dict[str, float]:
        """A servo's true state now (noise-free): position, trajectory, current mA, temperature C, torque."""
        with self._lock:
            self.advance()
            a = self.axes[sid]
            return {
                "position": a.pos,
                "trajectory": a.traj,
                "current_ma": a.current,
                "temperature_c": a.temp,
                "torque": float(a.torque),
                "hardware_error": float(a.hardware_error),
                "voltage_v": self.voltage,
            }


class PtyDxlServer(PtyServer):
    """Serve a DxlSim on a pseudo-terminal from a background thread. `path` is the pty to open."""

    def __init__(self, sim: DxlSim) -> None:
        super().__init__()
        self.sim = sim
        self.parser = p.PacketParser()
        self._start("dynamixel-sim")

    def _serve(self) -> None:
        while not self._stop.is_set():
            # a packet cut short (the host gave up mid-write) is dropped after a quiet line
            wait = 0.05 if self.parser.pending else 0.5
            ready, _, _ = select.select([self._master, self._wake_r], [], [], wait)
            if not ready:
                # a quiet line: keep the physics current, so the next packet never waits for hours of it
                self.sim.advance()
                packets = self.parser.expire() if self.parser.pending else []
            elif self._master in ready:
                try:
                    packets = self.parser.feed(os.read(self._master, 4096))
                except (BlockingIOError, InterruptedError):
                    continue
                except OSError:
                    return
            else:
                continue
            for packet in packets:
                out = self.sim.handle(packet)
                dropped = self.dropped_writes
                if out and not self._send(out):
                    return
                self._count(replied=bool(out) and self.dropped_writes == dropped)


def start_sim(
    profile: str | DxlProfile, params: Mapping[str, str] | None = None, clock: Clock | None = None
) -> PtyDxlServer:
    """Resolve a profile and URL parameters, build the bus and serve it on a new pty."""
    prof = get_profile(profile) if isinstance(profile, str) else profile
    return PtyDxlServer(DxlSim(prof, parse_sim_params(prof, params or {}), clock))


def describe_sim(server: PtyDxlServer) -> dict[str, Any]:
    """Where the simulator is and what it simulates (for the standalone command)."""
    sim = server.sim
    return {
        "path": server.path,
        "profile": sim.profile.name,
        "ids": list(sim.profile.ids),
        "groups": {k: list(v) for k, v in sim.profile.groups.items()},
        "baud": sim.profile.baud,
        "simulated": True,
    }
