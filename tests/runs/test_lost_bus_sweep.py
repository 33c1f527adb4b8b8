"""`sweep` on a board whose servos stop answering, in lock-step simulated time: nobody answering at the start
is a lost device (exit 3, every servo named, nothing sent); a swept servo that stops answering ends the run
with exit 3, "held" said only of the servos read back after the hold; one that answers again is held where it
is then."""

from __future__ import annotations

import pytest

from servotool.devices.hiwonder import protocol as p
from servotool.errors import ExitCode
from servotool.runs.bus.servo import BusSilent
from servotool.runs.bus.sweep import SweepConfig, run_sweeps

CONFIG = SweepConfig(joints=(2,), directions=("down",))


def test_a_board_where_no_servo_answers_is_lost_before_anything_moves(arm):
    bus, clock = arm("silent=1&timeout_ms=20&retries=0")
    with pytest.raises(BusSilent, match="no servo answered: servo 1, 2, 3, 4, 5, 10 not answering") as info:
        run_sweeps(bus, clock, CONFIG)
    assert info.value.exit_code == ExitCode.DEVICE
    assert bus.sim.commands(p.Move) == [] and bus.sim.commands(p.Stop) == []


def test_a_swept_servo_that_stops_answering_is_named_not_held(arm):
    bus, clock = arm("silent_after_2=1.5&timeout_ms=20")
    run = run_sweeps(bus, clock, CONFIG)
    assert run.exit_code == ExitCode.DEVICE
    assert "servo 2 stopped answering during its sweep; servos 1, 3, 4, 5, 10 held" in run.error
    assert "servo 2 not answering: not held" in run.error


def test_a_swept_servo_that_answers_again_is_held_where_it_is(arm):
    bus, clock = arm("silent_after_2=1.5&silent_until_2=1.8&timeout_ms=20")
    run = run_sweeps(bus, clock, CONFIG)
    assert run.exit_code == ExitCode.DEVICE  # it was lost all the same: the sweep's limit is not found
    assert "servo 2 answered again: held at its position" in run.error
    here = bus.read_position(2)
    assert bus.read_torque(2) is True
    clock.sleep(1.0)
    assert abs(bus.read_position(2) - here) <= 2  # held: it neither sags nor goes on sweeping
