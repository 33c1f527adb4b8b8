import json

import pytest
from typer.testing import CliRunner

from servotool.cli.app import app

runner = CliRunner()


@pytest.fixture(autouse=True)
def own_state_dir(tmp_path, monkeypatch):
    """A simulated arm keeps its pose between commands in the state dir: each test gets its own."""
    monkeypatch.setenv("SERVOTOOL_STATE_DIR", str(tmp_path / "state"))
FAST = "timeout_ms=20"


def invoke(*args):
    return runner.invoke(app, ["servo", *args])


def test_read_table_and_simulated_announcement():
    result = invoke("read")
    assert result.exit_code == 0, result.output
    assert "SIMULATED rosorin-arm" in result.stderr
    for text in ("shoulder", "776", "12.50 V", "38 C", "on"):
        assert text in result.stdout


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
    result = invoke("relax", "--bus", "sim:rosorin-arm?pose=pretuck", "--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["still_on"] == []
    result = invoke("relax", "--force", "--json")
    assert result.exit_code == 0 and json.loads(result.stdout)["forced"] is True


def test_bad_bus_url_is_one_line():
    result = invoke("read", "--bus", "sim:rosorin-arm?warp=9")
    assert result.exit_code == 2 and "unknown simulator parameter" in result.stderr
    assert "Traceback" not in result.output
