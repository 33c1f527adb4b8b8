"""Fixtures shared by the bus-servo run tests."""

import pytest

from servotool.clock import FakeClock
from servotool.devices.registry import open_bus


@pytest.fixture
def arm():
    opened = []

    def make(params=""):
        clock = FakeClock()
        bus = open_bus(f"sim:rosorin-arm?{params}" if params else "sim:rosorin-arm", clock=clock)
        opened.append(bus)
        return bus, clock

    yield make
    for bus in opened:
        bus.close()
