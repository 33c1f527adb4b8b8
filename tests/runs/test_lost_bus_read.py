"""`servo read` and `servo read --watch` on a bus where nobody answers: a lost device (exit 3, every servo
named), on the Dynamixel simulator as on the Hiwonder board's; a bus that comes back is watched on."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from servotool.cli.app import app
from servotool.clock import FakeClock
from servotool.devices.registry import open_bus
from servotool.runs.bus.servo import LOST_READS, BusSilent, watch

DXL_IDS = "10,11,12,13,14,20,21,22,23,24,30,31,32,33"


@pytest.mark.parametrize(
    ("url", "named"),
    [
        (f"sim:microduck?clock=sim&latency_ms=1&silent={DXL_IDS}", DXL_IDS.replace(",", ", ")),
        ("sim:rosorin-arm?clock=sim&silent=1&timeout_ms=20&retries=0", "1, 2, 3, 4, 5, 10"),
    ],
)
def test_servo_read_where_no_servo_answers_exits_3(url, named):
    result = CliRunner().invoke(app, ["servo", "read", "--bus", url, "--json"])
    assert result.exit_code == 3, result.output
    assert f"no servo answered: servo {named} not answering" in " ".join(result.stderr.split())


def test_servo_read_with_one_silent_servo_is_a_read():
    url = "sim:microduck?clock=sim&latency_ms=1&silent=22"
    assert CliRunner().invoke(app, ["servo", "read", "--bus", url, "--json"]).exit_code == 0


def _watch(params: str, rounds: int) -> tuple[int, float]:
    clock = FakeClock()
    with open_bus(f"sim:microduck?latency_ms=1&{params}", clock=clock) as bus:
        n = watch(bus, clock, 0.1, lambda records: None, rounds=rounds)
        return n, clock.now()


def test_watch_of_a_bus_that_stops_answering_is_a_lost_device():
    with pytest.raises(BusSilent, match=f"no servo answered {LOST_READS} reads in a row.*servo 10, 11"):
        _watch("freeze=0.5", rounds=100)


def test_watch_of_a_bus_that_comes_back_goes_on():
    assert _watch("freeze=0.5-0.65", rounds=20)[0] == 20
