"""Bad settings are refused before any device is opened: one line per problem, exit 2, nothing sent.

The address points at ports where nothing listens: a command that tried to open it would end with exit 3
("cannot open"), so exit 2 with the option's name proves the refusal came first.
"""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from servotool.cli.app import app

runner = CliRunner()
NOWHERE = "fairino://127.0.0.1?rpc_port=9&cnde_port=9&udp_port=9&model=fr3"


@pytest.mark.parametrize(
    ("args", "option"),
    [
        (["lag", "--a-max", "nan"], "--a-max"),
        (["lag", "--a-max", "inf"], "--a-max"),
        (["lag", "--v-max", "nan"], "--v-max"),
        (["lag", "--v-max", "inf"], "--v-max"),
        (["lag", "--sweep", "nan"], "--sweep"),
        (["lag", "--sweep", "inf"], "--sweep"),
        (["lag", "--sweep", "1e9"], "--sweep"),
        (["lag", "--sweep", "-1e6"], "--sweep"),
        (["lag", "--sweep", "2000", "--speeds", "5"], "--sweep"),
        (["lag", "--ramp-ms", "nan"], "--ramp-ms"),
        (["lag", "--ramp-ms", "inf"], "--ramp-ms"),
        (["lag", "--settle-ms", "-100"], "--settle-ms"),
        (["lag", "--speeds", "5,nan"], "--speeds"),
        (["step", "--size", "1e6"], "--size"),
        (["step", "--hold-ms", "nan"], "--hold-ms"),
        (["step", "--v-max", "nan"], "--v-max"),
        (["step", "--a-max", "inf"], "--a-max"),
        (["step", "--j-max", "nan"], "--j-max"),
        (["step", "--j-max", "inf"], "--j-max"),
    ],
)
def test_refused_before_the_device_opens(tmp_path, args, option):
    res = runner.invoke(app, [*args, "--robot", NOWHERE, "--out", str(tmp_path)])
    assert res.exit_code == 2, res.stderr
    lines = res.stderr.strip().splitlines()
    assert lines and all(line.startswith("error: refused:") for line in lines), res.stderr
    assert any(option in line for line in lines)
    assert "cannot open" not in res.stderr and "Traceback" not in res.stderr
    assert not list(tmp_path.glob("*.csv"))


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["step", "--size", "90", "--v-max", "360", "--a-max", "2000"], "J1's speed limit of 180"),
        (["lag", "--speeds", "150", "--v-max", "200", "--a-max", "2000"], "J1's speed limit of 120"),
        (["step", "--size", "90", "--v-max", "150", "--a-max", "2000"], "J1's speed limit of 120"),
    ],
)
def test_faster_than_the_joint_is_refused_before_the_device_opens(tmp_path, args, words):
    # a step's shaped wire or a ramp's cruise above the joint's speed limit (FR3: 180 deg/s; an address of
    # unknown model: the slowest known, FR20's 120 deg/s), refused, not clamped, before anything opens
    robot = NOWHERE if "360" in args else NOWHERE.replace("&model=fr3", "")
    res = runner.invoke(app, [*args, "--robot", robot, "--out", str(tmp_path)])
    assert res.exit_code == 2, res.stderr
    assert words in res.stderr and "cannot open" not in res.stderr and "Traceback" not in res.stderr
    assert not list(tmp_path.glob("*.csv"))


def test_every_problem_gets_its_own_line(tmp_path):
    res = runner.invoke(
        app,
        ["lag", "--sweep", "nan", "--ramp-ms", "inf", "--settle-ms", "-100", "--a-max", "nan"]
        + ["--robot", NOWHERE, "--out", str(tmp_path)],
    )
    assert res.exit_code == 2
    lines = res.stderr.strip().splitlines()
    for option in ("--sweep", "--ramp-ms", "--settle-ms", "--a-max"):
        assert sum(option in line for line in lines) == 1, (option, res.stderr)


def test_an_out_folder_that_cannot_be_written_is_refused_first(tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    for cmd in ("lag", "step"):
        res = runner.invoke(app, [cmd, "--robot", NOWHERE, "--out", str(blocker / "runs")])
        assert res.exit_code == 2, res.stderr
        assert "--out" in res.stderr and "cannot open" not in res.stderr and "Traceback" not in res.stderr


def test_a_device_another_process_holds_is_refused_before_opening(tmp_path, monkeypatch):
    """The host-wide lock of the address is taken before opening; an embedded simulator has none."""
    from servotool.io.devlock import DeviceLock
    from servotool.runs.ownership import device_key

    monkeypatch.setenv("SERVOTOOL_LOCK_DIR", str(tmp_path / "locks"))
    assert device_key("sim:fr3") is None
    with DeviceLock(device_key(NOWHERE) or "", tmp_path / "locks"):
        res = runner.invoke(app, ["step", "--robot", NOWHERE, "--out", str(tmp_path)])
    assert res.exit_code == 2 and "in use by another servotool process" in res.stderr


def test_shape_refuses_every_bad_bound_at_once(tmp_path):
    res = runner.invoke(
        app, ["shape", str(tmp_path / "run.csv"), "--a-max", "nan", "--j-max", "inf", "--cmd-ms", "0"]
    )
    assert res.exit_code == 2
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 3 and all(line.startswith("error: refused:") for line in lines), res.stderr


def test_a_goal_outside_the_range_from_the_measured_pose_is_refused_before_enabling(tmp_path):
    """sim:fr3 starts with J1 at 0 deg, J1's range is -175..175: a 200 deg sweep fits the range's width
    (not refused before opening) but not from this pose; refused once the pose is read, nothing enabled."""
    res = runner.invoke(
        app, ["lag", "--robot", "sim:fr3", "--sweep", "200", "--speeds", "40", "--out", str(tmp_path)]
    )
    assert res.exit_code == 2, res.stderr
    assert "outside its range" in res.stderr and "J1" in res.stderr and "warming up" not in res.stderr
    assert not list(tmp_path.glob("*.csv"))
    res = runner.invoke(
        app, ["step", "--robot", "sim:fr3", "--joint", "J3", "--size", "70", "--out", str(tmp_path)]
    )  # J3 at 90 deg, range -150..150: +X leaves it
    assert res.exit_code == 2 and "goal 160.00 deg of J3" in res.stderr, res.stderr
    assert "warming up" not in res.stderr and not list(tmp_path.glob("*.csv"))


@pytest.mark.parametrize("speeds", ["5,,10", ",5", "5,", "5;;10", " , "])
def test_a_speed_list_with_an_empty_item_is_refused(tmp_path, speeds):
    # '5,,10' may be a typo for 5,1,10: which speeds were meant cannot be told
    res = runner.invoke(app, ["lag", "--speeds", speeds, "--robot", NOWHERE, "--out", str(tmp_path)])
    assert res.exit_code == 2 and "--speeds" in res.stderr, res.output
    assert "cannot open" not in res.stderr and "Traceback" not in res.output
