"""The Franka family as the registry sees it: URL facts, lock keys, simulator names and parameters.

Pure: imports only the limit table (no pylibfranka, no numpy). `open` imports the client when called, and
without pylibfranka says which extra installs it (a SettingsError: exit 2).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from servotool.clock import FakeClock
from servotool.devices.family import ARM, DeviceFacts, Family, MotionCaps, SimParam
from servotool.devices.franka import codes, profiles
from servotool.devices.franka.serve import SERVE
from servotool.devices.locks import host_keys
from servotool.devices.url import DeviceURL, DeviceURLError, guessed
from servotool.errors import SettingsError
from servotool.readings import ARM_MARGIN_DEG, Readable, padded

NAME = "franka"
SCHEME = "franka"
COMMAND_PORT = "1337"  # libfranka dials this port only
CYCLE_S = 0.001  # the robot's state and command cycle
JOINT_NAMES = tuple(f"J{n + 1}" for n in range(profiles.N_JOINTS))
COLLISION_KEYS = ("collision_torque", "collision_force")
REAL_KEYS = ("model", "realtime", *COLLISION_KEYS)
# set_collision_behavior's thresholds when the URL gives none: Nm per joint, N (forces) and Nm (torques)
# per Cartesian axis; a contact above them stops the arm with a reflex
DEFAULT_TORQUE_THRESHOLDS = (20.0, 20.0, 18.0, 18.0, 16.0, 14.0, 12.0)
DEFAULT_FORCE_THRESHOLDS = (20.0, 20.0, 20.0, 25.0, 25.0, 25.0)
MAX_THRESHOLD = 200.0  # above any contact a run should tolerate
REALTIME_VALUES = ("enforce", "ignore")
# the still commands before motion_finished: the robot refuses a finish on a moving command
SETTLE_CYCLES = 250
INSTALL_HINT = "pylibfranka is not installed: pip install 'servotool[franka]'"


class MissingClient(SettingsError):
    """The optional client library is not installed (nothing was opened)."""


# the share of the robot's acceleration and jerk bounds a run keeps (the rest is margin for rounding)
ACCEL_SHARE = 0.8


def motion_caps(models: tuple[profiles.Model, ...]) -> MotionCaps:
    """The bounds every one of the models keeps, in degrees, at the 1 ms cycle the robot sets: the slowest
    joint's speed and jerk of the datasheets (a per-axis bound: the generator holds each joint to it). The
    acceleration bound (the braked stop's, a ramp's, the acceleration-limited shaper's) is one the robot's
    jerk check passes even when the acceleration flips from +a to -a in a single cycle, as a braked stop
    of an accelerating stream does. The jerk-limited generator is the default shaper: the robot refuses a
    command whose acceleration jumps. Behind it, a backstop holds every command to the datasheets' limits
    themselves (which the generator's bounds sit below), and every stream ends on SETTLE_CYCLES still
    commands."""
    v = min(min(m.dq) for m in models)
    j = min(min(m.dddq) for m in models)
    ddq = min(min(m.ddq) for m in models)
    a = ACCEL_SHARE * min(ddq, j * CYCLE_S / 2)
    return MotionCaps(
        cmd_period_s=CYCLE_S,
        v_max=math.degrees(v),
        a_max=math.degrees(a),
        j_max=math.degrees(ACCEL_SHARE * j),
        a_cap=math.degrees(a),
        a_probe_cap=math.degrees(a),
        shapers=("otg", "accel"),
        fixed_period=True,
        echo_anchor=True,  # q_d: the command the robot took, every cycle
        backstop=(math.degrees(v), math.degrees(ddq), math.degrees(j)),
        settle_cycles=SETTLE_CYCLES,
    )


ALL_MODELS = tuple(profiles.MODELS.values())


@dataclass(frozen=True)
class Collision:
    """The collision thresholds a run sets (set_collision_behavior, the same for the lower and upper
    bounds): torques per joint (Nm), forces and torques per Cartesian axis (N, Nm)."""

    torque: tuple[float, ...] = DEFAULT_TORQUE_THRESHOLDS
    force: tuple[float, ...] = DEFAULT_FORCE_THRESHOLDS


def _thresholds(parsed: DeviceURL, key: str, n: int, default: tuple[float, ...]) -> tuple[float, ...]:
    text = parsed.params.get(key, "")
    if not text:
        return default
    want = f"{parsed.raw}: {key}={text!r}, want one number or {n} separated by commas"
    try:
        values = tuple(float(x) for x in text.split(","))
    except ValueError:
        raise DeviceURLError(want) from None
    if len(values) == 1:
        values = values * n
    if len(values) != n or not all(0 < v <= MAX_THRESHOLD for v in values):
        raise DeviceURLError(f"{want}, each in (0, {MAX_THRESHOLD:g}]")
    return values


def collision_of(parsed: DeviceURL) -> Collision:
    """The URL's collision thresholds (`collision_torque`: one or 7 values, Nm; `collision_force`: one or 6,
    N and Nm), else the defaults; DeviceURLError for a value that is not a number in (0, MAX_THRESHOLD]."""
    return Collision(
        _thresholds(parsed, "collision_torque", profiles.N_JOINTS, DEFAULT_TORQUE_THRESHOLDS),
        _thresholds(parsed, "collision_force", 6, DEFAULT_FORCE_THRESHOLDS),
    )


def _model_of(parsed: DeviceURL) -> profiles.Model | None:
    unknown = sorted(set(parsed.params) - set(REAL_KEYS))
    if unknown:
        raise DeviceURLError(
            f"{parsed.raw}: unknown parameter {guessed(unknown[:1], REAL_KEYS)} "
            f"(known: {', '.join(REAL_KEYS)})"
        )
    realtime = parsed.params.get("realtime", "enforce")
    if realtime not in REALTIME_VALUES:
        raise DeviceURLError(f"{parsed.raw}: realtime={realtime!r}, want one of {', '.join(REALTIME_VALUES)}")
    model = parsed.params.get("model", "")
    if model and model not in profiles.MODELS:
        raise DeviceURLError(f"{parsed.raw}: unknown model {model!r} (known: {', '.join(profiles.MODELS)})")
    return profiles.MODELS.get(model)


START_MODES = ("idle", "user_stopped", "reflex", "other")


@dataclass(frozen=True)
class SimSettings:
    """A sim: URL's simulator: packet loss (drop, seed), its address ("" for the first free one) and the
    robot_mode it starts in."""

    drop: float
    seed: int
    address: str
    mode: str


def sim_settings(parsed: DeviceURL) -> SimSettings:
    """The simulator settings of a sim: URL; DeviceURLError for an unknown key or a value out of range."""
    known = sorted({*profiles.PARAM_HELP, "clock", *COLLISION_KEYS})
    unknown = sorted(set(parsed.params) - set(known))
    if unknown:
        raise DeviceURLError(
            f"{parsed.raw}: unknown parameter {guessed(unknown[:1], known)} (known: {', '.join(known)})"
        )
    clock = parsed.params.get("clock", "host")
    if clock not in ("host", "sim"):
        raise DeviceURLError(f"{parsed.raw}: clock={clock!r}, want clock=host or clock=sim")
    try:
        drop = float(parsed.params.get("drop", "0"))
        seed = int(parsed.params.get("seed", "0"))
    except ValueError as exc:
        raise DeviceURLError(f"{parsed.raw}: {exc}") from None
    if not 0.0 <= drop < 1.0:
        raise DeviceURLError(f"{parsed.raw}: drop={drop}, want 0 <= drop < 1")
    address = parsed.params.get("address", "")
    if address and not address.startswith("127."):
        raise DeviceURLError(f"{parsed.raw}: address={address!r} is not a loopback address (127.x.y.z)")
    mode = parsed.params.get("mode", "idle")
    if mode not in START_MODES:
        raise DeviceURLError(f"{parsed.raw}: mode={mode!r}, want one of {', '.join(START_MODES)}")
    return SimSettings(drop, seed, address, mode)


def sim_reflex(parsed: DeviceURL) -> tuple[str, float] | None:
    """(reflex name, seconds after the connection) a sim: URL schedules, None when it schedules none;
    DeviceURLError for a name libfranka does not have or a time that is not a number >= 0."""
    if "reflex_at" not in parsed.params:
        if "reflex" in parsed.params:
            raise DeviceURLError(f"{parsed.raw}: reflex= needs reflex_at= (the seconds after connecting)")
        return None
    name = parsed.params.get("reflex", "joint_reflex")
    if name not in codes.ERROR_INDEX:
        raise DeviceURLError(f"{parsed.raw}: reflex={name!r} is not a libfranka error name")
    try:
        at = float(parsed.params["reflex_at"])
    except ValueError:
        at = math.nan
    if not (math.isfinite(at) and at >= 0):
        raise DeviceURLError(f"{parsed.raw}: reflex_at={parsed.params['reflex_at']!r}, want seconds >= 0")
    return name, at


def _sim_profile(parsed: DeviceURL) -> profiles.Profile:
    if parsed.target not in profiles.PROFILES:
        raise DeviceURLError(f"{parsed.raw}: unknown profile (known: {', '.join(profiles.PROFILES)})")
    sim_settings(parsed)
    sim_reflex(parsed)
    return profiles.PROFILES[parsed.target]


def facts(parsed: DeviceURL) -> DeviceFacts:
    """A Franka URL's model, joints and bounds. A real address names its model by `?model=` (fr3, fer):
    without one, the bounds both models keep (the narrowest ranges, the slowest joints). DeviceURLError for
    an unknown model or parameter."""
    collision_of(parsed)
    if parsed.simulated:
        profile = _sim_profile(parsed)
        m = profile.model
        return DeviceFacts(
            parsed.raw,
            NAME,
            ARM,
            profile.name,
            True,
            JOINT_NAMES,
            "deg",
            m.ranges_deg(),
            m.speeds_deg(),
            motion=motion_caps((m,)),
        )
    model = _model_of(parsed)
    models = (model,) if model else ALL_MODELS
    ranges = tuple(
        (max(m.ranges_deg()[j][0] for m in models), min(m.ranges_deg()[j][1] for m in models))
        for j in range(profiles.N_JOINTS)
    )
    speeds = tuple(min(m.speeds_deg()[j] for m in models) for j in range(profiles.N_JOINTS))
    # what a joint can read: the widest of the models it may be (the narrowest would call a real read bad)
    widest = tuple(
        (min(m.ranges_deg()[j][0] for m in models), max(m.ranges_deg()[j][1] for m in models))
        for j in range(profiles.N_JOINTS)
    )
    return DeviceFacts(
        parsed.raw,
        NAME,
        ARM,
        model.name if model else "",
        False,
        JOINT_NAMES,
        "deg",
        ranges,
        speeds,
        motion=motion_caps(models),
        readable=Readable(padded(widest, ARM_MARGIN_DEG), units="deg"),
    )


def _open(parsed: DeviceURL, **kwargs: Any) -> Any:
    facts(parsed)  # every parameter checked before anything is imported or dialled
    if parsed.simulated:
        from servotool.devices.url import sim_clock

        # clock=sim: the simulator runs in lock-step and the arm moves this clock to the robot's time
        kwargs["clock"] = sim_clock(dict(parsed.params), parsed.raw, kwargs.pop("clock", None))
    elif isinstance(kwargs.get("clock"), FakeClock):
        raise DeviceURLError(f"{parsed.raw}: a real arm runs in real time, not on a simulated clock")
    try:
        import pylibfranka  # noqa: F401
    except ImportError:
        raise MissingClient(INSTALL_HINT) from None
    from servotool.devices.franka.client import open_url

    return open_url(parsed, **kwargs)


def lock_keys(parsed: DeviceURL) -> list[str]:
    """[] for an embedded simulator; else the arm's host with libfranka's command port."""
    if parsed.simulated:
        return []
    return host_keys(NAME, parsed.target, [("port", COMMAND_PORT)])


def _telemetry(arm: Any) -> Any:
    from servotool.devices.franka.telemetry import telemetry

    return telemetry(arm)


COLLISION_HELP = {
    "collision_torque": "collision thresholds per joint, Nm: one value or 7 (set_collision_behavior)",
    "collision_force": "collision thresholds per Cartesian axis, N and Nm: one value or 6",
}


def _fault(codes_: tuple[int, ...]) -> str:
    """A recorded fault's flag name: the client records a reflex as (its wire index + 1, 0)."""
    main = codes_[0] if codes_ else 0
    return codes.ERROR_NAMES[main - 1] if 1 <= main <= len(codes.ERROR_NAMES) else ""


def _status(bits: int) -> str:
    """The flag names of an error word the recorder latched (bit n: the flag of wire index n)."""
    return " ".join(name for n, name in enumerate(codes.ERROR_NAMES) if bits >> n & 1)


def sim_params() -> tuple[SimParam, ...]:
    helps = {**profiles.PARAM_HELP, **COLLISION_HELP}
    return tuple(SimParam(key, text) for key, text in sorted(helps.items()))


FAMILY = Family(
    name=NAME,
    title="Franka arm (FR3, FER)",
    kind=ARM,
    schemes=(SCHEME,),
    examples=("franka://172.16.0.2",),
    network=True,
    sim_names=lambda: tuple(profiles.PROFILES),
    open=_open,
    facts=facts,
    lock_keys=lock_keys,
    campaigns=frozenset({"lag", "step"}),
    sim_params=sim_params,
    serve=SERVE,
    telemetry=_telemetry,
    docs="franka.md",
    describe_status=_status,
    describe_fault=_fault,
)
