"""The command-line conventions every command keeps: -h, --version, tidy help at 80 columns, lazy imports."""

import json
import subprocess
import sys

import pytest
import typer
from typer.testing import CliRunner

from servotool import __version__
from servotool.cli.app import COMMANDS, app, load_command

runner = CliRunner()
HEAVY = ("scipy", "pandas", "matplotlib", "pyarrow")


def _command_paths() -> list[list[str]]:
    """Every command and sub-command of the tool, as the words that name it."""
    root = typer.main.get_command(app)
    ctx = typer.Context(root)
    paths: list[list[str]] = [[]]

    def walk(command, path):
        for name in command.list_commands(ctx):
            sub = command.get_command(ctx, name)
            paths.append([*path, name])
            if hasattr(sub, "list_commands"):
                walk(sub, [*path, name])

    walk(root, [])
    return paths


ALL_COMMANDS = _command_paths()


def test_importing_the_app_leaves_heavy_libraries_unloaded():
    code = f"import sys, servotool.cli.app; print([m for m in {HEAVY!r} if m in sys.modules])"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert out.stdout.strip() == "[]"


def test_root_help_leaves_heavy_libraries_unloaded():
    code = (
        "import sys\nfrom servotool.cli.app import app\n"
        "try:\n    app(['--help'])\nexcept SystemExit:\n    pass\n"
        f"print('LOADED', [m for m in {HEAVY!r} if m in sys.modules])"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert "LOADED []" in out.stdout


@pytest.mark.parametrize("entry", COMMANDS, ids=[e.name for e in COMMANDS])
def test_listed_summary_is_the_commands_own_first_line(entry):
    real = load_command(entry)
    assert real.get_short_help_str(limit=400) == typer.core.TyperCommand(
        name=entry.name, help=entry.summary
    ).get_short_help_str(limit=400)


@pytest.mark.parametrize("path", ALL_COMMANDS, ids=[" ".join(p) or "servotool" for p in ALL_COMMANDS])
def test_help_at_80_columns_is_tidy(path):
    result = runner.invoke(app, [*path, "-h"], env={"COLUMNS": "80", "TERM": "dumb"})
    assert result.exit_code == 0, result.output
    assert "<bool>" not in result.output
    assert "<list" not in result.output
    assert "Usage:" in result.output
    assert _ragged_lines(result.output) == []
    assert [ln for ln in result.output.splitlines() if "\u2026" in ln] == []  # no help text cut short


def _ragged_lines(output: str) -> list[str]:
    """Lines of the help's prose (above the first box) broken before the terminal's width required:
    the next line's first word would have fitted after them."""
    prose = output.split("\u256d")[0].splitlines()  # the first box's corner
    ragged = []
    for line, following in zip(prose, prose[1:], strict=False):
        words = following.split()
        if line.strip() and words and len(line.rstrip()) + 1 + len(words[0]) <= 79:
            ragged.append(line)
    return ragged


def test_version_option():
    result = runner.invoke(app, ["--version"])
    assert result.exit_code == 0
    assert result.output.strip() == f"servotool {__version__}"
    result = runner.invoke(app, ["-V"])
    assert result.output.strip() == f"servotool {__version__}"


def test_root_help_shows_exit_codes_and_completion():
    result = runner.invoke(app, ["-h"], env={"COLUMNS": "80", "TERM": "dumb"})
    text = " ".join(result.output.split())
    assert "Exit codes: 0 done" in text
    assert "3 device" in text
    assert "130" in text
    assert "--install-completion" in text
    assert "--verbose" in text and "--quiet" in text


def test_verbose_and_quiet_exclude_each_other():
    result = runner.invoke(app, ["-v", "-q", "version"])
    assert result.exit_code == 2


def test_quiet_is_reset_on_each_invocation():
    from servotool.cli.common import OUTPUT

    assert runner.invoke(app, ["-q", "version", "--json"]).exit_code == 0
    assert OUTPUT.quiet
    assert runner.invoke(app, ["version", "--json"]).exit_code == 0
    assert not OUTPUT.quiet


def test_version_command_still_answers_json():
    result = runner.invoke(app, ["version", "--json"])
    assert json.loads(result.output)["servotool"] == __version__


@pytest.mark.parametrize(
    ("path", "listed"),
    [
        (["step"], "accel|otg"),
        (["shape"], "accel|otg"),
        (["sweep"], "up|down|both"),
        (["sim", "fairino"], "fr3|fr20"),
        (["sim", "hiwonder"], "rosorin-arm"),
        (["sim", "dynamixel"], "microduck"),
    ],
)
def test_choices_are_listed_in_help(path, listed):
    result = runner.invoke(app, [*path, "--help"], env={"COLUMNS": "80", "TERM": "dumb"})
    assert listed in result.output


@pytest.mark.parametrize(
    ("args", "option"),
    [
        (["step", "--shaper", "spline"], "--shaper"),
        (["shape", "run.csv", "--shaper", "spline"], "--shaper"),
        (["sweep", "--direction", "sideways"], "--direction"),
        (["sim", "fairino", "--profile", "fr9"], "--profile"),
        (["sim", "hiwonder", "--profile", "ur5"], "--profile"),
        (["sim", "dynamixel", "--profile", "ur5"], "--profile"),
        (["config", "set", "colour", "red"], "'key'"),
        (["config", "unset", "colour"], "'key'"),
    ],
)
def test_a_value_outside_the_choices_is_a_usage_error(args, option):
    result = runner.invoke(app, args, env={"COLUMNS": "200", "TERM": "dumb"})
    assert result.exit_code == 2
    assert "Invalid value for" in result.stderr and option in result.stderr, result.stderr
    assert "Traceback" not in result.output


def test_choices_take_any_case_and_carry_the_value_string(tmp_path):
    env = {"SERVOTOOL_CONFIG": str(tmp_path / "config.yaml")}
    result = runner.invoke(app, ["config", "set", "OUT", "runs-here", "--json"], env=env)
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["values"] == {"out": "runs-here"}


def test_the_choices_are_the_registries_names():
    from servotool.cli.config import ConfigKeyName
    from servotool.cli.sim import profile_choices
    from servotool.cli.sweep import SweepDirection
    from servotool.devices.dynamixel.profiles import PROFILES as DXL
    from servotool.devices.fairino.profiles import PROFILES as FAIRINO
    from servotool.devices.hiwonder.profiles import PROFILES as HIWONDER
    from servotool.io.user_config import KEYS
    from servotool.runs.bus.sweep import DIRECTIONS

    choices = profile_choices()
    assert choices["fairino"] == list(FAIRINO)
    assert choices["hiwonder"] == list(HIWONDER)
    assert choices["dynamixel"] == list(DXL)
    assert [k.value for k in ConfigKeyName] == list(KEYS)
    assert {d.value for d in SweepDirection} == {*DIRECTIONS, "both"}


@pytest.mark.parametrize(
    ("path", "envvar"),
    [
        (["lag"], "SERVOTOOL_ROBOT"),
        (["step"], "SERVOTOOL_OUT"),
        (["sweep"], "SERVOTOOL_BUS"),
        (["sweep"], "SERVOTOOL_LIMITS"),
        (["servo", "read"], "SERVOTOOL_BUS"),
        (["campaign", "run"], "SERVOTOOL_OUT"),
    ],
)
def test_options_name_their_environment_variable(path, envvar):
    result = runner.invoke(app, [*path, "--help"], env={"COLUMNS": "200", "TERM": "dumb"})
    assert envvar in result.output


def test_quiet_leaves_out_tables_and_verbose_adds_debug_lines():
    assert "servotool" in runner.invoke(app, ["version"]).stdout
    quiet = runner.invoke(app, ["-q", "version"])
    assert quiet.exit_code == 0 and quiet.stdout.strip().splitlines() == [
        runner.invoke(app, ["version"]).stdout.splitlines()[0]
    ]  # the verdict alone: no table, no details
    assert json.loads(runner.invoke(app, ["-q", "version", "--json"]).stdout)["servotool"] == __version__
    loud = runner.invoke(app, ["-v", "version", "--json"])
    assert "debug: config" in loud.stderr
    assert "debug:" not in runner.invoke(app, ["version", "--json"]).stderr


def test_shell_completion_names_commands_and_choices():
    import os
    import shutil

    exe = shutil.which("servotool")
    if exe is None:
        pytest.skip("the servotool script is not installed")
    env = {**os.environ, "_SERVOTOOL_COMPLETE": "complete_bash", "PYTHONPATH": os.pathsep.join(sys.path)}
    names = subprocess.run(
        [exe],
        env={**env, "COMP_WORDS": "servotool st", "COMP_CWORD": "1"},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert names.stdout.split() == ["step"]
    shapers = subprocess.run(
        [exe],
        env={**env, "COMP_WORDS": "servotool step --shaper o", "COMP_CWORD": "3"},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert shapers.stdout.split() == ["otg"]
