"""`servotool sim` for this family: the controller simulator on its three ports, for the vendor's SDK or
another servotool process. Light at import; `start` imports the simulator."""

from __future__ import annotations

import queue
from collections.abc import Mapping
from typing import Any

from servotool.devices.serving import Served, SimEvent, SimOption, SimServe


def _rows(info: dict[str, Any]) -> tuple[tuple[str, str], ...]:
    limits = ", ".join(f"{v:g}" for v in info["joint_speed_limits"])
    lo, hi = info["runaway_band_deg"]
    runaway = f"jump {lo:g}-{hi:g} deg/command (coin-flip band)" if info["runaway"] else "never runs away"
    return (
        ("profile", f"{info['profile']} (SIMULATED)"),
        ("XML-RPC", f"http://{info['host']}:{info['rpc_port']}"),
        ("CNDE state", f"{info['host']}:{info['cnde_port']} (tcp)"),
        ("UDP commands", f"{info['host']}:{info['udp_port']}"),
        ("lag", f"{info['lag_ms']:g} ms, tau {info['tau_ms']:g} ms, noise {info['noise_deg']:g} deg"),
        ("state period", f"as each client configures it (default {info['state_ms']} ms)"),
        ("enable window", f"{info['enable_ms']:g} ms"),
        ("joint limits", f"{limits} deg/s"),
        ("runaway", runaway),
        ("seed", str(info["seed"])),
    )


def start(
    profile: str, params: Mapping[str, str], *, host: str, rpc_port: int, cnde_port: int, udp_port: int
) -> Served:
    """The controller simulator bound and serving (ProfileError for a parameter, SimError for a port)."""
    from servotool.devices.fairino.sim import FairinoSim

    sim = FairinoSim(
        profile, host=host, rpc_port=rpc_port, cnde_port=cnde_port, udp_port=udp_port, overrides=dict(params)
    )
    sim.start()
    info = sim.address()

    def events() -> list[SimEvent]:
        out: list[SimEvent] = []
        while True:
            try:
                event = sim.faults.get_nowait()
            except queue.Empty:
                return out
            out.append(SimEvent("fault", event.t, event.text))

    return Served(
        info["url"],
        info,
        info["profile"],
        "FAIRINO controller simulator",
        sim.stop,
        rows=_rows(info),
        events=events,
    )


def _port(name: str, default: int, what: str) -> SimOption:
    return SimOption(name, int, default, f"{what} port; 0 picks a free one.", min=0, max=65535)


SERVE = SimServe(
    start=start,
    help="""Serve a simulated FAIRINO controller (XML-RPC, CNDE state stream, UDP ServoJ) until Ctrl-C.

    The vendor's own Python SDK connects to it on the default ports (use --host for another address).

    Every fault it latches (runaway, refused step) is logged as it happens.
    """,
    default_profile="fr3",
    profile_help="Controller profile (the arm model it behaves as).",
    param_help="A simulator parameter as key=value, repeatable.",
    json_help="Print the address as JSON on stdout, keep running.",
    example="lag_ms=70",
    options=(
        SimOption("host", str, "127.0.0.1", "Address to serve on (loopback by default)."),
        _port("rpc_port", 20003, "XML-RPC"),
        _port("cnde_port", 20005, "CNDE state-stream"),
        _port("udp_port", 20007, "UDP command"),
        SimOption("lag_ms", float, None, "Commanded-to-measured delay L (ms).", param=True),
        SimOption("tau_ms", float, None, "First-order time constant after L (ms).", param=True),
        SimOption("noise_deg", float, None, "Encoder noise, std dev (deg).", param=True),
        SimOption(
            "state_ms",
            int,
            None,
            "State period for clients that ask for period 0 (others get what they ask).",
            param=True,
        ),
    ),
    positional=False,
)
