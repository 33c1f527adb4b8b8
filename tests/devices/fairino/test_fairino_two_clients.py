"""Two clients on one controller, as on a real FAIRINO: the second one must see that the arm is taken before
it enables; if it streams anyway, the interleaved setpoints latch the runaway fault (main 1 / sub 32) and the
joint sweeps by itself (the defect seen on a bench: 20-46 deg sweeps)."""

from __future__ import annotations

import pytest

from servotool.devices.arm import DeviceError
from servotool.devices.fairino.codes import RUNAWAY_FAULT

# both clients on the simulator's clock, in lock-step: the same interleaving whatever the load on the machine
URL = "sim:fr3?enable_ms=100&seed=7"
PERIOD = 0.01


class Streamer:
    """Client A: streams its setpoints, one per 10 ms tick of the shared simulated clock, from a listener of
    that clock, while the block lasts: whatever client B does moves the clock, and A's stream goes on."""

    def __init__(self, arm, fx, setpoints):
        self.arm, self.fx, self.setpoints = arm, fx, setpoints
        self.rec = fx.Record()
        self.errors: list[BaseException] = []
        self.active = False
        self.k = 0
        self.start = 0.0
        arm.clock.wake_at(lambda: self.start + self.k * PERIOD if self.active else None)
        arm.clock.on_advance(self._tick)

    def _tick(self, t):
        if not self.active or t < self.start + self.k * PERIOD - 1e-9:
            return
        if self.k >= len(self.setpoints):
            self.active = False
            return
        q = self.setpoints[self.k]
        self.k += 1
        self.rec.sent_t.append(t)
        self.rec.sent_q.append(tuple(q))
        try:
            reply = self.arm.servo_j(q, PERIOD)
            if reply is not None:
                self.rec.replies.append(reply)
            self.rec.replies.extend(self.arm.replies())
            self.rec.states.extend(self.arm.poll_states())
        except Exception as exc:  # noqa: BLE001 - kept for the test to see; B's call must not get it
            self.errors.append(exc)
            self.active = False

    def __enter__(self):
        self.start = self.arm.clock.now()
        self.active = True
        self._tick(self.start)
        self.arm.clock.sleep(4 * PERIOD)  # five setpoints sent before B comes
        assert self.k == 5 and not self.errors, self.errors
        return self

    def __exit__(self, *exc):
        self.active = False
        if exc[0] is None:
            self.arm.clock.sleep(PERIOD)  # the clock's barrier: the answers to the last setpoints are in
            self.rec.replies.extend(self.arm.replies())


def settled(sim, clock) -> bool:
    before = sim.snapshot().cmd_num
    clock.sleep(0.2)  # an observation window: no condition tells that nothing more arrives
    return sim.snapshot().cmd_num == before


def fault(arm) -> tuple[int, ...]:
    state = arm.latest_state()
    return state.codes


def first_client(open_sim):
    arm = open_sim(URL, lockstep=True)
    arm.enable()
    arm.warm_up(cmd_period_s=0.01, timeout_s=3.0)
    return arm, arm.latest_state().q


def second_client(first, transport="udp"):
    # the same controller reached as a real one, by its address (as another program would), on its clock
    return first.sim.link.connect(model="fr3", transport=transport, enable_wait_s=0.15)


def test_a_second_client_sees_the_arm_busy_before_it_enables(open_sim, fx):
    a, q0 = first_client(open_sim)
    with Streamer(a, fx, fx.hold(q0, 300)) as stream:
        b = second_client(a)
        state = b.wait_state()
        assert state.enabled and state.servo_active
        assert not b.simulated and b.clock is a.clock
        why = b.busy_reason(window_s=0.5)
    assert why is not None and not stream.errors
    assert "another client is streaming ServoJ" in why and "servo mode" in why and "enabled" in why
    assert fx.wait_until(lambda: settled(a.sim, a.clock), 3.0)
    a.servo_end()
    assert b.busy_reason() is None  # nobody streams now: an enabled, still arm is free
    b.close()


def test_a_second_client_sees_a_moving_arm(open_sim, fx):
    a, q0 = first_client(open_sim)
    with Streamer(a, fx, fx.trapezoid(q0, 5, speed=20.0, cruise_s=4.0)):
        assert fx.wait_until(lambda: abs(a.latest_state().q[5] - q0[5]) > 1.0, 3.0, clock=a.clock)
        b = second_client(a)
        why = b.busy_reason()
    b.close()
    assert why is not None and "the arm is moving (J6" in why


@pytest.mark.parametrize("transport", ["udp", "rpc"])
def test_two_interleaved_streams_latch_the_runaway(open_sim, fx, transport):
    """Without the check: B warms up holding the pose it measured while A cruises at 10 deg/s. The
    controller takes both streams in arrival order, so each switch of sender is a setpoint jump of A's lead
    over the measured pose (v * L = 0.8 deg on an FR3, growing while B holds), and each switch back jumps
    the velocity by twice that: the runaway fires at the first switches."""
    a, q0 = first_client(open_sim)
    sim = a.sim
    with Streamer(a, fx, fx.trapezoid(q0, 0, speed=10.0, cruise_s=2.0)) as stream:
        assert fx.wait_until(lambda: a.latest_state().q[0] - q0[0] > 2.0, 3.0, clock=a.clock)
        b = second_client(a, transport)  # a second UDP sender, or a second XML-RPC session
        b.enable()
        with pytest.raises(DeviceError):
            b.warm_up(cmd_period_s=0.01, timeout_s=2.0)
        latched = fx.wait_until(lambda: fault(a) == RUNAWAY_FAULT, 3.0, clock=a.clock)
        a.clock.sleep(0.05)  # A streams on for a few ticks into the fault
    b.close()
    assert not stream.errors, stream.errors
    event = sim.faults.get(timeout=1.0)
    assert latched, event.text
    assert sim.stats["sender_switches"] > 0 and len(sim.servoj_senders(within_s=10.0)) >= 2
    assert (event.kind, event.main, event.sub, event.joint) == ("runaway", 1, 32, 0), event.text
    # a jump in the coin-flip band or above it, far below the giant steps the speed check refuses
    step = abs(event.step_deg)
    assert 1.0 <= step <= 10.0, event.text
    assert 14.0 * step - 1e-6 <= event.travel_deg <= 35.0 * step + 1e-6
    # then the controller rejects the commands (errcode 14) while the joint sweeps by itself
    assert 14 in stream.rec.codes()


def test_a_controller_serving_one_state_client_cuts_the_second_off(open_sim):
    a = open_sim("sim:fr3?cnde_clients=1")
    with pytest.raises(DeviceError, match="another program connected"):
        open_sim(a.sim.address()["url"] + "&model=fr3")  # by its address, as another program would
    assert a.sim.stats["cnde_refused"] == 1
    assert a.wait_state() is not None  # the first client keeps its stream


def test_the_model_lag_is_known_to_the_client(open_sim):
    assert open_sim("sim:fr20").nominal_lag_ms == 111.0
    assert open_sim("sim:fr3?lag_ms=70").nominal_lag_ms == 70.0


@pytest.mark.parametrize("speed", [6.0, 7.0, 8.0, 10.0])
def test_interleaved_streams_on_the_model_alone(speed):
    """The same defect with no sockets and no threads: stream A cruises on J1, stream B holds the pose it
    measured; the controller takes them in arrival order and latches 1/32 at the first switch whose velocity
    jump leaves the coin-flip band's lower edge, then sweeps 14-35 times that jump and rejects with 14.
    At 6-8 deg/s the jumps are 1.2-1.5 deg and the sweeps 18-43 deg: the bench's 20-46 deg sweeps."""
    from servotool.devices.fairino.codes import ErrCode
    from servotool.devices.fairino.physics import ControllerModel
    from servotool.devices.fairino.profiles import with_overrides

    prof = with_overrides("fr3", {"noise_deg": 0.0, "seed": 3})
    m = ControllerModel(prof, 0.0)
    m.robot_enable(0.0, 1)
    t = prof.enable_ms / 1000.0 + 0.01
    m.servo_start(t)
    q = list(m.sample(t).q)
    for k in range(100):  # A alone: a ramp up over 200 ms, then cruise
        t += 0.01
        q[0] += min(speed, speed / 20 * (k + 1)) * 0.01
        assert m.servo_j(t, q, 0.01) == ErrCode.OK
    held = m.sample(t).q  # what B measures: A's setpoint less v * L
    assert q[0] - held[0] == pytest.approx(speed * prof.lag_ms / 1000, abs=0.05)
    codes = []
    for _ in range(10):  # interleaved: A, then B 5 ms later
        t += 0.005
        q[0] += speed * 0.01
        codes.append(m.servo_j(t, q, 0.01))
        t += 0.005
        codes.append(m.servo_j(t, held, 0.01))
    events = m.drain_events()
    assert (m.main_code, m.sub_code) == RUNAWAY_FAULT and ErrCode.FAILED in codes
    assert [e.kind for e in events] == ["runaway"]
    ev = events[0]
    assert 14 * abs(ev.step_deg) - 1e-9 <= ev.travel_deg <= 35 * abs(ev.step_deg) + 1e-9
    if speed <= 8.0:
        assert 1.0 <= abs(ev.step_deg) <= 1.5 and 14.0 <= ev.travel_deg <= 52.5
