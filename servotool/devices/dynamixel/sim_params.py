"""Parameters of the DYNAMIXEL bus simulator, read from a `sim:` URL's query (or `servotool sim dynamixel`).

Times are seconds of simulated time after the simulator started. A fault spec is `ID[@T][:BITS]`, several
separated by commas: at time T (0 when omitted) the servo latches BITS of Hardware Error Status (default
0x20, Overload), which clears its torque until a reboot.

| key | meaning | default |
|---|---|---|
| seed | random seed: noise and dropped/corrupted replies; same seed, same behaviour | 0 |
| overload | `ID@T,...`: load rises over `overload_ramp_s` and the Overload bit latches at T | none |
| overload_ramp_s | length of an overload's lead-up of rising current, s | 2.5 |
| overload_ma | extra current an overload reaches just before it latches, mA | 1200 |
| latched | fault specs `ID[@T][:BITS]`: latched without lead-up (at start when no @T) | none |
| silent | `ID[@T[-T2]],...`: the servo never answers (from T on; answering again from T2) | none |
| freeze | `T[-T2]`: the line freezes at T: nothing answers, every packet is held, and at T2 the held packets
|        | are taken in order (their answers lost), as a stalled adapter delivers them | none |
| load_ID | extra load on one servo, mA (`load=` for all) | 0 |
| torque | 1/0: torque on at start | profile (on) |
| voltage | supply voltage, V | 5.0 |
| supply_ohm | supply resistance: the bus voltage sags by this times the total current | 0.25 |
| ambient_c | ambient (and start) temperature, deg C | 30 |
| noise | position read noise, pulses (uniform, seeded) | 1 |
| current_noise_ma | current read noise, mA | 2 |
| drop_rate | probability that a status packet is lost | 0 |
| crc_error_rate | probability that a status packet arrives with a bad CRC | 0 |
| reboot_ms | how long a rebooting servo stays silent, simulated ms (unconfirmed for the XL330) | 0 |
| mode | `ID:MODE,...`: Operating Mode (11): 0 current, 1 velocity, 3 position, 4 extended position, | 3 |
|      | 5 current-based position, 16 PWM (unknown modes refused) | |
| goal_velocity | `ID:V,...`: Goal Velocity (104) in RAM, 0.229 rev/min units, within +-445 | 0 |
| goal_pwm | `ID:P,...`: Goal PWM (100) in RAM, 0.113 % units, within +-885 (the PWM Limit) | 0 |
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field, fields
from typing import Any

from servotool.devices.dynamixel import control_table as ct
from servotool.devices.dynamixel.control_table import HardwareError
from servotool.devices.dynamixel.profiles import DxlProfile
from servotool.devices.registry import DeviceURLError
from servotool.devices.url import did_you_mean, url_flag


@dataclass(frozen=True)
class FaultSpec:
    """A scheduled hardware-error latch: servo `sid` latches `bits` at `at_s` (sim seconds)."""

    sid: int
    at_s: float = 0.0
    bits: int = int(HardwareError.OVERLOAD)
    until_s: float = math.inf  # a silence ends here (sim seconds); faults never end by themselves


@dataclass(frozen=True)
class DxlSimParams:
    seed: int = 0
    overloads: tuple[FaultSpec, ...] = ()
    overload_ramp_s: float = 2.5
    overload_ma: float = 1200.0
    latched: tuple[FaultSpec, ...] = ()
    silent: tuple[FaultSpec, ...] = ()
    freeze: tuple[float, float] | None = None  # (from, to) sim seconds; to inf: it stays frozen
    load_ma: Mapping[int, float] = field(default_factory=dict)
    torque: bool | None = None
    voltage: float = 5.0
    supply_ohm: float = 0.25
    ambient_c: float = 30.0
    noise: int = 1
    current_noise_ma: float = 2.0
    drop_rate: float = 0.0
    crc_error_rate: float = 0.0
    reboot_ms: float = 0.0
    modes: Mapping[int, int] = field(default_factory=dict)
    goal_velocity: Mapping[int, int] = field(default_factory=dict)
    goal_pwm: Mapping[int, int] = field(default_factory=dict)


def _fault(item: str, default_bits: int) -> FaultSpec:
    head, _, bits = item.partition(":")
    sid, _, at = head.partition("@")
    spec = FaultSpec(int(sid), float(at) if at else 0.0, int(bits, 0) if bits else default_bits)
    if not (math.isfinite(spec.at_s) and spec.at_s >= 0) or not 0 < spec.bits <= 0xFF:
        raise ValueError(f"{item!r}: want ID[@T][:BITS] with T a finite number >= 0 and BITS 1-255")
    return spec


def _span(text: str) -> tuple[float, float]:
    """`T[-T2]` -> (T, T2), T2 infinite when omitted; ValueError unless 0 <= T < T2 (finite T)."""
    head, sep, tail = text.strip().partition("-")
    start = float(head)
    end = float(tail) if sep else math.inf
    if not (math.isfinite(start) and start >= 0 and end > start) or math.isnan(end):
        raise ValueError(f"{text!r}: want T[-T2] with 0 <= T < T2 (seconds)")
    return start, end


def _silences(text: str) -> tuple[FaultSpec, ...]:
    """`ID[@T[-T2]],...`: each servo silent from T (0 when omitted), answering again from T2 if given."""
    out = []
    for item in (i.strip() for i in text.split(",")):
        if not item:
            continue
        sid, sep, when = item.partition("@")
        start, end = _span(when) if sep else (0.0, math.inf)
        out.append(FaultSpec(int(sid), start, until_s=end))
    return tuple(out)


def _faults(text: str, default_bits: int = int(HardwareError.OVERLOAD)) -> tuple[FaultSpec, ...]:
    return tuple(_fault(item.strip(), default_bits) for item in text.split(",") if item.strip())


_INT = re.compile(r"\s*[+-]?[0-9]+\s*")


def _per_servo(text: str, what: str, ok: Callable[[int], bool], want: str) -> dict[int, int]:
    """`ID:VALUE,...` -> {id: value}; ValueError for a malformed item, a repeated id or a value not `ok`."""
    out: dict[int, int] = {}
    for item in (i.strip() for i in text.split(",")):
        if not item:
            continue
        sid, sep, value = item.partition(":")
        if not sep or not _INT.fullmatch(sid) or not _INT.fullmatch(value) or sid.strip()[0] in "+-":
            raise ValueError(f"{item!r}: want ID:{what} (plain integers), several separated by commas")
        if int(sid) in out:
            raise ValueError(f"servo {int(sid)} given twice")
        if not ok(int(value)):
            raise ValueError(f"{item!r}: {what} {int(value)} is not {want}")
        out[int(sid)] = int(value)
    return out


def _modes(text: str) -> dict[int, int]:
    known = ", ".join(f"{m} {name}" for m, name in ct.OPERATING_MODES.items())
    return _per_servo(text, "MODE", ct.OPERATING_MODES.__contains__, f"an X-series operating mode ({known})")


def _goal_velocity(text: str) -> dict[int, int]:
    lim = ct.VELOCITY_LIMIT.initial or 0
    return _per_servo(text, "V", lambda v: abs(v) <= lim, f"within +-{lim} (the Velocity Limit)")


def _goal_pwm(text: str) -> dict[int, int]:
    lim = ct.PWM_LIMIT.initial or 0
    return _per_servo(text, "P", lambda v: abs(v) <= lim, f"within +-{lim} (the PWM Limit)")


def _nonneg(text: str) -> float:
    value = float(text)
    if not (math.isfinite(value) and value >= 0):
        raise ValueError(f"want a finite number >= 0, got {text!r}")
    return value


def _rate(text: str) -> float:
    value = float(text)
    if not 0 <= value <= 1:
        raise ValueError(f"want a probability 0-1, got {text!r}")
    return value


_KEYS: dict[str, tuple[str, Callable[[str], object]]] = {
    "seed": ("seed", int),
    "overload": ("overloads", _faults),
    "overload_ramp_s": ("overload_ramp_s", _nonneg),
    "overload_ma": ("overload_ma", _nonneg),
    "latched": ("latched", _faults),
    "silent": ("silent", _silences),
    "freeze": ("freeze", _span),
    "torque": ("torque", url_flag),
    "voltage": ("voltage", _nonneg),
    "supply_ohm": ("supply_ohm", _nonneg),
    "ambient_c": ("ambient_c", float),
    "noise": ("noise", int),
    "current_noise_ma": ("current_noise_ma", _nonneg),
    "drop_rate": ("drop_rate", _rate),
    "crc_error_rate": ("crc_error_rate", _rate),
    "reboot_ms": ("reboot_ms", _nonneg),
    "mode": ("modes", _modes),
    "goal_velocity": ("goal_velocity", _goal_velocity),
    "goal_pwm": ("goal_pwm", _goal_pwm),
}

KNOWN_KEYS = (*sorted(_KEYS), "load", "load_ID")

# one line per key, as the module's table says
PARAM_HELP: dict[str, str] = {
    "ambient_c": "ambient (and start) temperature, deg C (default 30)",
    "crc_error_rate": "probability that a status packet arrives with a bad CRC (0-1)",
    "current_noise_ma": "current read noise, mA (default 2)",
    "drop_rate": "probability that a status packet is lost (0-1)",
    "goal_pwm": "ID:P,...: Goal PWM (100) in RAM, 0.113 % units, within the PWM Limit",
    "goal_velocity": "ID:V,...: Goal Velocity (104) in RAM, 0.229 rev/min units, within +-445",
    "latched": "fault specs ID[@T][:BITS]: latched without lead-up (at start when no @T)",
    "mode": "ID:MODE,...: Operating Mode (11): 0 current, 1 velocity, 3 position (default), 4 extended, "
    "5 current-based position, 16 PWM",
    "noise": "position read noise, pulses (uniform, seeded; default 1)",
    "overload": "ID@T,...: load rises over overload_ramp_s and the Overload bit latches at T",
    "overload_ma": "extra current an overload reaches just before it latches, mA (default 1200)",
    "overload_ramp_s": "length of an overload's lead-up of rising current, s (default 2.5)",
    "reboot_ms": "how long a rebooting servo stays silent, simulated ms (default 0)",
    "seed": "random seed of noise and dropped or corrupted replies (default 0)",
    "silent": "ID[@T[-T2]],...: the servo never answers (from T on; answering again from T2)",
    "freeze": "T[-T2]: the whole line freezes at T (nothing answers, packets held) and delivers the held "
    "packets in order at T2",
    "supply_ohm": "supply resistance: the bus voltage sags by this times the total current (default 0.25)",
    "torque": "1/0: torque on at start (default: the profile's, on)",
    "voltage": "supply voltage, V (default 5.0)",
    "load": "extra load on every servo, mA (default 0)",
    "load_ID": "extra load on one servo, mA",
}


def _load(key: str, text: str, profile: DxlProfile, out: dict[int, float]) -> None:
    value = _nonneg(text)
    _, _, tail = key.partition("_")
    if not tail:
        out.update(dict.fromkeys(profile.ids, value))
    elif tail.isdigit() and int(tail) in profile.ids:
        out[int(tail)] = value
    else:
        raise ValueError(f"no servo {tail!r} in {profile.name}")


def _named_servos(parsed: Mapping[str, Any]) -> Iterator[tuple[str, int]]:
    """(parameter, servo id) for every servo a parsed parameter names."""
    for key in ("overloads", "latched", "silent"):
        for spec in parsed.get(key, ()):
            yield key, spec.sid
    for key, url_key in (("modes", "mode"), ("goal_velocity", "goal_velocity"), ("goal_pwm", "goal_pwm")):
        for sid in parsed.get(key, {}):
            yield url_key, sid


def _check_ids(parsed: Mapping[str, Any], profile: DxlProfile) -> None:
    for key, sid in _named_servos(parsed):
        if sid not in profile.ids:
            raise DeviceURLError(
                f"simulator parameter {key}: no servo {sid} in {profile.name} "
                f"(servos {', '.join(map(str, profile.ids))})"
            )


def parse_sim_params(profile: DxlProfile, params: Mapping[str, str]) -> DxlSimParams:
    """Resolve query parameters against a profile. DeviceURLError names a bad key or value."""
    parsed: dict[str, Any] = {}
    loads: dict[int, float] = {}
    for key, text in params.items():
        is_load = key == "load" or key.startswith("load_")
        if not is_load and key not in _KEYS:
            raise DeviceURLError(
                f"unknown simulator parameter {key!r}{did_you_mean(key, KNOWN_KEYS)} "
                f"(known: {', '.join(KNOWN_KEYS)})"
            )
        try:
            if is_load:
                _load(key, text, profile, loads)
            else:
                name, conv = _KEYS[key]
                parsed[name] = conv(text)
        except ValueError as exc:
            raise DeviceURLError(f"simulator parameter {key}={text!r}: {exc}") from None
    _check_ids(parsed, profile)
    return DxlSimParams(load_ma=loads, **parsed)


def _described(name: str, value: tuple[Any, ...]) -> list[Any]:
    if name == "freeze":  # JSON has no infinity: a line that stays frozen has no end
        return [value[0], None if math.isinf(value[1]) else value[1]]
    if name == "silent":
        return [
            {"id": s.sid, "at_s": s.at_s, "until_s": None if math.isinf(s.until_s) else s.until_s}
            for s in value
        ]
    return [{"id": s.sid, "at_s": s.at_s, "bits": s.bits} for s in value]


def describe(params: DxlSimParams) -> dict[str, Any]:
    """A JSON-friendly view of resolved parameters (for `servotool sim dynamixel --json`)."""
    out: dict[str, Any] = {}
    for f in fields(params):
        value = getattr(params, f.name)
        if isinstance(value, tuple):
            value = _described(f.name, value)
        elif isinstance(value, Mapping):
            value = {str(k): v for k, v in value.items()}
        out[f.name] = value
    return out
