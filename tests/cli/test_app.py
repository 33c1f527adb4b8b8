import json
import subprocess
import sys

from typer.testing import CliRunner

from servotool import __version__
from servotool.cli.app import app

runner = CliRunner()


def test_help_explains_the_toolkit():
    result = runner.invoke(app, ["--help"])
    assert result.exit_code == 0
    assert "robot arms and servo buses" in result.output
    assert "version" in result.output


def test_version_json():
    result = runner.invoke(app, ["version", "--json"])
    assert result.exit_code == 0
    info = json.loads(result.output)
    assert info["servotool"] == __version__
    assert info["dependencies"]["numpy"]


def test_python_dash_m_works():
    out = subprocess.run(
        [sys.executable, "-m", "servotool", "version", "--json"],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert json.loads(out.stdout)["servotool"] == __version__


def test_unknown_command_fails_cleanly():
    result = runner.invoke(app, ["frobnicate"])
    assert result.exit_code != 0
