import threading

import pytest

from servotool.devices.hiwonder import protocol as p
from servotool.devices.hiwonder.profiles import ROSORIN_ARM
from servotool.errors import Refused
from servotool.runs.bus.servo import (
    intersect_limits,
    move_to,
    parse_goal,
    plan_move,
    read_limits,
    relax,
)

TUCK = ROSORIN_ARM.poses["tuck"]
SPAN = (0, 1000)  # the board's position range: a bus's span is its own (DeviceFacts.position_range)


def test_parse_goal():
    assert parse_goal("rest", ROSORIN_ARM.poses) == {1: 500, 2: 776, 3: 211, 4: 161, 5: 500, 10: 499}
    assert parse_goal(" 2=700, 3=200 ", {}) == {2: 700, 3: 200}
    for bad in ("", "dance", "2=x", "2=1,2=3", "2"):
        with pytest.raises(ValueError):
            parse_goal(bad, {"rest": {}})


def test_intersect_limits():
    assert intersect_limits({2: (80, 960), 10: None}, {2: (95, 941)}, SPAN) == {2: (95, 941)}
    assert intersect_limits({4: (0, 1000)}, None, SPAN) == {4: (0, 1000)}
    with pytest.raises(Refused, match="overlap"):
        intersect_limits({2: (80, 960)}, {2: (970, 990)}, SPAN)


def test_move_follows_a_capped_quintic_in_40ms_frames(arm):
    bus, clock = arm("lag_ms=0")
    limits = read_limits(bus)
    result = move_to(bus, clock, {1: 700}, limits=limits, speed=250)
    assert result.final[1] == 700 and not result.aborted
    moves = bus.sim.commands(p.Move)
    assert all(m.command.duration_ms == 40 for m in moves)
    pulses = [m.command.targets[1] for m in moves]
    times = [m.t for m in moves]
    assert pulses[0] == 500 and pulses[-1] == 700
    assert max(b - a for a, b in zip(pulses, pulses[1:], strict=False)) <= 10  # 250 pulses/s * 40 ms
    assert all(b - a == pytest.approx(0.04) for a, b in zip(times, times[1:], strict=False))
    assert result.duration_s == pytest.approx(1.875 * 200 / 250, abs=0.05)


def test_out_of_limit_goal_is_refused_with_nothing_sent(arm):
    bus, clock = arm()
    limits = read_limits(bus, {2: (95, 941)})
    with pytest.raises(Refused, match=r"servo 2 goal 950.*\[95, 941\]"):
        move_to(bus, clock, {1: 600, 2: 950}, limits=limits)
    with pytest.raises(Refused, match="servo 2 goal 980"):
        move_to(bus, clock, TUCK, limits=read_limits(bus))  # the tuck is past servo 2's stored 960
    assert bus.sim.commands(p.Move) == [] and bus.sim.commands(p.Stop) == []


def test_unknown_servo_and_bad_speed_are_refused(arm):
    bus, clock = arm()
    limits = read_limits(bus)
    with pytest.raises(Refused, match="not on this arm"):
        move_to(bus, clock, {7: 500}, limits=limits)
    with pytest.raises(Refused, match="speed"):
        move_to(bus, clock, {1: 600}, limits=limits, speed=400)
    assert bus.sim.commands(p.Move) == []


def test_sagged_start_outside_the_limits_refuses_the_whole_path(arm):
    bus, clock = arm("start_3=-20")
    with pytest.raises(Refused, match="sample 0"):
        move_to(bus, clock, {3: 211}, limits=read_limits(bus))
    assert bus.sim.commands(p.Move) == []


def test_plan_move_checks_every_sample():
    with pytest.raises(Refused, match="sample 0"):
        plan_move({2: 970}, {2: 900}, {2: (80, 960)}, 250)
    traj = plan_move({2: 776}, {2: 900}, {2: (80, 960)}, 250)
    assert traj.at(traj.T) == {2: 900}


def test_silent_joint_refuses(arm):
    bus, clock = arm("silent_2=1&timeout_ms=20")
    with pytest.raises(Refused, match="2 not answering"):
        move_to(bus, clock, {1: 600}, limits={1: (10, 990)})
    assert bus.sim.commands(p.Move) == []


def test_silent_claw_is_carried_and_the_arm_still_moves(arm):
    bus, clock = arm("timeout_ms=20")
    assert bus.read_position(10) == 499
    bus.sim.set_silent(10)
    limits = read_limits(bus)
    goal = dict(ROSORIN_ARM.poses["drive"])
    result = move_to(bus, clock, goal, limits=limits)
    assert result.silent == [10] and result.carried == {10: 499} and result.skipped == {10: 499}
    assert result.final == {1: 500, 2: 793, 3: 51, 4: 160, 5: 499}
    assert all(10 not in m.command.targets for m in bus.sim.commands(p.Move))


def test_abort_mid_move_holds_at_once(arm):
    bus, clock = arm()
    ev = threading.Event()
    frames = []

    def progress(t, targets):
        frames.append(targets)
        if len(frames) == 5:
            ev.set()

    result = move_to(bus, clock, {1: 900}, limits=read_limits(bus), abort_requested=ev, on_progress=progress)
    assert result.aborted and result.frames == 5
    # after the last frame: its read-back of the moving servo, then the hold and nothing else first
    kinds = [type(r.command) for r in bus.sim.received]
    last_move = max(i for i, k in enumerate(kinds) if k is p.Move)
    assert kinds[last_move + 1] is p.ServoRequest and kinds[last_move + 2] is p.Stop


def test_relax_is_refused_away_from_the_tuck(arm):
    bus, clock = arm()
    with pytest.raises(Refused, match="not resting on itself.*servo 2 at 776"):
        relax(bus, clock, tuck=TUCK, joints=(2, 3, 4), tolerance=25)
    sent = [r.command for r in bus.sim.received if isinstance(r.command, p.ServoRequest)]
    assert all(c.sub != p.SubCommand.TORQUE_OFF for c in sent)


def test_relax_in_pretuck_switches_torque_off_and_the_arm_stays(arm):
    bus, clock = arm("pose=pretuck")
    result = relax(bus, clock, tuck=TUCK, joints=(2, 3, 4), tolerance=25)
    assert result.still_on == [] and all(v is False for v in result.torque.values())
    clock.sleep(10.0)
    assert bus.read_pose([2, 3, 4]) == {2: 960, 3: 48, 4: 133}


def test_relax_forced_drops_the_arm_and_a_stubborn_servo_is_reported(arm):
    bus, clock = arm("ignore_torque_off_10=1")
    result = relax(bus, clock, tuck=TUCK, joints=(2, 3, 4), tolerance=25, force=True)
    assert result.forced and result.still_on == [10] and result.attempts == 3
    clock.sleep(30.0)
    assert bus.read_position(3) == -35


def test_watch_reads_every_round_and_writes_nothing_but_reads(arm):
    from servotool.runs.bus.servo import watch

    bus, clock = arm()
    rounds = []
    n = watch(bus, clock, 0.5, rounds.append, rounds=3)
    assert n == 3 and len(rounds) == 3 and clock.now() == pytest.approx(1.5)
    assert rounds[0][2].position == 776 and rounds[0][10].torque is True
    sent = [r.command for r in bus.sim.received]
    assert not any(isinstance(c, (p.Move, p.Stop)) for c in sent)
    assert all(c.sub in p.READ_SUBS for c in sent if isinstance(c, p.ServoRequest))


def test_watch_stops_when_asked(arm):
    from servotool.runs.bus.servo import watch

    bus, clock = arm()
    stop = threading.Event()
    seen = []

    def on_round(records):
        seen.append(records)
        if len(seen) == 2:
            stop.set()

    assert watch(bus, clock, 0.2, on_round, stop=stop) == 2


def test_move_problems_lists_every_problem():
    from servotool.runs.bus.servo import move_problems

    poses = ROSORIN_ARM.poses
    assert move_problems("drive", 250.0, poses, ROSORIN_ARM.ids, span=SPAN) == []
    probs = move_problems("2=1001,9=3", float("nan"), poses, ROSORIN_ARM.ids, span=SPAN)
    assert len(probs) == 3
    assert move_problems("tuck", 100.0, poses, ROSORIN_ARM.ids, ROSORIN_ARM.reference_poses, span=SPAN)[
        0
    ].startswith("pose 'tuck' is a reference")
    (unknown,) = move_problems(
        "nowhere", 100.0, poses, ROSORIN_ARM.ids, ROSORIN_ARM.reference_poses, span=SPAN
    )
    listed = unknown.split("(poses: ")[1].rstrip(")").split(", ")
    assert "pretuck" in listed and "tuck" not in listed  # the targets a move can take, never a reference
