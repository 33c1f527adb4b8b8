"""`servotool sim hiwonder`: run the bus-servo board simulator on a pty until Ctrl-C, for any program to
open."""

from __future__ import annotations

import signal
import threading
import time
from enum import Enum
from typing import Annotated

import typer

from servotool.cli.common import console, err_console, fail, print_json
from servotool.devices.hiwonder.profiles import get_profile
from servotool.devices.hiwonder.sim import start_sim
from servotool.devices.hiwonder.sim_params import KNOWN_KEYS, describe
from servotool.devices.registry import DeviceURLError

PROFILE_HELP = "Arm profile (its servo ids, ranges and poses)."
PARAM_HELP = ("A simulator parameter as key=value, repeatable; per servo as key_ID (obstacle_2=562, "
              f"silent_10=1, crc_error_rate=0.05). Keys: {', '.join(KNOWN_KEYS)}.")



class HiwonderProfile(str, Enum):
    """--profile: the names of the arm profiles (devices.hiwonder.profiles.PROFILES; a test keeps them
    equal)."""

    ROSORIN_ARM = "rosorin-arm"


def _params(items: list[str] | None) -> dict[str, str]:
    out: dict[str, str] = {}
    for item in items or []:
        for part in item.split("&"):
            key, sep, value = part.partition("=")
            if not sep or not key.strip():
                fail(f"--param {part!r}: want key=value (e.g. obstacle_2=562; keys: {', '.join(KNOWN_KEYS)})")
            out[key.strip()] = value.strip()
    return out


def sim_hiwonder(
    params: Annotated[list[str] | None, typer.Argument(help="Parameters as key=value, the same as --param.",
                                                       show_default=False)] = None,
    profile: Annotated[HiwonderProfile, typer.Option(
        "--profile", case_sensitive=False, help=PROFILE_HELP,
    )] = HiwonderProfile.ROSORIN_ARM,
    param: Annotated[list[str] | None, typer.Option("--param", help=PARAM_HELP)] = None,
    seed: int | None = typer.Option(None, "--seed", help="Random seed: same seed, same behaviour."),
    json_out: bool = typer.Option(False, "--json", help="Print the pty path and parameters as JSON."),
    duration: float | None = typer.Option(None, "--duration", min=0.0, help="Stop after this many seconds "
                                          "(default: run until Ctrl-C)."),
) -> None:
    """Serve a simulated Hiwonder-style board (function 5 = bus servo) on a pseudo-terminal until Ctrl-C.

    Open it with --bus hiwonder://PATH, or with any program that talks to the real board over a serial port.
    """
    resolved = _params([*(params or []), *(param or [])])
    if seed is not None:
        resolved["seed"] = str(seed)
    try:
        prof = get_profile(profile.value)
        server = start_sim(prof, resolved)
    except KeyError as exc:
        fail(str(exc.args[0]))
    except DeviceURLError as exc:
        fail(str(exc))
    url = f"hiwonder://{server.path}"
    stop = threading.Event()
    previous = signal.getsignal(signal.SIGTERM)
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    try:
        if json_out:
            print_json({"path": server.path, "url": url, "profile": prof.name, "simulated": True,
                        "params": describe(server.sim.params)})
        else:
            console.print(f"[bold yellow]SIMULATED {prof.name}[/] board on [bold]{server.path}[/]",
                          highlight=False)
            console.print(f"connect servotool with --bus '{url}'", soft_wrap=True, highlight=False)
        err_console.print("serving; Ctrl-C to stop", style="dim")
        end = None if duration is None else time.monotonic() + duration
        while not stop.is_set() and (end is None or time.monotonic() < end):
            stop.wait(0.1 if end is None else max(0.0, min(0.1, end - time.monotonic())))
    except KeyboardInterrupt:
        pass
    finally:
        server.close()
        signal.signal(signal.SIGTERM, previous)
    err_console.print("simulator stopped", style="dim")
