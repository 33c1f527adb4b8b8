"""`servotool sim` for this family: the board simulator on a pseudo-terminal, for any program that talks to
the real board over a serial port. Light at import; `start` imports the simulator."""

from __future__ import annotations

from collections.abc import Mapping

from servotool.devices.serving import Served, SimServe
from servotool.io.sim_ptys import register, unregister


def start(profile: str, params: Mapping[str, str]) -> Served:
    """The board served on a new pty and registered as simulated (KeyError for an unknown profile,
    DeviceURLError for a parameter)."""
    from servotool.devices.hiwonder.sim import start_sim
    from servotool.devices.hiwonder.sim_params import describe

    server = start_sim(profile, dict(params))
    name = server.sim.profile.name
    url = f"hiwonder://{server.path}"
    entry = register(server.path, "hiwonder", name)  # clients opening the pty call it simulated

    def stop() -> None:
        unregister(entry)
        server.close()

    info = {
        "path": server.path,
        "url": url,
        "profile": name,
        "simulated": True,
        "params": describe(server.sim.params),
    }
    return Served(url, info, name, "board", stop, where=server.path)


SERVE = SimServe(
    start=start,
    help="""Serve a simulated Hiwonder-style board (function 5 = bus servo) on a pseudo-terminal until Ctrl-C.

    Open it with --bus hiwonder://PATH, or with any program that talks to the real board over a serial port.
    """,
    default_profile="rosorin-arm",
    profile_help="Arm profile (its servo ids, ranges and poses).",
    param_help=(
        "A simulator parameter as key=value, repeatable; per servo as key_ID (obstacle_2=562, "
        "silent_10=1, crc_error_rate=0.05)."
    ),
    json_help="Print the pty path and parameters as JSON.",
    example="obstacle_2=562",
)
