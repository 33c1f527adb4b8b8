"""`servotool sweep` end to end on the simulator, on simulated time (`clock=sim`) but for the signal drill."""

import json
import shutil
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from servotool.cli.app import app
from servotool.io.csvlog import read_csv
from servotool.io.limits_yaml import load_limits

runner = CliRunner()


@pytest.fixture(autouse=True)
def own_state_dir(tmp_path, monkeypatch):
    """A simulated arm keeps its pose between commands in the state dir: each test gets its own. The
    default bus runs on simulated time (`clock=sim`): sweeps take no wall-clock time."""
    monkeypatch.setenv("SERVOTOOL_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.setenv("SERVOTOOL_LOCK_DIR", str(tmp_path / "locks"))
    monkeypatch.setenv("SERVOTOOL_BUS", "sim:rosorin-arm?clock=sim")


EXAMPLE = Path(__file__).resolve().parents[2] / "params" / "rosorin-arm-limits.yaml"


def sweep(*args):
    return runner.invoke(app, ["sweep", *args])


@pytest.fixture
def limits_file(tmp_path):
    path = tmp_path / "arm_limits.yaml"
    shutil.copy(EXAMPLE, path)
    return path


def test_sweep_writes_every_output_and_finds_the_obstacle(tmp_path):
    out = tmp_path / "out"
    result = sweep(
        "--bus",
        "sim:rosorin-arm?clock=sim&obstacle_2=740&noise=1",
        "--servo",
        "2",
        "--direction",
        "down",
        "--speed",
        "300",
        "--out",
        str(out),
        "--plot",
        "--json",
    )
    assert result.exit_code == 0, result.output
    assert "SIMULATED" in result.stderr and "no stop key" in result.stderr
    data = json.loads(result.stdout)
    (sw,) = data["sweeps"]
    assert sw["reason"] == "stalled" and abs(sw["stop"] - 740) <= 3 and sw["limit"] == sw["stop"] + 20
    outputs = data["outputs"]
    meta, df = read_csv(outputs["csv"][0])
    assert meta.complete and meta.simulated and meta.config["mode"] == "sweep" and meta.config["joint"] == 2
    assert set(df.event) >= {"cmd", "state", "hold"}
    assert json.loads(Path(outputs["json"]).read_text())["sweeps"][0]["stop"] == sw["stop"]
    assert Path(outputs["png"][0]).read_bytes()[:4] == b"\x89PNG"
    fresh = yaml.safe_load(Path(outputs["yaml"]).read_text())
    assert fresh["rosorin_board_driver"]["ros__parameters"]["arm_limit_2"] == [sw["stop"] + 20, 960]


def test_sweep_merges_into_a_copy_of_the_limits_file(tmp_path, limits_file):
    before = limits_file.read_text()
    result = sweep(
        "--bus",
        "sim:rosorin-arm?clock=sim&obstacle_2=740",
        "--servo",
        "2",
        "--direction",
        "down",
        "--speed",
        "300",
        "--limits",
        str(limits_file),
        "--out",
        str(tmp_path / "o"),
        "--json",
    )
    assert result.exit_code == 0, result.output
    assert limits_file.read_text() == before  # never edited without --update-limits
    merged_path = Path(json.loads(result.stdout)["outputs"]["yaml"])
    merged = merged_path.read_text()
    old, new = load_limits(limits_file), load_limits(merged_path)
    assert new.limits[2] == (760, 941)  # lo from the sweep, hi kept from the file
    assert {k: v for k, v in new.params.items() if k != "arm_limit_2"} == {
        k: v for k, v in old.params.items() if k != "arm_limit_2"
    }
    assert "# claw rotate: free 11..989" in merged  # comments survive
    assert "servotool sweep" in merged.splitlines()[0]
    assert "# was: arm_limit_2: [95, 941]  # shoulder: free back to 961 from rest" in merged


def test_update_limits_rewrites_the_file_and_keeps_a_backup(tmp_path, limits_file):
    limits_file.chmod(0o640)
    before = limits_file.read_text()
    args = (
        "--bus",
        "sim:rosorin-arm?clock=sim&obstacle_4=200",
        "--servo",
        "4",
        "--direction",
        "up",
        "--speed",
        "300",
        "--limits",
        str(limits_file),
        "--update-limits",
        "--force-sim",
        "--out",
        str(tmp_path),
    )
    result = sweep(*args)
    assert result.exit_code == 0, result.output
    assert Path(str(limits_file) + ".bak").read_text() == before
    assert load_limits(limits_file).limits[4] == (121, 180)
    assert "arm_limit_4" in result.stdout
    assert limits_file.stat().st_mode & 0o777 == 0o640  # the file keeps its mode
    first_update = limits_file.read_text()
    result = sweep(*args)  # a second update keeps the first backup and adds the next
    assert result.exit_code == 0, result.output
    assert Path(str(limits_file) + ".bak").read_text() == before
    assert Path(str(limits_file) + ".bak.1").read_text() == first_update
    assert limits_file.stat().st_mode & 0o777 == 0o640


def test_update_limits_through_a_symlink_edits_the_file_it_points_to(tmp_path, limits_file):
    # a parameter file linked into place (colcon --symlink-install, a dotfile manager): the update replaced
    # the link with a regular file and left the file every other reader opens as it was
    link = tmp_path / "linked.yaml"
    link.symlink_to(limits_file.name)
    before = limits_file.read_text()
    result = sweep(
        "--bus",
        "sim:rosorin-arm?clock=sim&obstacle_4=200",
        "--servo",
        "4",
        "--direction",
        "up",
        "--speed",
        "300",
        "--limits",
        str(link),
        "--update-limits",
        "--force-sim",
        "--out",
        str(tmp_path / "o"),
    )
    assert result.exit_code == 0, result.output
    assert link.is_symlink() and link.resolve() == limits_file.resolve()
    assert load_limits(limits_file).limits[4] == (121, 180)
    assert Path(str(link) + ".bak").read_text() == before


def test_update_limits_refuses_a_simulated_bus_before_it_starts(tmp_path, limits_file, monkeypatch):
    import servotool.devices.registry as registry

    def no_open(*args, **kwargs):
        raise AssertionError("the bus must not be opened")

    monkeypatch.setattr(registry, "open_bus", no_open)
    monkeypatch.setattr("servotool.cli.bus_common.open_bus", no_open)
    before = limits_file.read_text()
    result = sweep("--servo", "4", "--limits", str(limits_file), "--update-limits", "--out", str(tmp_path))
    assert result.exit_code == 2
    assert "--force-sim" in result.stderr and "simulated" in result.stderr
    assert limits_file.read_text() == before and not list(tmp_path.glob("*.bak*"))


@pytest.mark.parametrize("out", ["file/sub", "x" * 300])
def test_an_output_folder_that_cannot_be_made_is_refused_before_the_bus_opens(tmp_path, monkeypatch, out):
    # the sweep moved the arm, then found its recording could not be written ('arm held', exit 1); a name
    # too long for the system was a traceback
    def no_open(*args, **kwargs):
        raise AssertionError("the bus must not be opened")

    monkeypatch.setattr("servotool.cli.bus_common.open_bus", no_open)
    (tmp_path / "file").write_text("")
    result = sweep("--servo", "4", "--out", str(tmp_path / out))
    assert result.exit_code == 2, result.output
    (line,) = [ln for ln in result.stderr.splitlines() if ln.startswith("error:")]
    assert "--out" in line and "cannot create the folder" in line
    assert result.exception is None or isinstance(result.exception, SystemExit)


def test_an_output_folder_is_probed_for_writing_before_the_bus_opens(tmp_path, monkeypatch):
    import tempfile

    def no_open(*args, **kwargs):
        raise AssertionError("the bus must not be opened")

    def read_only(*args, **kwargs):  # a read-only mount: the folder is there, nothing can be made in it
        raise PermissionError(30, "Read-only file system")

    monkeypatch.setattr("servotool.cli.bus_common.open_bus", no_open)
    monkeypatch.setattr(tempfile, "NamedTemporaryFile", read_only)
    result = sweep("--servo", "4", "--out", str(tmp_path))
    assert result.exit_code == 2, result.output
    assert f"--out {tmp_path}: cannot write there (Read-only file system)" in result.stderr


def test_every_bad_setting_is_one_line_before_the_bus_opens(tmp_path, monkeypatch):
    def no_open(*args, **kwargs):
        raise AssertionError("the bus must not be opened")

    monkeypatch.setattr("servotool.cli.bus_common.open_bus", no_open)
    result = sweep(
        "--servo", "7", "--speed", "nan", "--inside", "500", "--update-limits", "--out", str(tmp_path)
    )
    assert result.exit_code == 2
    lines = [ln for ln in result.stderr.splitlines() if ln.startswith("error:")]
    assert len(lines) == 5, result.stderr  # the fifth: --update-limits on a simulated bus
    for text in ("--servo 7", "sweep speed nan", "inside 500", "--update-limits needs --limits"):
        assert any(text in ln for ln in lines), (text, lines)
    result = sweep("--speed", "inf", "--out", str(tmp_path))
    assert result.exit_code == 2 and "sweep speed inf" in result.stderr


def test_sweep_refuses_a_silent_joint_servo(tmp_path):
    result = sweep(
        "--bus", "sim:rosorin-arm?clock=sim&silent_3=1&timeout_ms=20", "--servo", "2", "--out", str(tmp_path)
    )
    assert result.exit_code == 2
    assert "3 not answering" in result.stderr
    assert not list(tmp_path.glob("*.csv"))


def test_a_servo_going_silent_mid_sweep_is_a_lost_link(tmp_path):
    out = tmp_path / "out"
    result = sweep(
        "--bus",
        "sim:rosorin-arm?clock=sim&silent_after_2=2.0&timeout_ms=20",
        "--servo",
        "2",
        "--direction",
        "down",
        "--out",
        str(out),
        "--json",
    )
    assert result.exit_code == 3, result.output  # lost mid-run, not refused before motion
    errors = [ln for ln in result.stderr.splitlines() if ln.startswith("error:")]
    assert len(errors) == 1 and "servo 2 stopped answering" in errors[0] and "Traceback" not in result.output
    data = json.loads(result.stdout)
    assert data["exit_code"] == 3 and data["sweeps"][0]["reason"] == "servo went silent"
    meta, df = read_csv(data["outputs"]["csv"][0])
    assert not meta.complete and "servo 2 stopped answering" in meta.end_reason
    assert "hold" in set(df.event)


def test_sweep_refuses_to_start_outside_the_limits(tmp_path):
    limits = tmp_path / "narrow.yaml"
    limits.write_text("rosorin_board_driver:\n  ros__parameters:\n    arm_limit_3: [300, 800]\n")
    result = sweep("--servo", "2", "--limits", str(limits), "--out", str(tmp_path))
    assert result.exit_code == 2
    assert "outside the current limits" in result.stderr and "servo 3" in result.stderr


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--direction", "sideways"], "direction"),
        (["--update-limits"], "--update-limits needs --limits"),
        (["--servo", "7"], "not on this arm"),
    ],
)
def test_bad_options_are_one_line_errors(tmp_path, args, message):
    result = sweep(*args, "--out", str(tmp_path))
    assert result.exit_code == 2
    assert message in result.stderr


def test_key_watcher_sees_any_key_on_a_terminal_and_restores_it(monkeypatch):
    import os
    import termios

    from servotool.cli.sweep import KeyWatcher

    master, slave = os.openpty()
    tty_in = os.fdopen(slave, "r")
    try:
        before = termios.tcgetattr(slave)
        monkeypatch.setattr("sys.stdin", tty_in)
        with KeyWatcher() as keys:
            assert keys.active
            assert termios.tcgetattr(slave)[3] & termios.ICANON == 0  # cbreak: one key is enough
            assert not keys.pressed.is_set()
            os.write(master, b"x")
            assert keys.pressed.wait(2.0)
        assert termios.tcgetattr(slave) == before
    finally:
        tty_in.close()
        os.close(master)


def test_key_watcher_is_inactive_without_a_terminal():
    from servotool.cli.sweep import KeyWatcher

    with KeyWatcher() as keys:  # pytest's stdin is not a terminal
        assert not keys.active and not keys.pressed.is_set()


# --- the limits file merge behind the sweep's YAML output ---------------------------------------------------


def test_merge_into_nothing_makes_a_fresh_parameter_file():
    from servotool.devices.registry import url_facts
    from servotool.io.limits_yaml import merge_limits_text, parse_limits

    node = url_facts("sim:rosorin-arm").limits_node  # a new file takes the node its bus's family names
    text = merge_limits_text(None, {2: (582, 941), 1: (34, 966)}, {2: "found"}, "mapped today", node=node)
    assert text.startswith("# mapped today\nrosorin_board_driver:\n  ros__parameters:\n")
    assert parse_limits(text).limits == {1: (34, 966), 2: (582, 941)}
    assert "arm_limit_2: [582, 941]  # found" in text


def test_merge_adds_a_missing_key_next_to_the_others_and_keeps_the_rest():
    from servotool.io.limits_yaml import merge_limits_text, parse_limits

    original = (
        "other_node:\n  ros__parameters:\n    x: 1\n"
        "rosorin_board_driver:\n  ros__parameters:\n    # speed\n    arm_max_speed: 250.0\n"
        "    arm_limit_1: [34, 966]\n    arm_rest_1: 500\n"
    )
    text = merge_limits_text(original, {3: (40, 881)}, {}, "run")
    parsed = parse_limits(text)
    assert parsed.node == "rosorin_board_driver"
    assert parsed.limits == {1: (34, 966), 3: (40, 881)} and parsed.poses == {"rest": {1: 500}}
    after_1 = text.index("arm_limit_1: [34, 966]\n") + len("arm_limit_1: [34, 966]\n")
    assert text[after_1:].startswith("    arm_limit_3: [40, 881]")
    assert "    # speed\n" in text


def test_merge_under_a_node_with_no_limits_yet():
    from servotool.io.limits_yaml import merge_limits_text, parse_limits

    text = merge_limits_text(
        "rosorin_board_driver:\n    ros__parameters:\n        arm_max_speed: 250.0\n",
        {2: (100, 900)},
        {},
        "run",
    )
    assert "        arm_limit_2: [100, 900]\n" in text
    assert parse_limits(text).params == {"arm_max_speed": 250.0, "arm_limit_2": [100, 900]}


@pytest.mark.parametrize(
    ("text", "match"),
    [
        ("n:\n  ros__parameters:\n    arm_limit_2: [900, 100]\n", "0 <= lo < hi"),
        ("n:\n  ros__parameters:\n    arm_limit_2: [0, 1001]\n", "0 <= lo < hi"),
        ("n:\n  ros__parameters:\n    arm_limit_2: 5\n", r"\[lo, hi\]"),
        ("n: [unclosed\n", "not valid YAML"),
        ("- a\n- b\n", "not a YAML mapping"),
    ],
)
def test_bad_limits_files_are_refused(text, match):
    from servotool.io.limits_yaml import LimitsFileError, parse_limits

    with pytest.raises(LimitsFileError, match=match):
        parse_limits(text, "f.yaml")


def test_merge_refuses_what_it_cannot_edit_safely():
    from servotool.io.limits_yaml import LimitsFileError, merge_limits_text

    twice = (
        "n:\n  ros__parameters:\n    arm_limit_2: [1, 2]\nm:\n  ros__parameters:\n    arm_limit_2: [1, 2]\n"
    )
    with pytest.raises(LimitsFileError):
        merge_limits_text(twice, {2: (5, 6)}, {}, "run")
    flow = "n:\n  ros__parameters: {arm_limit_2: [1, 2], arm_max_speed: 250.0}\n"
    with pytest.raises(LimitsFileError, match="by hand"):
        merge_limits_text(flow, {2: (5, 6)}, {}, "run")


def test_merge_changes_only_the_merged_lines():
    from servotool.io.limits_yaml import merge_limits_text

    original = EXAMPLE.read_text()
    merged = merge_limits_text(original, {2: (760, 941), 11: (3, 4)}, {2: "found", 11: "new"}, "run")
    old, new = original.splitlines(), merged.splitlines()
    assert new[0] == "# run"
    added = [ln for ln in new[1:] if ln not in old]
    removed = [ln for ln in old if ln not in new]
    assert removed == [ln for ln in old if ln.strip().startswith("arm_limit_2:")]
    assert added == [
        "    # was: " + removed[0].strip(),
        "    arm_limit_2: [760, 941]  # found",
        "    arm_limit_11: [3, 4]  # new",
    ]
    # the comment line that followed the last limit still introduces the rest pose
    assert new[new.index("    arm_limit_11: [3, 4]  # new") + 1] == "    # rest: the default holding pose"


def test_progress_renders_the_run_fraction_and_a_status_line():
    from rich.console import Console
    from rich.progress import Progress

    from servotool.cli.sweep import SweepProgress
    from servotool.runs.bus.sweep import SweepEvent

    console = Console(record=True, width=120, force_terminal=False)
    with Progress(console=console) as progress:
        show = SweepProgress(progress)
        show(SweepEvent("start", 2, "down", 0.0, message="servo 2 down from 776", index=0, count=2))
        show(SweepEvent("tick", 2, "down", 0.5, cmd=700, read=702, index=0, count=2, fraction=0.5))
        task = progress.tasks[0]
        assert task.completed == pytest.approx(0.25)
        assert "servo 2 down (1/2): cmd 700 read 702" in task.description
        show(SweepEvent("stop", 2, "down", 1.0, message="stalled", index=0, count=2))
        assert progress.tasks[0].completed == pytest.approx(0.5)
        show(SweepEvent("done", t=2.0, message="all sweeps done", index=2, count=2))
        assert progress.tasks[0].completed == pytest.approx(1.0)
    assert "servo 2 down from 776" in console.export_text()


@pytest.mark.slow
def test_sigterm_mid_sweep_holds_closes_the_csv_and_exits_143(tmp_path):
    import os
    import signal
    import subprocess
    import sys

    env = {
        **os.environ,
        "SERVOTOOL_STATE_DIR": str(tmp_path / "state"),
        "SERVOTOOL_LOCK_DIR": str(tmp_path),
        "PYTHONPATH": os.pathsep.join(sys.path),
    }
    env.pop("SERVOTOOL_BUS")  # real time: the signal lands mid-sweep
    out = tmp_path / "out"
    args = ["sweep", "--servo", "2", "--direction", "down", "--speed", "10", "--out", str(out), "--json"]
    proc = subprocess.Popen(
        [sys.executable, "-m", "servotool", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
        text=True,
    )
    try:
        for line in proc.stderr:  # the run has started once its first sweep is announced
            if "servo 2 down from" in line:
                break
        proc.send_signal(signal.SIGTERM)
        stdout, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 143, err
    assert "stopped by SIGTERM" in err and "Traceback" not in err
    (csv,) = out.glob("sweep-j2-down*.csv")
    meta, df = read_csv(csv)
    # closed with its end line, which says why it ended; the arm was held
    assert not meta.complete and meta.end_reason == "SIGTERM" and "hold" in set(df.event)
    assert json.loads(stdout)["aborted"] is True


def test_a_sweep_on_a_noisy_link_finishes_and_reports_the_damage(tmp_path):
    noisy = "obstacle_2=740&crc_error_rate=0.05&garbage_rate=0.05&seed=3"
    result = sweep(
        "--bus",
        f"sim:rosorin-arm?clock=sim&{noisy}",
        "--servo",
        "2",
        "--direction",
        "down",
        "--speed",
        "300",
        "--out",
        str(tmp_path),
        "--json",
    )
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["sweeps"][0]["reason"] == "stalled"
    assert data["link"]["bad_frames"] > 0 and data["link"]["skipped_bytes"] > 0
    assert "serial link:" in result.stderr


def test_a_yaml_that_is_not_a_limits_file_is_refused(tmp_path):
    campaign = EXAMPLE.parents[1] / "campaigns" / "rosorin-arm-limits.yaml"
    before = campaign.read_text()
    result = sweep("--limits", str(campaign), "--update-limits", "--force-sim", "--out", str(tmp_path))
    assert result.exit_code == 2 and "not a limits parameter file" in result.stderr
    assert campaign.read_text() == before


def test_sweep_human_output_reads_at_80_columns(tmp_path, monkeypatch):
    monkeypatch.setenv("COLUMNS", "80")
    result = sweep(
        "--bus",
        "sim:rosorin-arm?clock=sim&obstacle_2=740",
        "--servo",
        "2",
        "--direction",
        "down",
        "--speed",
        "300",
        "--out",
        str(tmp_path / "o"),
    )
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[0].startswith("1 sweep(s), limits in pulses: servo 2 "), lines[0]
    assert "pulses" in lines[3] and "…" not in result.stdout
    assert all(len(line.rstrip()) <= 80 for line in lines)


def test_a_relaxed_arm_is_refused_before_anything_moves(tmp_path):
    bus = "sim:rosorin-arm?clock=sim"
    assert runner.invoke(app, ["servo", "move", "--bus", bus, "--to", "pretuck"]).exit_code == 0
    assert runner.invoke(app, ["servo", "relax", "--bus", bus]).exit_code == 0
    out = tmp_path / "out"
    result = sweep("--bus", bus, "--servo", "2", "--out", str(out))
    # a limp elbow would sag below its stored range once the shoulder moves: refused, nothing sent
    assert result.exit_code == 2, result.output
    assert "torque off" in result.stderr and "Traceback" not in result.output
    assert not list(out.glob("*.csv"))
    assert runner.invoke(app, ["servo", "hold", "--bus", bus]).exit_code == 0
    result = sweep("--bus", bus, "--servo", "2", "--speed", "300", "--out", str(out), "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert [s["direction"] for s in data["sweeps"]] == ["down", "up"] and data["fault"] is False
    read = runner.invoke(app, ["servo", "read", "--bus", bus, "--json"])
    assert read.exit_code == 0, read.output


def test_a_dynamixel_bus_without_joints_is_one_error_line(tmp_path):
    # the bus refusal named the problem; "no joints to sweep" only followed from it (no arm profile)
    result = sweep("--bus", "sim:microduck?clock=sim", "--out", str(tmp_path))
    assert result.exit_code == 2, result.output
    errors = [ln for ln in result.stderr.splitlines() if ln.startswith("error:")]
    assert len(errors) == 1 and "Dynamixel" in errors[0], errors


@pytest.mark.parametrize("bus", ["sim:microduck?clock=sim", "dxl:///dev/nonexistent-dxl?ids=10"])
def test_a_dynamixel_bus_is_refused_before_it_opens(tmp_path, monkeypatch, bus):
    # the sweep ran 120 s (simulated) on servo 10, then its limits could not be written (the limits file
    # holds 0-1000 pulses) and it ended 'refused' (exit 2) after all that motion
    def no_open(*args, **kwargs):
        raise AssertionError("the bus must not be opened")

    monkeypatch.setattr("servotool.cli.bus_common.open_bus", no_open)
    result = sweep("--bus", bus, "--servo", "10", "--direction", "up", "--out", str(tmp_path))
    assert result.exit_code == 2, result.output
    (line,) = [ln for ln in result.stderr.splitlines() if ln.startswith("error:")]
    assert "Dynamixel" in line and "0-1000" in line
    assert not list(tmp_path.iterdir())


def test_a_sweep_speed_below_one_pulse_a_second_is_refused_before_the_bus_opens():
    # --speed 1e-300 ran a sweep that would end in some 1e302 s
    result = runner.invoke(
        app, ["sweep", "--bus", "hiwonder:///dev/servotool-no-such-port", "--speed", "1e-300"]
    )
    assert result.exit_code == 2, result.output
    assert "outside [1, 300]" in result.stderr and "cannot open" not in result.stderr


def _alias_bomb(levels: int) -> str:
    """A limits file of a few lines whose aliases stand for 9**levels items."""
    lines = [
        "n:",
        "  ros__parameters:",
        "    arm_limit_2: [100, 900]",
        "    b0: &b0 [" + ", ".join(["x"] * 9) + "]",
    ]
    lines += [f"    b{i}: &b{i} [" + ", ".join([f"*b{i - 1}"] * 9) + "]" for i in range(1, levels)]
    return "\n".join(lines) + "\n"


def test_merging_into_a_file_of_nested_aliases_takes_no_longer_than_the_file_is_long(tmp_path):
    # eleven levels of nine aliases stand for 3e10 items: checking the merge compared them one by one (minutes
    # after the sweep, the arm held and Ctrl-C only counted); each shared node is compared once. In a process
    # of its own: that comparison runs in C, where no timeout can stop it
    import subprocess
    import sys

    path = tmp_path / "limits.yaml"
    path.write_text(_alias_bomb(11))
    code = (
        "import sys; from pathlib import Path; from servotool.io.limits_yaml import merge_limits_text; "
        "sys.stdout.write(merge_limits_text(Path(sys.argv[1]).read_text(), {2: (120, 880)}, "
        "{2: 'found'}, 'mapped today'))"
    )
    done = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True, text=True, timeout=30)
    assert done.returncode == 0, done.stderr
    assert "arm_limit_2: [120, 880]" in done.stdout
    assert "*b9" in done.stdout  # the aliases are kept, not written out


def test_merging_keeps_a_nan_elsewhere_in_the_file():
    # the check that every other key is unchanged compares YAML's one .nan object with itself
    from servotool.io.limits_yaml import merge_limits_text, parse_limits

    text = merge_limits_text(
        "n:\n  ros__parameters:\n    arm_limit_2: [100, 900]\n    gain: .nan\n",
        {2: (120, 880)},
        {},
        "mapped today",
    )
    assert parse_limits(text).limits[2] == (120, 880) and "gain: .nan" in text


@pytest.mark.parametrize("speed", ["inf", "301", "1e400"])
def test_a_bad_sweep_speed_is_one_error_line(monkeypatch, speed):
    # the return speed (derived from --speed, never given) was refused on a line of its own
    def no_open(*args, **kwargs):
        raise AssertionError("the bus must not be opened")

    monkeypatch.setattr("servotool.cli.bus_common.open_bus", no_open)
    result = sweep("--servo", "4", "--speed", speed)
    assert result.exit_code == 2, result.output
    lines = [ln for ln in result.stderr.splitlines() if ln.startswith("error:")]
    assert len(lines) == 1 and "sweep speed" in lines[0], result.stderr
