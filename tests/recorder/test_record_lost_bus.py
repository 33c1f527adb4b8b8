"""`record` on a Dynamixel bus whose servos stop answering (the simulator in lock-step on a FakeClock): a bus
where nothing answers, at the start or from a frozen line on, is a lost device (connection-lost, exit 3,
every axis named); one that comes back within LOST_AFTER_S is recorded on, with a warning for the gap."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from servotool.cli.app import app
from servotool.clock import FakeClock
from servotool.errors import ExitCode
from servotool.runs.recorder.loop import RecordSettings, run_record
from servotool.runs.recorder.silence import LOST_AFTER_S
from servotool.runs.recorder.sources import open_source

IDS = (10, 11, 12, 13, 14, 20, 21, 22, 23, 24, 30, 31, 32, 33)
NAMED = ", ".join(map(str, IDS))


def _record(tmp_path, params: str, duration_s: float = 6.0):
    clock = FakeClock()
    source = open_source(f"sim:microduck?latency_ms=1&{params}", "bus", clock)
    settings = RecordSettings(dest=tmp_path / "caps", duration_s=duration_s)
    return run_record(source, clock, settings, handle_signals=False)


def test_a_bus_where_no_servo_answers_is_lost_at_the_start(tmp_path):
    out = _record(tmp_path, "silent=" + ",".join(map(str, IDS)))
    assert out.status == "connection-lost" and out.exit_code == ExitCode.DEVICE == 3
    assert f"axes {NAMED} not answering" in out.reason
    assert out.duration_s == pytest.approx(LOST_AFTER_S, abs=0.1)
    assert any("not answered since the recording started" in w for w in out.warnings)


def test_a_bus_frozen_mid_run_is_lost_within_a_second(tmp_path):
    out = _record(tmp_path, "freeze=3")
    assert out.status == "connection-lost" and out.exit_code == 3
    assert f"axes {NAMED} not answering" in out.reason and "from 2.9" in out.reason
    assert out.duration_s == pytest.approx(3.0 + LOST_AFTER_S, abs=0.1)
    assert any("stopped answering 3.0" in w for w in out.warnings)


def test_a_line_that_comes_back_is_recorded_on_with_its_gap_in_the_warnings(tmp_path):
    out = _record(tmp_path, "freeze=3-3.4")
    assert out.status == "complete" and out.exit_code == 0
    assert any("stopped answering 3.0" in w for w in out.warnings)
    assert any("answered again after 0.4" in w for w in out.warnings)


def test_one_servo_that_stops_answering_is_named_and_the_others_are_recorded(tmp_path):
    out = _record(tmp_path, "silent=22@3-3.5")
    assert out.status == "complete"
    assert out.warnings == [
        "axis 22 stopped answering 3.00 s into the recording",
        "axis 22 answered again after 0.50 s without an answer",
    ]


def test_record_on_a_bus_where_nobody_answers_exits_3_naming_every_servo(tmp_path):
    url = "sim:microduck?latency_ms=1&silent=" + ",".join(map(str, IDS))
    args = ["record", "--bus", url, "--duration", "5", "--out", str(tmp_path / "caps"), "--json"]
    res = CliRunner().invoke(app, args)
    assert res.exit_code == 3, res.output
    data = json.loads(res.stdout[res.stdout.index("{") :])
    assert data["status"] == "connection-lost" and f"axes {NAMED} not answering" in data["reason"]
    assert data["warnings"]
