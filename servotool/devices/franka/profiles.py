"""The models' joint limits (Franka's datasheets and libfranka's documented limits), in radians, and the
simulator profiles built on them. Pure: no numpy."""

from __future__ import annotations

import math
from dataclasses import dataclass

N_JOINTS = 7


@dataclass(frozen=True)
class Model:
    """One arm model's limits per joint: q_min/q_max (rad), dq (rad/s), ddq (rad/s^2), dddq (rad/s^3)."""

    name: str
    q_min: tuple[float, ...]
    q_max: tuple[float, ...]
    dq: tuple[float, ...]
    ddq: tuple[float, ...]
    dddq: tuple[float, ...]

    def ranges_deg(self) -> tuple[tuple[float, float], ...]:
        pairs = zip(self.q_min, self.q_max, strict=True)
        return tuple((math.degrees(lo), math.degrees(hi)) for lo, hi in pairs)

    def speeds_deg(self) -> tuple[float, ...]:
        return tuple(math.degrees(v) for v in self.dq)


FR3 = Model(
    "fr3",
    q_min=(-2.7437, -1.7837, -2.9007, -3.0421, -2.8065, 0.5445, -3.0159),
    q_max=(2.7437, 1.7837, 2.9007, -0.1518, 2.8065, 4.5169, 3.0159),
    dq=(2.62, 2.62, 2.62, 2.62, 5.26, 4.18, 5.26),
    ddq=(10.0,) * 7,
    dddq=(5000.0,) * 7,
)
FER = Model(
    "fer",
    q_min=(-2.8973, -1.7628, -2.8973, -3.0718, -2.8973, -0.0175, -2.8973),
    q_max=(2.8973, 1.7628, 2.8973, -0.0698, 2.8973, 3.7525, 2.8973),
    dq=(2.175, 2.175, 2.175, 2.175, 2.61, 2.61, 2.61),
    ddq=(15.0, 7.5, 10.0, 12.5, 15.0, 20.0, 20.0),
    dddq=(7500.0, 3750.0, 5000.0, 6250.0, 7500.0, 10000.0, 10000.0),
)
MODELS = {m.name: m for m in (FR3, FER)}


@dataclass(frozen=True)
class Profile:
    """A simulator: its model, the joint dynamics behind the impedance controller (dead time in cycles, the
    natural frequency and damping of each joint's second-order response) and the start pose (rad)."""

    name: str
    model: Model
    dead_cycles: int = 1
    omega_n: float = 350.0  # rad/s: with the dead cycle, q trails a ramp of q_c by about 6.7 ms
    zeta: float = 1.0
    q0: tuple[float, ...] = (0.0, -0.785, 0.0, -2.356, 0.0, 1.571, 0.785)

    @property
    def ramp_lag_ms(self) -> float:
        """How far q trails a ramp of q_c (ms): the dead cycles plus the joint's 2 zeta / omega_n."""
        return (self.dead_cycles * 0.001 + 2.0 * self.zeta / self.omega_n) * 1e3


PROFILES = {p.name: p for p in (Profile("franka-fr3", FR3), Profile("franka-fer", FER))}

PARAM_HELP = {
    "address": "the loopback address the simulator's TCP 1337 binds (default: the first free from 127.0.0.2)",
    "drop": "the fraction of command packets the simulator loses, seeded (0..1, default 0)",
    "seed": "the seed of the packet loss draw (default 0)",
    "mode": "the robot_mode the simulated arm starts in: idle (ready), user_stopped, reflex, other (FCI off)",
    "reflex_at": "raise a reflex this many seconds after a client connects (rehearses the recorder; "
    "default: never)",
    "reflex": "the reflex reflex_at raises, by its libfranka name (default joint_reflex)",
}


def urdf_of(model: Model) -> str:
    """The model as the robot hands it to libfranka: a URDF whose joints carry the limits the client's rate
    limiter reads (position, velocity, and the position-based velocity bound's deceleration)."""
    joints = []
    for j in range(N_JOINTS):
        parent, child = f"{model.name}_link{j}", f"{model.name}_link{j + 1}"
        joints.append(
            f'  <link name="{child}"/>\n'
            f'  <joint name="{model.name}_joint{j + 1}" type="revolute">\n'
            f'    <parent link="{parent}"/><child link="{child}"/><axis xyz="0 0 1"/>\n'
            f'    <limit lower="{model.q_min[j]}" upper="{model.q_max[j]}"'
            f' velocity="{model.dq[j]}" effort="87"/>\n'
            f'    <position_based_velocity_limits velocity_offset="0.0"'
            f' deceleration_limit="{model.ddq[j]}"/>\n'
            f"  </joint>\n"
        )
    return (
        f'<?xml version="1.0"?>\n<robot name="{model.name}">\n  <link name="{model.name}_link0"/>\n'
        + "".join(joints)
        + "</robot>\n"
    )
