import json

from typer.testing import CliRunner

from servotool.cli.app import app

runner = CliRunner()


def test_sim_hiwonder_prints_its_pty_and_stops():
    result = runner.invoke(app, ["sim", "hiwonder", "--json", "--duration", "0.1",
                                 "--param", "obstacle_2=562", "--param", "silent_10=1", "--seed", "4"])
    assert result.exit_code == 0, result.output
    info = json.loads(result.stdout)
    assert info["path"].startswith("/dev/") and info["url"] == f"hiwonder://{info['path']}"
    assert info["simulated"] is True and info["profile"] == "rosorin-arm"
    servos = info["params"]["servos"]
    assert servos["2"]["obstacles"] == [562] and servos["10"]["silent"] is True
    assert info["params"]["seed"] == 4


def test_sim_hiwonder_table_output():
    result = runner.invoke(app, ["sim", "hiwonder", "--duration", "0.05"])
    assert result.exit_code == 0
    assert "SIMULATED rosorin-arm" in result.stdout and "--bus 'hiwonder:///dev/" in result.stdout


def test_sim_hiwonder_refuses_bad_parameters():
    result = runner.invoke(app, ["sim", "hiwonder", "--param", "warp=9", "--duration", "0"])
    assert result.exit_code == 2 and "unknown simulator parameter" in result.stderr
    result = runner.invoke(app, ["sim", "hiwonder", "--profile", "ur5", "--duration", "0"])
    assert result.exit_code == 2 and "Invalid value for '--profile'" in result.stderr
