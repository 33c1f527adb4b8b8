import json

import pytest
from typer.testing import CliRunner

from servotool.cli.app import app

runner = CliRunner()


@pytest.fixture(autouse=True)
def own_state_dir(tmp_path, monkeypatch):
    """A simulated arm keeps its pose between commands in the state dir: each test gets its own. The
    default bus runs on simulated time (`clock=sim`): moves take no wall-clock time."""
    monkeypatch.setenv("SERVOTOOL_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.setenv("SERVOTOOL_LOCK_DIR", str(tmp_path / "locks"))
    monkeypatch.setenv("SERVOTOOL_BUS", "sim:rosorin-arm?clock=sim")


# a silent servo costs little; a loaded machine still cannot silence a live one: the client waits for the
# simulator to have answered before the reply timeout starts
FAST = "timeout_ms=20&clock=sim"


def invoke(*args):
    return runner.invoke(app, ["servo", *args])


def test_read_table_and_simulated_announcement():
    result = invoke("read")
    assert result.exit_code == 0, result.output
    assert "SIMULATED rosorin-arm" in result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].startswith("6 of 6 servo(s) answered")
    (row,) = [line for line in lines if "shoulder" in line]
    assert row.split()[-4:] == ["776", "12.50", "38", "on"]  # volts and degrees C: the units head the columns
    units = next(line for line in lines if "pulses" in line).split()
    assert units[-4:-1] == ["pulses", "V", "C"]
    assert "…" not in result.stdout


def test_read_json_shows_a_silent_servo():
    result = invoke("read", "--bus", f"sim:rosorin-arm?silent_10=1&{FAST}", "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["simulated"] is True and data["silent"] == [10]
    assert data["servos"]["10"]["position"] is None and data["servos"]["10"]["silent"] is True
    assert data["servos"]["2"]["position"] == 776 and data["servos"]["2"]["voltage_v"] == 12.5


def test_read_table_marks_silent_servos():
    result = invoke("read", "--bus", f"sim:rosorin-arm?silent_3=1&{FAST}")
    assert result.exit_code == 0
    assert "silent" in result.stdout
    assert "servo 3 is not answering" in result.stderr


def test_move_to_a_named_pose():
    result = invoke("move", "--to", "drive", "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["final"] == {"1": 500, "2": 793, "3": 51, "4": 160, "5": 499, "10": 499}
    assert data["speed"] == 250.0 and data["frames"] > 10


def test_move_refuses_an_out_of_limit_goal(tmp_path):
    limits = tmp_path / "limits.yaml"
    limits.write_text("rosorin_board_driver:\n  ros__parameters:\n    arm_limit_4: [121, 935]\n")
    result = invoke("move", "--to", "4=100", "--limits", str(limits))
    assert result.exit_code == 2
    assert "servo 4 goal 100 pulses outside limits [121, 935]" in result.stderr


@pytest.mark.parametrize(
    "text, word",
    [
        # the wider of two limits written for one servo must not win silently
        (b"arm_limit_2: [95, 941]\narm_limit_2: [0, 1000]\n", "written twice"),
        (b"\xff\xfearm_limit_2: [95, 941]\n", "UTF-8"),
        (b"arm_limits_2: [95, 941]\n", "arm_limits_2"),  # a misspelt limit is not left out silently
        (b"arm_limit_two: [95, 941]\n", "arm_limit_two"),
        # another spelling of servo 2 read after the first: the wider limit won, and 2=950 moved
        (b"arm_limit_2: [95, 941]\narm_limit_02: [0, 1000]\n", "arm_limit_02"),
        ("arm_limit_2: [95, 941]\narm_limit_\u0662: [0, 1000]\n".encode(), "arm_limit_\u0662"),
        (b"", "no arm_limit_N"),  # an empty file would check nothing beyond the stored limits
        (b"rosorin_board_driver:\n  ros__parameters:\n    arm_rest_2: 700\n", "no arm_limit_N"),
    ],
)
def test_a_limits_file_that_would_check_less_than_it_says_is_refused(tmp_path, text, word):
    limits = tmp_path / "limits.yaml"
    limits.write_bytes(text)
    result = invoke("move", "--to", "2=950", "--limits", str(limits))
    assert result.exit_code == 2, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    assert word in result.stderr and str(limits) in result.stderr
    assert "SIMULATED" not in result.stderr  # refused before the bus opened


@pytest.mark.parametrize("to", ["2=700", "drive"])
def test_a_goal_servo_the_limits_file_does_not_map_is_refused_before_the_port_opens(tmp_path, to):
    # the file maps servo 3 only: a move of servo 2 was checked against its stored limits alone, without a
    # word, while the user had given the file that was to check it
    limits = tmp_path / "limits.yaml"
    limits.write_text("rosorin_board_driver:\n  ros__parameters:\n    arm_limit_3: [40, 881]\n")
    result = invoke("move", "--to", to, "--limits", str(limits))
    assert result.exit_code == 2, result.output
    (line,) = [ln for ln in result.stderr.splitlines() if "would be checked against" in ln]
    assert "arm_limit_2" in line and "arm_limit_3" not in line and str(limits) in line
    assert "SIMULATED" not in result.stderr  # refused before the bus opened


def test_a_goal_outside_the_limits_file_is_refused_before_the_port_opens(tmp_path):
    limits = tmp_path / "limits.yaml"
    limits.write_text("rosorin_board_driver:\n  ros__parameters:\n    arm_limit_2: [100, 400]\n")
    result = invoke("move", "--to", "2=700", "--limits", str(limits))
    assert result.exit_code == 2, result.output
    assert "servo 2 goal 700 pulses outside limits [100, 400]" in result.stderr
    assert "SIMULATED" not in result.stderr


def test_a_pose_entry_with_another_spelling_of_a_servo_id_is_refused_where_it_is_used(tmp_path):
    # arm_rest_02 after arm_rest_2 replaced it: the pose moved servo 2 to the later entry without a word
    limits = tmp_path / "limits.yaml"
    limits.write_text(
        "rosorin_board_driver:\n  ros__parameters:\n    arm_limit_2: [80, 960]\n"
        "    arm_rest_2: 776\n    arm_rest_02: 900\n"
    )
    result = invoke("move", "--to", "rest", "--limits", str(limits))
    assert result.exit_code == 2, result.output
    assert "arm_rest_02" in result.stderr and "SIMULATED" not in result.stderr


def test_a_saved_simulator_state_holds_a_pose_and_nothing_else(tmp_path):
    import json

    from servotool.io.sim_state import load_sim_state, state_file

    url = "sim:rosorin-arm?clock=sim"
    path = state_file(url)
    path.parent.mkdir(parents=True, exist_ok=True)
    # a stale or edited file: a silent servo, an obstacle, a position that is not a number
    saved = {"start_2": "nan", "start_3": "300.000", "torque_4": "0", "silent_5": "1", "obstacle_2": "500"}
    path.write_text(json.dumps({"url": url, "params": saved}))
    assert load_sim_state(url) == {"start_3": "300.000", "torque_4": "0"}
    result = invoke("read", "--json")
    assert result.exit_code == 0 and "Traceback" not in result.output


def test_move_refuses_the_tuck_reference_and_unknown_poses():
    result = invoke("move", "--to", "tuck")
    assert result.exit_code == 2 and "reference" in result.stderr
    result = invoke("move", "--to", "dance")
    assert result.exit_code == 2 and "unknown pose" in result.stderr


def test_move_with_silent_claw_carries_on_but_silent_joint_refuses():
    result = invoke("move", "--to", "2=760", "--bus", f"sim:rosorin-arm?silent_10=1&{FAST}")
    assert result.exit_code == 0, result.output
    result = invoke("move", "--to", "rest", "--bus", f"sim:rosorin-arm?silent_10=1&{FAST}")
    assert result.exit_code == 0 and "servo 10 silent" in result.stderr
    result = invoke("move", "--to", "2=760", "--bus", f"sim:rosorin-arm?silent_4=1&{FAST}")
    assert result.exit_code == 2 and "4 not answering" in result.stderr


def test_move_speed_is_capped():
    result = invoke("move", "--to", "2=760", "--speed", "400")
    assert result.exit_code == 2


def test_hold():
    result = invoke("hold", "--json")
    assert result.exit_code == 0
    assert json.loads(result.stdout)["held"] == [1, 2, 3, 4, 5, 10]


def test_relax_is_refused_unless_resting_or_forced():
    result = invoke("relax")
    assert result.exit_code == 2
    assert "not resting on itself" in result.stderr and "servo 2 at 776 (tuck 980)" in result.stderr
    result = invoke("relax", "--bus", "sim:rosorin-arm?pose=pretuck&clock=sim", "--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["still_on"] == []
    result = invoke("relax", "--force", "--json")
    assert result.exit_code == 0 and json.loads(result.stdout)["forced"] is True


def test_relax_verdict_says_what_was_done():
    # a forced relax away from the tuck said "torque off (tuck pose, ...)", and a servo that kept its torque
    # on got the same "torque off" verdict and exit 0, under a warning
    rested = invoke("relax", "--bus", "sim:rosorin-arm?pose=pretuck&clock=sim")
    assert rested.exit_code == 0, rested.output
    assert rested.stdout.splitlines()[0].startswith("torque off on 6 servos, in the tuck pose")
    forced = invoke("relax", "--force")
    assert forced.exit_code == 0, forced.output
    first = forced.stdout.splitlines()[0]
    assert first.startswith("torque off on 6 servos, forced") and "not in the tuck pose" in first
    stuck = invoke("relax", "--bus", "sim:rosorin-arm?pose=pretuck&ignore_torque_off_3=1&clock=sim")
    assert stuck.exit_code == 1, stuck.output
    assert "torque off" not in stuck.stdout
    assert "servo 3 still reports torque on after 3 attempts" in stuck.stderr


def test_bad_bus_url_is_one_line():
    result = invoke("read", "--bus", "sim:rosorin-arm?warp=9")
    assert result.exit_code == 2 and "unknown simulator parameter" in result.stderr
    assert "Traceback" not in result.output


# --- a port where no board answers -------------------------------------------------------------------------


@pytest.fixture
def dead_port():
    """A pty nobody answers on: what a serial port with no board looks like."""
    import os
    import tty

    master, slave = os.openpty()
    tty.setraw(slave)
    yield os.ttyname(slave)
    os.close(slave)
    os.close(master)


@pytest.mark.parametrize(
    "args",
    [("read",), ("read", "--json"), ("move", "--to", "drive"), ("hold",), ("relax", "--force")],
)
def test_no_board_on_the_port_exits_3(dead_port, args):
    result = invoke(*args, "--bus", f"hiwonder://{dead_port}?timeout_ms=20")
    assert result.exit_code == 3, result.output
    assert f"no board answered on {dead_port}" in result.stderr
    assert "Traceback" not in result.output


def test_no_board_stops_a_sweep_with_exit_3(dead_port, tmp_path):
    result = runner.invoke(
        app,
        ["sweep", "--bus", f"hiwonder://{dead_port}?timeout_ms=20", "--servo", "2", "--out", str(tmp_path)],
    )
    assert result.exit_code == 3, result.output
    assert f"no board answered on {dead_port}" in result.stderr
    assert not list(tmp_path.glob("*.csv"))


# --- settings checked before the port opens -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "messages"),
    [
        (("move", "--to", "2=700", "--speed", "nan"), ["--speed nan"]),
        (("move", "--to", "2=700", "--speed", "0"), ["--speed 0"]),
        (
            ("move", "--to", "2=1200,7=5", "--speed", "inf"),
            ["--speed inf", "servo 7 is not on this arm", "servo 2 goal 1200 outside 0-1000"],
        ),
        (("move", "--to", "2=x"), ["want id=pulse"]),
        # a second --to used to replace the first without a word: 2=500 then 2=900 moved servo 2 to 900
        (("move", "--to", "2=500", "--to", "2=900"), ["--to given 2 times"]),
        (("move", "--to", "2=500", "--to", "3=400"), ["--to given 2 times"]),
        (("move", "--to", "2=\uff11\uff12"), ["want id=pulse"]),  # full-width digits: int() reads 12
        (("move", "--to", "2=5_00"), ["want id=pulse"]),  # int() reads 500
        (("move", "--to", "tuck"), ["reference"]),
        (("read", "--watch", "--period-ms", "0"), ["--period-ms 0"]),
        (("relax", "--limits", "/nonexistent/limits.yaml"), ["cannot read"]),
    ],
)
def test_bad_settings_are_one_line_each_and_nothing_opens(monkeypatch, args, messages):
    def no_open(*a, **k):
        raise AssertionError("the bus must not be opened")

    monkeypatch.setattr("servotool.cli.bus_common.open_bus", no_open)
    result = invoke(*args)
    assert result.exit_code == 2, result.output
    lines = [ln for ln in result.stderr.splitlines() if ln.startswith("error:")]
    assert len(lines) == len(messages), result.stderr
    for text in messages:
        assert any(text in ln for ln in lines), (text, lines)


# --- the simulated arm keeps its pose between commands ----------------------------------------------------


def test_move_then_relax_can_be_rehearsed_on_the_simulator():
    assert invoke("relax").exit_code == 2  # in the rest pose the arm would drop
    result = invoke("move", "--to", "pretuck", "--json")
    assert result.exit_code == 0, result.output
    result = invoke("relax", "--json")  # the next command finds the arm where the move left it
    assert result.exit_code == 0, result.output
    data = json.loads(invoke("read", "--json").stdout)
    assert data["servos"]["2"]["position"] == 960
    assert all(s["torque"] is False for s in data["servos"].values())
    other = json.loads(invoke("read", "--json", "--bus", "sim:rosorin-arm?noise=0").stdout)
    assert other["servos"]["2"]["position"] == 776  # another URL is another simulator
    assert invoke("forget").exit_code == 0
    assert json.loads(invoke("read", "--json").stdout)["servos"]["2"]["position"] == 776


# --- help and behaviour agree -------------------------------------------------------------------------------


def test_move_help_says_what_the_limits_file_refuses():
    from pathlib import Path

    text = " ".join(invoke("move", "--help").stdout.split())
    assert "pretuck" in text and "refused" in text
    example = Path(__file__).resolve().parents[2] / "params" / "rosorin-arm-limits.yaml"
    result = invoke("move", "--to", "pretuck", "--limits", str(example))
    assert result.exit_code == 2 and "servo 2 goal 960" in result.stderr


def test_relax_speaks_of_one_pose():
    text = " ".join(invoke("relax", "--help").stdout.split())
    assert "tuck pose" in text and "rest pose" not in text
    result = invoke("relax")
    assert "tuck pose" in result.stderr and "rest pose" not in result.stderr


# --- live view ----------------------------------------------------------------------------------------------


@pytest.mark.slow
def test_watch_ends_cleanly_on_ctrl_c(tmp_path):
    import os
    import signal
    import subprocess
    import sys

    env = {**os.environ, "SERVOTOOL_STATE_DIR": str(tmp_path), "PYTHONPATH": os.pathsep.join(sys.path)}
    env.pop("SERVOTOOL_BUS")  # the default bus, in real time
    proc = subprocess.Popen(
        [sys.executable, "-m", "servotool", "servo", "read", "--watch", "--json", "--period-ms", "100"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
        text=True,
    )
    try:
        line = proc.stdout.readline()
        first = json.loads(line)  # one round arrived: the view is live
        assert ": " not in line and ", " not in line  # compact into a pipe, as every --json
        assert first["servos"]["2"]["position"] == 776
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130
    assert "Traceback" not in err and "nothing was written" in err


def test_a_bus_held_by_another_servotool_process_is_refused(dead_port):
    from servotool.io.devlock import DeviceLock
    from servotool.runs.ownership import device_key

    with DeviceLock(device_key(f"hiwonder://{dead_port}")):
        result = invoke("move", "--to", "drive", "--bus", f"hiwonder://{dead_port}?timeout_ms=20")
    assert result.exit_code == 2 and "in use by another servotool process" in result.stderr


def test_a_bus_without_a_hiwonder_profile_is_checked_against_its_own_range():
    # the Dynamixel simulator speaks ticks 0-4095: 2100 is a fine goal there, 5000 is not
    result = invoke("move", "--bus", "sim:microduck?clock=sim", "--to", "11=2100", "--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["goal"] == {"11": 2100}
    result = invoke("move", "--bus", "sim:microduck?clock=sim", "--to", "11=5000")
    assert result.exit_code == 2 and "goal 5000 outside 0-4095" in result.stderr  # before the bus opens


def test_watch_refuses_a_simulator_in_simulated_time():
    # a live view keeps the host's clock: a clock=sim simulator would never move under it
    result = invoke("read", "--bus", "sim:rosorin-arm?clock=sim", "--watch")
    assert result.exit_code == 2 and "simulated time" in result.output


def test_a_joint_that_stops_answering_mid_move_holds_the_arm_and_exits_3():
    # the shoulder loses power 0.3 s (simulated) into a 1.4 s move: the move ended 'done' (exit 0), its
    # final position null and "silent": [] in the JSON
    result = invoke(
        "move", "--bus", f"sim:rosorin-arm?silent_after_2=0.3&{FAST}", "--to", "2=700,3=400", "--json"
    )
    assert result.exit_code == 3, result.output
    err = " ".join(result.stderr.split())
    assert "servo 2 stopped answering 0.3" in err and "the move stopped there" in err
    # held is said of the servos whose hold was read back, and the lost one is named as not held
    assert "servos 1, 3, 4, 5, 10 held" in err and "servo 2 not answering: not held" in err
    assert result.stdout == ""


def test_the_claw_that_stops_answering_mid_move_is_a_note():
    # the claw is optional on this arm (a silent claw at the start is carried too): the joints' move stands
    result = invoke(
        "move", "--bus", f"sim:rosorin-arm?silent_after_10=0.3&{FAST}", "--to", "2=700,10=300", "--json"
    )
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["final"]["10"] is None and data["final"]["2"] == 700


def test_a_goal_servo_with_a_latched_hardware_error_is_refused_before_motion():
    # servo 10 answers with its alert bit and its torque is off: the move went out and said 'moved 1 servo
    # to 10=2100, within 55 pulses' (exit 0) while nothing had moved
    result = invoke("move", "--bus", "sim:microduck?clock=sim&latched=10", "--to", "10=2100")
    assert result.exit_code == 2, result.output
    assert "servo 10 (0x20 OVERLOAD): hardware error latched" in result.stderr
    assert "nothing moved" in result.stderr
    assert "moved 1 servo" not in result.stdout


def test_a_servo_that_latches_a_hardware_error_mid_move_is_a_fault():
    # the overload latches 0.2 s (simulated) into the move: it ended 384 pulses short with exit 0
    result = invoke("move", "--bus", "sim:microduck?clock=sim&overload=10@0.2", "--to", "10=2300", "--json")
    assert result.exit_code == 1, result.output
    assert "servo 10 latched hardware error 0x20" in result.stderr and "arm held" in result.stderr
    assert result.stdout == ""


def test_hold_names_a_servo_with_a_latched_hardware_error_and_exits_1():
    # servo 10's torque is off until a reboot: hold said 'holding servos 10, 11, ...' (exit 0) while servo 10
    # held nothing
    result = invoke("hold", "--bus", "sim:microduck?clock=sim&latched=10")
    assert result.exit_code == 1, result.output
    assert "servo 10 (0x20 OVERLOAD)" in result.stderr and "does not hold" in result.stderr
    assert "holding servos" not in result.stdout
    assert len(result.stderr.strip().splitlines()) == 2  # the announcement and one error line


def test_hold_json_with_a_latched_servo_prints_no_held_document():
    result = invoke("hold", "--bus", "sim:microduck?clock=sim&latched=10,12", "--json")
    assert result.exit_code == 1, result.output
    assert result.stdout == ""
    assert "servo 10 (0x20 OVERLOAD), 12 (0x20 OVERLOAD)" in result.stderr


@pytest.mark.parametrize("value", ["700.5", "'700'", ".nan", "true", "[700]"])
def test_a_named_pose_with_an_entry_that_is_no_pulse_is_refused(tmp_path, value):
    # the entry was dropped without a word: --to foo moved servo 3 alone, and a bad arm_tuck_2 left relax
    # checking the profile's tuck pose instead of the file's
    limits = tmp_path / "limits.yaml"
    limits.write_text(
        "rosorin_board_driver:\n  ros__parameters:\n    arm_limit_2: [95, 941]\n"
        f"    arm_foo_2: {value}\n    arm_foo_3: 300\n    arm_tuck_2: {value}\n"
    )
    moved = invoke("move", "--to", "foo", "--limits", str(limits))
    assert moved.exit_code == 2, moved.output
    assert "arm_foo_2" in moved.stderr and "moved" not in moved.stdout
    relaxed = invoke("relax", "--limits", str(limits), "--force")
    assert relaxed.exit_code == 2, relaxed.output
    assert "arm_tuck_2" in relaxed.stderr and "torque off" not in relaxed.stdout
    assert invoke("move", "--to", "2=700", "--limits", str(limits)).exit_code == 0  # poses not used: fine


def test_a_goal_servo_with_its_torque_off_is_refused_before_motion(monkeypatch):
    # an X-series servo powers up with torque off and takes a goal without moving: the move sent 30 frames
    # and said 'moved 1 servo to 10=2200, within 152 pulses' (exit 0) while nothing had moved
    from servotool.devices.dynamixel.client import DxlBus

    written = []
    for name in ("write", "write_many", "write_goals", "move", "hold", "torque_on", "torque_off", "reboot"):
        monkeypatch.setattr(DxlBus, name, lambda self, *a, _n=name, **k: written.append(_n))
    result = invoke("move", "--bus", "sim:microduck?clock=sim&torque=0", "--to", "10=2200")
    assert result.exit_code == 2, result.output
    assert "servo 10: torque off" in result.stderr and "nothing moved" in result.stderr
    assert "moved 1 servo" not in result.stdout and written == []


def test_hold_switches_on_a_dynamixel_servo_whose_torque_is_off():
    # 'holding servos 10, 11, ...' (exit 0) while every servo stayed limp: a goal alone does not power one
    from servotool.devices.registry import open_bus
    from servotool.runs.bus.servo import hold

    with open_bus("sim:microduck?clock=sim&torque=0") as bus:
        assert not any(bus.read_torque(sid) for sid in bus.ids)
        before = bus.read_pose()
        result = hold(bus)
        assert result.held == list(bus.ids)
        assert all(bus.read_torque(sid) for sid in bus.ids)
        assert {bus.read(sid, "Goal Position") for sid in bus.ids} == set(before.values())  # where it was


def test_hold_on_a_clean_dynamixel_bus_holds_every_servo():
    result = invoke("hold", "--bus", "sim:microduck?clock=sim", "--json")
    assert result.exit_code == 0, result.output
    assert len(json.loads(result.stdout)["held"]) == 14


@pytest.mark.parametrize("goal", ["11=5000", "11=-1", "11=4096", "11=2000,12=9999"])
def test_a_dynamixel_goal_outside_0_4095_is_refused_before_the_port_opens(goal):
    # nothing listens on this port: a command that opened it would say so and exit 3
    result = invoke("move", "--bus", "dxl:///dev/servotool-no-such-port", "--to", goal)
    assert result.exit_code == 2, result.output
    assert "outside 0-4095" in result.stderr and "cannot open" not in result.stderr


@pytest.mark.parametrize("goal", ["254=2000", "253=2000"])
def test_a_dynamixel_id_no_servo_can_have_is_refused_before_the_port_opens(goal):
    result = invoke("move", "--bus", "dxl:///dev/servotool-no-such-port", "--to", goal)
    assert result.exit_code == 2, result.output
    assert "0-252" in result.stderr and "cannot open" not in result.stderr


def test_an_unknown_dynamixel_id_is_refused_with_nothing_written(monkeypatch):
    from servotool.devices.dynamixel.client import DxlBus

    written = []
    for name in ("write", "write_many", "write_goals", "move", "hold", "torque_on", "torque_off", "reboot"):
        if hasattr(DxlBus, name):
            monkeypatch.setattr(DxlBus, name, lambda self, *a, _n=name, **k: written.append(_n))
    result = invoke("move", "--bus", "sim:microduck?clock=sim", "--to", "99=2000")
    assert result.exit_code == 2, result.output
    assert "servo(s) 99 not on this arm" in result.stderr
    assert written == []


def test_hold_with_a_silent_joint_names_it_and_exits_3():
    # 'holding servos 1, 2, 3, 4, 5, 10' (exit 0) while servo 3 answered nothing
    result = invoke("hold", "--bus", f"sim:rosorin-arm?silent_3=1&{FAST}")
    assert result.exit_code == 3, result.output
    assert "servo 3" in result.stderr and "not answering" in result.stderr and "not held" in result.stderr
    assert "holding servos" not in result.stdout


def test_hold_with_the_silent_claw_holds_the_joints_and_says_so():
    result = invoke("hold", "--bus", f"sim:rosorin-arm?silent_10=1&{FAST}", "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["held"] == [1, 2, 3, 4, 5] and data["silent"] == [10]
    result = invoke("hold", "--bus", f"sim:rosorin-arm?silent_10=1&{FAST}")
    assert result.exit_code == 0 and "holding servos 1, 2, 3, 4, 5" in result.stdout
    assert "servo 10" in result.stderr and "not held" in result.stderr


def test_a_second_command_on_a_simulated_arm_in_use_is_refused_like_on_a_real_one():
    # the simulated arm lives in its state file: two commands at once (a move beside a watch) were two
    # writers to one arm, the last to end deciding where it was; on a real arm the device lock refuses it
    from servotool.io.devlock import DeviceLock
    from servotool.io.sim_state import lock_key

    url = "sim:rosorin-arm?clock=sim"
    with DeviceLock(lock_key(url)):  # what another process's command on this arm holds
        busy = invoke("move", "--to", "2=700", "--bus", url)
        assert busy.exit_code == 2, busy.output
        assert "in use by another servotool process" in busy.stderr and "SIMULATED" not in busy.stderr
    assert invoke("read", "--bus", url).exit_code == 0  # free again
    assert invoke("read", "--bus", "sim:rosorin-arm?clock=sim&seed=2").exit_code == 0  # another arm


def test_forget_is_refused_while_a_command_drives_the_simulated_arm():
    # the running command saves its pose when it ends: a forget meanwhile would be undone without a word
    from servotool.io.devlock import DeviceLock
    from servotool.io.sim_state import lock_key, state_file

    url = "sim:rosorin-arm?clock=sim"
    assert invoke("move", "--to", "2=700", "--bus", url).exit_code == 0
    with DeviceLock(lock_key(url)):
        busy = invoke("forget", "--bus", url)
        assert busy.exit_code == 2 and "in use by another servotool process" in busy.stderr, busy.output
    assert state_file(url).exists()
    assert invoke("forget", "--bus", url).exit_code == 0 and not state_file(url).exists()


@pytest.mark.parametrize("speed", ["1e-300", "0.5", "5e-324"])
def test_a_speed_below_one_pulse_a_second_is_refused_before_the_port_opens(speed):
    # --speed 1e-300 planned a move of some 1e302 s and sampled it whole: the process grew until the
    # kernel killed it (exit 137, the port open, no line)
    result = invoke("move", "--bus", "dxl:///dev/servotool-no-such-port", "--to", "11=2000", "--speed", speed)
    assert result.exit_code == 2, result.output
    assert "outside [1, 300]" in result.stderr and "cannot open" not in result.stderr


def test_a_board_whose_port_vanishes_mid_move_is_a_lost_link_not_a_traceback(monkeypatch):
    # the standalone simulator killed (its pty gone) three frames into a move: pyserial's tcdrain raised
    # termios.error, which no handler took for a lost link (a traceback, exit 1)
    from servotool.devices.hiwonder.client import HiwonderBus
    from servotool.devices.hiwonder.sim import start_sim

    server = start_sim("rosorin-arm", {})
    sent = []
    real_move = HiwonderBus.move

    def move(self, targets, duration_ms):
        sent.append(targets)
        if len(sent) == 3:
            server.close()
        real_move(self, targets, duration_ms)

    monkeypatch.setattr(HiwonderBus, "move", move)
    try:
        result = invoke("move", "--bus", f"hiwonder://{server.path}?timeout_ms=50", "--to", "2=600")
    finally:
        server.close()
    assert result.exit_code == 3, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)
    (line,) = [ln for ln in result.stderr.splitlines() if ln.startswith("error:")]
    assert "link lost" in line and server.path in line
    assert "Traceback" not in result.output


def test_a_period_without_watch_is_refused_not_ignored(monkeypatch):
    # `read --period 2` read once and ignored the period without a word
    def no_open(*args, **kwargs):
        raise AssertionError("the bus must not be opened")

    monkeypatch.setattr("servotool.cli.bus_common.open_bus", no_open)
    result = invoke("read", "--period-ms", "2000")
    assert result.exit_code == 2, result.output
    assert "--period-ms" in result.stderr and "--watch" in result.stderr


def test_a_busy_simulated_arm_is_named_by_its_url_not_its_lock_key():
    # the refusal read 'sim-arm-49454d60efac6ce6 is in use by another servotool process'
    from servotool.io.devlock import DeviceLock
    from servotool.io.sim_state import lock_key

    url = "sim:rosorin-arm?clock=sim"
    with DeviceLock(lock_key(url)):
        for args in (("move", "--to", "2=700"), ("forget",)):
            busy = invoke(*args, "--bus", url)
            assert busy.exit_code == 2, busy.output
            (line,) = [ln for ln in busy.stderr.splitlines() if ln.startswith("error:")]
            assert f"the simulated arm {url} is in use" in line and lock_key(url) not in line


def test_a_limits_file_on_a_dynamixel_bus_is_refused_before_the_port_opens(tmp_path, monkeypatch):
    # a limits file holds the board's pulses (0-1000 over 240 deg); a Dynamixel servo's pulse is another
    # unit (4096 a turn): arm_limit_10 [131, 631] let 'move --to 10=500' go ahead against it, a number of
    # another scale
    def no_open(*args, **kwargs):
        raise AssertionError("the bus must not be opened")

    monkeypatch.setattr("servotool.cli.bus_common.open_bus", no_open)
    limits = tmp_path / "limits.yaml"
    limits.write_text("rosorin_board_driver:\n  ros__parameters:\n    arm_limit_10: [131, 631]\n")
    result = invoke("move", "--to", "10=500", "--limits", str(limits), "--bus", "sim:microduck?clock=sim")
    assert result.exit_code == 2, result.output
    (line,) = [ln for ln in result.stderr.splitlines() if ln.startswith("error:")]
    assert "--limits" in line and "DYNAMIXEL" in line  # the bus family's title
