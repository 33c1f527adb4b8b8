import os
import subprocess
import sys
from pathlib import Path

import pytest

from servotool.clock import FakeClock
from servotool.devices import dynamixel
from servotool.devices.bus import Bus
from servotool.devices.dynamixel import control_table as ct
from servotool.devices.dynamixel.client import DxlBus, DxlWriteRefused, parse_ids
from servotool.devices.dynamixel.control_table import HardwareError
from servotool.devices.dynamixel.sim import start_sim
from servotool.devices.registry import DeviceURLError, open_bus
from servotool.errors import ConnectionLost, ExitCode, Refused

ROOT = str(Path(__file__).resolve().parents[3])
LEGS = (10, 11, 12, 13, 14, 20, 21, 22, 23, 24)


@pytest.fixture
def bus_factory():
    opened = []

    def make(url="sim:microduck", **kwargs):
        bus = open_bus(url, **kwargs)
        opened.append(bus)
        return bus

    yield make
    for bus in opened:
        bus.close()


def test_telemetry_sweep_is_a_typed_frame_per_axis(bus_factory):
    clock = FakeClock(100.0)
    bus = bus_factory("sim:microduck?noise=0&current_noise_ma=0", clock=clock)
    assert isinstance(bus, DxlBus) and isinstance(bus, Bus) and bus.simulated
    assert bus.ids == tuple(sorted(bus.ids))
    assert bus.groups["neck"] == (30, 31, 32, 33)
    frame = bus.read_telemetry()
    assert frame.t_sent == frame.t == 100.0 and frame.silent == ()
    knee = frame[13]
    assert knee.answered and not knee.alert
    assert knee.gap == knee.position_trajectory - knee.position > 0
    assert knee.current_ma == pytest.approx(17 + 150, abs=8)  # standby + the standing load it carries
    assert 4.0 < knee.voltage_v < 5.0 and knee.temperature_c == 30
    assert knee.velocity_rpm == 0 and knee.velocity_trajectory_rpm == 0
    neck = bus.read_telemetry(bus.groups["neck"])
    assert tuple(neck.axes) == (30, 31, 32, 33)
    assert bus.read_telemetry(()).axes == {} and bus.read_hardware_errors(()).status == {}


def test_a_silent_axis_is_marked_and_never_raises(bus_factory):
    bus = bus_factory("sim:microduck?silent=22&latency_ms=4")
    frame = bus.read_telemetry(LEGS)
    assert frame.silent == (22,)
    assert frame[22].answered is False and frame[22].position is None and frame[22].current_ma is None
    assert all(frame[sid].answered for sid in LEGS if sid != 22)
    assert bus.read_hardware_errors().silent == (22,)
    assert bus.read_position(22) is None and 22 in bus.silent
    assert bus.ping(22) is None and bus.ping(23) == ct.MODEL_XL330_M288


def test_a_missed_or_garbled_frame_costs_one_axis_one_sweep(bus_factory):
    bus = bus_factory()
    bus.sim.drop_next(1)
    assert bus.read_telemetry(LEGS).silent == (10,)
    bus.sim.corrupt_next(1)
    assert bus.read_telemetry(LEGS).silent == (10,)
    assert bus.stats.corrupt == 1
    assert bus.read_telemetry(LEGS).silent == ()
    assert not bus.silent


def test_error_sweep_reads_register_70_across_axes(bus_factory):
    bus = bus_factory("sim:microduck?latched=30,31:0x10")
    sweep = bus.read_hardware_errors()
    assert sweep.latched == {30: HardwareError.OVERLOAD, 31: HardwareError.ELECTRICAL_SHOCK}
    assert sweep.status[10] == 0 and sweep.silent == ()
    assert bus.read_telemetry([30])[30].alert is True
    assert bus.sim.instructions["SyncRead"] == 2


def test_overload_lead_up_seen_through_the_client_in_lock_step(bus_factory):
    clock = FakeClock()
    bus = bus_factory("sim:microduck?overload=12@3.0&overload_ramp_s=2.0&current_noise_ma=0", clock=clock)
    seen = []
    while clock.now() < 3.5:
        frame = bus.read_telemetry(LEGS)
        seen.append((frame.t, frame[12].current_ma, frame[12].gap, frame[12].alert))
        clock.sleep(1 / 30)
    before = [c for t, c, _, _ in seen if t < 1.0]
    lead_up = [c for t, c, _, _ in seen if 1.1 < t < 2.95]
    after = [(c, g, a) for t, c, g, a in seen if t > 3.05]
    assert max(before) - min(before) < 5
    assert lead_up == sorted(lead_up) and lead_up[-1] > before[0] + 1000
    assert all(c == 0 and g == 0 and a for c, g, a in after)
    assert bus.read_hardware_errors().latched == {12: HardwareError.OVERLOAD}
    assert bus.set_torque([12, 13], True) == {12: False, 13: True}  # the latch holds torque off
    assert bus.read_torque(12) is False
    assert bus.sim.instructions["Reboot"] == 0  # nothing but an explicit reboot() sends one
    assert bus.reboot(12) and bus.read_hardware_errors([12]).status == {12: 0}
    assert bus.read_torque(12) is False


def test_clock_sim_gives_the_bus_its_own_lock_step_clock(bus_factory):
    bus = bus_factory("sim:microduck?clock=sim&overload=12@3.0&overload_ramp_s=2.0")
    clock = bus.clock
    assert isinstance(clock, FakeClock) and bus.sim.clock is clock
    clock.sleep(3.5)  # three and a half simulated seconds, at once
    assert bus.read_hardware_errors().latched == {12: HardwareError.OVERLOAD}
    with pytest.raises(DeviceURLError, match="clock"):
        open_bus("sim:microduck?clock=wall")


def test_eeprom_writes_are_refused_before_anything_is_sent(bus_factory):
    bus = bus_factory()
    sent = bus.stats.packets_sent
    for field in ("ID", "Baud Rate", "Operating Mode", ct.XL330["Shutdown"], 63, 0):
        with pytest.raises(DxlWriteRefused, match="EEPROM|read-only"):
            bus.write(10, field, 1)
    with pytest.raises(DxlWriteRefused, match="EEPROM"):
        bus.write_many("Min Position Limit", {10: 0, 11: 0})
    with pytest.raises(DxlWriteRefused, match="read-only"):
        bus.write(10, "Hardware Error Status", 0)
    with pytest.raises(DxlWriteRefused, match="goal position outside"):
        bus.write_goals({10: 4096})
    assert bus.stats.packets_sent == sent
    assert isinstance(DxlWriteRefused("x"), Refused)


@pytest.mark.parametrize("axis", [254, 253, 255, -1, 1000])
def test_a_write_or_reboot_to_the_broadcast_or_an_invalid_id_is_refused_before_anything_is_sent(
    bus_factory, axis
):
    # write(254, ...) went out as a broadcast: every servo on the line took the goal or the torque switch
    bus = bus_factory("sim:microduck?clock=sim")
    sim = bus.sim
    sent = bus.stats.packets_sent
    with pytest.raises(DxlWriteRefused, match="servo id"):
        bus.write(axis, "Goal Position", 2300)
    with pytest.raises(DxlWriteRefused, match="servo id"):
        bus.write_goals({10: 2100, axis: 2300})
    with pytest.raises(DxlWriteRefused, match="servo id"):
        bus.set_torque([axis], False)
    with pytest.raises(DxlWriteRefused, match="servo id"):
        bus.reboot(axis)
    with pytest.raises(DxlWriteRefused, match="servo id"):
        bus.move({axis: 2300}, 500)
    assert bus.stats.packets_sent == sent
    assert not {"Write", "SyncWrite", "Reboot"} & set(dict(sim.instructions))


def test_ram_writes_torque_and_goals(bus_factory):
    clock = FakeClock()
    bus = bus_factory("sim:microduck?noise=0", clock=clock)
    assert bus.set_torque([10, 11], False) == {10: True, 11: True}
    assert bus.read_torque(10) is False
    assert bus.set_torque([10], True) == {10: True}
    bus.write_goals({10: 2300})
    clock.advance(1.0)
    assert bus.read(10, "Goal Position") == 2300
    assert abs(bus.read_position(10) - 2300) < 10
    bus.move({10: 2000}, 500)
    clock.advance(0.25)
    assert 2050 < bus.read_position(10) < 2250
    clock.advance(1.0)
    bus.hold([10])
    assert bus.read_stored_limits(10) == (0, 4095)
    assert bus.read_voltage(10) in range(4000, 5001, 100) and bus.read_temperature(10) == 30


def test_scan_and_real_url_on_the_simulators_pty():
    server = start_sim("microduck", {"silent": "14"})
    try:
        # a real URL: nothing waits for the simulator's thread, so a loaded host gets a patient adapter
        with open_bus(f"dxl://{server.path}?baud=1000000&ids=10-14,30&latency_ms=100") as bus:
            assert not bus.simulated and bus.ids == (10, 11, 12, 13, 14, 30)
            assert bus.scan() == {sid: ct.MODEL_XL330_M288 for sid in (10, 11, 12, 13, 30)}
            assert bus.read_telemetry().silent == (14,)
    finally:
        server.close()


@pytest.mark.slow
def test_probe_lists_answering_ids():
    server = start_sim("microduck", {"silent": "33"})
    try:
        assert dynamixel.probe(server.path, 1_000_000) == [10, 11, 12, 13, 14, 20, 21, 22, 23, 24, 30, 31, 32]
    finally:
        server.close()


def test_losing_the_port_raises_connection_lost(bus_factory):
    bus = bus_factory()
    bus.read_telemetry()
    bus.server.close()
    with pytest.raises(ConnectionLost) as info:
        for _ in range(3):
            bus.read_telemetry()
    assert info.value.exit_code == ExitCode.DEVICE
    # the system's reason in words, not termios.error's tuple ("port lost ((5, 'Input/output error'))")
    assert "((" not in str(info.value) and "Input/output error" in str(info.value)


def test_a_missing_port_is_a_device_error():
    with pytest.raises(ConnectionLost):
        open_bus("dxl:///dev/does-not-exist?ids=1")


@pytest.mark.parametrize(
    ("url", "why"),
    [
        ("dxl:///dev/ttyUSB0?ids=10-", "ids"),
        ("dxl:///dev/ttyUSB0?ids=10,10", "repeats"),
        ("dxl:///dev/ttyUSB0?ids=300", "0-252"),
        ("dxl:///dev/ttyUSB0?warp=1", "unknown parameters"),
        ("dxl:///dev/ttyUSB0?latency_ms=0", "latency_ms"),
        # a baud dynamixel-sdk cannot set was found out only after the port was opened (at 57600 baud)
        ("dxl:///dev/ttyUSB0?baud=-5", "baud"),
        ("dxl:///dev/ttyUSB0?baud=1234", "baud"),
        ("dxl:///dev/ttyUSB0?baud=1_000_000", "baud"),
        # int() read 10_1 as servo 101 and Arabic-Indic digits as 15
        ("dxl:///dev/ttyUSB0?ids=10_1", "ids"),
        ("dxl:///dev/ttyUSB0?ids=\u0661\u0665", "ids"),
        ("dxl:///dev/ttyUSB0?ids=0x10", "ids"),
        ("dxl:spy:///dev/ttyUSB0?ids=1", "a serial device path"),
        ("dxl:///dev/ttyUSB0?profile=robot", "unknown Dynamixel profile"),
        ("sim:microduck?overload=12@x", "overload"),
    ],
)
def test_bad_urls_are_refused_before_anything_opens(url, why):
    with pytest.raises(DeviceURLError, match=why):
        open_bus(url)


def test_parse_ids_accepts_lists_and_ranges():
    assert parse_ids("10-14,20, 30-31") == (10, 11, 12, 13, 14, 20, 30, 31)
    assert parse_ids("7") == (7,)
    with pytest.raises(ValueError):
        parse_ids("14-10")


def test_the_family_loads_dynamixel_sdk_only_when_a_bus_opens():
    code = (
        "import sys, servotool.devices.dynamixel as d; "
        "assert 'microduck' in d.PROFILES and callable(d.open_url) and callable(d.probe); "
        "assert 'dynamixel_sdk' not in sys.modules"
    )
    subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT, env={**os.environ, "PYTHONPATH": ROOT})


def test_a_signal_during_the_discovery_ping_closes_the_port(monkeypatch):
    # a real URL without ids pings the line (about a second per baud on hardware): Ctrl-C or SIGTERM
    # there left the port open behind the error
    from servotool.errors import StopSignal

    closed = []
    real_close = DxlBus.close

    def ping(self):
        raise StopSignal(15)

    def close(self):
        closed.append(True)
        real_close(self)

    monkeypatch.setattr(DxlBus, "broadcast_ping", ping)
    monkeypatch.setattr(DxlBus, "close", close)
    server = start_sim("microduck", {})
    try:
        with pytest.raises(StopSignal):
            open_bus(f"dxl://{server.path}?baud=1000000")
        assert closed == [True]
    finally:
        server.close()


def test_a_port_that_does_not_open_is_one_plain_reason():
    from servotool.devices.registry import open_bus

    with pytest.raises(Exception, match="cannot open") as info:
        open_bus("dxl:///dev/servotool-no-such-port?ids=1")
    url = "dxl:///dev/servotool-no-such-port?ids=1"
    assert str(info.value) == f"cannot open {url} (No such file or directory)"
    assert getattr(info.value, "exit_code", None) == 3
