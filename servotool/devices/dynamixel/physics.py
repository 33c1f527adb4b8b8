"""One simulated X-series servo: its control-table image and the physics behind its Present registers.

Model (figures are plausible for an XL330 at 5 V, not measured; all but the table live in `AxisPhysics`):
* the Position Trajectory moves toward Goal Position at Profile Velocity (the Velocity Limit when 0) in the
  position modes (3, and 4 and 5 with goals beyond one turn); in velocity mode (1) it turns at Goal Velocity,
  in PWM mode (16) at Goal PWM's share of the PWM Limit times the Velocity Limit, whatever Goal Position says;
  current mode (0) stays where it is (its motion is not modelled);
* Present Position follows the trajectory with a first-order lag, and lags it under load: the holding
  current is stiffness x gap, so a load of L mA settles at a gap of L / stiffness pulses;
* Present Current = standby + stiffness x |gap| (+ a friction term while moving), so current rises with the
  position gap and with any commanded or scheduled load; with torque off the motor draws nothing;
* temperature integrates current squared with a slow first-order cooling toward ambient; at the
  Temperature Limit the Overheating bit latches;
* an overload's lead-up ramps an extra load linearly, then the Overload bit latches;
* any latched Hardware Error Status bit clears Torque Enable and stays until a reboot.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from servotool.devices.dynamixel import control_table as ct
from servotool.devices.dynamixel.control_table import HardwareError


@dataclass(frozen=True)
class AxisPhysics:
    """Constants of the servo model."""

    stiffness_ma_per_pulse: float = 8.0
    standby_ma: float = 17.0  # XL330 standby current, from its specification
    friction_ma: float = 40.0  # extra while the trajectory moves
    lag_s: float = 0.03
    heat_c_per_s_per_a2: float = 0.35  # heating at 1 A: settles ~40 C above ambient
    cooling_s: float = 120.0


DEFAULT_PHYSICS = AxisPhysics()


class SimAxis:
    """State of one servo. `table` is its control-table image; Present registers are refreshed on read."""

    def __init__(
        self,
        sid: int,
        model: int,
        position: float,
        temperature_c: float,
        torque: bool,
        physics: AxisPhysics = DEFAULT_PHYSICS,
    ) -> None:
        self.sid = sid
        self.physics = physics
        self.table = bytearray(ct.TABLE_SIZE)
        for reg in ct.XL330.values():
            if reg.eeprom and reg.initial is not None:
                self.put(reg, reg.initial)
        self.put(ct.MODEL_NUMBER, model)
        self.put(ct.ID, sid)
        self.put(ct.BAUD_RATE, 3)  # 1 Mbaud, as the robot is set up
        self.pos = float(position)
        self.temp = float(temperature_c)
        self.load_ma = 0.0  # standing + commanded load
        self.silent = False
        self.silent_until = -math.inf  # rebooting
        self._reset_ram()
        self.put(ct.TORQUE_ENABLE, int(torque))

    def _reset_ram(self) -> None:
        """The RAM area as at power-up: torque off, no error, the goal where the servo is."""
        self.table[ct.RAM_START :] = bytes(ct.TABLE_SIZE - ct.RAM_START)
        for reg in ct.XL330.values():
            if not reg.eeprom and reg.initial is not None:
                self.put(reg, reg.initial)
        self.traj = self.pos
        self.traj_vel = 0.0  # pulses/s
        self.vel = 0.0
        self.current = 0.0
        self.extra_ma = 0.0  # overload lead-up
        self.put(ct.GOAL_POSITION, int(round(self.pos)))

    # --- table access ---------------------------------------------------------------------------------------

    def get(self, reg: ct.Register) -> int:
        return ct.decode_value(reg, bytes(self.table[reg.address : reg.end]))

    def put(self, reg: ct.Register, value: int) -> None:
        self.table[reg.address : reg.end] = ct.encode_value(reg, value)

    @property
    def torque(self) -> bool:
        return bool(self.table[ct.TORQUE_ENABLE.address])

    @property
    def hardware_error(self) -> int:
        return self.table[ct.HARDWARE_ERROR_STATUS.address]

    def latch(self, bits: int) -> None:
        """Latch hardware-error bits: torque off, motor output 0, until a reboot."""
        self.table[ct.HARDWARE_ERROR_STATUS.address] |= bits & 0xFF
        self.torque_off()

    def torque_off(self) -> None:
        self.table[ct.TORQUE_ENABLE.address] = 0
        self.traj, self.traj_vel = self.pos, 0.0

    def torque_on(self) -> None:
        self.table[ct.TORQUE_ENABLE.address] = 1
        # a servo switched on holds where it is: the profile starts from the present position
        self.traj, self.traj_vel = self.pos, 0.0

    def reboot(self) -> None:
        """Reinitialise the RAM area (torque off, errors cleared); EEPROM, position and temperature stay."""
        self._reset_ram()

    # --- physics --------------------------------------------------------------------------------------------

    def _profile_speed(self) -> float:
        pv = self.get(ct.PROFILE_VELOCITY) or self.get(ct.XL330["Velocity Limit"]) or 1
        return pv * ct.PULSES_PER_S_PER_UNIT

    def free_speed(self) -> float | None:
        """Pulses/s the servo turns at by itself with torque on in velocity mode (Goal Velocity) or PWM mode
        (Goal PWM as a share of the PWM Limit, times the Velocity Limit as the no-load speed); None in the
        position modes, where the trajectory goes to Goal Position instead."""
        mode = self.get(ct.OPERATING_MODE)
        if mode == 1:
            return self.get(ct.GOAL_VELOCITY) * ct.PULSES_PER_S_PER_UNIT
        if mode == 16:
            share = self.get(ct.GOAL_PWM) / max(1, self.get(ct.PWM_LIMIT))
            return share * self.get(ct.VELOCITY_LIMIT) * ct.PULSES_PER_S_PER_UNIT
        if mode == 0:
            return 0.0  # current control: its motion is not modelled; the servo stays where it is
        return None

    def _drive(self, dt: float) -> None:
        """Move the trajectory for dt seconds as the Operating Mode says."""
        free = self.free_speed()
        if free is not None:
            self.traj += free * dt
            self.traj_vel = free
            return
        goal = float(self.get(ct.GOAL_POSITION))
        delta = goal - self.traj
        vmax = self._profile_speed()
        move = max(-vmax * dt, min(vmax * dt, delta))
        self.traj += move
        self.traj_vel = move / dt if dt > 0 else 0.0

    def step(self, dt: float, ambient_c: float) -> None:
        """Advance dt seconds."""
        ph = self.physics
        before = self.pos
        if self.torque:
            self._drive(dt)
            load = self.load_ma + self.extra_ma
            target = self.traj - load / ph.stiffness_ma_per_pulse
            self.pos += (target - self.pos) * (1.0 - math.exp(-dt / ph.lag_s))
            gap = abs(self.traj - self.pos)
            moving = ph.friction_ma if abs(self.traj_vel) > 0 else 0.0
            self.current = ph.standby_ma + ph.stiffness_ma_per_pulse * gap + moving
        else:
            self.traj, self.traj_vel, self.current = self.pos, 0.0, 0.0
        self.vel = (self.pos - before) / dt if dt > 0 else 0.0
        amps = self.current / 1000.0
        self.temp += (ph.heat_c_per_s_per_a2 * amps * amps - (self.temp - ambient_c) / ph.cooling_s) * dt
        if self.temp >= self.get(ct.TEMPERATURE_LIMIT):
            self.latch(int(HardwareError.OVERHEATING))

    def settle(self) -> None:
        """Put the servo at rest where its load holds it (the state of a robot already standing)."""
        if self.torque:
            self.pos = self.traj - self.load_ma / self.physics.stiffness_ma_per_pulse
            self.current = self.physics.standby_ma + self.load_ma
        self.vel = 0.0

    def still(self) -> bool:
        """Nothing but slow temperature drift will change until the next command."""
        if not self.torque:
            return True
        if self.free_speed():
            return False  # turning at its goal velocity or PWM
        settled = self.traj - (self.load_ma + self.extra_ma) / self.physics.stiffness_ma_per_pulse
        at_goal = self.free_speed() is not None or self.traj == float(self.get(ct.GOAL_POSITION))
        return at_goal and abs(self.pos - settled) < 1e-3 and self.extra_ma == 0.0

    def refresh(self, t_s: float, voltage_v: float, pos_noise: int, current_noise: float) -> None:
        """Write the Present registers from the state (what a read at this instant sees)."""
        self.put(ct.XL330["Realtime Tick"], int(t_s * 1000) % 32768)
        moving = abs(self.traj_vel) > 0 or abs(self.vel) > ct.PULSES_PER_S_PER_UNIT * 10
        self.put(ct.XL330["Moving"], int(moving))
        self.put(ct.PRESENT_CURRENT, _clamp(int(round(self.current + current_noise)), 2))
        self.put(ct.PRESENT_VELOCITY, _clamp(int(round(self.vel / ct.PULSES_PER_S_PER_UNIT)), 4))
        self.put(ct.PRESENT_POSITION, _clamp(int(round(self.pos)) + pos_noise, 4))
        self.put(ct.VELOCITY_TRAJECTORY, _clamp(int(round(self.traj_vel / ct.PULSES_PER_S_PER_UNIT)), 4))
        self.put(ct.POSITION_TRAJECTORY, _clamp(int(round(self.traj)), 4))
        self.put(ct.PRESENT_INPUT_VOLTAGE, max(0, min(0xFFFF, int(round(voltage_v * 10)))))
        self.put(ct.PRESENT_TEMPERATURE, max(0, min(0xFF, int(round(self.temp)))))


def _clamp(value: int, size: int) -> int:
    lim = 1 << (8 * size - 1)
    return max(-lim, min(lim - 1, value))
