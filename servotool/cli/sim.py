"""`servotool sim ...`: run a device simulator standalone for other programs (vendor SDKs included)."""

from __future__ import annotations

import queue
from enum import Enum
from typing import Annotated, Any

import typer
from rich.panel import Panel
from rich.table import Table

from servotool.cli.common import console, err_console, fail, print_json, user_errors
from servotool.cli.sim_dynamixel import sim_dynamixel
from servotool.cli.sim_hiwonder import sim_hiwonder
from servotool.cli.sim_serve import serve
from servotool.devices.fairino.physics import FaultEvent
from servotool.devices.fairino.profiles import PARAM_HELP, ProfileError
from servotool.devices.fairino.sim import FairinoSim, SimError


class FairinoProfile(str, Enum):
    """--profile: the names of the controller profiles (devices.fairino.profiles.PROFILES; a test keeps them
    equal)."""

    SIMMACHINE = "simmachine"
    FR3 = "fr3"
    FR20 = "fr20"


sim_app = typer.Typer(
    help="Run a device simulator standalone and print its address; it serves until Ctrl-C.",
    no_args_is_help=True,
    rich_markup_mode="rich",
)

_PARAM_LIST = ", ".join(sorted(PARAM_HELP))


def _overrides(params: list[str] | None, **named: Any) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for item in params or []:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            fail(f"--param {item!r}: expected key=value (keys: {_PARAM_LIST})")
        out[key.strip()] = value.strip()
    out.update({k: v for k, v in named.items() if v is not None})
    return out


def _panel(info: dict[str, Any]) -> Panel:
    table = Table.grid(padding=(0, 2))
    table.add_column(style="bold")
    table.add_column()
    limits = ", ".join(f"{v:g}" for v in info["joint_speed_limits"])
    lo, hi = info["runaway_band_deg"]
    runaway = f"jump {lo:g}-{hi:g} deg/command (coin-flip band)" if info["runaway"] else "never runs away"
    rows = [
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
    ]
    for key, value in rows:
        table.add_row(key, value)
    return Panel(table, title="FAIRINO controller simulator", expand=False)


@sim_app.command("fairino")
def fairino(
    profile: Annotated[FairinoProfile, typer.Option(
        "--profile", case_sensitive=False, help="Controller profile (the arm model it behaves as).",
    )] = FairinoProfile.FR3,
    host: str = typer.Option("127.0.0.1", "--host", help="Address to serve on (loopback by default)."),
    rpc_port: int = typer.Option(20003, "--rpc-port", min=0, max=65535,
                                 help="XML-RPC port; 0 picks a free one."),
    cnde_port: int = typer.Option(20005, "--cnde-port", min=0, max=65535,
                                  help="CNDE state-stream port; 0 picks a free one."),
    udp_port: int = typer.Option(20007, "--udp-port", min=0, max=65535,
                                 help="UDP command port; 0 picks a free one."),
    lag_ms: float | None = typer.Option(None, "--lag-ms", help="Commanded-to-measured delay L (ms)."),
    tau_ms: float | None = typer.Option(None, "--tau-ms", help="First-order time constant after L (ms)."),
    noise_deg: float | None = typer.Option(None, "--noise-deg", help="Encoder noise, std dev (deg)."),
    state_ms: int | None = typer.Option(
        None, "--state-ms", help="State period for clients that ask for period 0 (others get what they ask)."
    ),
    seed: int | None = typer.Option(None, "--seed", help="Random seed: same seed, same behaviour."),
    param: Annotated[
        list[str] | None,
        typer.Option("--param", help=f"A simulator parameter as key=value, repeatable. Keys: {_PARAM_LIST}."),
    ] = None,
    json_out: bool = typer.Option(False, "--json", help="Print the address as JSON on stdout, keep running."),
    duration: float | None = typer.Option(
        None, "--duration", min=0.0, help="Stop after this many seconds (default: run until Ctrl-C)."
    ),
) -> None:
    """Serve a simulated FAIRINO controller (XML-RPC, CNDE state stream, UDP ServoJ) until Ctrl-C.

    The vendor's own Python SDK connects to it on the default ports (use --host for another address).

    Every fault it latches (runaway, refused step) is logged as it happens.
    """
    overrides = _overrides(
        param, lag_ms=lag_ms, tau_ms=tau_ms, noise_deg=noise_deg, state_ms=state_ms, seed=seed
    )
    with user_errors(ProfileError, SimError):
        sim = FairinoSim(
            profile.value, host=host, rpc_port=rpc_port, cnde_port=cnde_port, udp_port=udp_port,
            overrides=overrides,
        )
        sim.start()
    log = err_console if json_out else console

    def announce() -> None:
        info = sim.address()
        if json_out:
            print_json(info)
        else:
            console.print(_panel(info))
            console.print(f"connect servotool with --robot '{info['url']}'", soft_wrap=True, highlight=False)

    def log_faults() -> None:
        while True:
            try:
                event: FaultEvent = sim.faults.get_nowait()
            except queue.Empty:
                return
            log.print(f"[bold red]fault[/] t={event.t:8.3f} s  {event.text}", highlight=False)

    serve(sim.stop, duration, announce, log_faults)
sim_app.command("hiwonder")(sim_hiwonder)
sim_app.command("dynamixel")(sim_dynamixel)
