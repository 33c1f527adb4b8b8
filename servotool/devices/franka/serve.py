"""`servotool sim franka`: the simulator on TCP 1337 of a loopback address of its own, in real time, for
pylibfranka programs or another servotool process. Light at import; `start` imports the simulator."""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

from servotool.devices.serving import Served, SimEvent, SimOption, SimServe


def _rows(info: dict[str, Any]) -> tuple[tuple[str, str], ...]:
    return (
        ("profile", f"{info['profile']} (SIMULATED, model {info['model']})"),
        ("address", f"{info['address']} (libfranka's TCP 1337 and the UDP exchange)"),
        ("start mode", info["mode"]),
        ("packet loss", f"{info['drop']:g} (seed {info['seed']})"),
        ("pylibfranka", f"Robot('{info['address']}', RealtimeConfig.kIgnore) on a kernel without PREEMPT_RT"),
    )


def start(profile: str, params: Mapping[str, str], *, address: str = "") -> Served:
    """The simulator bound and serving (DeviceError when no address is free, KeyError for an unknown
    profile or start mode, DeviceURLError for a parameter)."""
    from servotool.devices.franka.family import sim_reflex, sim_settings
    from servotool.devices.franka.sim import start_sim
    from servotool.devices.url import DeviceURLError, parse_url

    if "clock" in params:  # lock-step needs the client in the same process tree; this one serves anyone
        raise DeviceURLError("clock: the standalone simulator runs in real time (clock=sim is for sim: URLs)")
    # --address is checked as the address parameter is: a loopback address
    given = {**params, "address": address} if address else dict(params)
    query = "&".join(f"{k}={v}" for k, v in given.items())
    parsed = parse_url(f"sim:{profile}?{query}" if query else f"sim:{profile}")
    settings, reflex = sim_settings(parsed), sim_reflex(parsed)
    s = settings
    sim = start_sim(profile, s.drop, s.seed, s.address, mode=s.mode, reflex=reflex)
    t0 = time.monotonic()
    info = {
        "url": f"franka://{sim.address}?model={sim.profile.model.name}",
        "address": sim.address,
        "profile": profile,
        "model": sim.profile.model.name,
        "mode": settings.mode,
        "drop": settings.drop,
        "seed": settings.seed,
    }
    seen = [0]

    def events() -> list[SimEvent]:
        new = sim.reflexes[seen[0] :]
        seen[0] += len(new)
        return [SimEvent("reflex", time.monotonic() - t0, f"{c.name}: {c.detail}") for c in new]

    return Served(
        info["url"], info, profile, "Franka robot simulator", sim.close, rows=_rows(info), events=events
    )


SERVE = SimServe(
    start=start,
    help="""Serve a simulated Franka robot (libfranka's network protocol) until Ctrl-C.

    pylibfranka connects to it unchanged: it binds TCP 1337 on the first free loopback address from
    127.0.0.2 (or --address) and exchanges state and commands over UDP every millisecond, in real time.

    Every reflex it raises is logged as it happens, by its libfranka name.
    """,
    default_profile="franka-fr3",
    profile_help="Robot profile (the arm model it behaves as).",
    param_help="A simulator parameter as key=value, repeatable.",
    json_help="Print the address as JSON on stdout, keep running.",
    example="drop=0.01",
    options=(
        SimOption("address", str, "", "Loopback address to bind (default: the first free from 127.0.0.2)."),
    ),
)
