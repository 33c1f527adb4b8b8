"""The `servotool` command: a thin typer front end over runs/ and analysis/."""

from __future__ import annotations

import typer

from servotool.cli import version as version_cmd
from servotool.cli.analyze import analyze
from servotool.cli.campaign import campaign_app
from servotool.cli.incidents import incidents_app
from servotool.cli.lag import lag
from servotool.cli.ports import ports
from servotool.cli.record import record
from servotool.cli.servo import servo_app
from servotool.cli.shape import shape
from servotool.cli.sim import sim_app
from servotool.cli.step import step
from servotool.cli.sweep import sweep

app = typer.Typer(
    name="servotool",
    help=(
        "Diagnostics and measurement for robot arms and servo buses.\n\n"
        "Measure the lag between the setpoints you stream and what the controller executes, inject steps "
        "(raw or shaped) and watch for runaways, recompute every figure later from the recorded CSV, and map "
        "bus-servo joint limits. Devices are URLs: sim:fr3 (the default) runs a built-in simulator that "
        "speaks the real wire protocol, so every command works with no hardware; fairino://HOST talks to a "
        "real arm."
    ),
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
    rich_markup_mode="rich",
)


@app.callback()
def _root() -> None:
    """Diagnostics and measurement for robot arms and servo buses."""


app.command("lag")(lag)
app.command("step")(step)
app.command("analyze")(analyze)
app.command("shape")(shape)
app.command("sweep")(sweep)
app.command("record")(record)
app.add_typer(incidents_app, name="incidents")
app.add_typer(servo_app, name="servo")
app.command("ports")(ports)
app.add_typer(campaign_app, name="campaign")
app.add_typer(sim_app, name="sim", help="Run a device simulator standalone for other programs and SDKs.")
app.command("version")(version_cmd.version)


def main() -> None:
    app()
