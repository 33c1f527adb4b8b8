"""`servotool sim dynamixel`: run the DYNAMIXEL bus simulator on a pty until Ctrl-C, for any program (the
vendor's dynamixel-sdk included) to open."""

from __future__ import annotations

from enum import Enum
from typing import Annotated

import typer

from servotool.cli.common import console, err_console, print_json
from servotool.cli.sim_serve import (
    DurationOption,
    JsonOption,
    ParamsArgument,
    SeedOption,
    serve,
    sim_params,
    start_or_fail,
)
from servotool.devices.dynamixel.control_table import describe_hardware_error
from servotool.devices.dynamixel.sim import describe_sim, start_sim
from servotool.devices.dynamixel.sim_params import KNOWN_KEYS, describe
from servotool.io.sim_ptys import register, unregister

PROFILE_HELP = "Robot profile (its servo ids and models)."
PARAM_HELP = ("A simulator parameter as key=value, repeatable (overload=12@5.0, latched=30, silent=22, "
              f"load_13=300). Keys: {', '.join(KNOWN_KEYS)}.")


class DynamixelProfile(str, Enum):
    """--profile: the names of the robot profiles (devices.dynamixel.profiles.PROFILES; a test keeps them
    equal)."""

    MICRODUCK = "microduck"


def sim_dynamixel(
    params: ParamsArgument = None,
    profile: Annotated[DynamixelProfile, typer.Option(
        "--profile", case_sensitive=False, help=PROFILE_HELP,
    )] = DynamixelProfile.MICRODUCK,
    param: Annotated[list[str] | None, typer.Option("--param", help=PARAM_HELP)] = None,
    seed: SeedOption = None,
    json_out: JsonOption = False,
    duration: DurationOption = None,
) -> None:
    """Serve a simulated DYNAMIXEL Protocol 2.0 bus (X-series servos) on a pseudo-terminal until Ctrl-C.

    Open it with --bus dxl://PATH, or with dynamixel-sdk (PortHandler(PATH), PacketHandler(2.0)) at 1 Mbaud.
    Every hardware-error latch is logged as it happens.
    """
    values = sim_params([*(params or []), *(param or [])], seed, "overload=12@5.0", KNOWN_KEYS)
    server = start_or_fail(start_sim, profile.value, values)
    info = describe_sim(server)
    url = f"dxl://{server.path}?baud={info['baud']}"
    log = err_console if json_out else console

    def announce() -> None:
        if json_out:
            print_json({**info, "url": url, "params": describe(server.sim.params)})
        else:
            console.print(f"[bold yellow]SIMULATED {info['profile']}[/] Dynamixel bus on "
                          f"[bold]{server.path}[/] (ids {', '.join(map(str, info['ids']))})", highlight=False)
            console.print(f"connect servotool with --bus '{url}'", soft_wrap=True, highlight=False)

    seen: dict[int, int] = {}

    def log_latches() -> None:
        nonlocal seen
        for sid, bits in server.sim.latched().items():
            if seen.get(sid) != bits:
                log.print(f"[bold red]latched[/] t={server.sim.now_s():8.3f} s  id {sid}: "
                          f"{describe_hardware_error(bits)}", highlight=False)
        seen = server.sim.latched()

    entry = register(server.path, "dynamixel", info["profile"])  # clients opening the pty call it simulated

    def close() -> None:
        unregister(entry)
        server.close()

    serve(close, duration, announce, log_latches)
