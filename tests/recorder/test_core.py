"""Each rule of the flight-recorder core on scripted telemetry and a FakeClock (no I/O)."""

from __future__ import annotations

import pytest

from servotool.clock import FakeClock
from servotool.errors import SettingsError
from servotool.recorder import FlightRecorder, RecorderSettings
from servotool.recorder.summary import value
from tests.recorder.helpers import PERIOD, healthy, leg_sweep, run_frames

OVERLOAD = 0x20
OVERHEAT = 0x04


def make(**kw: object) -> tuple[FlightRecorder, FakeClock]:
    clock = FakeClock(100.0)
    rec = FlightRecorder(RecorderSettings(**kw), wall_time=lambda: 1_800_000_000.0)  # type: ignore[arg-type]
    rec.connect(clock.now(), {"url": "scripted"})
    return rec, clock


def latch_after(at: float, faults: dict[int, tuple[float, int]] | None = None, base=healthy):
    faults = faults or {}

    def script(t: float) -> dict[int, int | None]:
        out = dict(base(t))
        for axis, (when, bits) in faults.items():
            if t >= at + when:
                out[axis] = bits
        return out

    return script


def kinds(rec: FlightRecorder) -> list[tuple[str, object]]:
    return [(e.kind, e.axis) for e in rec.drain_events()]


def test_rings_are_bounded_by_count():
    rec, clock = make()
    run_frames(rec, clock, 60.0)
    assert rec.fast_count == 240
    assert rec.context_count == 36


def test_healthy_bus_publishes_nothing():
    rec, clock = make()
    assert run_frames(rec, clock, 20.0) == []
    assert rec.latched == {}


def test_status_poll_once_a_second_prefers_a_frame_without_sweep():
    rec, clock = make()
    polls = []
    # legs are swept on two frames out of three: the poll lands on the sweep-free frame
    for k in range(300):
        now = clock.now()
        legs = k % 3 != 2
        if rec.plan(now, leg_sweep=legs).status:
            polls.append((k, legs))
            rec.on_status(now, healthy(now))
        rec.after_goal_write(now)
        clock.advance(PERIOD)
    assert all(not legs for k, legs in polls[1:])
    gaps = [b - a for (a, _), (b, _) in zip(polls, polls[1:], strict=False)]
    assert all(30 <= g <= 33 for g in gaps), gaps


def test_status_poll_deferred_at_most_two_frames():
    rec, clock = make()
    due_frames = []
    for k in range(200):
        now = clock.now()
        if rec.plan(now, leg_sweep=True).status:
            due_frames.append(k)
            rec.on_status(now, healthy(now))
        clock.advance(PERIOD)
    assert due_frames[0] == 2  # due at connection, deferred twice
    gaps = [b - a for a, b in zip(due_frames, due_frames[1:], strict=False)]
    assert all(g <= 30 + 3 for g in gaps), gaps


def test_one_capture_per_latch_with_tail_and_lead_up():
    rec, clock = make()
    caps = run_frames(rec, clock, 14.0, latch_after(110.0, {12: (0.0, OVERLOAD)}))
    assert len(caps) == 1
    h = caps[0].header
    assert h["trigger_axes"] == [12]
    assert h["trigger"][0]["bits"] == OVERLOAD
    assert h["tail_complete"] and h["end"] == "tail-complete"
    assert h["tail_observed_s"] >= 2.0 - PERIOD
    assert h["lead_up_s"] >= 2.0
    assert -1.2 <= h["last_clean_t"] < 0
    assert h["counts"]["fast"] == 240
    assert len(caps[0].samples) == h["counts"]["fast"] + h["counts"]["context"]
    assert rec.latched == {12: OVERLOAD}


def test_axes_latching_in_the_window_join_it():
    rec, clock = make()
    caps = run_frames(rec, clock, 16.0, latch_after(110.0, {12: (0.0, OVERLOAD), 22: (1.5, OVERHEAT)}))
    assert len(caps) == 1
    assert caps[0].header["trigger_axes"] == [12, 22]
    # the joiner extends the tail, at most to max_tail_s
    assert 2.5 < caps[0].header["tail_planned_s"] <= 4.0


def test_new_axis_after_window_opens_another_capture():
    rec, clock = make()
    caps = run_frames(rec, clock, 20.0, latch_after(106.0, {12: (0.0, OVERLOAD), 22: (5.0, OVERLOAD)}))
    assert [c.header["trigger_axes"] for c in caps] == [[12], [22]]


def test_more_bits_on_a_latched_axis_are_logged_not_captured():
    rec, clock = make()
    script = latch_after(106.0, {12: (0.0, OVERLOAD)})

    def more(t: float) -> dict[int, int | None]:
        out = script(t)
        if t >= 112.0:
            out[12] = OVERLOAD | OVERHEAT
        return out

    caps = run_frames(rec, clock, 20.0, more)
    assert len(caps) == 1
    assert ("more-bits", 12) in kinds(rec)
    assert rec.latched[12] == OVERLOAD | OVERHEAT


def test_silence_is_no_evidence_of_recovery():
    rec, clock = make()

    def script(t: float) -> dict[int, int | None]:
        out = healthy(t)
        if 106.0 <= t < 108.0:
            out[12] = OVERLOAD
        elif t >= 108.0:
            out[12] = None  # the axis stops answering, then answers latched again
        if t >= 112.0:
            out[12] = OVERLOAD
        return out

    caps = run_frames(rec, clock, 20.0, script)
    assert len(caps) == 1
    assert rec.latched == {12: OVERLOAD}


def test_recovery_needs_the_axis_own_zero_answer():
    rec, clock = make()

    def script(t: float) -> dict[int, int | None]:
        out = healthy(t)
        if 106.0 <= t < 110.0 or t >= 114.0:
            out[12] = OVERLOAD
        return out

    caps = run_frames(rec, clock, 20.0, script)
    assert len(caps) == 2  # latched, cleared by its own zero answer, latched again
    assert ("recovered", 12) in kinds(rec)


def test_a_healthy_axis_does_not_rearm_a_latched_one():
    rec, clock = make()

    def script(t: float) -> dict[int, int | None]:
        # only axis 13 answers after the latch: 12 stays latched, nothing re-arms
        return {13: 0} if t >= 108.0 else {**healthy(t), 12: OVERLOAD if t >= 106.0 else 0}

    caps = run_frames(rec, clock, 20.0, script)
    assert len(caps) == 1
    assert rec.latched == {12: OVERLOAD}


def test_recovery_inside_the_window_keeps_the_tail():
    rec, clock = make()

    def script(t: float) -> dict[int, int | None]:
        return {**healthy(t), 12: OVERLOAD if 106.0 <= t < 107.0 else 0}

    caps = run_frames(rec, clock, 12.0, script)
    assert len(caps) == 1
    assert caps[0].header["tail_complete"]
    assert caps[0].header["tail_observed_s"] >= 2.0 - PERIOD


def test_latch_present_at_baseline_is_logged_without_capture():
    rec, clock = make()
    caps = run_frames(rec, clock, 10.0, lambda t: {**healthy(t), 31: OVERLOAD})
    assert caps == []
    assert ("baseline-latch", 31) in kinds(rec)
    assert rec.latched == {31: OVERLOAD}


def test_a_silent_axis_does_not_hold_back_the_others_baseline():
    rec, clock = make()

    def script(t: float) -> dict[int, int | None]:
        return {**healthy(t), 33: None, 12: OVERLOAD if t >= 105.0 else 0}

    caps = run_frames(rec, clock, 10.0, script)
    assert [c.header["trigger_axes"] for c in caps] == [[12]]


def test_axis_answering_late_gets_its_baseline_then():
    rec, clock = make()

    def script(t: float) -> dict[int, int | None]:
        # 33 is silent at first, and its first answer is already latched: that is its baseline
        return {**healthy(t), 33: None if t < 105.0 else OVERLOAD}

    assert run_frames(rec, clock, 10.0, script) == []
    assert ("baseline-latch", 33) in kinds(rec)


def test_latches_survive_reconnect():
    rec, clock = make()
    script = latch_after(104.0, {12: (0.0, OVERLOAD)})
    caps = run_frames(rec, clock, 10.0, script)
    assert len(caps) == 1
    rec.begin_disconnect(clock.now())
    assert rec.on_disconnect(clock.now()) == []
    rec.connect(clock.now())
    assert rec.fast_count == 0  # a new connection starts with less history
    assert run_frames(rec, clock, 10.0, script) == []
    assert ("still-latched", 12) in kinds(rec)
    assert rec.latched == {12: OVERLOAD}


def test_per_connection_capture_limit():
    rec, clock = make(max_captures=2)

    def script(t: float) -> dict[int, int | None]:
        out = healthy(t)
        for i, axis in enumerate((10, 11, 12, 13)):
            if t >= 104.0 + 4 * i:
                out[axis] = OVERLOAD
        return out

    caps = run_frames(rec, clock, 25.0, script)
    assert [c.header["trigger_axes"] for c in caps] == [[10], [11]]
    assert [a for k, a in kinds(rec) if k == "capture-limit"] == [12, 13]
    rec.begin_disconnect(clock.now())
    rec.on_disconnect(clock.now())
    rec.connect(clock.now())
    caps = run_frames(rec, clock, 10.0, lambda t: {**script(t), 14: OVERLOAD if t >= 128.0 else 0})
    assert [c.header["trigger_axes"] for c in caps] == [[14]]


def test_captures_come_after_the_goal_write_only():
    rec, clock = make()
    script = latch_after(104.0, {12: (0.0, OVERLOAD)})
    run_frames(rec, clock, 4.5, script)
    assert rec.window_open
    clock.advance(3.0)
    now = clock.now()
    rec.on_status(now, script(now))
    rec.on_sweep(leg_sweep(now))
    assert rec.window_open is False  # closed, but held until the frame's goals are written
    caps = rec.after_goal_write(now)
    assert len(caps) == 1


def test_disconnect_holds_captures_until_after_torque_off_and_flushes_short_tail():
    rec, clock = make()
    script = latch_after(104.0, {12: (0.0, OVERLOAD)})
    run_frames(rec, clock, 4.5, script)
    rec.begin_disconnect(clock.now())
    # parking frames still run, and hand back nothing
    assert run_frames(rec, clock, 0.3, script) == []
    caps = rec.on_disconnect(clock.now(), torque_off=False)
    assert len(caps) == 1
    h = caps[0].header
    assert h["end"] == "disconnect" and not h["tail_complete"]
    assert h["tail_observed_s"] < 1.0
    assert h["torque_off"] is False


def test_disconnect_without_window_publishes_nothing():
    rec, clock = make()
    run_frames(rec, clock, 3.0)
    rec.begin_disconnect(clock.now())
    assert rec.on_disconnect(clock.now(), torque_off=True) == []


def test_context_has_its_own_timer_without_leg_sweeps():
    rec, clock = make()
    for _ in range(150):
        now = clock.now()
        plan = rec.plan(now, leg_sweep=False)
        if plan.status:
            rec.on_status(now, healthy(now))
        rec.after_goal_write(now)
        clock.advance(PERIOD)
    assert rec.fast_count == 0
    assert 4 <= rec.context_count <= 5


def test_unsupported_status_disables_recording_for_the_connection():
    rec, clock = make()
    rec.status_unsupported(clock.now(), "no register 70")
    assert run_frames(rec, clock, 8.0, latch_after(102.0, {12: (0.0, OVERLOAD)})) == []
    rec.connect(clock.now())
    assert rec.disabled is None


def test_the_capture_id_is_wall_clock_and_times_are_monotonic_offsets():
    rec, clock = make()
    caps = run_frames(rec, clock, 10.0, latch_after(104.0, {12: (0.0, OVERLOAD)}))
    h = caps[0].header
    assert h["id"].startswith("capture_20270115T")
    assert h["t_ref_monotonic"] > 100.0
    fast = [s for s in caps[0].samples if s["ring"] == "fast"]
    assert fast[-1]["t"] > 0 > fast[0]["t"]
    assert value(h, fast[0], "12", "gap") == pytest.approx(2.0)


def test_settings_refuse_nonsense():
    with pytest.raises(SettingsError):
        RecorderSettings(fast_len=0)
    with pytest.raises(SettingsError):
        RecorderSettings(tail_s=3.0, max_tail_s=2.0)
    assert RecorderSettings().fast_span_s == pytest.approx(8.0)
    assert RecorderSettings().context_span_s == pytest.approx(36.0)
    assert RecorderSettings().worst_detection_delay_s() == pytest.approx(1.1)


def test_status_with_every_frame_when_period_is_zero():
    rec, clock = make(status_period_s=0.0)
    statuses = 0
    for _ in range(10):
        if rec.plan(clock.now(), leg_sweep=True).status:
            statuses += 1
            rec.on_status(clock.now(), {"controller": 0})
        clock.advance(PERIOD)
    assert statuses == 10


def test_recording_can_be_switched_off():
    rec, clock = make(enabled=False)
    assert run_frames(rec, clock, 8.0, latch_after(102.0, {12: (0.0, OVERLOAD)})) == []
    assert rec.fast_count == 0 and rec.context_count == 0


def _silent_leg_frames(rec: FlightRecorder, clock: FakeClock, seconds: float, status) -> list:
    """Frames whose leg read waits out a silent servo's timeout (axis 22) before the rest of the frame."""
    from servotool.recorder import AxisSample, Sweep
    from tests.recorder.helpers import LEGS, neck_sweep

    out = []
    for _ in range(round(seconds / PERIOD)):
        start = clock.now()
        plan = rec.plan(start, leg_sweep=True)
        clock.advance(0.025)  # the sync read waits for the silent servo
        axes = {a: None if a == 22 else AxisSample(2048.0, 2050.0, 100.0, 0.0, 5.0, 31.0) for a in LEGS}
        rec.on_sweep(Sweep(clock.now(), "legs", axes))
        if plan.context:
            rec.on_sweep(neck_sweep(clock.now()))
        if plan.status:
            rec.on_status(clock.now(), status(clock.now()))
        out.extend(rec.after_goal_write(clock.now()))
        clock.advance(start + PERIOD - clock.now())
    return out


def test_a_silent_leg_servo_never_keeps_the_neck_out_of_the_context_ring():
    rec, clock = make()
    silent_22 = lambda t: {**healthy(t), 22: None}  # noqa: E731
    caps = _silent_leg_frames(
        rec, clock, 12.0, latch_after(clock.now() + 10.0, {12: (0.0, OVERLOAD)}, silent_22)
    )
    caps += _silent_leg_frames(
        rec, clock, 3.0, latch_after(clock.now() - 2.0, {12: (0.0, OVERLOAD)}, silent_22)
    )
    assert len(caps) == 1
    context = [s for s in caps[0].samples if s["ring"] == "context"]
    assert len(context) >= 5 and all(s["neck"] is not None for s in context)
    # the silent servo's own rows say so, and the capture names it
    assert all(
        s["axes"]["22"] is None and s["axes"]["21"] is not None
        for s in caps[0].samples
        if s["ring"] == "fast"
    )
    silent = caps[0].header["silent_axes"]
    assert list(silent) == ["22"] and silent["22"]["sweeps"] == silent["22"]["of"] > 0
    assert silent["22"]["last_answer_t"] is None
    assert 22 not in rec.last_answers and 21 in rec.last_answers


def test_a_capture_of_a_bus_that_always_answered_names_no_silent_servo():
    rec, clock = make()
    caps = run_frames(rec, clock, 15.0, latch_after(100.0 + 10.0, {12: (0.0, OVERLOAD)}))
    assert len(caps) == 1 and caps[0].header["silent_axes"] == {}
