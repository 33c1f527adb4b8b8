"""Read-only checks of a real Dynamixel bus, run when SERVOTOOL_TEST_DXL names one (e.g.
dxl:///dev/ttyUSB0?baud=1000000&ids=10-14,20-24,30-33). Nothing here writes a register or sends REBOOT."""

import os

import pytest

from servotool.devices.dynamixel import control_table as ct
from servotool.devices.registry import open_bus

URL = os.environ.get("SERVOTOOL_TEST_DXL")

pytestmark = [
    pytest.mark.hardware,
    pytest.mark.skipif(not URL, reason="set SERVOTOOL_TEST_DXL to a real Dynamixel bus URL to run"),
]


@pytest.fixture
def bus():
    with open_bus(URL) as b:
        assert not b.simulated
        yield b


def test_every_servo_answers_a_ping_with_its_model(bus):
    found = bus.scan()
    assert sorted(found) == sorted(bus.ids), f"not answering: {sorted(set(bus.ids) - set(found))}"


def test_telemetry_sweep_is_plausible(bus):
    frame = bus.read_telemetry()
    assert frame.silent == ()
    for sid, axis in frame.axes.items():
        assert 3.0 <= axis.voltage_v <= 15.0, (sid, axis)
        assert 0 <= axis.temperature_c <= 85, (sid, axis)
        assert abs(axis.current_ma) < 5000, (sid, axis)


def test_error_sweep_reads_one_byte_per_servo(bus):
    sweep = bus.read_hardware_errors()
    assert sweep.silent == ()
    assert all(0 <= bits <= 0xFF for bits in sweep.status.values())
    assert all(bus.read(sid, ct.HARDWARE_ERROR_STATUS) == sweep.status[sid] for sid in bus.ids)


def test_every_servo_answers_with_an_operating_mode_an_x_series_has(bus):
    modes = bus.read_operating_modes()
    assert all(m in ct.OPERATING_MODES for m in modes.values()), modes
