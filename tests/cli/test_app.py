import json
import subprocess
import sys

import pytest
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


@pytest.mark.slow
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


# --- the user config file: option > environment variable > config > built-in default ---------------------

CAMPAIGN = "campaigns/fairino-1-simmachine-baseline.yaml"


def _dry_run_folder(env, *extra):
    from pathlib import Path

    repo = Path(__file__).resolve().parents[2]
    result = runner.invoke(app, ["campaign", "run", "--dry-run", str(repo / CAMPAIGN), *extra], env=env)
    assert result.exit_code == 0, result.output
    return "".join(result.output.split())  # a path folded at 80 columns reads back whole (no spaces in it)


@pytest.mark.parametrize("args", [["show"], ["path"], ["set", "out", "runs"], ["unset", "out"]])
def test_config_json_before_the_sub_command_is_json(tmp_path, args):
    # `config --json set out x` took the group's --json and printed text
    env = {"SERVOTOOL_CONFIG": str(tmp_path / "config.yaml"), "SERVOTOOL_OUT": None}
    result = runner.invoke(app, ["config", "--json", *args], env=env)
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["path"] == str(tmp_path / "config.yaml")


def test_config_set_show_and_path(tmp_path):
    cfg = tmp_path / "sub" / "config.yaml"
    env = {"SERVOTOOL_CONFIG": str(cfg), "SERVOTOOL_OUT": None, "SERVOTOOL_ROBOT": None}
    assert runner.invoke(app, ["config", "path"], env=env).output.strip() == str(cfg)
    result = runner.invoke(app, ["config", "set", "robot", "fairino://192.168.58.2"], env=env)
    assert result.exit_code == 0, result.output
    shown = json.loads(runner.invoke(app, ["config", "show", "--json"], env=env).output)
    assert shown["path"] == str(cfg) and shown["exists"]
    assert shown["values"]["robot"] == {
        "value": "fairino://192.168.58.2",
        "source": "config",
        "envvar": "SERVOTOOL_ROBOT",
    }
    assert shown["values"]["out"]["source"] == "built-in"
    assert shown["values"]["limits"]["source"] == "unset"
    alone = json.loads(runner.invoke(app, ["config", "--json"], env=env).output)
    assert alone == shown
    env["SERVOTOOL_ROBOT"] = "sim:fr20"
    shown = json.loads(runner.invoke(app, ["config", "--json"], env=env).output)
    assert shown["values"]["robot"]["source"] == "env SERVOTOOL_ROBOT"
    assert runner.invoke(app, ["config", "unset", "robot"], env=env).exit_code == 0
    assert "robot" not in cfg.read_text()


def test_config_set_and_unset_keep_the_comments_and_say_so(tmp_path):
    cfg = tmp_path / "config.yaml"
    text = "# my defaults\r\nout: 'runs'  # the big disk\r\n\r\n# the lab arm below\r\n"
    cfg.write_bytes(text.encode())
    env = {"SERVOTOOL_CONFIG": str(cfg)}
    result = runner.invoke(app, ["config", "set", "robot", "fairino://192.168.58.2"], env=env)
    assert result.exit_code == 0, result.output
    assert cfg.read_bytes() == (text + "robot: fairino://192.168.58.2\r\n").encode()
    assert runner.invoke(app, ["config", "set", "out", "elsewhere"], env=env).exit_code == 0
    assert runner.invoke(app, ["config", "unset", "robot"], env=env).exit_code == 0
    assert cfg.read_bytes() == text.replace("runs", "elsewhere").encode()
    helps = runner.invoke(app, ["config", "set", "--help"], env={"COLUMNS": "200"}).output
    assert "comments, blank lines, order and layout are kept" in " ".join(helps.split())


def test_config_refuses_unknown_keys_and_bad_files(tmp_path):
    cfg = tmp_path / "config.yaml"
    env = {"SERVOTOOL_CONFIG": str(cfg)}
    result = runner.invoke(app, ["config", "set", "colour", "red"], env=env)
    assert result.exit_code == 2 and "'colour' is not one of" in result.output
    cfg.write_text("robot: [1, 2]\n")
    result = runner.invoke(app, ["version", "--json"], env=env)
    assert result.exit_code == 2
    assert str(cfg) in result.output and "Traceback" not in result.output
    assert runner.invoke(app, ["config", "path"], env=env).exit_code == 0


@pytest.mark.parametrize(
    "key,value",
    [
        ("robot", "fairino://"),
        ("bus", "dxl://"),
        ("robot", "garbage"),
        ("out", "runs\nelsewhere"),
        ("robot", "sim:fr3\x00"),
    ],
)
def test_config_set_refuses_a_value_no_command_could_use(tmp_path, key, value):
    cfg = tmp_path / "config.yaml"
    result = runner.invoke(app, ["config", "set", key, value], env={"SERVOTOOL_CONFIG": str(cfg)})
    assert result.exit_code == 2, result.output
    assert result.output.startswith("error:") and "Traceback" not in result.output
    assert not cfg.exists()


@pytest.mark.parametrize(
    "key,value",
    [
        ("robot", "sim:rosorin-arm"),
        ("robot", "hiwonder:///dev/ttyUSB0"),
        ("bus", "sim:fr3"),
        ("bus", "fairino://192.168.58.2"),
    ],
)
def test_config_set_refuses_a_device_of_the_wrong_kind(tmp_path, key, value):
    cfg = tmp_path / "config.yaml"
    result = runner.invoke(app, ["config", "set", key, value], env={"SERVOTOOL_CONFIG": str(cfg)})
    assert result.exit_code == 2, result.output
    assert result.output.startswith(f"error: {key}:") and "not a" in result.output
    assert not cfg.exists()


@pytest.mark.parametrize(
    "text", [b"\xff\xfe robot: sim:fr3\n", b"robot: sim:fr3\nrobot: fairino://192.168.58.2\n"]
)
def test_a_hand_edited_config_file_gets_one_line(tmp_path, text):
    # bytes that are not UTF-8, and a key written twice (which one is meant cannot be told)
    cfg = tmp_path / "config.yaml"
    cfg.write_bytes(text)
    for args in (["config", "show"], ["config", "set", "out", "x"], ["lag", "--out", str(tmp_path)]):
        result = runner.invoke(app, args, env={"SERVOTOOL_CONFIG": str(cfg), "SERVOTOOL_ROBOT": None})
        assert result.exit_code == 2, (args, result.output)
        assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
        assert result.output.startswith("error:") and str(cfg) in result.output
    assert cfg.read_bytes() == text


def test_out_folder_precedence(tmp_path):
    cfg = tmp_path / "config.yaml"
    cfg.write_text(f"out: {tmp_path / 'from-config'}\n")
    env = {"SERVOTOOL_CONFIG": str(cfg), "SERVOTOOL_OUT": None}
    assert str(tmp_path / "from-config") in _dry_run_folder(env)
    env["SERVOTOOL_OUT"] = str(tmp_path / "from-env")
    assert str(tmp_path / "from-env") in _dry_run_folder(env)
    assert str(tmp_path / "from-option") in _dry_run_folder(env, "--out", str(tmp_path / "from-option"))


def test_config_robot_is_the_default_device(tmp_path):
    cfg = tmp_path / "config.yaml"
    cfg.write_text("robot: 'bogus:nowhere'\n")
    env = {"SERVOTOOL_CONFIG": str(cfg), "SERVOTOOL_ROBOT": None}
    result = runner.invoke(app, ["lag", "--json", "--out", str(tmp_path)], env=env)
    assert result.exit_code == 2
    assert "bogus:nowhere" in result.output
    result = runner.invoke(app, ["lag", "--help"], env={**env, "COLUMNS": "80"})
    assert "SERVOTOOL_ROBOT" in result.output


@pytest.mark.timeout(60)
def test_a_hand_edited_file_that_never_ends_is_refused_not_read_to_the_end(tmp_path):
    # /dev/zero as a campaign, a limits or a config file: read whole, it filled the memory in seconds
    cases = [
        (["campaign", "check", "/dev/zero"], {}),
        (
            ["servo", "move", "--bus", "sim:rosorin-arm?clock=sim", "--to", "2=500", "--limits", "/dev/zero"],
            {},
        ),
        (["config", "show"], {"SERVOTOOL_CONFIG": "/dev/zero"}),
    ]
    for args, env in cases:
        result = runner.invoke(app, args, env={"SERVOTOOL_STATE_DIR": str(tmp_path), **env})
        assert result.exit_code == 2, (args, result.output)
        assert "larger than" in result.output and "Traceback" not in result.output
