"""FAIRINO model profiles: the measured behaviour of each controller, with every parameter overridable.

Measured figures (sustained-motion lag L at cmdT = 10 ms, joint speed limits) come from the lag and runaway
campaign: the v3.9.6 SimMachine 39 ms, a real FR3 78 ms, a real FR20 111 ms. Parameters marked "assumption"
in `PARAM_HELP` were not measured; they are chosen to reproduce what was observed and can be changed per run.

Joint ranges (deg, (lo, hi) per joint), used when a controller does not report its soft limits:

| joint | FR3        | FR20       | sources                                                            |
|-------|------------|------------|--------------------------------------------------------------------|
| J1    | -175..175  | -175..175  | vendor spec; vendor URDF (fairino3_v6, fairino20_v6) +-3.0543 rad  |
| J2    | -265..85   | -265..85   | vendor spec; URDF -4.6251..1.4835 rad                              |
| J3    | -150..150  | -160..160  | vendor spec (FR3 +-150, FR20 +-160); URDF hard +-2.8274 rad (162), |
|       |            |            | FR20 URDF soft +-2.7925 rad (160)                                  |
| J4    | -265..85   | -265..85   | vendor spec; URDF -4.6251..1.4835 rad                              |
| J5    | -175..175  | -175..175  | vendor spec; URDF +-3.0543 rad                                     |
| J6    | -175..175  | -175..175  | vendor spec; URDF +-3.0543 rad                                     |

Where the sources differ (FR3 J3: +-150 in the vendor's soft-limit figures, +-160 quoted elsewhere, +-162 in
the URDF's hard limit) the narrowest is kept: a range that is too narrow refuses a goal the arm could reach,
one that is too wide lets a goal reach the controller's own stop. The SimMachine models an FR3.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, fields, replace
from typing import Any

from servotool.devices.url import guessed, plain, url_flag
from servotool.errors import SettingsError

N_JOINTS = 6
DEFAULT_POSE = (0.0, -90.0, 90.0, -90.0, -90.0, 0.0)

Ranges = tuple[tuple[float, float], ...]
# the shapes of a refusal of a state configuration naming a field the controller does not have
CNDE_REFUSALS = ("types", "named", "bare")

FR3_RANGES: Ranges = (
    (-175.0, 175.0),
    (-265.0, 85.0),
    (-150.0, 150.0),
    (-265.0, 85.0),
    (-175.0, 175.0),
    (-175.0, 175.0),
)
FR20_RANGES: Ranges = (
    (-175.0, 175.0),
    (-265.0, 85.0),
    (-160.0, 160.0),
    (-265.0, 85.0),
    (-175.0, 175.0),
    (-175.0, 175.0),
)
# a controller of unknown model: the intersection of the known ones
CONSERVATIVE_RANGES: Ranges = tuple(
    (max(a[0], b[0]), min(a[1], b[1])) for a, b in zip(FR3_RANGES, FR20_RANGES, strict=True)
)
# a controller of unknown model gets the lowest known speed limits, so bounds derived from them stay safe
CONSERVATIVE_LIMITS = (120.0, 120.0, 120.0, 180.0, 180.0, 180.0)


class ProfileError(SettingsError):
    """An unknown FAIRINO profile or simulator parameter, or an unreadable value; the message lists the
    valid ones (exit 2, before anything is started)."""


@dataclass(frozen=True)
class SimProfile:
    """Everything the simulated controller does, in degrees, seconds-based milliseconds and deg/s."""

    name: str
    lag_ms: float
    joint_speed_limits: tuple[float, ...]
    runaway: bool = True
    speed_check: bool = True
    tau_ms: float = 0.0
    noise_deg: float = 0.002
    state_ms: int = 8
    enable_ms: float = 1400.0
    runaway_min_deg: float = 1.0
    runaway_max_deg: float = 1.5
    travel_min: float = 14.0
    travel_max: float = 35.0
    reject_ms: float = 900.0
    refuse_step_deg: float = 20.0
    refuse_speed_factor: float = 10.0
    seed: int = 0
    initial_pose: tuple[float, ...] = DEFAULT_POSE
    udp_reply: bool = True
    physics_ms: float = 1.0
    joint_ranges: Ranges = FR3_RANGES
    cnde_clients: int = 0
    cnde_refusal: str = "types"  # how a configuration naming an unknown field is refused (CNDE_REFUSALS)
    sim_fields: bool = True  # stream the simulator-only fields (fields.SIM_FIELDS); False: NOT_FOUND
    rpc_close_after: int = 0  # close the XML-RPC port once this many ServoJ setpoints were taken (0: never)

    def __post_init__(self) -> None:
        problems = []
        if len(self.joint_speed_limits) != N_JOINTS or min(self.joint_speed_limits) <= 0:
            problems.append(f"joint_speed_limits needs {N_JOINTS} positive values")
        if len(self.initial_pose) != N_JOINTS:
            problems.append(f"initial_pose needs {N_JOINTS} values")
        pairs_ok = all(len(r) == 2 and -math.inf < r[0] < r[1] < math.inf for r in self.joint_ranges)
        if len(self.joint_ranges) != N_JOINTS or not pairs_ok:
            problems.append(f"joint_ranges needs {N_JOINTS} finite (lo, hi) pairs with lo < hi")
        if min(self.lag_ms, self.tau_ms, self.noise_deg, self.enable_ms, self.reject_ms) < 0:
            problems.append("lag_ms, tau_ms, noise_deg, enable_ms and reject_ms must not be negative")
        if not 1 <= self.state_ms <= 1000:
            problems.append("state_ms must be within 1..1000")
        if not 0 < self.runaway_min_deg <= self.runaway_max_deg:
            problems.append("need 0 < runaway_min_deg <= runaway_max_deg")
        if not 0 < self.travel_min <= self.travel_max:
            problems.append("need 0 < travel_min <= travel_max")
        if self.refuse_step_deg <= 0 or self.refuse_speed_factor <= 0:
            problems.append("refuse_step_deg and refuse_speed_factor must be positive")
        if self.cnde_clients < 0:
            problems.append("cnde_clients must be 0 (any number) or more")
        if self.cnde_refusal not in CNDE_REFUSALS:
            problems.append(f"cnde_refusal must be one of {', '.join(CNDE_REFUSALS)}")
        if self.rpc_close_after < 0:
            problems.append("rpc_close_after must be 0 (never) or more")
        if not 0.1 <= self.physics_ms <= 10:
            problems.append("physics_ms must be within 0.1..10")
        values = [self.lag_ms, self.tau_ms, self.noise_deg, *self.joint_speed_limits, *self.initial_pose]
        if not all(math.isfinite(v) for v in values):
            problems.append("values must be finite")
        if problems:
            raise ProfileError(f"profile {self.name}: " + "; ".join(problems))


PROFILES: dict[str, SimProfile] = {
    # the vendor's own SimMachine: executes any jump after a fixed delay, never runs away, no speed check seen
    "simmachine": SimProfile("simmachine", 39.0, (180.0,) * 6, runaway=False, speed_check=False),
    "fr3": SimProfile("fr3", 78.0, (180.0,) * 6),
    "fr20": SimProfile("fr20", 111.0, (120.0, 120.0, 120.0, 180.0, 180.0, 180.0), joint_ranges=FR20_RANGES),
}

PARAM_HELP: dict[str, str] = {
    "lag_ms": "commanded-to-measured delay L (ms)",
    "tau_ms": "first-order time constant after the delay (ms, 0 = none)",
    "noise_deg": "encoder noise, Gaussian standard deviation (deg)",
    "state_ms": "state period servotool asks for, and the simulator's answer to a request for period 0 (ms)",
    "enable_ms": "window after RobotEnable(1) in which ServoJ answers 101 (ms)",
    "joint_speed_limits": "joint maxima, deg/s: one value for all joints or six comma-separated",
    "runaway": "whether velocity jumps can run away (true/false)",
    "speed_check": "whether giant steps are refused (true/false)",
    "runaway_min_deg": "start of the coin-flip band: per-tick velocity change (deg per command)",
    "runaway_max_deg": "end of the band: at or above it the runaway always fires (deg per command)",
    "travel_min": "runaway travel, lowest multiple of the step",
    "travel_max": "runaway travel, highest multiple of the step",
    "reject_ms": "window after a runaway in which every command answers 14 (ms)",
    "refuse_step_deg": "a step larger than this is refused outright (deg; assumption)",
    "refuse_speed_factor": "a step implying more than this times the joint maximum is refused (assumption)",
    "seed": "random seed (noise, coin flips, travel)",
    "initial_pose": "six joint values (deg), comma-separated",
    "udp_reply": "answer each UDP command with a UDP frame holding its errcode (true/false; unconfirmed)",
    "physics_ms": "physics tick (ms)",
    "cnde_clients": "state-stream clients served at once; more are cut off (0 = any number; a real one: 1?)",
    "joint_ranges": "joint soft limits the controller reports, deg: twelve comma-separated values lo1,hi1,..",
    "cnde_refusal": "how a state configuration naming an unknown field is refused: types (one type per "
    "field, NOT_FOUND where unknown), named (NOT_FOUND and the unknown names) or bare "
    "(NOT_FOUND)",
    "sim_fields": "stream the simulator-only state fields (true/false; false: NOT_FOUND, as a real "
    "controller)",
    "rpc_close_after": "close the XML-RPC port once this many ServoJ setpoints were taken (0 = never)",
}


def valid_params() -> list[str]:
    return sorted(PARAM_HELP)


def get_profile(name: str) -> SimProfile:
    """The named profile; raises ProfileError listing the known ones."""
    try:
        return PROFILES[name]
    except KeyError:
        raise ProfileError(f"unknown FAIRINO profile {name!r} (known: {', '.join(PROFILES)})") from None


def _parse_floats(text: str) -> tuple[float, ...]:
    return tuple(float(plain(x)) for x in text.replace(";", ",").split(",") if x.strip())


def _pairs(raw: Any) -> Ranges:
    flat: list[float] = []
    for x in _parse_floats(raw) if isinstance(raw, str) else raw:
        flat.extend((float(x[0]), float(x[1])) if isinstance(x, (tuple, list)) else (float(x),))
    if len(flat) != 2 * N_JOINTS:
        raise ValueError(f"needs {2 * N_JOINTS} values (lo, hi per joint), got {len(flat)}")
    return tuple((flat[i], flat[i + 1]) for i in range(0, len(flat), 2))


def _convert(name: str, raw: Any, current: Any) -> Any:
    if name == "joint_ranges":
        return _pairs(raw)
    if isinstance(current, bool):
        return raw if isinstance(raw, bool) else url_flag(str(raw))
    if isinstance(current, tuple):
        if isinstance(raw, str):
            vals = _parse_floats(raw)
        elif isinstance(raw, (int, float)):
            vals = (float(raw),)
        else:
            vals = tuple(float(x) for x in raw)
        if name == "joint_speed_limits" and len(vals) == 1:
            vals = vals * N_JOINTS
        return vals
    if isinstance(current, str):
        return str(raw)
    if isinstance(raw, str):
        plain(raw)  # as written in a URL: plain ASCII decimal, as on the command line
    if isinstance(current, int):
        value = float(raw)
        if not value.is_integer():
            raise ValueError("must be a whole number")
        return int(value)
    return float(raw)


def with_overrides(profile: SimProfile | str, overrides: Mapping[str, Any] | None = None) -> SimProfile:
    """A copy of `profile` with parameters replaced; values may be strings (as in URLs) or typed values.

    Raises ProfileError for an unknown name (listing the valid ones) or an unreadable / out-of-range value.
    """
    base = get_profile(profile) if isinstance(profile, str) else profile
    if not overrides:
        return base
    known = {f.name for f in fields(SimProfile)} - {"name"}
    unknown = sorted(set(overrides) - known)
    if unknown:
        raise ProfileError(
            f"unknown simulator parameter(s) {guessed(unknown, valid_params())}; "
            f"valid: {', '.join(valid_params())}"
        )
    changes: dict[str, Any] = {}
    for key, raw in overrides.items():
        try:
            changes[key] = _convert(key, raw, getattr(base, key))
        except (TypeError, ValueError) as exc:
            raise ProfileError(f"simulator parameter {key}={raw!r}: {exc}") from None
    return replace(base, **changes)
