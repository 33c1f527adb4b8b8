"""One vocabulary across commands: arm joints by name (--joint J1), bus servos by id (--servo), times in ms
named -ms, --out for folders and --plot FILE for a file, the bus default from the environment and the config
file in every bus command, and the former spellings still taken for a release with a one-line note."""

import pytest
from typer.testing import CliRunner

from servotool.cli.app import app
from servotool.cli.render import LAG_COLUMNS
from servotool.motion.ramp import ramp_profile
from servotool.runs.campaign.plan import load_campaign

runner = CliRunner()
NOTE = "is deprecated: use"


@pytest.fixture(autouse=True)
def own_dirs(own_env):
    """Every test here runs in its own state, lock and config files (tests/cli/conftest.py)."""


def _notes(result) -> list[str]:
    return [line for line in result.stderr.splitlines() if line.startswith("note:")]


def test_an_arm_joint_is_named_j1_to_jn(tmp_path):
    # a cruise far above the joint's limit: refused before anything opens, naming the joint meant
    result = runner.invoke(app, ["lag", "--joint", "J2", "--speeds", "5000", "--out", str(tmp_path)])
    assert result.exit_code == 2, result.output
    assert "J2's speed limit" in result.stderr and not _notes(result)
    beyond = runner.invoke(app, ["step", "--joint", "J9", "--out", str(tmp_path)])
    assert beyond.exit_code == 2 and "--joint J9: this arm has joints J1..J6" in beyond.stderr


def test_the_former_0_based_joint_is_taken_with_a_note(tmp_path):
    result = runner.invoke(app, ["lag", "--joint", "1", "--speeds", "5000", "--out", str(tmp_path)])
    assert result.exit_code == 2, result.output
    (note,) = _notes(result)
    assert "--joint 1 (a 0-based index)" in note and "--joint J2" in note
    assert "J2's speed limit" in result.stderr  # the same joint as before


@pytest.mark.parametrize("text", ["x", "J0", "J", "-1x"])
def test_a_joint_that_names_none_is_one_line(text, tmp_path):
    result = runner.invoke(app, ["step", "--joint", text, "--out", str(tmp_path)])
    assert result.exit_code == 2
    assert "names no joint: name arm joints J1 (the base)" in result.stderr


def test_help_shows_the_new_spellings_only():
    lag = runner.invoke(app, ["lag", "--help"], env={"COLUMNS": "200"})
    assert "J1" in lag.stdout
    sweep = runner.invoke(app, ["sweep", "--help"], env={"COLUMNS": "200"})
    assert "--servo" in sweep.stdout and "--joint" not in sweep.stdout
    read = runner.invoke(app, ["servo", "read", "--help"], env={"COLUMNS": "200"})
    assert "--period-ms" in read.stdout and "--period " not in read.stdout
    for argv in (["record", "--help"], ["incidents", "list", "--help"]):
        shown = runner.invoke(app, argv, env={"COLUMNS": "200"}).stdout
        assert "--out" in shown and "--dest" not in shown
    plot = runner.invoke(app, ["incidents", "plot", "--help"], env={"COLUMNS": "200"}).stdout
    assert "--plot" in plot and "--dest" not in plot


def test_sweep_takes_servo_ids_and_the_former_joint_with_a_note(tmp_path):
    result = runner.invoke(app, ["sweep", "--servo", "7", "--out", str(tmp_path)])
    assert result.exit_code == 2 and "--servo 7: servo 7 not on this arm" in result.stderr
    assert not _notes(result)
    old = runner.invoke(app, ["sweep", "--joint", "7", "--out", str(tmp_path)])
    assert old.exit_code == 2 and "--servo 7: servo 7 not on this arm" in old.stderr
    (note,) = _notes(old)
    assert "--joint" in note and "use --servo" in note


def test_servo_read_period_is_in_ms_and_the_seconds_form_is_noted():
    new = runner.invoke(app, ["servo", "read", "--period-ms", "2000"])
    assert new.exit_code == 2 and "--period-ms is the time between reads with --watch" in new.stderr
    old = runner.invoke(app, ["servo", "read", "--watch", "--period", "20"])
    assert old.exit_code == 2
    (note,) = _notes(old)
    assert "--period 20 (seconds)" in note and "--period-ms 20000" in note
    assert "--period-ms 20000 outside [50, 10000]" in old.stderr  # the seconds read as seconds


def test_record_and_incidents_take_out_for_the_capture_folder(tmp_path):
    caps = tmp_path / "caps"
    listed = runner.invoke(app, ["incidents", "list", "--out", str(caps)])
    assert str(caps) in listed.output and not _notes(listed)
    old = runner.invoke(app, ["incidents", "list", "--dest", str(caps)])
    assert old.output == listed.output or str(caps) in old.output
    (note,) = _notes(old)
    assert "--dest" in note and "use --out" in note
    record = runner.invoke(app, ["record", "--dest", str(caps), "--bus", "/dev/ttyUSB0"])
    assert record.exit_code == 2 and any("use --out" in n for n in _notes(record))


def test_incidents_plot_names_its_png_with_plot_and_the_former_out_png_is_noted(tmp_path):
    caps = tmp_path / "caps"
    caps.mkdir()
    old = runner.invoke(
        app, ["incidents", "plot", "last", "--out", str(tmp_path / "x.png"), "--dest", str(caps)]
    )
    notes = _notes(old)
    assert any("--plot" in n and "x.png" in n for n in notes), old.stderr
    bad = runner.invoke(
        app, ["incidents", "plot", "last", "--out", str(caps), "--plot", str(tmp_path / "x.txt")]
    )
    assert bad.exit_code == 2 and "--plot" in bad.stderr and ".png" in bad.stderr


def test_record_takes_its_bus_from_the_environment(monkeypatch):
    monkeypatch.setenv("SERVOTOOL_BUS", "/dev/ttyUSB9")
    result = runner.invoke(app, ["record", "--duration", "0.1"])
    assert result.exit_code == 2 and "'/dev/ttyUSB9' has no scheme" in result.stderr
    # --robot records the arm: the bus the environment names is a default, not a conflict
    arm = runner.invoke(app, ["record", "--robot", "sim:fr3?clock=sim", "--duration", "0.1"])
    assert arm.exit_code == 2 and "not both" not in arm.stderr and "real time" in arm.stderr
    both = runner.invoke(app, ["record", "--robot", "sim:fr3", "--bus", "sim:microduck"])
    assert both.exit_code == 2 and "not both" in both.stderr


def test_record_takes_its_bus_from_the_config_file(tmp_path):
    (tmp_path / "config.yaml").write_text("bus: 'hiwonder://'\n")
    result = runner.invoke(app, ["record", "--duration", "0.1"])
    assert result.exit_code == 2 and "hiwonder://" in result.stderr


CAMPAIGN = """name: j
purpose: joints by name
device: sim:fr3
safety: {joints: [JOINTS], max_step_deg: 5}
runs:
  - why: one step
    command: step
    options: {joint: JOINT, size: 2, steps: 2}
"""


@pytest.mark.parametrize(("joints", "joint"), [("J2", "J2"), ("1", "1"), ("J2", "1"), ("1", "J2")])
def test_campaign_files_name_joints_as_the_command_line_and_keep_the_index(tmp_path, joints, joint):
    path = tmp_path / "c.yaml"
    path.write_text(CAMPAIGN.replace("JOINTS", joints).replace("JOINT", joint))
    campaign = load_campaign(path)
    assert campaign.runs[0].options["joint"] == 1  # J2, the same joint either way
    shown = runner.invoke(app, ["campaign", "check", str(path)], env={"COLUMNS": "200"})
    assert shown.exit_code == 0 and "joint=J2" in shown.stdout


def test_a_joint_outside_the_campaign_s_is_named(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text(CAMPAIGN.replace("JOINTS", "J1").replace("JOINT", "J3"))
    result = runner.invoke(app, ["campaign", "check", str(path)])
    assert (
        result.exit_code == 2
        and "joint J3 is not among the joints this campaign allows (J1)" in result.stderr
    )


def test_passes_count_from_1():
    profile = ramp_profile(0.0, 2.0, [5.0, 40.0])
    assert profile.notes[0].startswith("pass 3 (out at 40 deg/s)")
    first = LAG_COLUMNS[0]
    assert first.header == "pass" and first.cell(profile.passes[0]) == "1"


def test_a_bus_campaign_takes_its_device_with_bus():
    result = runner.invoke(
        app, ["campaign", "check", "rosorin-arm-limits", "--bus", "sim:rosorin-arm?clock=sim"]
    )
    assert result.exit_code == 0, result.output
    assert "on sim:rosorin-arm?clock=sim" in result.stdout
    both = runner.invoke(
        app, ["campaign", "check", "rosorin-arm-limits", "--bus", "sim:rosorin-arm", "--robot", "sim:fr3"]
    )
    assert both.exit_code == 2 and "not both" in both.stderr


def test_a_seven_joint_arm_takes_j7_before_and_after_opening(tmp_path):
    # the checks before the arm opens use the URL's joint count, not a six-joint default
    url = "sim:franka-fr3?clock=sim"
    args = ["--joint", "J7", "--robot", url, "--out", str(tmp_path)]
    result = runner.invoke(app, ["step", *args, "--size", "2", "--steps", "1", "--hold-ms", "600"])
    assert result.exit_code == 0, result.output
    assert "4 shaped steps" not in result.stdout and "on J7" in result.stdout
    beyond = runner.invoke(app, ["step", "--joint", "J8", "--robot", url, "--out", str(tmp_path)])
    assert beyond.exit_code == 2 and "--joint J8: this arm has joints J1..J7" in beyond.stderr
    lag = runner.invoke(app, ["lag", "--ramp", "--joint", "J8", "--robot", url, "--out", str(tmp_path)])
    assert lag.exit_code == 2 and "--joint J8: this arm has joints J1..J7" in lag.stderr
