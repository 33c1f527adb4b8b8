"""`servotool config` and the settings every command shares: verbosity and the config file's defaults.

An option takes its value from the command line, else its environment variable, else the config file, else
its built-in default. The config file reaches an option through click's default map: an option opts in by
naming the key's environment variable (envvar="SERVOTOOL_OUT" for an output folder, and so on).
"""

from __future__ import annotations

from enum import Enum
from typing import Annotated, Any

import typer
from rich.markup import escape

from servotool.cli.common import console, debug, fail, print_json
from servotool.cli.render import compact_table
from servotool.devices.registry import (
    ARM,
    BUS,
    DEFAULT_ARM_URL,
    DEFAULT_BUS_URL,
    FAMILIES,
    DeviceURLError,
    check_url,
)
from servotool.errors import ServotoolError
from servotool.io.user_config import KEYS, config_path, effective, load_config, set_value


class ConfigKeyName(str, Enum):
    """The config file's keys as `config set|unset` take them (io.user_config.KEYS; a test keeps them
    equal)."""

    ROBOT = "robot"
    BUS = "bus"
    OUT = "out"
    LIMITS = "limits"


def default_map_for(command: Any, values: dict[str, str]) -> dict[str, Any]:
    """Click's default map for `command` and the commands under it: the config value of every option whose
    environment variable is a config key's."""
    by_env = {KEYS[key].envvar: value for key, value in values.items()}
    result: dict[str, Any] = {}
    for param in command.params:
        envvar = getattr(param, "envvar", None)
        if isinstance(envvar, str) and envvar in by_env and param.name:
            result[param.name] = by_env[envvar]
    for name, sub in getattr(command, "commands", {}).items():
        sub_map = default_map_for(sub, values)
        if sub_map:
            result[name] = sub_map
    return result


def apply_config_defaults(ctx: typer.Context) -> None:
    """Make the config file's values the defaults of the invoked command's options (one error line and
    exit 2 when the file cannot be read)."""
    try:
        values = load_config(config_path())
    except ServotoolError as exc:
        fail(f"{exc} (see `servotool config path`)")
    debug(f"config {config_path()}: {values or 'no values'}")
    if values:
        ctx.default_map = default_map_for(ctx.command, values)


config_app = typer.Typer(
    help="Show and set the defaults commands use when an option is not given (the user config file).",
    invoke_without_command=True,
    rich_markup_mode="rich",
)

JsonOption = typer.Option(False, "--json", help="Print JSON instead of a table.")
# the device keys' built-in defaults, which io.user_config leaves to the device registry
BUILTIN_URLS = {"robot": DEFAULT_ARM_URL, "bus": DEFAULT_BUS_URL}
_ARM_EXAMPLE = next((url for fam in FAMILIES if fam.kind == ARM for url in fam.examples), DEFAULT_ARM_URL)


def _json(ctx: typer.Context, json_out: bool) -> bool:
    """The sub-command's --json, or the group's (`config --json set ...`): either asks for JSON."""
    return json_out or bool(ctx.parent is not None and ctx.parent.params.get("json_out"))


@config_app.callback()
def _config(ctx: typer.Context, json_out: bool = JsonOption) -> None:
    """Show and set the defaults commands use when an option is not given (the user config file).

    Each value comes from, in order: the option, its environment variable, the config file, the built-in
    default. `servotool config` alone is `servotool config show`."""
    if ctx.invoked_subcommand is None:
        show(ctx, json_out=json_out)


@config_app.command("show")
def show(ctx: typer.Context, json_out: bool = JsonOption) -> None:
    """Show the value each key takes when its option is not given, and where the value comes from."""
    json_out = _json(ctx, json_out)
    path = config_path()
    try:
        rows = effective(load_config(path), builtins=BUILTIN_URLS)
    except ServotoolError as exc:
        fail(str(exc))
    if json_out:
        print_json(
            {
                "path": str(path),
                "exists": path.exists(),
                "values": {
                    row.key: {"value": row.value, "source": row.source, "envvar": KEYS[row.key].envvar}
                    for row in rows
                },
            }
        )
        return
    set_here = sum(1 for row in rows if row.source not in ("built-in", "unset"))
    console.print(
        f"config {escape(str(path))}"
        + ("" if path.exists() else " (not created yet)")
        + f": {set_here} of {len(rows)} key(s) set outside the built-ins",
        highlight=False,
    )
    table = compact_table()
    for column in ("key", "value", "from", "used as"):
        # a value is a URL or a path: kept whole, the meaning column wraps between words instead
        table.add_column(column, overflow="fold", no_wrap=column in ("key", "value", "from"))
    for row in rows:
        table.add_row(row.key, escape(row.value or "-"), row.source, KEYS[row.key].meaning)
    console.print(table)


@config_app.command("path")
def path_cmd(ctx: typer.Context, json_out: bool = JsonOption) -> None:
    """Print the config file's path ($SERVOTOOL_CONFIG, else the user config dir's servotool/config.yaml)."""
    json_out = _json(ctx, json_out)
    path = config_path()
    if json_out:
        print_json({"path": str(path), "exists": path.exists()})
        return
    typer.echo(str(path))


@config_app.command("set")
def set_cmd(
    ctx: typer.Context,
    key: Annotated[ConfigKeyName, typer.Argument(case_sensitive=False, help="The key to set.")],
    value: str = typer.Argument(..., help=f"The value, e.g. {_ARM_EXAMPLE} for robot."),
    json_out: bool = JsonOption,
) -> None:
    """Write KEY: VALUE into the config file (creating it). Only that key's value changes, or a new key is
    added as the last line: the other keys, comments, blank lines, order and layout are kept as written. A
    robot value must be an arm's device URL, a bus value a servo bus's (their parameters are checked when a
    command opens them)."""
    json_out = _json(ctx, json_out)
    name = key.value
    path = config_path()
    if name in ("robot", "bus"):
        try:
            check_url(value, ARM if name == "robot" else BUS)  # an arm for robot, a bus for bus
        except DeviceURLError as exc:
            fail(f"{name}: {exc}")
    try:
        values = set_value(path, name, value)
    except ServotoolError as exc:
        fail(str(exc))
    if json_out:
        print_json({"path": str(path), "values": values})
        return
    console.print(f"{name} = {escape(value)} ({escape(str(path))})", highlight=False, soft_wrap=True)


@config_app.command("unset")
def unset_cmd(
    ctx: typer.Context,
    key: Annotated[ConfigKeyName, typer.Argument(case_sensitive=False, help="The key to remove.")],
    json_out: bool = JsonOption,
) -> None:
    """Remove KEY's line from the config file (every other line, comments too, kept); its option falls back
    to the environment or the built-in default."""
    json_out = _json(ctx, json_out)
    name = key.value
    path = config_path()
    try:
        values = set_value(path, name, None)
    except ServotoolError as exc:
        fail(str(exc))
    if json_out:
        print_json({"path": str(path), "values": values})
        return
    console.print(f"{name} removed ({escape(str(path))})", highlight=False, soft_wrap=True)
