"""The FAIRINO family as the registry sees it: URL facts, lock keys, simulator names and parameters.

Pure: imports only the profile table (no client, no numpy). `open` imports the client or the simulator.
"""

from __future__ import annotations

from typing import Any

from servotool.devices.fairino import profiles
from servotool.devices.fairino.serve import SERVE
from servotool.devices.family import ARM, DeviceFacts, Family, MotionCaps, SimParam
from servotool.devices.locks import host_keys
from servotool.devices.url import DeviceURL, DeviceURLError
from servotool.readings import ARM_MARGIN_DEG, Readable, padded

JOINT_NAMES = tuple(f"J{n + 1}" for n in range(profiles.N_JOINTS))
# the ports a run sends commands to, with their defaults: the first names the controller
COMMAND_PORTS = (("rpc_port", "20003"), ("udp_port", "20007"))
# the parameters of a sim: URL the client takes (the rest are the simulator's)
CLIENT_KEYS = ("transport", "silence_ms", "timeout_ms", "clock")

# ServoJ at 10 ms. The acceleration caps are calibrated on the runaway campaign (seed 000): the trigger is
# a change of the per-command step near 1 deg (a_max * cmdT^2 at about 10,000 deg/s^2); 2,000 deg/s^2 keeps
# the braked stop 5x below it, and a shaped probe may reach 20,000 on a test arm to find the ceiling.
MOTION = MotionCaps(
    cmd_period_s=0.01,
    v_max=130.0,
    a_max=500.0,
    j_max=10000.0,
    a_cap=2000.0,
    a_probe_cap=20000.0,
    shapers=("accel", "otg"),
)


def _open(parsed: DeviceURL, **kwargs: Any) -> Any:
    if parsed.simulated:
        from servotool.devices.fairino.sim import open_url as open_sim

        return open_sim(parsed, **kwargs)
    from servotool.devices.fairino.client import open_url

    return open_url(parsed, **kwargs)


def facts(parsed: DeviceURL) -> DeviceFacts:
    """A FAIRINO URL's model, joints and bounds. A `sim:` URL's profile with its overrides; a real address
    names its model by `?model=` (fr3, fr20): without one, the bounds every known model keeps (the
    narrowest ranges, the slowest speeds). DeviceURLError for an unknown model or parameter."""
    if parsed.simulated:
        params = {k: v for k, v in parsed.params.items() if k not in CLIENT_KEYS}
        try:
            profile = profiles.with_overrides(parsed.target, params)
        except profiles.ProfileError as exc:
            raise DeviceURLError(f"{parsed.raw}: {exc}") from None
        return DeviceFacts(
            parsed.raw,
            "fairino",
            ARM,
            profile.name,
            True,
            JOINT_NAMES,
            "deg",
            tuple(profile.joint_ranges),
            tuple(profile.joint_speed_limits),
            motion=MOTION,
        )
    from servotool.devices.fairino.client import real_url_settings  # the whole URL, as a run opens it

    _, model, _ = real_url_settings(parsed)
    known = profiles.PROFILES.get(model)
    ranges = known.joint_ranges if known else profiles.CONSERVATIVE_RANGES
    limits = known.joint_speed_limits if known else profiles.CONSERVATIVE_LIMITS
    # what a joint can read: the widest of the models it may be (the narrowest would call a real read bad)
    every = [known] if known else list(profiles.PROFILES.values())
    widest = [
        (min(p.joint_ranges[j][0] for p in every), max(p.joint_ranges[j][1] for p in every))
        for j in range(len(ranges))
    ]
    return DeviceFacts(
        parsed.raw,
        "fairino",
        ARM,
        model if known else "",
        False,
        JOINT_NAMES,
        "deg",
        tuple(ranges),
        tuple(limits),
        motion=MOTION,
        readable=Readable(padded(widest, ARM_MARGIN_DEG), units="deg"),
    )


def lock_keys(parsed: DeviceURL) -> list[str]:
    """[] for an embedded simulator; else one key per command port of the controller's host."""
    if parsed.simulated:
        return []
    ports = [(name, parsed.params.get(name, default)) for name, default in COMMAND_PORTS]
    return host_keys("fairino", parsed.target, ports)


def _telemetry(arm: Any) -> Any:
    from servotool.devices.fairino.telemetry import telemetry

    return telemetry(arm)


def sim_params() -> tuple[SimParam, ...]:
    return tuple(SimParam(key, text) for key, text in sorted(profiles.PARAM_HELP.items()))


def _status(bits: int) -> str:
    from servotool.devices.fairino.codes import status_label

    return status_label(bits)


def _fault(codes: tuple[int, ...]) -> str:
    from servotool.devices.fairino.codes import fault_label

    return fault_label(codes)


FAMILY = Family(
    name="fairino",
    title="FAIRINO cobot",
    kind=ARM,
    schemes=("fairino",),
    examples=("fairino://192.168.58.2",),
    network=True,
    sim_names=lambda: tuple(profiles.PROFILES),
    open=_open,
    facts=facts,
    lock_keys=lock_keys,
    telemetry=_telemetry,
    campaigns=frozenset({"lag", "step"}),
    sim_params=sim_params,
    serve=SERVE,
    docs="fairino.md",
    default_sim="fr3",
    describe_status=_status,
    describe_fault=_fault,
)
