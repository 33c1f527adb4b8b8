"""Read-only checks of a real servo board, run when SERVOTOOL_TEST_BUS names one (e.g.
hiwonder:///dev/ttyUSB0?baud=1000000). Nothing here moves a servo or writes EEPROM."""

import os

import pytest

from servotool.devices.hiwonder.units import PULSE_MAX, PULSE_MIN
from servotool.devices.registry import open_bus

URL = os.environ.get("SERVOTOOL_TEST_BUS")
JOINTS = tuple(int(s) for s in os.environ.get("SERVOTOOL_TEST_BUS_JOINTS", "1,2,3,4,5").split(","))

pytestmark = [
    pytest.mark.hardware,
    pytest.mark.skipif(not URL, reason="set SERVOTOOL_TEST_BUS to a real board URL to run"),
]


@pytest.fixture
def bus():
    with open_bus(URL) as b:
        assert not b.simulated
        yield b


def test_every_joint_servo_answers(bus):
    records = bus.read_all(JOINTS)
    silent = [sid for sid, rec in records.items() if rec.silent]
    assert not silent, f"joint servos not answering: {silent}"
    for sid, rec in records.items():
        # a sagged arm can read slightly outside 0-1000, but never wildly
        assert PULSE_MIN - 200 <= rec.position <= PULSE_MAX + 200, (sid, rec)
        assert 5000 <= rec.voltage_mv <= 17000, (sid, rec)
        assert 0 <= rec.temperature_c <= 85, (sid, rec)


def test_stored_limits_are_sane(bus):
    for sid in JOINTS:
        lim = bus.read_stored_limits(sid)
        assert lim is not None, f"servo {sid} did not report its stored limits"
        lo, hi = lim
        assert PULSE_MIN <= lo < hi <= PULSE_MAX
