"""Parameters of the bus-servo board simulator, and how they are read from a `sim:` URL's query.

Every servo field can be set for all servos (`noise=1`) or for one (`noise_3=2`, the id after the last
underscore); a per-servo value wins over an all-servo one whatever their order. Board-wide keys:

| key | meaning | default |
|---|---|---|
| seed | random seed (read noise, CRC error draws) | 0 |
| pose | named pose of the profile the arm starts in | the profile's start pose |
| shape | how a servo interpolates a move: linear or smooth | linear |
| crc_error_rate | probability that a reply's CRC is corrupted | 0 |
| crc_error_every | corrupt every Nth reply (0 = never; at most 1e6) | 0 |
| garbage_rate | probability that 1-16 random bytes (line noise) go out before a reply | 0 |
| reply_ms | delay before each reply, wall-clock ms (0-10000) | 0 |

Per-servo keys (`key` or `key_ID`):

| key | meaning | default |
|---|---|---|
| limit | stored (EEPROM) limit, `lo-hi`: silently caps motion | profile table |
| start | start pulse (-32768..32767, what a read can carry) | from the start pose |
| obstacle | pulse(s) it cannot pass (comma-separated; empty: none): it stalls there | profile: 880 on 1 |
| silent | 1: the servo never answers and does not move | 0 |
| silent_after | sim seconds (>= 0) after which the servo goes silent (it loses power) | never |
| silent_until | sim seconds after which a servo silent since silent_after answers again (limp) | never |
| noise | read-back noise amplitude, whole pulses 0-1000 (uniform, seeded) | 0 |
| lag_ms | time constant of the servo following its own interpolated command (0-1e5) | 30 |
| max_speed | the servo's top speed, pulses/s (0-1e6; 0: it cannot move) | 1000 |
| sag | drift with torque off, pulses/s, signed (gravity) | profile (joints 2-4) |
| sag_stop | pulse where the sagging joint comes to rest | profile |
| voltage | supply reading, mV (0-65535) | profile (12.5-12.7 V) |
| temperature | temperature reading, deg C (0-255) | profile (30-42 C) |
| ignore_torque_off | 1: the servo keeps torque on when told to switch it off | 0 |
| torque | 0: the servo starts with torque off (limp) | 1 |
| bad_read | a position answered every `bad_read_every`-th read, checksum valid (an impossible value) | none |
| bad_read_every | how often `bad_read` is answered, in position reads (1-1e6) | 10 |
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, fields, replace
from typing import Any

from servotool.devices.hiwonder.profiles import ArmProfile
from servotool.devices.registry import DeviceURLError
from servotool.devices.url import bounded, did_you_mean, url_flag


@dataclass(frozen=True)
class ServoParams:
    """One simulated servo. Pulses, seconds, mV and deg C."""

    lo: int
    hi: int
    start: float
    voltage_mv: int = 12500
    temperature_c: int = 35
    obstacles: tuple[int, ...] = ()
    silent: bool = False
    silent_after_s: float | None = None
    silent_until_s: float | None = None
    noise: int = 0
    lag_ms: float = 30.0
    max_speed: float = 1000.0
    sag_speed: float = 0.0
    sag_stop: float | None = None
    ignore_torque_off: bool = False
    torque: bool = True
    bad_read: int | None = None
    bad_read_every: int = 10


@dataclass(frozen=True)
class SimParams:
    """The whole board: its servos plus board-wide settings."""

    servos: Mapping[int, ServoParams]
    seed: int = 0
    shape: str = "linear"
    crc_error_rate: float = 0.0
    crc_error_every: int = 0
    garbage_rate: float = 0.0
    reply_delay_ms: float = 0.0
    pose: str = ""


def _switch(text: str) -> bool:
    return url_flag(text, blank=True)  # an empty value (`silent_10=`) switches the behaviour on


def _limit(text: str) -> tuple[int, int]:
    lo, sep, hi = text.partition("-")
    if not sep:
        raise ValueError(f"want lo-hi, got {text!r}")
    a, b = int(lo), int(hi)
    if not 0 <= a < b <= 1000:
        raise ValueError(f"want 0 <= lo < hi <= 1000, got {text!r}")
    return a, b


# the wire's reply fields: a position is an int16, a voltage (mV) a u16, a temperature a u8. A value beyond
# them crashed the simulator's thread at the first read (every servo then silent): refused before it starts
_POSITION = bounded(-32768, 32767)
_OBSTACLE = bounded(-32768, 32767, integer=True)
_POSITION_INT = _OBSTACLE


def _pulses(text: str) -> tuple[int, ...]:
    return tuple(_OBSTACLE(v.strip()) for v in text.replace(";", ",").split(",") if v.strip())


def _finite(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):  # a NaN position crashes the simulator's thread at the first read
        raise ValueError(f"not a finite number: {text!r}")
    return value


def _opt_float(text: str) -> float | None:
    return None if text.strip().lower() in ("", "none", "never") else _finite(text)


def _opt_after(text: str) -> float | None:
    return None if text.strip().lower() in ("", "none", "never") else bounded(0, 1e9)(text)


# URL key -> (ServoParams field(s), converter)
_SERVO_KEYS: dict[str, tuple[str, Callable[[str], Any]]] = {
    "limit": ("lo,hi", _limit),
    "start": ("start", _POSITION),
    "obstacle": ("obstacles", _pulses),
    "silent": ("silent", _switch),
    "silent_after": ("silent_after_s", _opt_after),
    "silent_until": ("silent_until_s", _opt_after),
    "noise": ("noise", bounded(0, 1000, integer=True)),
    "lag_ms": ("lag_ms", bounded(0, 1e5)),
    "max_speed": ("max_speed", bounded(0, 1e6)),
    "sag": ("sag_speed", _finite),
    "sag_stop": ("sag_stop", _opt_float),
    "voltage": ("voltage_mv", bounded(0, 65535, integer=True)),
    "temperature": ("temperature_c", bounded(0, 255, integer=True)),
    "ignore_torque_off": ("ignore_torque_off", _switch),
    "torque": ("torque", _switch),
    "bad_read": ("bad_read", _POSITION_INT),
    "bad_read_every": ("bad_read_every", bounded(1, 1e6, integer=True)),
}

_BOARD_KEYS: dict[str, tuple[str, Callable[[str], Any]]] = {
    "seed": ("seed", int),
    "pose": ("pose", str),
    "shape": ("shape", str),
    "crc_error_rate": ("crc_error_rate", _finite),
    "crc_error_every": ("crc_error_every", bounded(0, 1e6, integer=True)),
    "garbage_rate": ("garbage_rate", _finite),
    "reply_ms": ("reply_delay_ms", bounded(0, 1e4)),
}

KNOWN_KEYS = tuple(sorted(_BOARD_KEYS)) + tuple(sorted(_SERVO_KEYS))

# one line per key, as the module's tables say (per-servo keys also take `key_ID`)
PARAM_HELP: dict[str, str] = {
    "crc_error_every": "corrupt every Nth reply's CRC (0 = never; at most 1e6)",
    "crc_error_rate": "probability that a reply's CRC is corrupted (0-1)",
    "garbage_rate": "probability that 1-16 random bytes (line noise) go out before a reply (0-1)",
    "pose": "named pose of the profile the arm starts in (default: the profile's start pose)",
    "reply_ms": "delay before each reply, wall-clock ms (0-10000)",
    "seed": "random seed of read noise and CRC error draws (default 0)",
    "shape": "how a servo interpolates a move: linear (default) or smooth",
    "ignore_torque_off": "per servo (key_ID): 1: it keeps torque on when told to switch it off",
    "lag_ms": "per servo: time constant of following its own interpolated command, ms (0-1e5; default 30)",
    "limit": "per servo: stored (EEPROM) limit lo-hi, which silently caps motion (default: the profile's)",
    "max_speed": "per servo: top speed, pulses/s (0-1e6; 0: it cannot move; default 1000)",
    "noise": "per servo: read-back noise amplitude, whole pulses 0-1000 (uniform, seeded; default 0)",
    "obstacle": "per servo: pulse(s) the joint cannot pass, comma-separated; it stalls there under load "
    "(default: the profile's, rosorin-arm 880 on servo 1; empty: none)",
    "sag": "per servo: drift with torque off, pulses/s, signed (default: the profile's)",
    "sag_stop": "per servo: pulse where a sagging joint comes to rest (default: the profile's)",
    "silent": "per servo: 1: it never answers and does not move",
    "silent_after": "per servo: sim seconds (>= 0) after which it goes silent (it loses power)",
    "silent_until": "per servo: sim seconds after which one silent since silent_after answers again "
    "(power back, torque off)",
    "start": "per servo: start pulse, -32768..32767 (default: from the start pose)",
    "temperature": "per servo: temperature reading, deg C (0-255; default: the profile's)",
    "torque": "per servo: 0: it starts with torque off (limp; default 1)",
    "bad_read": "per servo: a position (-32768..32767) answered every bad_read_every-th read, checksum valid",
    "bad_read_every": "per servo: how often bad_read is answered, in position reads (1-1e6; default 10)",
    "voltage": "per servo: supply reading, mV (0-65535; default: the profile's)",
}


def _split(key: str) -> tuple[str, int | None]:
    base, sep, tail = key.rpartition("_")
    if sep and tail.isdigit() and base in _SERVO_KEYS:
        return base, int(tail)
    return key, None


def _servo_update(key: str, text: str, where: str) -> dict:
    names, conv = _SERVO_KEYS[key]
    try:
        value = conv(text)
    except ValueError as exc:
        raise DeviceURLError(f"simulator parameter {where}={text!r}: {exc}") from None
    if names == "lo,hi":
        return {"lo": value[0], "hi": value[1]}
    return {names: value}


def default_servos(profile: ArmProfile, pose: str) -> dict[int, ServoParams]:
    start = profile.poses[pose]
    return {
        sid: ServoParams(
            lo=profile.stored_limits[sid][0],
            hi=profile.stored_limits[sid][1],
            start=float(start[sid]),
            voltage_mv=profile.voltage_mv.get(sid, 12500),
            temperature_c=profile.temperature_c.get(sid, 35),
            sag_speed=profile.sag_speed.get(sid, 0.0),
            sag_stop=profile.sag_stop.get(sid),
            obstacles=tuple(profile.obstacles.get(sid, ())),
        )
        for sid in profile.ids
    }


def parse_sim_params(profile: ArmProfile, params: Mapping[str, str]) -> SimParams:
    """Resolve URL query parameters against a profile. Raises DeviceURLError naming a bad key or value."""
    board: dict = {}
    all_servos: dict = {}
    per_servo: dict[int, dict] = {}
    for key, text in params.items():
        base, sid = _split(key)
        if sid is not None:
            if sid not in profile.ids:
                raise DeviceURLError(
                    f"simulator parameter {key}: no servo {sid} in {profile.name} "
                    f"(servos {', '.join(map(str, profile.ids))})"
                )
            per_servo.setdefault(sid, {}).update(_servo_update(base, text, key))
        elif key in _SERVO_KEYS:
            all_servos.update(_servo_update(key, text, key))
        elif key in _BOARD_KEYS:
            name, conv = _BOARD_KEYS[key]
            try:
                board[name] = conv(text)
            except ValueError as exc:
                raise DeviceURLError(f"simulator parameter {key}={text!r}: {exc}") from None
        else:
            raise DeviceURLError(
                f"unknown simulator parameter {key!r}{did_you_mean(key, KNOWN_KEYS)} "
                f"(known: {', '.join(KNOWN_KEYS)}, per servo as key_ID)"
            )
    pose = board.get("pose") or profile.start_pose
    if pose not in profile.poses:
        raise DeviceURLError(f"simulator pose {pose!r} unknown (poses: {', '.join(profile.poses)})")
    board["pose"] = pose
    for rate in ("crc_error_rate", "garbage_rate"):
        if not 0.0 <= board.get(rate, 0.0) <= 1.0:
            raise DeviceURLError(f"simulator parameter {rate}={board[rate]}: want a probability 0-1")
    if board.get("shape", "linear") not in ("linear", "smooth"):
        raise DeviceURLError(f"simulator shape {board['shape']!r}: want linear or smooth")
    servos = default_servos(profile, pose)
    for sid, defaults in servos.items():
        sp = replace(defaults, **{**all_servos, **per_servo.get(sid, {})})
        if not 0 <= sp.lo < sp.hi <= 1000:
            raise DeviceURLError(
                f"simulator servo {sid}: stored limit {sp.lo}-{sp.hi} is not 0 <= lo < hi <= 1000"
            )
        servos[sid] = sp
    return SimParams(servos=servos, **board)


def describe(params: SimParams) -> dict:
    """A JSON-friendly view of resolved parameters (for `servotool sim hiwonder --json`)."""
    board = {f.name: getattr(params, f.name) for f in fields(params) if f.name != "servos"}
    board["servos"] = {
        sid: {f.name: getattr(p, f.name) for f in fields(p)} for sid, p in params.servos.items()
    }
    return board
