import time

import pytest

from servotool.clock import FakeClock
from servotool.devices.hiwonder import protocol as p
from servotool.devices.hiwonder.client import HiwonderBus
from servotool.devices.hiwonder.sim import start_sim
from servotool.devices.registry import DeviceURLError, open_bus
from servotool.errors import DeviceError


def wait_for(cond, timeout=2.0):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if cond():
            return True
        time.sleep(0.002)
    return cond()


@pytest.fixture
def bus_factory():
    opened = []

    def make(url="sim:rosorin-arm", **kwargs):
        bus = open_bus(url, **kwargs)
        opened.append(bus)
        return bus

    yield make
    for bus in opened:
        bus.close()


def test_sim_url_opens_the_real_client_on_a_pty(bus_factory):
    bus = bus_factory()
    assert isinstance(bus, HiwonderBus)
    assert bus.simulated and bus.model == "rosorin-arm"
    assert bus.server.path.startswith("/dev/")
    assert bus.ids == (1, 2, 3, 4, 5, 10)


def test_read_all_reports_every_servo(bus_factory):
    bus = bus_factory()
    records = bus.read_all()
    positions = {sid: r.position for sid, r in records.items()}
    assert positions == {1: 500, 2: 776, 3: 211, 4: 161, 5: 500, 10: 499}
    for r in records.values():
        assert 12500 <= r.voltage_mv <= 12700 and 30 <= r.temperature_c <= 42 and r.torque is True
    assert bus.read_stored_limits(2) == (80, 960)
    assert bus.silent == set()


def test_move_and_hold_over_the_wire(bus_factory):
    clock = FakeClock()
    bus = bus_factory("sim:rosorin-arm?lag_ms=0", clock=clock)
    bus.move({1: 600, 5: 400}, 1000)
    clock.sleep(0.5)
    assert bus.read_pose([1, 5]) == {1: 550, 5: 450}
    bus.hold([1, 5])
    clock.sleep(1.0)
    assert bus.read_pose([1, 5]) == {1: 550, 5: 450}
    moves = bus.sim.commands(p.Move)
    assert moves[0].command == p.Move(1000, {1: 600, 5: 400})
    assert bus.sim.commands(p.Stop)[0].command == p.Stop((1, 5))


def test_silent_servo_reads_none_and_others_carry_on(bus_factory):
    bus = bus_factory("sim:rosorin-arm?silent_10=1&timeout_ms=20")
    records = bus.read_all()
    assert records[10].silent and records[10].voltage_mv is None and records[10].torque is None
    assert all(not records[sid].silent for sid in (1, 2, 3, 4, 5))
    assert bus.silent == {10}
    assert bus.read_position(10) is None
    assert bus.stats.retries >= 2  # asked again before giving up
    bus.sim.set_silent(10, False)
    assert bus.read_position(10) == 499
    assert bus.silent == set()


def test_crc_errors_are_survived_by_retries(bus_factory):
    bus = bus_factory("sim:rosorin-arm?crc_error_every=2")
    for _ in range(20):
        assert bus.read_position(2) == 776
    assert bus.sim.corrupted >= 10
    assert bus.stats.bad_frames >= 10 and bus.stats.retries >= 10


def test_random_crc_errors_never_give_a_wrong_value(bus_factory):
    bus = bus_factory("sim:rosorin-arm?crc_error_rate=0.3&seed=5&retries=6")
    assert [bus.read_position(3) for _ in range(50)] == [211] * 50
    assert bus.sim.corrupted > 5


def test_negative_positions_read_signed(bus_factory):
    clock = FakeClock()
    bus = bus_factory("sim:rosorin-arm", clock=clock)
    bus.torque_off(3)
    assert bus.read_torque(3) is False
    clock.sleep(30.0)
    assert bus.read_position(3) == -35


def test_closing_the_client_stops_its_simulator():
    bus = open_bus("sim:rosorin-arm")
    server = bus.server
    assert server.running
    bus.close()
    assert wait_for(lambda: not server.running)
    bus.close()  # idempotent
    with pytest.raises(DeviceError):
        bus.read_position(1)


def test_standalone_simulator_opens_with_a_hiwonder_url():
    with start_sim("rosorin-arm", {"start_1": "321"}) as server:
        bus = open_bus(f"hiwonder://{server.path}?timeout_ms=200")
        try:
            assert not bus.simulated
            assert bus.read_position(1) == 321
        finally:
            bus.close()


def test_real_address_that_fails_raises_and_never_falls_back():
    with pytest.raises(DeviceError, match="cannot open") as info:
        open_bus("hiwonder:///dev/does-not-exist-ttyX?baud=1000000")
    # the system's reason once, not pyserial's sentence naming the port and the errno twice
    url = "hiwonder:///dev/does-not-exist-ttyX?baud=1000000"
    assert str(info.value) == f"cannot open {url} (No such file or directory)"


@pytest.mark.parametrize(
    "url",
    ["sim:rosorin-arm?warp=9", "sim:rosorin-arm?timeout_ms=fast", "hiwonder:///dev/ttyAMA0?obstacle_2=5"],
)
def test_bad_url_parameters_are_refused(url):
    with pytest.raises(DeviceURLError):
        open_bus(url)


@pytest.mark.parametrize(
    "query",
    [
        "timeout_ms=nan",
        "timeout_ms=inf",
        "timeout_ms=0",
        "timeout_ms=-1",
        "timeout_ms=1e9",
        "retries=-1",
        "retries=1000",
        "baud=-1",
        "baud=0",
    ],
)
def test_client_parameters_out_of_bounds_are_refused_before_the_port_opens(query):
    # a NaN or infinite timeout would make a silent servo's read wait forever
    key = query.split("=")[0]
    for url in (f"hiwonder:///dev/does-not-exist-ttyX?{query}", f"sim:rosorin-arm?clock=sim&{query}"):
        with pytest.raises(DeviceURLError, match=key):
            open_bus(url)


@pytest.mark.parametrize(
    "query",
    [
        "start_2=nan",
        "start=inf",
        "lag_ms=nan",
        "max_speed=inf",
        "sag=nan",
        "silent_after_2=nan",
        "sag_stop=inf",
        "reply_ms=nan",
    ],
)
def test_simulator_numbers_that_are_not_finite_are_refused_before_it_starts(query):
    # a NaN start position crashed the simulator's thread on the first read, every servo then silent
    with pytest.raises(DeviceURLError, match=query.split("=")[0]):
        open_bus(f"sim:rosorin-arm?clock=sim&{query}")


@pytest.mark.parametrize(
    "query",
    [
        "noise=-1",
        "noise_2=-1",
        "voltage_2=-1",
        "voltage=70000",
        "temperature_3=256",
        "temperature=-1",
        "reply_ms=1e9",
        "reply_ms=-5",
        "crc_error_every=-1",
        "lag_ms=-1",
        "max_speed=-1",
        "silent_after_2=-1",
        "start_2=40000",
        "obstacle_2=-40000",
        "noise=1_0",
        "voltage=12e3",
    ],
)
def test_simulator_numbers_out_of_range_are_refused_before_it_starts(query):
    # voltage_2=-1 or noise=-1 crashed the simulator's thread at the first read (a traceback, then every
    # servo silent, exit 0); reply_ms=1e9 hung the command; crc_error_every=-1 corrupted every reply
    key = query.split("=")[0]
    with pytest.raises(DeviceURLError, match=f"{key}=.*want"):
        open_bus(f"sim:rosorin-arm?clock=sim&{query}")


def test_simulator_numbers_at_their_bounds_answer_every_read(bus_factory):
    bus = bus_factory(
        "sim:rosorin-arm?clock=sim&voltage=65535&temperature=255&noise=1000&start_2=-32768"
        "&reply_ms=0&crc_error_every=0&lag_ms=0&max_speed=0"
    )
    records = bus.read_all()
    assert not bus.silent
    assert records[1].voltage_mv == 65535 and records[1].temperature_c == 255
    assert records[2].position is not None


def test_only_known_frames_reach_the_wire(bus_factory):
    bus = bus_factory()
    bus.read_all()
    bus.move({2: 700}, 40)
    bus.hold()
    bus.torque_off(10)
    bus.sync()
    assert bus.sim.rejected == []
    assert bus.sim.frames_seen == bus.stats.frames_sent


def test_line_noise_before_every_reply_is_skipped_and_counted(bus_factory):
    bus = bus_factory("sim:rosorin-arm?garbage_rate=1&seed=5")
    assert bus.read_pose() == {1: 500, 2: 776, 3: 211, 4: 161, 5: 500, 10: 499}
    assert bus.sim.garbage >= 6 and bus.stats.skipped_bytes > 0


def test_a_servo_can_start_limp_and_the_snapshot_restarts_the_sim_where_it_was(bus_factory):
    bus = bus_factory("sim:rosorin-arm?pose=pretuck&torque_3=0")
    assert bus.read_torque(3) is False and bus.read_torque(2) is True
    snap = bus.sim_snapshot()
    assert snap["start_2"] == "960.000" and snap["torque_3"] == "0" and "torque_2" not in snap
    again = bus_factory("sim:rosorin-arm?" + "&".join(f"{k}={v}" for k, v in snap.items()))
    assert again.read_position(2) == 960 and again.read_torque(3) is False


def test_bad_injection_rates_are_refused():
    with pytest.raises(DeviceURLError, match="probability"):
        open_bus("sim:rosorin-arm?garbage_rate=2")


def test_a_silent_port_is_no_board(tmp_path):
    import os
    import tty

    from servotool.devices.hiwonder.client import NoBoardAnswer

    master, slave = os.openpty()
    tty.setraw(slave)
    try:
        path = os.ttyname(slave)
        with pytest.raises(NoBoardAnswer, match=f"no board answered on {path}") as info:
            open_bus(f"hiwonder://{path}?timeout_ms=10")
        assert info.value.exit_code == 3
        bus = open_bus(f"hiwonder://{path}?timeout_ms=10", probe=False)  # ports probes without it
        bus.close()
    finally:
        os.close(slave)
        os.close(master)


def test_sim_state_round_trip(tmp_path):
    from servotool.io.sim_state import forget_sim_state, load_sim_state, save_sim_state

    assert load_sim_state("sim:rosorin-arm", tmp_path) == {}
    save_sim_state("sim:rosorin-arm", {"start_2": "960.000"}, tmp_path)
    assert load_sim_state("sim:rosorin-arm", tmp_path) == {"start_2": "960.000"}
    assert load_sim_state("sim:rosorin-arm?noise=1", tmp_path) == {}
    assert forget_sim_state("sim:rosorin-arm", tmp_path) and not forget_sim_state("sim:rosorin-arm", tmp_path)


def test_the_real_client_never_loads_the_simulator() -> None:
    import subprocess
    import sys

    code = (
        "import sys, servotool.devices.hiwonder.client\n"
        "assert 'servotool.devices.hiwonder.sim' not in sys.modules, 'simulator loaded by the client'\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


# --- simulated time and a slow simulator thread ------------------------------------------------------------


def test_clock_sim_runs_the_simulator_in_lock_step_with_the_bus_clock(bus_factory):
    from servotool.runs.bus.servo import move_to, read_limits

    bus = bus_factory("sim:rosorin-arm?clock=sim")
    assert isinstance(bus.clock, FakeClock) and bus.sim.clock is bus.clock
    start = bus.clock.now()
    result = move_to(bus, bus.clock, {2: 700}, limits=read_limits(bus), speed=250.0)
    # the move's 40 ms deadlines were kept on simulated time, and the simulated servo followed
    assert bus.clock.now() - start >= result.duration_s > 0.4 and result.frames > 10
    assert abs(bus.read_position(2) - 700) <= 2
    assert bus.sim.frames_seen == bus.stats.frames_sent


def test_the_default_clock_is_the_host_clock(bus_factory):
    from servotool.clock import MonotonicClock
    from servotool.devices.bus import bus_clock

    assert isinstance(bus_factory("sim:rosorin-arm?clock=host").clock, MonotonicClock)
    assert isinstance(bus_clock(bus_factory("sim:rosorin-arm")), MonotonicClock)
    lock_step = bus_factory("sim:rosorin-arm?clock=sim")
    assert bus_clock(lock_step) is lock_step.clock  # what servo move, sweep and campaign sweeps keep


@pytest.mark.parametrize("url", ["sim:rosorin-arm?clock=fast", "hiwonder:///dev/null?clock=sim"])
def test_a_clock_other_than_host_or_sim_or_on_a_real_board_is_refused(url):
    with pytest.raises(DeviceURLError, match="clock"):
        open_bus(url)


def test_a_slow_simulator_thread_is_waited_for_and_never_reads_as_silent(bus_factory, monkeypatch):
    bus = bus_factory("sim:rosorin-arm?timeout_ms=5&retries=0")
    handle = bus.sim.handle

    def starved(frame):  # the serving thread gets no CPU for 100 ms, 20 times the reply timeout
        time.sleep(0.1)
        return handle(frame)

    monkeypatch.setattr(bus.sim, "handle", starved)
    assert bus.read_position(2) == 776 and not bus.silent
    assert bus.read_position(10) == 499
    bus.sim.set_silent(3)
    assert bus.read_position(3) is None and bus.silent == {3}  # a silent servo still times out


@pytest.mark.parametrize("url", ["sim:rosorin-arm?clock=sim", "sim:microduck?clock=sim"])
def test_clock_sim_with_a_host_clock_from_the_caller_is_refused(url):
    from servotool.clock import MonotonicClock

    with pytest.raises(DeviceURLError, match="simulated time"):
        open_bus(url, clock=MonotonicClock())


def test_a_signal_during_the_board_probe_closes_the_port(monkeypatch):
    # the probe reads servo after servo (a timeout each on a dead line): Ctrl-C or SIGTERM there left the
    # port open behind the error
    from servotool.errors import StopSignal

    closed = []
    real_close = HiwonderBus.close

    def answers(self):
        raise StopSignal(15)

    def close(self):
        closed.append(True)
        real_close(self)

    monkeypatch.setattr(HiwonderBus, "answers", answers)
    monkeypatch.setattr(HiwonderBus, "close", close)
    with start_sim("rosorin-arm", {}) as server, pytest.raises(StopSignal):
        open_bus(f"hiwonder://{server.path}?timeout_ms=200")
    assert closed == [True]


@pytest.mark.parametrize(
    "url",
    [
        "hiwonder:spy://{path}",
        "hiwonder:loop://",
        "hiwonder:socket://127.0.0.1:9",
        "hiwonder:rfc2217://127.0.0.1:9",
        "hiwonder:hwgrep://pts",
    ],
)
def test_a_pyserial_url_in_place_of_a_device_path_is_refused_before_anything_opens(url, monkeypatch):
    # pyserial's serial_for_url opened them: spy:///dev/X reached the bus another command held, under a
    # lock key of its own (cwd/spy:/dev/X), and wrote a hold into a running move
    import serial

    def opened(*args, **kwargs):
        raise AssertionError("a port was opened")

    monkeypatch.setattr(serial, "serial_for_url", opened)
    monkeypatch.setattr(serial, "Serial", opened)
    server = start_sim("rosorin-arm", {})
    try:
        with pytest.raises(DeviceURLError, match="a serial device path"):
            open_bus(url.format(path=server.path))
    finally:
        server.close()


@pytest.mark.parametrize("command", ["move", "hold", "torque_off", "read_position"])
def test_losing_the_pty_raises_connection_lost_whatever_the_command(command):
    # the master end of a pty gone makes pyserial's tcdrain/tcflush raise termios.error, which is no OSError
    from servotool.errors import ConnectionLost, ExitCode

    server = start_sim("rosorin-arm", {})
    bus = open_bus(f"hiwonder://{server.path}?timeout_ms=50&retries=0")
    try:
        assert bus.read_position(1) == 500
        server.close()
        assert wait_for(lambda: not server.running)
        calls = {
            "move": lambda: bus.move({1: 510}, 40),
            "hold": bus.hold,
            "torque_off": lambda: bus.torque_off(10),
            "read_position": lambda: bus.read_position(1),
        }
        with pytest.raises(ConnectionLost) as info:
            for _ in range(3):
                calls[command]()
        assert info.value.exit_code == ExitCode.DEVICE
        assert "lost" in str(info.value)
    finally:
        bus.close()
