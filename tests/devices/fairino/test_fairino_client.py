"""The real client against the simulator, end to end over loopback sockets.

Most tests run the simulator in lock-step with the client (simulated time on the arm's FakeClock): what they
measure does not depend on the load on the machine. The lost-link tests that are about the real transport
(a closed socket) run in real time."""

from __future__ import annotations

import contextlib
import socket
import statistics
import time

import pytest

from servotool.devices.arm import Arm, ConnectionLost, DeviceError
from servotool.devices.fairino.client import FairinoArm
from servotool.devices.fairino.sim import FairinoSim
from servotool.devices.registry import DeviceURLError, open_arm

FAST = "enable_ms=100"


def ready(open_sim, fx, url: str, lockstep: bool = True):
    """Open, enable (waiting the window) and warm up; returns (arm, held pose)."""
    arm = open_sim(url, lockstep=lockstep)
    arm.enable()
    arm.warm_up(cmd_period_s=0.01, timeout_s=3.0)
    if arm.transport == "udp" and arm.sim.profile.udp_reply:
        # a UDP answer to the last warm-up command may trail it: wait until every command was answered
        assert fx.wait_until(lambda: arm.answers_received >= arm.datagrams_sent, 5.0)
    arm.replies()
    return arm, arm.latest_state().q


def test_sim_url_opens_the_real_client_on_an_embedded_simulator(open_sim):
    arm = open_sim("sim:fr20?lag_ms=70&noise_deg=0.003&seed=4&transport=rpc")
    assert isinstance(arm, FairinoArm) and isinstance(arm, Arm)
    assert arm.simulated and arm.model == "fr20" and arm.transport == "rpc"
    assert arm.joint_speed_limits == (120.0, 120.0, 120.0, 180.0, 180.0, 180.0)
    assert arm.sim.profile.lag_ms == 70 and arm.sim.profile.seed == 4
    assert {"actual_joint_pos", "servoJ_cmd_num", "last_servoJ_target"} <= set(arm.fields)
    st = arm.wait_state()
    assert st.q == pytest.approx((0, -90, 90, -90, -90, 0), abs=0.05)
    assert not st.enabled and st.setpoint is not None and st.device_time_s is not None
    sim = arm.sim
    arm.close()
    assert not sim.running
    arm.close()  # idempotent
    with pytest.raises(DeviceError):
        arm.poll_states()


def test_unknown_and_bad_url_parameters_are_refused_with_the_valid_ones():
    with pytest.raises(DeviceURLError, match=r"unknown parameter\(s\) lagms.*valid: .*lag_ms.*transport"):
        open_arm("sim:fr3?lagms=3")
    with pytest.raises(DeviceURLError, match="transport"):
        open_arm("sim:fr3?transport=tcp")
    with pytest.raises(DeviceURLError, match="lag_ms"):
        open_arm("sim:fr3?lag_ms=slow")
    with pytest.raises(DeviceURLError, match="valid: .*cnde_port"):
        open_arm("fairino://127.0.0.1?lag_ms=3")


@pytest.mark.parametrize(
    "query",
    ["lag_ms=7_8", "lag_ms=\u0667\u0668", "state_ms=\uff18", "seed=1_2", "joint_speed_limits=90,1_80"],
)
def test_simulator_numbers_not_in_plain_ascii_decimal_are_refused(query):
    with pytest.raises(DeviceURLError, match=query.split("=")[0]):
        open_arm(f"sim:fr3?clock=sim&{query}")


def test_a_real_address_that_does_not_answer_fails_fast_and_clearly():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed again when the block ends: nothing listens there
    t0 = time.monotonic()
    with pytest.raises(DeviceError, match="cannot open the state stream"):
        open_arm(f"fairino://127.0.0.1?cnde_port={port}")
    assert time.monotonic() - t0 < 1.0


def test_an_xmlrpc_port_that_never_answers_times_out_instead_of_hanging():
    with FairinoSim("fr3", rpc_port=0, cnde_port=0, udp_port=0) as sim, socket.socket() as mute:
        mute.bind(("127.0.0.1", 0))
        mute.listen(1)  # connections complete in the backlog, nothing is ever answered
        url = (
            f"fairino://127.0.0.1?cnde_port={sim.ports.cnde}&udp_port={sim.ports.udp}"
            f"&rpc_port={mute.getsockname()[1]}"
        )
        t0 = time.monotonic()
        with pytest.raises(DeviceError, match="XML-RPC"):
            open_arm(url, connect_timeout_s=0.3)
        assert time.monotonic() - t0 < 1.0


@pytest.mark.parametrize("transport", ["rpc", "udp"])
def test_enable_window_is_answered_101_then_accepted(open_sim, fx, transport):
    arm = open_sim(f"sim:fr3?enable_ms=400&transport={transport}", lockstep=True)
    q = arm.wait_state().q
    arm.enable(wait_window=False)
    t_enabled = arm.clock.now()
    assert arm.servo_start() == 0
    rec = fx.stream(arm, fx.hold(q, 70))
    fx.collect(arm, 0.05, rec)
    codes = rec.codes()
    assert len(codes) == 70 and codes[0] == 101
    first_ok = codes.index(0)
    assert set(codes[:first_ok]) == {101} and set(codes[first_ok:]) == {0}
    t_ok = rec.replies[first_ok].t
    # the window's length is the controller's; the slack above it is only the loaded host's
    assert 0.39 < t_ok - t_enabled < 0.4 + 0.5
    assert arm.servoj_count == 70 - first_ok


def test_warm_up_waits_until_the_controller_executes(open_sim):
    arm = open_sim("sim:fr3?enable_ms=300", lockstep=True)
    arm.enable(wait_window=False)
    t0 = arm.clock.now()
    took = arm.warm_up(cmd_period_s=0.01, timeout_s=2.0)
    assert 0.3 < took < 0.3 + 0.5 and arm.clock.now() - t0 >= took
    assert arm.servoj_count >= 3
    state = arm.latest_state()
    assert state.fault is None and state.enabled


def test_warm_up_times_out_on_a_disabled_controller(open_sim):
    arm = open_sim("sim:fr3", lockstep=True)
    with pytest.raises(DeviceError, match="warm-up timed out"):
        arm.warm_up(cmd_period_s=0.01, timeout_s=0.3)


@pytest.mark.parametrize(
    "url,lag_ms,lockstep",
    [
        ("sim:simmachine", 39.0, True),
        ("sim:fr3", 78.0, True),
        ("sim:fr20", 111.0, True),
        ("sim:fr3?transport=rpc", 78.0, True),
        # the real path: real sockets on the real clock (a loaded host's late ticks widen the bound)
        pytest.param("sim:fr20", 111.0, False, marks=pytest.mark.slow),
    ],
)
def test_tracking_lag_matches_the_profile(open_sim, fx, url, lag_ms, lockstep, slack):
    sep = "&" if "?" in url else "?"
    arm, q0 = ready(open_sim, fx, url + sep + FAST, lockstep)
    arm.poll_states()
    setpoints = fx.trapezoid(q0, 0, speed=20.0, cruise_s=0.6)
    rec = fx.stream(arm, setpoints)
    fx.collect(arm, lag_ms / 1000 + 0.05, rec)
    # cruise only: past the ramp-up (0.2 s) plus a margin, before the ramp-down
    lo, hi = q0[0] + 20 * 0.15 + 0.5, q0[0] + 20 * 0.75 - 0.5
    lags = fx.measured_lag(rec, 0, lo, hi)
    assert len(lags) > 40
    measured = statistics.mean(lags) * 1000
    late = rec.late_ticks()
    assert abs(measured - lag_ms) < slack(2.0, lag_ms, late), (
        f"{url}: measured {measured:.2f} ms, profile {lag_ms} ms, {late} late ticks"
    )
    assert all(f.fault is None for f in rec.states) and set(rec.codes()) <= {0}


def test_raw_step_on_fr3_runs_away_then_recovers_after_reset(open_sim, fx):
    arm, q0 = ready(open_sim, fx, "sim:fr3?transport=rpc&seed=7&" + FAST)
    step = list(q0)
    step[0] += 2.5
    rec = fx.stream(arm, fx.hold(q0, 10))
    t_step = arm.clock.now()
    fx.stream(arm, fx.hold(step, 60), rec=rec)  # the raw step, re-sent for 600 ms
    fx.collect(arm, 0.45, rec)  # past the ~0.9 s reject window
    codes = rec.codes()
    assert codes[:10] == [0] * 10
    assert codes[10:] == [14] * 60  # latched at the step instant: every command rejected
    event = arm.sim.faults.get(timeout=1)
    assert (event.kind, event.main, event.sub, event.joint) == ("runaway", 1, 32, 0)
    after = [f for f in rec.states if f.t > t_step]
    faulted = [f for f in after if f.fault is not None and f.fault.codes == (1, 32)]
    assert faulted and faulted[0].t - t_step < 0.03
    assert faulted[0].q[0] == pytest.approx(q0[0], abs=0.05)  # latched before any motion
    x = [f.q[0] - q0[0] for f in after]
    travel = x[-1]
    assert 14 * 2.5 - 0.5 < travel < 35 * 2.5 + 0.5
    assert travel == pytest.approx(event.travel_deg, abs=0.05)
    # speed on the controller's own sample clock (receive times jitter): the implied 250 deg/s, clamped
    speeds = [
        (b.q[0] - a.q[0]) / (b.device_time_s - a.device_time_s)
        for a, b in zip(after, after[1:], strict=False)
    ]
    assert max(speeds) == pytest.approx(180.0, rel=0.02)
    assert max(x[-10:]) - min(x[-10:]) < 0.02  # stopped by itself
    # the controller takes commands again (from the pose it stopped at), codes latched until reset
    here = arm.latest_state().q
    again = fx.stream(arm, fx.hold(here, 5))
    assert again.codes() == [0] * 5
    assert arm.latest_state().fault.codes == (1, 32)
    assert arm.reset_faults() == 0
    assert fx.wait_until(lambda: arm.latest_state().fault is None, 0.2, clock=arm.clock)


def test_giant_step_is_refused_with_no_motion_until_reset(open_sim, fx):
    arm, q0 = ready(open_sim, fx, "sim:fr3?noise_deg=0&" + FAST)  # UDP, replies collected asynchronously
    step = list(q0)
    step[0] += 30.0
    rec = fx.stream(arm, fx.hold(q0, 5))
    fx.stream(arm, fx.hold(step, 30), rec=rec)
    fx.collect(arm, 0.15, rec)
    codes = rec.codes()
    assert codes[:5] == [0] * 5 and codes[5:] == [14] * 30
    assert all(f.q == pytest.approx(q0, abs=1e-9) for f in rec.states)
    assert rec.states[-1].fault.codes == (1, 23)
    assert arm.sim.faults.get(timeout=1).kind == "refused"
    with pytest.raises(DeviceError, match="reset first|fault"):
        arm.warm_up(q0, 0.01, 1.0)
    assert arm.reset_faults() == 0
    assert fx.wait_until(lambda: arm.latest_state().fault is None, 0.2, clock=arm.clock)
    assert arm.warm_up(q0, 0.01, 1.0) < 0.5


def test_simmachine_never_runs_away_it_follows_any_jump(open_sim, fx):
    arm, q0 = ready(open_sim, fx, "sim:simmachine?transport=rpc&noise_deg=0&" + FAST)
    rec = fx.Record()
    target = list(q0)
    for jump in (2.5, 30.0, -45.0):
        target[0] += jump
        fx.stream(arm, fx.hold(target, 10), rec=rec)
    fx.collect(arm, 0.1, rec)
    assert set(rec.codes()) == {0}
    assert all(f.fault is None for f in rec.states)
    assert rec.states[-1].q[0] == pytest.approx(target[0], abs=1e-6)
    assert arm.sim.faults.empty()


def test_a_stopped_simulator_is_a_clear_connection_lost(open_sim, fx):
    arm, q0 = ready(open_sim, fx, "sim:fr3?transport=rpc&" + FAST, lockstep=False)
    arm.poll_states()
    arm.sim.stop()  # returns once every socket of the controller is closed (its threads joined)
    errors = []

    def lost():
        try:
            arm.servo_j(q0, 0.01)
            arm.poll_states()
        except ConnectionLost as exc:
            errors.append(exc)
            return True
        return False

    # detection is immediate on EOF and bounded by the 100 ms silence rule (asserted in simulated time by
    # the lock-step tests); here, on the host clock, only that it comes, with room for a loaded machine
    assert fx.wait_until(lost, 5.0, step=0.001)
    assert "connection lost" in str(errors[0])
    with contextlib.suppress(ConnectionLost):
        arm.poll_states()  # hands over what arrived before the loss, if anything
    calls = (arm.poll_states, arm.latest_state, arm.replies, arm.reset_faults, lambda: arm.servo_j(q0, 0.01))
    for call in calls:
        with pytest.raises(ConnectionLost) as info:
            call()
        assert str(info.value) == str(errors[0])  # one error, the same every time


def _link_lost(arm):
    """A condition: the client has declared its link lost (polling is what lets it find out)."""

    def lost():
        try:
            arm.poll_states()
        except ConnectionLost:
            return True
        return False

    return lost


def test_a_silent_state_stream_is_a_connection_lost_within_100_ms(open_sim, fx):
    arm = open_sim("sim:fr3?silence_ms=60&" + FAST, lockstep=True)
    q = arm.wait_state().q
    arm.sim.hold_stream(True)
    t_quiet = arm.clock.now()

    assert fx.wait_until(_link_lost(arm), 0.5, step=0.001, clock=arm.clock)
    # the 60 ms silence rule set above, in simulated time: one state period past it at most
    assert 0.06 < arm.clock.now() - t_quiet < 0.06 + 0.008 + 0.002
    with pytest.raises(ConnectionLost, match="no state frame"):
        arm.servo_j(q, 0.01)


def test_the_silence_rule_is_100_ms_by_default():
    import inspect

    from servotool.devices.fairino.client import FairinoArm

    assert inspect.signature(FairinoArm).parameters["silence_s"].default <= 0.1


def test_a_silent_state_stream_still_ends_servo_mode_and_disables(open_sim, fx):
    # the state stream going quiet says nothing of XML-RPC: the cleanup calls are still tried, so a
    # hiccup does not leave the controller in servo mode (every later run would be refused as busy)
    arm = open_sim("sim:fr3?silence_ms=60&" + FAST, lockstep=True)
    arm.enable()
    assert arm.servo_start() == 0
    arm.sim.hold_stream(True)

    assert fx.wait_until(_link_lost(arm), 0.5, step=0.001, clock=arm.clock)
    assert arm.servo_end() == 0
    assert arm.disable() == 0
    assert not arm.sim.snapshot().servo_active
    with pytest.raises(ConnectionLost, match="no state frame"):
        arm.servo_j(arm.latest_state().q, 0.01)  # streaming stays refused


def test_a_frozen_controller_gets_each_cleanup_call_once_with_a_short_answer_limit(open_sim, fx):
    # a controller that stops answering with its sockets open (a frozen process, a black-holed link): after
    # the loss, ending servo mode and disabling are still tried, once each, but each waits for its answer at
    # most the cleanup limit (0.5 s), not the 5 s command timeout: the exit of a run must not wait 10 s
    arm = open_sim("sim:fr3?silence_ms=60&" + FAST, lockstep=True)
    arm.enable()
    assert arm.servo_start() == 0
    arm.sim.freeze(True)
    assert fx.wait_until(_link_lost(arm), 0.5, step=0.001, clock=arm.clock)
    assert arm.cleanup_timeout_s == 0.5

    t0 = time.monotonic()
    unanswered = "got no answer within 0.5 s after the link was lost"
    with pytest.raises(ConnectionLost, match=f"ServoMoveEnd {unanswered}"):
        arm.servo_end()
    with pytest.raises(ConnectionLost, match=f"RobotEnable {unanswered}"):
        arm.disable()
    # two socket timeouts of 0.5 s (a timeout does not stretch with the load); before, 2 x 5 s
    assert time.monotonic() - t0 < 4.0
    with pytest.raises(ConnectionLost, match="no state frame"):
        arm.servo_j(arm.latest_state().q, 0.01)  # the loss itself is still what every other call reports


def test_clock_sim_runs_the_simulator_client_and_arm_on_one_simulated_clock(open_sim):
    from servotool.clock import FakeClock
    from servotool.devices.arm import clock_of

    arm = open_sim("sim:fr3?clock=sim&" + FAST)
    assert isinstance(arm.clock, FakeClock) and clock_of(arm) is arm.clock and arm.sim.lockstep is arm.clock
    t0 = arm.clock.now()
    arm.enable()  # waits out the 100 ms enable window on the simulated clock
    assert arm.clock.now() - t0 >= 0.1 and arm.latest_state().enabled
    assert clock_of(open_sim("sim:fr3")) is None  # real time: the run keeps its own clock
    with pytest.raises(DeviceURLError, match="clock=sim"):
        open_arm("sim:fr3?clock=fast")
    with pytest.raises(DeviceURLError, match="real time"):
        open_arm("fairino://127.0.0.1", clock=FakeClock())  # a real controller never runs on a fake clock


@pytest.mark.parametrize(
    "query",
    [
        "state_ms=200",
        "state_ms=51",
        "state_ms=150&silence_ms=100",
        "silence_ms=15",
        "state_ms=600&silence_ms=1000",
    ],
)
def test_a_watchdog_shorter_than_two_state_periods_is_refused_before_anything_opens(query):
    """With state frames every 200 ms and the 100 ms watchdog, every healthy wait between two frames read as
    a lost link, after the robot had been enabled (exit 3, 'connection lost'): refused first (exit 2)."""
    # port 9 on loopback: nothing listens, so a URL that got through would fail to connect (exit 3)
    nowhere = "fairino://127.0.0.1?rpc_port=9&cnde_port=9&udp_port=9"
    for url in (f"{nowhere}&{query}", f"sim:fr3?clock=sim&{query}"):
        with pytest.raises(DeviceURLError, match=r"silence_ms .* state_ms") as info:
            open_arm(url)
        assert info.value.exit_code == 2
    open_arm("sim:fr3?clock=sim&state_ms=50").close()  # the default watchdog, 100 ms, is two 50 ms periods
    open_arm("sim:fr3?clock=sim&state_ms=500&silence_ms=1000").close()


@pytest.mark.parametrize(
    "query, word",
    [
        (
            "silence_ms=nan",
            "silence_ms",
        ),  # NaN never compares greater: the lost-link watchdog would never fire
        ("silence_ms=inf", "silence_ms"),
        ("silence_ms=1e9", "silence_ms"),
        ("silence_ms=0", "silence_ms"),
        ("silence_ms=-1", "silence_ms"),
        ("timeout_ms=nan", "timeout_ms"),
        ("timeout_ms=-5", "timeout_ms"),
        ("timeout_ms=0", "timeout_ms"),
        ("state_ms=0", "state_ms"),
        ("state_ms=5000", "state_ms"),
        ("udp_port=-1", "udp_port"),
        ("udp_port=70000", "udp_port"),
        ("rpc_port=0", "rpc_port"),
        ("cnde_port=65536", "cnde_port"),
        ("silence_ms=1_00", "silence_ms"),  # plain ASCII decimal only, as on the command line
        ("timeout_ms=\uff11\uff10\uff10", "timeout_ms"),
        ("state_ms=\u0668", "state_ms"),
        ("rpc_port=2_0003", "rpc_port"),
    ],
)
def test_client_parameters_out_of_bounds_are_refused_before_anything_opens(query, word):
    # 192.0.2.1 (TEST-NET-1) answers nothing: a parameter that got through would fail on the connection
    with pytest.raises(DeviceURLError, match=word):
        open_arm(f"fairino://192.0.2.1?{query}")
    if not word.endswith("_port") and word != "state_ms":
        with pytest.raises(DeviceURLError, match=word):
            open_arm(f"sim:fr3?clock=sim&{query}")
