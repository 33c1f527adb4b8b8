"""Every bus family's simulators, through what a run needs: open, identify, read every servo, hold (a bus's
braked stop), ownership, a lost link and simulated time. Moves go through the real bus run code
(runs/bus/servo.py), in lock-step on simulated time where the simulator has it."""

from __future__ import annotations

import pytest

from servotool.clock import FakeClock
from servotool.devices.bus import Bus, bus_clock, read_records
from servotool.devices.family import BUS
from servotool.devices.registry import DeviceURLError, lock_keys, open_bus, url_facts
from servotool.errors import ConnectionLost
from servotool.runs.bus import servo
from servotool.runs.ownership import claim
from tests.conformance.families import (
    BUS_LOSSES,
    BUS_URLS,
    SERVO_LOSS_AT_S,
    SERVO_LOSSES,
    SIM_CLOCK,
    opened,
    skip_unless,
    with_params,
)

PERIOD_S = 0.04
SPEED = 100.0  # units/s
DISTANCE = 60  # units: a move of about 0.9 s at SPEED

pytestmark = pytest.mark.parametrize("url", BUS_URLS)


def tolerance(bus) -> int:
    """How far a servo held still may still read apart (read noise, a servo settling on its goal)."""
    lo, hi = bus.position_range
    return max(2, (hi - lo) // 200)


def a_move(bus) -> tuple[int, int, int, dict[int, tuple[int, int]]]:
    """(servo, start, goal, limits): the first joint DISTANCE units towards the middle of its limits."""
    limits = servo.read_limits(bus)
    sid = bus.ids[0]
    start = bus.read_position(sid)
    assert start is not None
    lo, hi = limits[sid]
    goal = start + DISTANCE if start + DISTANCE <= hi else start - DISTANCE
    assert lo <= goal <= hi
    return sid, start, goal, limits


def test_open_and_close(url):
    bus = open_bus(url)
    with bus as same:
        assert same is bus
    bus.close()  # idempotent, never raises


def test_identify(url):
    facts = url_facts(url)
    with opened(url, BUS) as (bus, _):
        assert isinstance(bus, Bus)
        assert bus.url in (with_params(url, SIM_CLOCK), url)
        assert bus.simulated is True and facts.simulated
        assert bus.model == facts.model
        assert set(bus.ids) == set(facts.joint_ids) | set(facts.optional_ids)
        assert tuple(bus.optional_ids) == facts.optional_ids
        assert tuple(bus.position_range) == facts.position_range


def test_read_answers_for_every_servo(url):
    with opened(url, BUS) as (bus, _):
        records = read_records(bus)
        lo, hi = bus.position_range
        assert sorted(records) == sorted(bus.ids)
        for sid, rec in records.items():
            assert not rec.silent, sid
            assert isinstance(rec.position, int) and lo <= rec.position <= hi, rec
            assert bus.last_position[sid] == rec.position


def test_a_move_outside_the_position_range_is_refused_and_nothing_moves(url):
    with opened(url, BUS) as (bus, clock):
        sid = bus.ids[0]
        before = bus.read_position(sid)
        lo, hi = bus.position_range
        for pos in (lo - 1, hi + 1):
            with pytest.raises(ValueError):
                bus.move({sid: pos}, 200)
        clock.sleep(0.3)
        after = bus.read_position(sid)
        assert before is not None and after is not None and abs(after - before) <= tolerance(bus)


def test_an_aborted_move_holds_the_servos_where_they_are(url):
    with opened(url, BUS) as (bus, clock):
        sid, start, goal, limits = a_move(bus)
        frames: list[float] = []
        result = servo.move_to(
            bus,
            clock,
            {sid: goal},
            limits=limits,
            speed=SPEED,
            period_s=PERIOD_S,
            on_progress=lambda t, targets: frames.append(t),
            abort_requested=lambda: len(frames) >= 10,
        )
        assert result.aborted and len(frames) == 10
        clock.sleep(0.5)
        held = bus.read_position(sid)
        clock.sleep(0.5)
        later = bus.read_position(sid)
        tol = tolerance(bus)
        assert held is not None and later is not None
        assert abs(later - held) <= tol  # at rest ...
        assert abs(held - goal) > tol and abs(held - start) < abs(goal - start)  # ... short of the goal
        assert servo.hold(bus).held == list(bus.ids)  # and every servo answers, held


def test_clock_sim_moves_in_lock_step_without_waiting_on_the_wall_clock(url):
    try:
        bus = open_bus(with_params(url, SIM_CLOCK))
    except DeviceURLError as exc:
        pytest.skip(f"its simulator has no simulated time: {exc}")
    try:
        clock = bus_clock(bus)
        assert isinstance(clock, FakeClock)
        sid, start, goal, limits = a_move(bus)
        t0 = clock.now()
        frames: list[float] = []
        result = servo.move_to(
            bus,
            clock,
            {sid: goal},
            limits=limits,
            speed=SPEED,
            period_s=PERIOD_S,
            on_progress=lambda t, targets: frames.append(t),
        )
        elapsed = clock.now() - t0
    finally:
        bus.close()
    # every frame went out exactly on its deadline, and the move took its planned time, not the machine's
    assert frames == pytest.approx([k * PERIOD_S for k in range(len(frames))], abs=1e-9)
    assert elapsed == pytest.approx(result.duration_s + 0.2, abs=1e-6)  # the move, then its settle
    assert not result.aborted and result.final[sid] is not None
    assert abs(result.final[sid] - goal) <= 2 * tolerance(bus)


def test_a_simulator_is_its_own_device(url):
    assert lock_keys(url) == []
    with claim(url) as lock:
        assert lock is None
        with opened(url, BUS) as (first, _), opened(url, BUS) as (second, _):
            assert first.read_pose() and second.read_pose()


def test_a_lost_link_is_silence_on_reads_and_a_lost_hold(url):
    loss = skip_unless(BUS_LOSSES, url, "lose its servos")
    with opened(url, BUS, loss.params(url_facts(url))) as (bus, clock):
        assert all(p is not None for p in bus.read_pose().values())
        known = dict(bus.last_position)
        loss.trigger(bus, clock)
        assert bus.read_pose() == dict.fromkeys(bus.ids)  # silent servos read None, never raise
        assert {sid: bus.last_position[sid] for sid in known} == known  # the last known pose is kept
        with pytest.raises(ConnectionLost):
            servo.hold(bus)
        with pytest.raises(servo.BusSilent, match="no servo answered"):
            servo.read_arm(bus)  # nothing moves a bus where nobody answers: a lost device (exit 3)


def test_a_servo_lost_mid_move_stops_the_move_within_a_few_reads_and_is_named_not_held(url):
    loss = skip_unless(SERVO_LOSSES, url, "silence one servo")
    sid = url_facts(url).joint_ids[0]
    with opened(url, BUS, loss.params(sid, False)) as (bus, clock):
        _, start, goal, limits = a_move(bus)
        t0 = clock.now()
        with pytest.raises(servo.MoveServoLost) as info:
            servo.move_to(bus, clock, {sid: goal}, limits=limits, speed=SPEED, recover_s=0.2)
        lost = info.value
        assert lost.exit_code == 3 and lost.lost == [sid] and sid in lost.not_held
        assert lost.detected_s[sid] <= (servo.LOST_READS - 1) * servo.PERIOD_S + 1e-6
        assert clock.now() - t0 < SERVO_LOSS_AT_S + 0.5  # not at its planned end
        assert sid not in lost.held and set(lost.held) == set(bus.ids) - {sid}


def test_a_servo_that_answers_again_after_a_lost_move_holds_where_it_is(url):
    loss = skip_unless(SERVO_LOSSES, url, "silence one servo and bring it back")
    sid = url_facts(url).joint_ids[0]
    with opened(url, BUS, loss.params(sid, True)) as (bus, clock):
        _, start, goal, limits = a_move(bus)
        with pytest.raises(servo.MoveServoLost) as info:
            servo.move_to(bus, clock, {sid: goal}, limits=limits, speed=SPEED)
        lost = info.value
        assert sid in lost.recovered and sid in lost.held and lost.not_held == []
        here = lost.recovered[sid]
        assert bus.last_position[sid] == here  # the position it read when it answered again
        clock.sleep(1.0)
        later = bus.read_position(sid)
        assert later is not None and abs(later - goal) > abs(here - goal) - 2 * tolerance(bus)
        assert abs(later - here) <= 2 * tolerance(bus)
