"""The devices the conformance tests run on, and what the tests know of each family beyond the registry.

Every `sim:` name of every registered family is a case (the fake devices' too): a family is tested by
registering it. Making a simulator lose its link or report another owner is the one thing the registry does
not say; the tables below say it per family, and a family missing from them has those tests skipped with
the reason (every other test still runs on it).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from servotool.clock import Clock, MonotonicClock
from servotool.devices.arm import clock_of
from servotool.devices.bus import bus_clock
from servotool.devices.family import ARM, BUS, DeviceFacts
from servotool.devices.registry import FAMILIES, DeviceURLError, open_arm, open_bus, sim_names

SIM_CLOCK = "clock=sim"


def sim_urls(kind: str) -> list[str]:
    return [f"sim:{name}" for fam in FAMILIES if fam.kind == kind for name in sim_names(fam)]


ARM_URLS = sim_urls(ARM)
BUS_URLS = sim_urls(BUS)
ALL_URLS = ARM_URLS + BUS_URLS


def family_name(url: str) -> str:
    from servotool.devices.registry import family_of, parse_url

    return family_of(parse_url(url)).name


def with_params(url: str, *params: str) -> str:
    """`url` with each non-empty `key=value` of params added to its query."""
    extra = "&".join(p for p in params if p)
    if not extra:
        return url
    return f"{url}{'&' if '?' in url else '?'}{extra}"


@contextlib.contextmanager
def opened(url: str, kind: str, *params: str, lockstep: bool = True) -> Iterator[tuple[Any, Clock]]:
    """The device of `url` (with params) and the clock a run on it keeps, closed at the end. In simulated
    time (`clock=sim`) where the family's simulator has it, else on the host's clock."""
    opener = open_arm if kind == ARM else open_bus
    device = None
    if lockstep:
        with contextlib.suppress(DeviceURLError):
            device = opener(with_params(url, *params, SIM_CLOCK))
    if device is None:
        device = opener(with_params(url, *params))
    try:
        clock = (clock_of(device) or MonotonicClock()) if kind == ARM else bus_clock(device)
        yield device, clock
    finally:
        device.close()


# -- lost links ------------------------------------------------------------------------------------------

LOSS_TICK = 30  # the stream tick from which an arm's link is lost


@dataclass(frozen=True)
class ArmLoss:
    """How an arm's simulator loses its link mid-stream: URL parameters, or a call on the open arm made
    once at tick LOSS_TICK (after the setpoint of that tick went out)."""

    params: str = ""
    at_tick: Callable[[Any], None] | None = None


def _silent_stream(arm: Any) -> None:
    arm.sim.hold_stream(True)  # the state stream goes quiet: the client's watchdog calls the link lost


def _kill_simulator(arm: Any) -> None:
    arm.sim_process.kill()  # the robot is gone: no state comes, libfranka's receive times out


ARM_LOSSES: dict[str, ArmLoss] = {
    "fairino": ArmLoss(at_tick=_silent_stream),
    "franka": ArmLoss(at_tick=_kill_simulator),
    "fake-arm": ArmLoss(params=f"lose_after={LOSS_TICK + 1}"),
}


@dataclass(frozen=True)
class BusLoss:
    """How a bus's simulator loses its servos: URL parameters (from the URL's facts), then `trigger(bus,
    clock)`, after which none of them answers."""

    params: Callable[[DeviceFacts], str]
    trigger: Callable[[Any, Clock], None]


LOSS_AT_S = 0.2  # simulated seconds after opening


def _wait_past_loss(bus: Any, clock: Clock) -> None:
    clock.sleep(LOSS_AT_S + 0.1)


def _one_command(bus: Any, clock: Clock) -> None:
    bus.hold()


def _each_silent(facts: DeviceFacts) -> str:
    ids = (*facts.joint_ids, *facts.optional_ids)
    return "latency_ms=1&silent=" + ",".join(f"{sid}@{LOSS_AT_S:g}" for sid in ids)


BUS_LOSSES: dict[str, BusLoss] = {
    # every servo loses power; short read timeouts keep the reads of silent servos cheap
    "hiwonder": BusLoss(lambda facts: f"silent_after={LOSS_AT_S:g}&timeout_ms=20&retries=0", _wait_past_loss),
    "dynamixel": BusLoss(_each_silent, _wait_past_loss),
    "fake-bus": BusLoss(lambda facts: "lose_after=1", _one_command),
}

# -- a servo lost mid-move, and one that comes back --------------------------------------------------------

SERVO_LOSS_AT_S = 0.2  # simulated seconds after opening: early in a move of about a second
SERVO_BACK_AT_S = 0.5  # when a servo lost at SERVO_LOSS_AT_S answers again


@dataclass(frozen=True)
class ServoLoss:
    """URL parameters that silence one servo (`sid`) from SERVO_LOSS_AT_S on (`back`: until SERVO_BACK_AT_S,
    then it answers again)."""

    params: Callable[[int, bool], str]


def _dxl_silence(sid: int, back: bool) -> str:
    until = f"-{SERVO_BACK_AT_S:g}" if back else ""
    return f"latency_ms=1&silent={sid}@{SERVO_LOSS_AT_S:g}{until}"


def _board_silence(sid: int, back: bool) -> str:
    until = f"&silent_until_{sid}={SERVO_BACK_AT_S:g}" if back else ""
    return f"silent_after_{sid}={SERVO_LOSS_AT_S:g}{until}&timeout_ms=20&retries=0"


SERVO_LOSSES: dict[str, ServoLoss] = {
    "dynamixel": ServoLoss(_dxl_silence),
    "hiwonder": ServoLoss(_board_silence),
}

# -- another owner ---------------------------------------------------------------------------------------

ARM_BUSY: dict[str, str] = {"fake-arm": "busy=1"}


def skip_unless(table: dict[str, Any], url: str, what: str) -> Any:
    """The family's entry in `table`; skips the test when it has none."""
    name = family_name(url)
    if name not in table:
        pytest.skip(f"the {name} family's simulator has no known way to {what}")
    return table[name]
