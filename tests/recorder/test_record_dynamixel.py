"""End to end on the Dynamixel simulator (sim:microduck, lock-step on a FakeClock): an overload injected
on one axis while another axis is already latched at connection gives exactly one capture, for the
overloaded axis, with its lead-up and its tail; the recorder never sends REBOOT or any write."""

from __future__ import annotations

from servotool.clock import FakeClock
from servotool.devices.dynamixel.telemetry import DynamixelSource
from servotool.io.captures import read_capture
from servotool.recorder.summary import value
from servotool.runs.recorder.loop import RecordSettings, run_record
from servotool.runs.recorder.sources import open_source


def test_overload_with_another_axis_latched_at_connect(tmp_path):
    clock = FakeClock()
    source = open_source("sim:microduck?overload=12@6&latched=31&seed=2", "bus", clock)
    assert isinstance(source, DynamixelSource)
    sim = source.bus.sim
    dest = tmp_path / "caps"
    out = run_record(source, clock, RecordSettings(dest=dest, duration_s=10.0), handle_signals=False)
    assert out.status == "complete", out.reason
    assert len(out.captures) == 1
    header, samples = read_capture(out.captures[0].path)
    assert header["trigger_axes"] == [12]
    assert header["trigger"][0]["bits"] == 0x20
    assert header["lead_up_s"] >= 2.0
    assert header["tail_complete"] and header["tail_observed_s"] >= 2.0 - 1 / 30
    assert -1.2 < header["last_clean_t"] < 0
    assert out.latched == {12: 0x20, 31: 0x20}
    assert [e.axis for e in out.events if e.kind == "baseline-latch"] == [31]
    # the overload's rising current is in the lead-up, the torque cut in the tail
    fast = [s for s in samples if s["ring"] == "fast"]
    before = [value(header, s, "12", "current") for s in fast if s["t"] < header["last_clean_t"] - 1.0]
    assert max(before) > 500 and value(header, fast[-1], "12", "current") < 50
    # the neck reaches the capture through the context ring
    assert any(s["ring"] == "context" and s["neck"] for s in samples)
    # read only: no REBOOT, no writes of any kind
    sent = dict(sim.instructions)
    assert set(sent) <= {"SyncRead", "Read", "Ping"} and sent["SyncRead"] > 0, sent


def test_a_silent_axis_does_not_stop_recording(tmp_path):
    clock = FakeClock()
    source = open_source("sim:microduck?overload=22@5&silent=33&seed=3", "bus", clock)
    out = run_record(source, clock, RecordSettings(dest=tmp_path, duration_s=8.0), handle_signals=False)
    assert [c.header["trigger_axes"] for c in out.captures] == [[22]]


def test_a_capture_header_names_each_servo_operating_mode(tmp_path):
    # an incident on a wheel (velocity mode, turning at its goal velocity) read as a position servo's: its
    # motion and current look like a runaway
    clock = FakeClock()
    url = "sim:microduck?overload=12@3&mode=12:1,13:16&goal_velocity=12:30&seed=4"
    source = open_source(url, "bus", clock)
    reads = source.bus.sim.instructions["SyncRead"]
    out = run_record(source, clock, RecordSettings(dest=tmp_path, duration_s=6.0), handle_signals=False)
    assert [c.header["trigger_axes"] for c in out.captures] == [[12]]
    header, _ = read_capture(out.captures[0].path)
    modes = header["device"]["operating_modes"]
    assert modes["12"] == "velocity (1)" and modes["13"] == "PWM (16)" and modes["10"] == "position (3)"
    assert sorted(map(int, modes)) == sorted(source.bus.ids)
    sent = dict(source.bus.sim.instructions)
    assert set(sent) <= {"SyncRead", "Read", "Ping"}, sent  # read only
    assert reads == 1  # the modes were read once, when the source opened
    from typer.testing import CliRunner

    from servotool.cli.app import app

    shown = CliRunner().invoke(app, ["incidents", "show", str(out.captures[0].path)], env={"COLUMNS": "80"})
    assert shown.exit_code == 0, shown.output
    assert "not in position mode: servo 12 velocity (1), 13 PWM (16)" in shown.stdout
