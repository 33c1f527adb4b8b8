"""The Franka family as the registry sees it: URL facts, lock keys, simulator names and parameters.

Pure: imports only the limit table (no pylibfranka, no numpy). `open` imports the client when called, and
without pylibfranka says which extra installs it (a SettingsError: exit 2).
"""

from __future__ import annotations

import math
from typing import Any

from servotool.clock import FakeClock
from servotool.devices.family import ARM, DeviceFacts, Family, MotionCaps, SimParam
from servotool.devices.franka import profiles
from servotool.devices.locks import host_keys
from servotool.devices.url import DeviceURL, DeviceURLError, guessed
from servotool.errors import SettingsError
from servotool.readings import ARM_MARGIN_DEG, Readable, padded

NAME = "franka"
SCHEME = "franka"
COMMAND_PORT = "1337"  # libfranka dials this port only
JOINT_NAMES = tuple(f"J{n + 1}" for n in range(profiles.N_JOINTS))
REAL_KEYS = ("model", "realtime")
REALTIME_VALUES = ("enforce", "ignore")
INSTALL_HINT = "pylibfranka is not installed: pip install 'servotool[franka]'"


class MissingClient(SettingsError):
    """The optional client library is not installed (nothing was opened)."""


def motion_caps(models: tuple[profiles.Model, ...]) -> MotionCaps:
    """The bounds every one of the models keeps, in degrees, at the 1 ms command period: the slowest joint's
    speed, acceleration and jerk of the datasheets (a per-axis bound: the generator holds each joint to it).
    The jerk-limited generator is the default shaper: the robot refuses a command whose acceleration jumps."""
    v = min(min(m.dq) for m in models)
    a = min(min(m.ddq) for m in models)
    j = min(min(m.dddq) for m in models)
    return MotionCaps(
        cmd_period_s=0.001,
        v_max=math.degrees(v),
        a_max=math.degrees(a),
        j_max=math.degrees(j),
        a_cap=math.degrees(a),
        a_probe_cap=math.degrees(a),
        shapers=("otg", "accel"),
    )


ALL_MODELS = tuple(profiles.MODELS.values())


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


def sim_settings(parsed: DeviceURL) -> tuple[float, int, str]:
    """(drop, seed, address) of a sim: URL; DeviceURLError for an unknown key or a value out of range."""
    unknown = sorted(set(parsed.params) - set(profiles.PARAM_HELP) - {"clock"})
    if unknown:
        raise DeviceURLError(
            f"{parsed.raw}: unknown parameter {guessed(unknown[:1], [*profiles.PARAM_HELP, 'clock'])} "
            f"(known: {', '.join(sorted(profiles.PARAM_HELP))})"
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
    return drop, seed, address


def _sim_profile(parsed: DeviceURL) -> profiles.Profile:
    if parsed.target not in profiles.PROFILES:
        raise DeviceURLError(f"{parsed.raw}: unknown profile (known: {', '.join(profiles.PROFILES)})")
    sim_settings(parsed)
    return profiles.PROFILES[parsed.target]


def facts(parsed: DeviceURL) -> DeviceFacts:
    """A Franka URL's model, joints and bounds. A real address names its model by `?model=` (fr3, fer):
    without one, the bounds both models keep (the narrowest ranges, the slowest joints). DeviceURLError for
    an unknown model or parameter."""
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

        clock = sim_clock(dict(parsed.params), parsed.raw, kwargs.pop("clock", None))
        if isinstance(clock, FakeClock):
            # pylibfranka waits on real sockets in real time: no lock-step on a simulated clock
            raise DeviceURLError(
                f"{parsed.raw}: the Franka simulator runs in real time only (want clock=host)"
            )
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


def sim_params() -> tuple[SimParam, ...]:
    return tuple(SimParam(key, text) for key, text in sorted(profiles.PARAM_HELP.items()))


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
)
