"""The parameters of the fake devices' URLs (`sim:fake-arm?...`, `sim:fake-bus?...`), read and checked.

Pure: no I/O, nothing heavy imported. Every value is checked before a device opens (DeviceURLError naming the
parameter and what it wants); nothing is clamped.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from servotool.devices.family import SimParam
from servotool.devices.url import DeviceURL, DeviceURLError, bounded, guessed, plain, url_flag

CLOCK_HELP = "host (default: real time) or sim (simulated time: the device runs in lock-step on a FakeClock)"

# the fake arm's joints: every joint has the same range and speed limit (deg, deg/s)
JOINT_RANGE = (-180.0, 180.0)
JOINT_SPEED_LIMIT = 180.0
MAX_JOINTS = 12

# the fake bus's servos: positions are whole units of one turn, as a 12-bit encoder gives them
POSITION_RANGE = (0, 4095)
START_POSITION = 2048
MAX_SERVOS = 32


@dataclass(frozen=True)
class ArmParams:
    """A fake arm as its URL sets it up (s, deg)."""

    joints: int = 6
    lag_s: float = 0.05
    state_s: float = 0.008
    silence_s: float = 0.1
    lose_after: int | None = None
    busy: bool = False
    reply: bool = False
    bad_q1: float | None = None
    bad_every: int = 100


def _any_float(text: str) -> float:
    return float(plain(text))  # anything a float can be, 1e300 and inf included: a frame no arm could send


@dataclass(frozen=True)
class BusParams:
    """A fake bus as its URL sets it up."""

    servos: int = 4
    silent: tuple[int, ...] = ()
    lose_after: int | None = None


def _flag(text: str) -> bool:
    return url_flag(text, blank=True)  # `busy=` (no value) switches it on


def _ids(text: str) -> tuple[int, ...]:
    out: list[int] = []
    for item in (i.strip() for i in text.split(",")):
        if not item:
            continue
        sid = int(plain(item))
        if sid in out:
            raise ValueError(f"servo {sid} given twice")
        out.append(sid)
    return tuple(out)


_Spec = dict[str, tuple[str, Callable[[str], Any], str]]

ARM_SPEC: _Spec = {
    "joints": (
        "joints",
        bounded(1, MAX_JOINTS, integer=True),
        f"number of joints, 1-{MAX_JOINTS} (default 6)",
    ),
    "lag_ms": (
        "lag_s",
        bounded(0, 1000, " ms", scale=1e-3),
        "command-to-state lag: a setpoint is reached this long after it was sent, ms (default 50)",
    ),
    "state_ms": ("state_s", bounded(1, 100, " ms", scale=1e-3), "state frame period, ms (default 8)"),
    "silence_ms": (
        "silence_s",
        bounded(1, 10000, " ms", scale=1e-3),
        "lost-link watchdog: no state frame for this long is a lost link, ms (default 100)",
    ),
    "lose_after": (
        "lose_after",
        bounded(0, 1e9, integer=True),
        "the link goes down after this many setpoints: the next call raises ConnectionLost",
    ),
    "busy": ("busy", _flag, "1: another owner holds the arm (busy_reason says so; a run is refused)"),
    "reply": ("reply", _flag, "1: every setpoint is answered at once (a Reply), as a request/answer link is"),
    "bad_q1": (
        "bad_q1",
        _any_float,
        "joint 1 reads this (1e300: no arm's value) in every bad_every-th state frame (default never)",
    ),
    "bad_every": (
        "bad_every",
        bounded(1, 1e9, integer=True),
        "how often bad_q1 is read, in state frames (default 100)",
    ),
}

BUS_SPEC: _Spec = {
    "servos": (
        "servos",
        bounded(1, MAX_SERVOS, integer=True),
        f"number of servos, ids 1-N, N at most {MAX_SERVOS} (default 4)",
    ),
    "silent": ("silent", _ids, "ids of servos that never answer, comma-separated"),
    "lose_after": (
        "lose_after",
        bounded(0, 1e9, integer=True),
        "the link goes down after this many commands: commands raise ConnectionLost, reads answer None",
    ),
}


def _read(parsed: DeviceURL, spec: _Spec) -> dict[str, Any]:
    params = dict(parsed.params)
    clock = params.pop("clock", "host")
    if clock not in ("host", "sim"):
        raise DeviceURLError(
            f"{parsed.raw}: clock={clock!r}: want clock=host (real time) or clock=sim (simulated time)"
        )
    unknown = sorted(set(params) - set(spec))
    if unknown:
        raise DeviceURLError(
            f"{parsed.raw}: unknown parameter(s) {guessed(unknown, [*spec, 'clock'])}; valid: "
            f"{', '.join(sorted([*spec, 'clock']))}"
        )
    out: dict[str, Any] = {}
    for key, text in params.items():
        name, convert, _ = spec[key]
        try:
            out[name] = convert(text)
        except ValueError as exc:
            raise DeviceURLError(f"{parsed.raw}: {key}={text!r}: {exc}") from None
    return out


def arm_params(parsed: DeviceURL) -> ArmParams:
    """The fake arm's settings from its URL; DeviceURLError for an unknown parameter or a bad value, or a
    watchdog that does not outlast two state periods (every healthy wait would read as a lost link)."""
    out = ArmParams(**_read(parsed, ARM_SPEC))
    if out.silence_s < 2 * out.state_s - 1e-12:
        raise DeviceURLError(
            f"{parsed.raw}: silence_ms {out.silence_s * 1e3:g} is shorter than two state "
            f"periods (state_ms {out.state_s * 1e3:g})"
        )
    return out


def bus_params(parsed: DeviceURL) -> BusParams:
    """The fake bus's settings from its URL; DeviceURLError for an unknown parameter, a bad value, or a
    silent servo that is not on the bus."""
    out = BusParams(**_read(parsed, BUS_SPEC))
    stray = [sid for sid in out.silent if not 1 <= sid <= out.servos]
    if stray:
        raise DeviceURLError(
            f"{parsed.raw}: silent: no servo {', '.join(map(str, stray))} on the bus (servos 1-{out.servos})"
        )
    return out


def help_of(spec: _Spec) -> tuple[SimParam, ...]:
    """Every parameter of a fake device's URL with its help, `clock` last."""
    keys = tuple(SimParam(key, text) for key, (_, _, text) in sorted(spec.items()))
    return (*keys, SimParam("clock", CLOCK_HELP))
