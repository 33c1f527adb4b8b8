"""`servotool sim dynamixel`: run the DYNAMIXEL bus simulator on a pty until Ctrl-C, for any program (the
vendor's dynamixel-sdk included) to open."""

from __future__ import annotations

import signal
import threading
import time
from enum import Enum
from typing import Annotated

import typer

from servotool.cli.common import console, err_console, fail, print_json
from servotool.devices.dynamixel.control_table import describe_hardware_error
from servotool.devices.dynamixel.profiles import get_profile
from servotool.devices.dynamixel.sim import describe_sim, start_sim
from servotool.devices.dynamixel.sim_params import KNOWN_KEYS, describe
from servotool.devices.registry import DeviceURLError

PROFILE_HELP = "Robot profile (its servo ids and models)."
PARAM_HELP = ("A simulator parameter as key=value, repeatable (overload=12@5.0, latched=30, silent=22, "
              f"load_13=300). Keys: {', '.join(KNOWN_KEYS)}.")



class DynamixelProfile(str, Enum):
    """--profile: the names of the robot profiles (devices.dynamixel.profiles.PROFILES; a test keeps them
    equal)."""

    MICRODUCK = "microduck"


def _params(items: list[str] | None) -> dict[str, str]:
    out: dict[str, str] = {}
    for item in items or []:
        for part in item.split("&"):
            key, sep, value = part.partition("=")
            if not sep or not key.strip():
                fail(f"--param {part!r}: want key=value (e.g. overload=12@5.0; "
                     f"keys: {', '.join(KNOWN_KEYS)})")
            out[key.strip()] = value.strip()
    return out


def sim_dynamixel(
    params: Annotated[list[str] | None, typer.Argument(help="Parameters as key=value, the same as --param.",
                                                       show_default=False)] = None,
    profile: Annotated[DynamixelProfile, typer.Option(
        "--profile", case_sensitive=False, help=PROFILE_HELP,
    )] = DynamixelProfile.MICRODUCK,
    param: Annotated[list[str] | None, typer.Option("--param", help=PARAM_HELP)] = None,
    seed: int | None = typer.Option(None, "--seed", help="Random seed: same seed, same behaviour."),
    json_out: bool = typer.Option(False, "--json", help="Print the pty path and parameters as JSON."),
    duration: float | None = typer.Option(None, "--duration", min=0.0, help="Stop after this many seconds "
                                          "(default: run until Ctrl-C)."),
) -> None:
    """Serve a simulated DYNAMIXEL Protocol 2.0 bus (X-series servos) on a pseudo-terminal until Ctrl-C.

    Open it with --bus dxl://PATH, or with dynamixel-sdk (PortHandler(PATH), PacketHandler(2.0)) at 1 Mbaud.
    Every hardware-error latch is logged as it happens.
    """
    values = _params([*(params or []), *(param or [])])
    if seed is not None:
        values["seed"] = str(seed)
    try:
        server = start_sim(get_profile(profile.value), values)
    except KeyError as exc:
        fail(str(exc.args[0]))
    except DeviceURLError as exc:
        fail(str(exc))
    info = describe_sim(server)
    url = f"dxl://{server.path}?baud={info['baud']}"
    log = err_console if json_out else console
    stop = threading.Event()
    previous = signal.getsignal(signal.SIGTERM)
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    try:
        if json_out:
            print_json({**info, "url": url, "params": describe(server.sim.params)})
        else:
            console.print(f"[bold yellow]SIMULATED {info['profile']}[/] Dynamixel bus on "
                          f"[bold]{server.path}[/] (ids {', '.join(map(str, info['ids']))})", highlight=False)
            console.print(f"connect servotool with --bus '{url}'", soft_wrap=True, highlight=False)
        err_console.print("serving; Ctrl-C to stop", style="dim")
        seen: dict[int, int] = {}
        end = None if duration is None else time.monotonic() + duration
        while not stop.is_set() and (end is None or time.monotonic() < end):
            for sid, bits in server.sim.latched().items():
                if seen.get(sid) != bits:
                    log.print(f"[bold red]latched[/] t={server.sim.now_s():8.3f} s  id {sid}: "
                              f"{describe_hardware_error(bits)}", highlight=False)
            seen = server.sim.latched()
            stop.wait(0.1 if end is None else max(0.0, min(0.1, end - time.monotonic())))
    except KeyboardInterrupt:
        pass
    finally:
        server.close()
        signal.signal(signal.SIGTERM, previous)
    err_console.print("simulator stopped", style="dim")
