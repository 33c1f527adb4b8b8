import json

from typer.testing import CliRunner

from servotool.cli.app import app

runner = CliRunner()


def test_sim_dynamixel_prints_its_pty_and_parameters():
    result = runner.invoke(
        app,
        [
            "sim",
            "dynamixel",
            "--json",
            "--duration",
            "0.1",
            "overload=12@5.0",
            "--param",
            "silent=22",
            "--seed",
            "3",
        ],
    )
    assert result.exit_code == 0, result.output
    info = json.loads(result.stdout)
    assert info["path"].startswith("/dev/") and info["url"] == f"dxl://{info['path']}?baud=1000000"
    assert info["simulated"] is True and info["profile"] == "microduck" and len(info["ids"]) == 14
    assert info["groups"]["neck"] == [30, 31, 32, 33]
    params = info["params"]
    assert params["seed"] == 3 and params["overloads"] == [{"id": 12, "at_s": 5.0, "bits": 32}]
    assert params["silent"][0]["id"] == 22


def test_sim_dynamixel_logs_latches_as_they_happen():
    result = runner.invoke(app, ["sim", "dynamixel", "--duration", "0.4", "latched=30@0.1"])
    assert result.exit_code == 0
    assert "SIMULATED microduck" in result.stdout and "--bus 'dxl:///dev/" in result.stdout
    assert "id 30: OVERLOAD" in result.stdout


def test_sim_dynamixel_refuses_bad_parameters():
    result = runner.invoke(app, ["sim", "dynamixel", "--param", "warp=9", "--duration", "0"])
    assert result.exit_code == 2 and "unknown simulator parameter 'warp'" in result.stderr
    result = runner.invoke(app, ["sim", "dynamixel", "--profile", "ur5", "--duration", "0"])
    assert result.exit_code == 2 and "Invalid value for '--profile'" in result.stderr
    result = runner.invoke(app, ["sim", "dynamixel", "overload", "--duration", "0"])
    assert result.exit_code == 2 and "want key=value" in result.stderr
