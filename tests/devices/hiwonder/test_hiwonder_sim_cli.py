import json

from typer.testing import CliRunner

from servotool.cli.app import app

runner = CliRunner()


def test_sim_hiwonder_prints_its_pty_and_stops():
    result = runner.invoke(
        app,
        [
            "sim",
            "hiwonder",
            "--json",
            "--duration",
            "0.1",
            "--param",
            "obstacle_2=562",
            "--param",
            "silent_10=1",
            "--seed",
            "4",
        ],
    )
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


def _standalone(family: str, tmp_path):
    """`servotool sim FAMILY` in a process of its own (as a user runs it beside servotool); its JSON line."""
    import os
    import subprocess
    import sys

    env = {**os.environ, "SERVOTOOL_LOCK_DIR": str(tmp_path / "locks")}
    proc = subprocess.Popen(
        [sys.executable, "-m", "servotool", "sim", family, "--json", "--duration", "60"],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env=env,
    )
    assert proc.stdout is not None
    return proc, json.loads(proc.stdout.readline())


def test_a_standalone_simulator_opened_by_its_path_is_announced_as_simulated(tmp_path, monkeypatch):
    # hiwonder:///dev/pts/N of `servotool sim hiwonder` was announced 'device hiwonder:///dev/pts/N' and
    # recorded as real: a sweep wrote its limits into the limits file without --force-sim
    monkeypatch.setenv("SERVOTOOL_LOCK_DIR", str(tmp_path / "locks"))
    for family, ids in (("hiwonder", ""), ("dynamixel", "&ids=10-11")):  # its URL carries ?baud=
        proc, info = _standalone(family, tmp_path)
        try:
            url = info["url"] + ids
            result = runner.invoke(app, ["servo", "read", "--bus", url, "--json"])
            assert result.exit_code == 0, result.output
            assert json.loads(result.stdout)["simulated"] is True
            assert "SIMULATED" in result.stderr
        finally:
            proc.terminate()
            proc.wait(timeout=10)
    # a simulator gone is a simulator no more: its entry is removed when it stops
    assert not list((tmp_path / "locks" / "sim-ptys").glob("*.json"))


def test_a_sweep_on_a_standalone_simulator_does_not_update_limits_without_force_sim(tmp_path, monkeypatch):
    import shutil
    from pathlib import Path

    monkeypatch.setenv("SERVOTOOL_LOCK_DIR", str(tmp_path / "locks"))
    limits = tmp_path / "limits.yaml"
    shutil.copy(Path(__file__).resolve().parents[3] / "params" / "rosorin-arm-limits.yaml", limits)
    before = limits.read_text()
    proc, info = _standalone("hiwonder", tmp_path)
    try:
        result = runner.invoke(
            app,
            [
                "sweep",
                "--bus",
                info["url"],
                "--servo",
                "5",
                "--limits",
                str(limits),
                "--update-limits",
                "--out",
                str(tmp_path / "out"),
            ],
        )
    finally:
        proc.terminate()
        proc.wait(timeout=10)
    assert result.exit_code == 2, result.output
    assert "--force-sim" in result.stderr
    assert limits.read_text() == before
