"""`servotool sim` is built from the registry: one sub-command per family with a standalone simulator, its
--profile choices the family's `sim:` names, its --param help its simulator parameters."""

from __future__ import annotations

from typer.testing import CliRunner

from servotool.cli.app import app
from servotool.cli.sim import profile_choices
from servotool.devices.registry import FAMILIES, sim_names

runner = CliRunner()
SERVED = [fam for fam in FAMILIES if fam.serve is not None]
ENV = {"COLUMNS": "400", "TERM": "dumb"}


def test_every_family_with_a_simulator_has_its_sub_command():
    assert SERVED
    listing = runner.invoke(app, ["sim", "--help"], env=ENV)
    assert listing.exit_code == 0
    for fam in SERVED:
        assert fam.name in listing.output
    assert set(profile_choices()) == {fam.name for fam in SERVED}


def test_each_sub_command_takes_its_familys_profiles_and_parameters():
    choices = profile_choices()
    for fam in SERVED:
        assert choices[fam.name] == list(sim_names(fam))
        assert fam.serve is not None and fam.serve.default_profile in choices[fam.name]
        shown = runner.invoke(app, ["sim", fam.name, "--help"], env=ENV)
        assert shown.exit_code == 0
        text = " ".join(shown.output.split())
        for param in fam.sim_params():
            assert param.key in text
        for option in fam.serve.options:
            assert "--" + option.name.replace("_", "-") in text
