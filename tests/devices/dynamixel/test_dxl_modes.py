"""Operating Mode (11): servotool powers and moves position-mode servos only, and never writes the mode.

Wire-level: the production client against the simulator (`sim:microduck?mode=...`), on simulated time.
"""

import json

import pytest

from servotool.devices.dynamixel import control_table as ct
from servotool.devices.dynamixel.protocol import ErrorNumber
from servotool.devices.registry import DeviceURLError, open_bus
from servotool.errors import ExitCode, Refused
from servotool.runs.bus.servo import hold

# servo 12 left in velocity mode with a goal velocity of 50 (11.5 rev/min), torque off: as a wheel or a
# previous program left it
WHEEL = "sim:microduck?clock=sim&torque=0&mode=12:1&goal_velocity=12:50"
WRITES = ("Write", "SyncWrite", "BulkWrite", "Action")


def _writes(bus):
    return {k: n for k, n in bus.sim.instructions.items() if k in WRITES}


def test_hold_on_a_velocity_mode_servo_is_refused_and_nothing_turns():
    # the hold switched torque on and servo 12 turned at its goal velocity: 746 pulses in the first second
    with open_bus(WHEEL) as bus:
        start = bus.sim.state(12)["position"]
        refused = None
        try:
            hold(bus)
        except Refused as exc:
            refused = exc
        bus.clock.sleep(1.0)
        bus.sync()
        turned = bus.sim.state(12)["position"] - start
        assert abs(turned) < 1, f"servo 12 turned {turned:.0f} pulses in 1 s after the hold"
        assert refused is not None and refused.exit_code == ExitCode.USAGE
        assert "servo 12 in velocity (1) mode" in str(refused)
        assert not any(bus.read_torque(sid) for sid in bus.ids)  # no servo of the command was switched on
        assert _writes(bus) == {}


# --- the client: every powering path reads the mode first ---------------------------------------------------


def test_every_powering_write_to_a_servo_in_another_mode_is_refused_before_it_is_sent():
    url = "sim:microduck?clock=sim&torque=0&mode=12:1,13:16,14:4,20:5,21:0"
    with open_bus(url) as bus:
        for call in (
            lambda: bus.set_torque((10, 11, 12), True),
            lambda: bus.torque_on(13),
            lambda: bus.write(14, "Torque Enable", 1),
            lambda: bus.write(12, "Goal Velocity", 0),
            lambda: bus.write(13, ct.GOAL_PWM, 0),
            lambda: bus.write_goals({10: 2048, 20: 2048}),
            lambda: bus.write_many(ct.GOAL_CURRENT, {21: 0}),
            lambda: bus.move({14: 2100}, 40),
            lambda: bus.hold(),
        ):
            with pytest.raises(Refused, match="nothing was written to any servo"):
                call()
        assert _writes(bus) == {}
        assert not any(bus.read_torque(sid) for sid in bus.ids)
        # torque off is the safe side, and a position-mode servo is driven as before
        assert bus.write(12, "Torque Enable", 0) and bus.set_torque((13, 14), False) == {13: True, 14: True}
        bus.hold([10, 11])
        assert bus.read_torque(10) and bus.read_torque(11)


def test_the_refusal_names_every_servo_and_its_mode_on_one_line():
    with (
        open_bus("sim:microduck?clock=sim&mode=12:1,13:16,14:4,20:5,21:0") as bus,
        pytest.raises(Refused) as info,
    ):
        bus.hold()
    text = str(info.value)
    assert "\n" not in text
    assert text.startswith(
        "servo 12 in velocity (1) mode, servo 13 in PWM (16) mode, servo 14 in extended "
        "position (4) mode, servo 20 in current-based position (5) mode, servo 21 in "
        "current (0) mode: "
    )
    assert "position (3) mode only" in text and "never changes the mode (EEPROM)" in text


def test_the_mode_is_read_once_per_servo_not_on_every_frame():
    with open_bus("sim:microduck?clock=sim") as bus:
        assert bus.read_operating_modes((10, 11)) == {10: 3, 11: 3}
        reads = bus.sim.instructions["SyncRead"]
        bus.hold()
        for k in range(5):
            bus.move({11: 2050 + k}, 40)
        # the hold's mode read and its position read of all 14, then none
        assert bus.sim.instructions["SyncRead"] == reads + 2


def test_a_servo_silent_on_the_mode_read_is_left_out_of_a_hold_and_refuses_a_move():
    with open_bus("sim:microduck?clock=sim&torque=0&silent=22&latency_ms=4") as bus:
        bus.hold()
        assert bus.read_torque(21) and bus.read_torque(22) is None
        with pytest.raises(Refused, match="servo 22 not answering the Operating Mode read"):
            bus.move({21: 2100, 22: 2100}, 40)
        assert bus.read(21, ct.GOAL_POSITION) != 2100


def test_nothing_writes_the_operating_mode():
    with open_bus("sim:microduck?clock=sim&torque=0&mode=12:1") as bus:
        with pytest.raises(Refused, match="EEPROM"):
            bus.write(12, ct.OPERATING_MODE, 3)
        assert bus.read(12, ct.OPERATING_MODE) == 1


# --- the commands -------------------------------------------------------------------------------------------


@pytest.fixture
def servo(tmp_path, monkeypatch):
    from typer.testing import CliRunner

    from servotool.cli.app import app

    monkeypatch.setenv("SERVOTOOL_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.setenv("SERVOTOOL_LOCK_DIR", str(tmp_path / "locks"))
    return lambda *args: CliRunner().invoke(app, ["servo", *args], env={"COLUMNS": "80"})


def test_servo_hold_refuses_a_wheel_with_one_line_and_exit_2(servo):
    result = servo("hold", "--bus", WHEEL)
    assert result.exit_code == 2, result.output
    (line,) = [x for x in result.stderr.splitlines() if x.startswith("error:")]
    assert "servo 12 in velocity (1) mode" in line and "nothing was written" in line
    assert result.stdout == ""


def test_servo_move_refuses_a_multi_turn_servo_before_motion(servo):
    # in extended position mode 2100 is not a place in one turn: the servo may be turns away from it
    result = servo("move", "--bus", "sim:microduck?clock=sim&mode=11:4", "--to", "11=2100")
    assert result.exit_code == 2, result.output
    assert "servo 11 in extended position (4) mode" in result.stderr
    assert "moved" not in result.stdout
    assert "stopped" not in result.stderr  # refused before the move began: no hold after frames


def test_servo_read_shows_each_mode_at_80_columns_and_in_json(servo):
    url = "sim:microduck?clock=sim&mode=12:1,20:5&silent=22&latency_ms=4"
    result = servo("read", "--bus", url)
    assert result.exit_code == 0, result.output
    # the verdict naming the bus URL is one line the terminal wraps (the URL stays whole); the table fits 80
    assert url in result.stdout.splitlines()[0]
    lines = [line for line in result.stdout.splitlines() if url not in line]
    assert all(len(line) <= 80 for line in lines) and "…" not in result.stdout
    rows = {
        line.split()[0]: line.split()
        for line in result.stdout.splitlines()
        if line.split()[:1] in (["10"], ["12"], ["20"], ["22"])
    }
    assert rows["10"][-1] == "position" and rows["12"][-2:] == ["velocity", "(1)"]
    assert rows["20"][-3:] == ["current-based", "position", "(5)"] and rows["22"] == ["22", "silent"]
    assert "servo 12 is in velocity (1) mode: move and hold refuse it" in result.stderr
    data = servo("read", "--bus", url, "--json")
    servos = json.loads(data.stdout)["servos"]
    assert (servos["12"]["operating_mode"], servos["12"]["operating_mode_name"]) == (1, "velocity")
    assert servos["10"]["operating_mode"] == 3 and servos["22"]["operating_mode"] is None
    plain = json.loads(servo("read", "--bus", "sim:rosorin-arm?clock=sim", "--json").stdout)["servos"]
    assert "operating_mode" not in plain["2"]  # a board without modes


def test_relax_keeps_its_tuck_rule_and_switches_any_mode_off():
    from servotool.runs.bus.servo import relax

    with open_bus("sim:microduck?clock=sim&mode=12:1,13:16&goal_velocity=12:50&goal_pwm=13:200") as bus:
        pose = bus.read_pose()
        away = {12: pose[12] + 300}
        with pytest.raises(Refused, match="relax refused"):
            relax(bus, bus.clock, tuck={12: pose[12] - 300}, joints=(12,), tolerance=25)
        assert all(bus.read_torque(sid) for sid in bus.ids)  # torque is as it was
        result = relax(bus, bus.clock, tuck=away, joints=(12,), tolerance=400)
        assert result.still_on == [] and not any(bus.read_torque(sid) for sid in bus.ids)


# --- the simulator ------------------------------------------------------------------------------------------


def test_the_simulator_turns_velocity_and_pwm_servos_and_reaches_multi_turn_goals():
    url = "sim:microduck?clock=sim&noise=0&mode=12:1,13:16,14:4&goal_velocity=12:-50&goal_pwm=13:885"
    with open_bus(url) as bus:
        start = {sid: bus.sim.state(sid)["position"] for sid in (12, 13)}
        bus.clock.sleep(2.0)
        turned = {sid: bus.sim.state(sid)["position"] - start[sid] for sid in (12, 13)}
        assert turned[12] == pytest.approx(-50 * ct.PULSES_PER_S_PER_UNIT * 2, rel=0.03)
        assert turned[13] == pytest.approx(445 * ct.PULSES_PER_S_PER_UNIT * 2, rel=0.03)  # full PWM: no-load
        assert bus.read(12, ct.VELOCITY_TRAJECTORY) == -50
    # a multi-turn goal is written at the wire (the client never sends one): three turns out, and back
    from tests.devices.dynamixel.test_dxl_sim import make, read, write

    sim, clock = make(mode="14:4,20:5", noise=0)
    assert write(sim, 14, ct.GOAL_POSITION, 3 * 4096 + 100).error == 0
    assert write(sim, 20, ct.GOAL_POSITION, -5000).error == 0
    assert write(sim, 10, ct.GOAL_POSITION, 5000).error != 0  # position mode: 0-4095 only
    assert write(sim, 14, ct.GOAL_POSITION, ct.MULTI_TURN_RANGE[1] + 1).error != 0
    clock.advance(20.0)
    assert read(sim, 14, ct.PRESENT_POSITION)[0] == pytest.approx(3 * 4096 + 100, abs=30)
    assert read(sim, 20, ct.PRESENT_POSITION)[0] == pytest.approx(-5000, abs=30)


def test_goal_velocity_and_pwm_are_ram_writes_within_their_limits():
    from tests.devices.dynamixel.test_dxl_sim import make, read, write

    sim, _ = make(torque=1)
    assert not ct.GOAL_VELOCITY.eeprom and not ct.GOAL_PWM.eeprom
    assert write(sim, 12, ct.GOAL_VELOCITY, -445).error == 0 and read(sim, 12, ct.GOAL_VELOCITY)[0] == -445
    assert write(sim, 12, ct.GOAL_PWM, 885).error == 0
    assert write(sim, 12, ct.GOAL_VELOCITY, 446).error == ErrorNumber.DATA_LIMIT
    assert write(sim, 12, ct.GOAL_PWM, -886).error == ErrorNumber.DATA_LIMIT


@pytest.mark.parametrize(
    ("value", "match"),
    [
        ("12:2", "not an X-series operating mode"),
        ("12:17", "not an X-series operating mode"),
        ("99:1", "no servo 99"),
        ("12", "want ID:MODE"),
        ("12:1,12:3", "servo 12 given twice"),
        ("12:x", "want ID:MODE"),
        ("-12:1", "want ID:MODE"),
    ],
)
def test_a_bad_mode_parameter_is_refused_with_its_name(value, match):
    from servotool.devices.dynamixel.profiles import MICRODUCK
    from servotool.devices.dynamixel.sim_params import parse_sim_params

    with pytest.raises(DeviceURLError, match=match):
        parse_sim_params(MICRODUCK, {"mode": value})
    with pytest.raises(DeviceURLError, match="Velocity Limit"):
        parse_sim_params(MICRODUCK, {"goal_velocity": "12:446"})
    with pytest.raises(DeviceURLError, match="PWM Limit"):
        parse_sim_params(MICRODUCK, {"goal_pwm": "12:-900"})
    assert parse_sim_params(MICRODUCK, {"mode": "12:1, 13:16"}).modes == {12: 1, 13: 16}
