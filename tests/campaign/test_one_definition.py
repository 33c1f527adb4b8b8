"""One definition per option: the command-line options of lag, step and sweep and the campaign keys are the
settings dataclasses' fields, and a campaign refuses exactly what the command refuses, with the same line."""

from __future__ import annotations

from typing import Any

import pytest
import typer
from typer.testing import CliRunner

from servotool.cli.app import app
from servotool.runs.arm.settings import LagOptions, StepOptions
from servotool.runs.bus.sweep_options import SweepOptions
from servotool.runs.campaign.plan import OPTIONS, CampaignInvalid, load_campaign
from servotool.runs.options import campaign_keys, options_of

runner = CliRunner()
J_MAX_LINE = "--j-max bounds the otg shaper only; add --shaper otg (shaped steps) or leave it out"

CAMPAIGN = """
name: jerk
purpose: a jerk bound on an accel-shaped step
device: sim:fr3
runs:
  - why: accel shaper with a jerk bound
    command: step
    options: {joint: 0, size: 1.5, steps: 1, j_max: 5000}
"""

# the options a command has that are no setting of its run: the device, the output and its rendering
NOT_SETTINGS = {
    "lag": {
        "--robot",
        "--out",
        "--plot",
        "--json",
        "--wide",
        "--ramp",
        "--no-ramp",
        "--dry-run",
        "--help",
        "-h",
    },
    "step": {"--robot", "--out", "--plot", "--json", "--wide", "--dry-run", "--help", "-h"},
    "sweep": {
        "--bus",
        "--limits",
        "--update-limits",
        "--force-sim",
        "--dry-run",
        "--out",
        "--json",
        "--plot",
        "--help",
        "-h",
    },
}


def test_a_jerk_bound_on_an_accel_step_is_refused_by_the_command_and_the_campaign_with_one_line(
    write_campaign,
):
    cli = runner.invoke(app, ["step", "--robot", "sim:fr3?clock=sim", "--j-max", "5000", "--steps", "1"])
    assert cli.exit_code == 2, cli.output
    assert J_MAX_LINE in cli.stderr
    with pytest.raises(CampaignInvalid) as info:
        load_campaign(write_campaign(CAMPAIGN))
    (problem,) = info.value.problems
    assert problem.endswith(f"run 1 (step): {J_MAX_LINE}"), problem
    # with the otg shaper the bound has its effect: both accept it
    otg = write_campaign(CAMPAIGN.replace("j_max: 5000", "j_max: 5000, shaper: otg"), "otg.yaml")
    assert load_campaign(otg).runs[0].options["j_max"] == 5000.0


def _command(name: str) -> Any:
    from servotool.cli.lag import lag
    from servotool.cli.step import step
    from servotool.cli.sweep import sweep

    one = typer.Typer(add_completion=False)
    one.command()({"lag": lag, "step": step, "sweep": sweep}[name])
    return typer.main.get_command(one)


def _flags(cls: type) -> set[str]:
    out: set[str] = set()
    for opt in options_of(cls).values():
        if opt.flag:
            out |= set(opt.flag.split("/"))
        if opt.old:  # the former spelling, still taken for a release
            out.add(opt.old)
    return out


@pytest.mark.parametrize(
    ("command", "cls"), [("lag", LagOptions), ("step", StepOptions), ("sweep", SweepOptions)]
)
def test_every_option_and_campaign_key_comes_from_the_one_definition(command, cls):
    cmd = _command(command)
    given = {o for p in cmd.params for o in (*p.opts, *p.secondary_opts)}
    assert given - NOT_SETTINGS[command] == _flags(cls)
    assert OPTIONS[command] == campaign_keys(cls)
    defined = options_of(cls)
    for param in cmd.params:
        if param.name in defined:
            opt = defined[param.name]
            assert param.opts[0] == opt.flag.split("/")[0]
            assert getattr(param, "help", None) == opt.help
    # a default shown by --help is the dataclass's (the speeds as the comma list --speeds takes)
    defaults = {p.name: p.default for p in cmd.params}
    for name, value in vars(cls()).items():
        if name in defaults:
            shown = defaults[name]
            shown = getattr(shown, "value", shown)
            if isinstance(value, tuple):  # speeds as the comma list --speeds takes; no --joint: every joint
                value = ",".join(f"{v:g}" for v in value) if value else None
            if defined.get(name) is not None and defined[name].kind == "joint":  # an arm joint by its name
                value = f"J{value + 1}"
            assert shown == value, name
