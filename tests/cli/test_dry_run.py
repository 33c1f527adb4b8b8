"""--dry-run on every command that moves a device: the plan (joints, motion, speeds, duration), exit 0, and
nothing opened, written or moved. A real run says its estimated duration before it starts."""

from __future__ import annotations

import json
import re
from contextlib import contextmanager

import pytest
from typer.testing import CliRunner

from servotool.cli import lag as lag_cli
from servotool.cli import servo as servo_cli
from servotool.cli import step as step_cli
from servotool.cli import sweep as sweep_cli
from servotool.cli.app import app
from servotool.runs.arm.ramp import RampSettings, ramp_plan
from servotool.runs.plan import duration_text

runner = CliRunner()


@pytest.fixture(autouse=True)
def own_dirs(tmp_path, monkeypatch):
    monkeypatch.setenv("SERVOTOOL_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.setenv("SERVOTOOL_LOCK_DIR", str(tmp_path / "locks"))
    monkeypatch.setenv("SERVOTOOL_OUT", str(tmp_path / "out"))
    monkeypatch.setenv("COLUMNS", "80")


@contextmanager
def _never(*args, **kwargs):
    raise AssertionError("a dry run opened a device")
    yield


@pytest.fixture
def no_device(monkeypatch):
    """Any attempt to open an arm or a bus fails the test."""
    monkeypatch.setattr(lag_cli, "live_arm", _never)
    monkeypatch.setattr(step_cli, "live_arm", _never)
    monkeypatch.setattr(sweep_cli, "bus_command", _never)
    monkeypatch.setattr(servo_cli, "bus_command", _never)


DRY_RUNS = [
    ["lag", "--speeds", "15,30,60", "--ramp-ms", "200"],
    ["step", "--size", "5", "--steps", "2"],
    ["step", "--raw"],
    ["sweep", "--servo", "2", "--direction", "down"],
    ["sweep"],
    ["servo", "move", "--to", "2=700,3=200"],
    ["servo", "move", "--to", "rest"],
    ["servo", "hold"],
    ["servo", "relax"],
]


@pytest.mark.parametrize("args", DRY_RUNS, ids=" ".join)
def test_a_dry_run_prints_the_plan_and_opens_nothing(args, tmp_path, no_device):
    result = runner.invoke(app, [*args, "--dry-run"])
    assert result.exit_code == 0, result.output
    for fact in ("plan:", "joints:", "motion:", "speeds:", "duration: estimated"):
        assert fact in result.output
    assert "nothing moved" in result.output
    # the output folder is checked (created and probed) as for a run, and nothing is written into it
    out = tmp_path / "out"
    assert not out.exists() or not [p for p in out.rglob("*") if p.is_file()]
    assert not (tmp_path / "state").exists() or not any((tmp_path / "state").rglob("*"))


@pytest.mark.parametrize("args", DRY_RUNS[:1] + DRY_RUNS[3:4] + DRY_RUNS[5:6], ids=" ".join)
def test_a_dry_run_as_json(args, no_device):
    result = runner.invoke(app, [*args, "--dry-run", "--json"])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert doc["dry_run"] is True and doc["plan"]["duration_s"] > 0


def test_a_dry_run_still_refuses_what_a_run_would(no_device):
    result = runner.invoke(app, ["lag", "--sweep", "500", "--dry-run"])
    assert result.exit_code == 2
    assert "plan:" not in result.output


def test_the_lag_plan_is_the_stream_it_runs():
    s = RampSettings(speeds_deg_s=(15.0, 30.0), sweep_deg=15.0)
    plan = ramp_plan(s)
    # 2 speeds, out and back: 4 passes of 15 deg, cruise 1 s and 0.5 s, plus ramps and rests
    assert "4 passes" in plan.what
    assert 3.0 < plan.duration_s < 6.0


def test_the_sweep_says_its_estimate_before_it_starts_and_keeps_to_it(tmp_path):
    result = runner.invoke(
        app,
        ["sweep", "--bus", "sim:rosorin-arm?clock=sim", "--servo", "2", "--direction", "down"],
    )
    assert result.exit_code == 0, result.output
    estimate = re.search(r"estimated at most ([0-9.]+) s", result.output)
    done = re.search(r"([0-9.]+) s  all sweeps done", result.output)
    assert estimate and done, result.output
    assert result.output.index("estimated at most") < result.output.index("toward stored limit")
    assert float(done.group(1)) <= float(estimate.group(1)) <= 1.5 * float(done.group(1))


def test_durations_read_as_people_say_them():
    assert duration_text(0.25) == "250 ms"
    assert duration_text(12.34) == "12.3 s"
    assert duration_text(295) == "4 min 55 s"
    assert duration_text(3725) == "1 h 02 min"


@pytest.mark.parametrize("name", ["rosorin-arm-limits", "fairino-6-smooth-ramps"])
def test_a_campaign_dry_run_estimates_every_run_and_opens_nothing(name, tmp_path, monkeypatch):
    from pathlib import Path

    from servotool.runs.campaign import run as campaign_run

    def never(*args, **kwargs):
        raise AssertionError("a dry run opened a device")

    monkeypatch.setattr(campaign_run, "open_bus", never)
    monkeypatch.setattr(campaign_run, "_open_arm", never)
    path = Path(__file__).resolve().parents[2] / "campaigns" / f"{name}.yaml"
    result = runner.invoke(app, ["campaign", "run", str(path), "--dry-run"])
    assert result.exit_code == 0, result.output
    assert "estimated" in result.stdout.splitlines()[0] and "nothing was opened" in result.stdout
    doc = json.loads(runner.invoke(app, ["campaign", "run", str(path), "--dry-run", "--json"]).stdout)
    assert doc["estimated_s"] > 0 and all(r["plan"]["duration_s"] > 0 for r in doc["runs"])
    assert not (tmp_path / "out").exists()
