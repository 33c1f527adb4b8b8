"""`servotool sim hiwonder`: run the bus-servo board simulator on a pty until Ctrl-C, for any program to
open."""

from __future__ import annotations

from enum import Enum
from typing import Annotated

import typer

from servotool.cli.common import console, print_json
from servotool.cli.sim_serve import (
    DurationOption,
    JsonOption,
    ParamsArgument,
    SeedOption,
    serve,
    sim_params,
    start_or_fail,
)
from servotool.devices.hiwonder.sim import start_sim
from servotool.devices.hiwonder.sim_params import KNOWN_KEYS, describe
from servotool.io.sim_ptys import register, unregister

PROFILE_HELP = "Arm profile (its servo ids, ranges and poses)."
PARAM_HELP = ("A simulator parameter as key=value, repeatable; per servo as key_ID (obstacle_2=562, "
              f"silent_10=1, crc_error_rate=0.05). Keys: {', '.join(KNOWN_KEYS)}.")


class HiwonderProfile(str, Enum):
    """--profile: the names of the arm profiles (devices.hiwonder.profiles.PROFILES; a test keeps them
    equal)."""

    ROSORIN_ARM = "rosorin-arm"


def sim_hiwonder(
    params: ParamsArgument = None,
    profile: Annotated[HiwonderProfile, typer.Option(
        "--profile", case_sensitive=False, help=PROFILE_HELP,
    )] = HiwonderProfile.ROSORIN_ARM,
    param: Annotated[list[str] | None, typer.Option("--param", help=PARAM_HELP)] = None,
    seed: SeedOption = None,
    json_out: JsonOption = False,
    duration: DurationOption = None,
) -> None:
    """Serve a simulated Hiwonder-style board (function 5 = bus servo) on a pseudo-terminal until Ctrl-C.

    Open it with --bus hiwonder://PATH, or with any program that talks to the real board over a serial port.
    """
    resolved = sim_params([*(params or []), *(param or [])], seed, "obstacle_2=562", KNOWN_KEYS)
    server = start_or_fail(start_sim, profile.value, resolved)
    prof = server.sim.profile
    url = f"hiwonder://{server.path}"

    def announce() -> None:
        if json_out:
            print_json({"path": server.path, "url": url, "profile": prof.name, "simulated": True,
                        "params": describe(server.sim.params)})
        else:
            console.print(f"[bold yellow]SIMULATED {prof.name}[/] board on [bold]{server.path}[/]",
                          highlight=False)
            console.print(f"connect servotool with --bus '{url}'", soft_wrap=True, highlight=False)

    entry = register(server.path, "hiwonder", prof.name)  # clients opening the pty call it simulated

    def close() -> None:
        unregister(entry)
        server.close()

    serve(close, duration, announce)
