"""`servotool sim <family>`: run a device simulator standalone for other programs (vendor SDKs included).

One sub-command per registered family with a standalone simulator (`Family.serve`, devices.serving): its
--profile choices are the family's `sim:` names, its --param help lists its simulator parameters, its own
options are the ones the family declares; the common ones (--seed, --json, --duration) are spelled here.
"""

from __future__ import annotations

import inspect
from enum import Enum
from typing import Annotated, Any

import typer
from rich.markup import escape
from rich.panel import Panel
from rich.table import Table

from servotool.cli.common import console, err_console, fail, print_json
from servotool.cli.sim_serve import serve, sim_params
from servotool.devices.family import ARM, Family
from servotool.devices.registry import FAMILIES, sim_names
from servotool.devices.serving import Served, SimServe
from servotool.errors import ServotoolError

DEVICE_OPTION = {ARM: "--robot"}  # how servotool is told to open a device of that kind (else --bus)
COMMON = ("params", "profile", "param", "seed", "json_out", "duration")
_PROFILES: dict[str, type[Enum]] = {}  # each sub-command's --profile choices

sim_app = typer.Typer(
    help="Run a device simulator standalone and print its address; it serves until Ctrl-C.",
    no_args_is_help=True,
    rich_markup_mode="rich",
)


def _panel(served: Served) -> Panel:
    table = Table.grid(padding=(0, 2))
    table.add_column(style="bold")
    table.add_column()
    for key, value in served.rows:
        table.add_row(key, value)
    return Panel(table, title=served.what, expand=False)


def _announce(fam: Family, served: Served, json_out: bool) -> None:
    if json_out:
        print_json(served.info)
        return
    if served.rows:
        console.print(_panel(served))
    else:
        detail = f" ({escape(served.detail)})" if served.detail else ""
        console.print(
            f"[bold yellow]SIMULATED {escape(served.profile)}[/] {escape(served.what)} on "
            f"[bold]{escape(served.where)}[/]{detail}",
            highlight=False,
        )
    option = DEVICE_OPTION.get(fam.kind, "--bus")
    console.print(f"connect servotool with {option} '{served.url}'", soft_wrap=True, highlight=False)


def _run(fam: Family, spec: SimServe, keys: list[str], values: dict[str, Any]) -> None:
    named = {o.name: str(values[o.name]) for o in spec.options if o.param and values[o.name] is not None}
    if values["seed"] is not None:
        named["seed"] = str(values["seed"])
    params = sim_params(values.get("params") or [], values["param"] or [], named, spec.example, keys)
    options = {o.name: values[o.name] for o in spec.options if not o.param}
    try:
        served = spec.start(values["profile"].value, params, **options)
    except KeyError as exc:
        fail(str(exc.args[0]))
    except ServotoolError as exc:
        fail(str(exc))
    log = err_console if values["json_out"] else console

    def poll() -> None:
        for event in served.events():
            log.print(f"[bold red]{event.label}[/] t={event.t:8.3f} s  {escape(event.text)}", highlight=False)

    serve(served.stop, values["duration"], lambda: _announce(fam, served, values["json_out"]), poll)


def _parameter(name: str, annotation: Any, default: Any) -> inspect.Parameter:
    return inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=default, annotation=annotation)


def _command(fam: Family, spec: SimServe) -> Any:
    """The sub-command's function, its signature built from the family's options (typer reads it)."""
    names = sim_names(fam)
    profiles = Enum("Profile", [(n, n) for n in names], type=str)  # type: ignore[misc]
    _PROFILES[fam.name] = profiles
    keys = [p.key for p in fam.sim_params()]
    param_help = f"{spec.param_help} Keys: {', '.join(keys)}." if keys else spec.param_help
    parameters = []
    if spec.positional:
        parameters.append(
            _parameter(
                "params",
                Annotated[
                    list[str] | None,
                    typer.Argument(help="Parameters as key=value, the same as --param.", show_default=False),
                ],
                None,
            )
        )
    parameters.append(
        _parameter(
            "profile",
            Annotated[profiles, typer.Option("--profile", case_sensitive=False, help=spec.profile_help)],
            profiles(spec.default_profile),
        )
    )
    for option in spec.options:
        if option.name in COMMON:
            raise ValueError(f"{fam.name}: option {option.name!r} is a common one")
        kind = option.type if option.default is not None else option.type | None
        flag = "--" + option.name.replace("_", "-")
        parameters.append(
            _parameter(
                option.name,
                Annotated[kind, typer.Option(flag, help=option.help, min=option.min, max=option.max)],
                option.default,
            )
        )
    parameters += [
        _parameter(
            "seed",
            Annotated[int | None, typer.Option("--seed", help="Random seed: same seed, same behaviour.")],
            None,
        ),
        _parameter("param", Annotated[list[str] | None, typer.Option("--param", help=param_help)], None),
        _parameter("json_out", Annotated[bool, typer.Option("--json", help=spec.json_help)], False),
        _parameter(
            "duration",
            Annotated[
                float | None,
                typer.Option(
                    "--duration", min=0.0, help="Stop after this many seconds (default: run until Ctrl-C)."
                ),
            ],
            None,
        ),
    ]

    def command(**values: Any) -> None:
        _run(fam, spec, keys, values)

    command.__signature__ = inspect.Signature(parameters)  # type: ignore[attr-defined]
    command.__annotations__ = {p.name: p.annotation for p in parameters}
    command.__doc__ = spec.help
    command.__name__ = fam.name
    return command


for _fam in FAMILIES:
    if _fam.serve is not None:
        sim_app.command(_fam.name)(_command(_fam, _fam.serve))


def profile_choices() -> dict[str, list[str]]:
    """Each sim sub-command's --profile choices, by command name (the registry's `sim:` names)."""
    return {name: [p.value for p in choices] for name, choices in _PROFILES.items()}
