"""`servotool sim` for this family: the bus simulator on a pseudo-terminal, for any program (the vendor's
dynamixel-sdk included) to open. Light at import; `start` imports the simulator."""

from __future__ import annotations

from collections.abc import Mapping

from servotool.devices.serving import Served, SimEvent, SimServe
from servotool.io.sim_ptys import register, unregister


def start(profile: str, params: Mapping[str, str]) -> Served:
    """The bus served on a new pty and registered as simulated (KeyError for an unknown profile,
    DeviceURLError for a parameter); its events are the hardware-error latches as they change."""
    from servotool.devices.dynamixel.control_table import describe_hardware_error
    from servotool.devices.dynamixel.sim import describe_sim, start_sim
    from servotool.devices.dynamixel.sim_params import describe

    server = start_sim(profile, dict(params))
    info = describe_sim(server)
    url = f"dxl://{server.path}?baud={info['baud']}"
    entry = register(server.path, "dynamixel", info["profile"])  # clients opening the pty call it simulated
    seen: dict[int, int] = {}

    def events() -> list[SimEvent]:
        nonlocal seen
        out = [
            SimEvent("latched", server.sim.now_s(), f"id {sid}: {describe_hardware_error(bits)}")
            for sid, bits in server.sim.latched().items()
            if seen.get(sid) != bits
        ]
        seen = server.sim.latched()
        return out

    def stop() -> None:
        unregister(entry)
        server.close()

    return Served(
        url,
        {**info, "url": url, "params": describe(server.sim.params)},
        info["profile"],
        "Dynamixel bus",
        stop,
        where=server.path,
        detail=f"ids {', '.join(map(str, info['ids']))}",
        events=events,
    )


SERVE = SimServe(
    start=start,
    help="""Serve a simulated DYNAMIXEL Protocol 2.0 bus (X-series servos) on a pseudo-terminal until Ctrl-C.

    Open it with --bus dxl://PATH, or with dynamixel-sdk (PortHandler(PATH), PacketHandler(2.0)) at 1 Mbaud.
    Every hardware-error latch is logged as it happens.
    """,
    default_profile="microduck",
    profile_help="Robot profile (its servo ids and models).",
    param_help=(
        "A simulator parameter as key=value, repeatable (overload=12@5.0, latched=30, silent=22, "
        "load_13=300)."
    ),
    json_help="Print the pty path and parameters as JSON.",
    example="overload=12@5.0",
)
