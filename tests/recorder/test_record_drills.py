"""Drills: the capture folder removed, or the disk full, in the middle of a recording (the Dynamixel
simulator in lock-step on a FakeClock: no sleeps, no wall clock).

Whatever happens to the destination, captures already published stay whole, nothing half-written is left
under any name, the ending is the recorder's one path (source closed), one line says what happened, the
exit code is the documented one, and nothing but reads ever goes out on the bus (no REBOOT, no write)."""

from __future__ import annotations

import errno
import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

import servotool.io.captures as captures
import servotool.runs.recorder.loop as record
from servotool.clock import FakeClock
from servotool.io.captures import read_capture
from servotool.runs.recorder.loop import RecordSettings, run_record
from servotool.runs.recorder.sources import open_source

# two overloads: axis 12 latches at 4 s (published about 2 s later), axis 20 at 12 s
URL = "sim:microduck?overload=12@4,20@12&seed=5"


def _read_only(sim) -> None:
    sent = dict(sim.instructions)
    assert set(sent) <= {"SyncRead", "Read", "Ping"}, sent


def _disk_fills_at(capture: int, monkeypatch: pytest.MonkeyPatch, after_lines: int = 40) -> None:
    """From the `capture`-th publication on, the disk is full `after_lines` lines into the file."""
    real_publish, real_encode = captures.publish_capture, captures.encode_line
    state = {"publication": 0, "lines": 0}

    def publish(*args, **kwargs):
        state["publication"] += 1
        state["lines"] = 0
        return real_publish(*args, **kwargs)

    def encode(obj):
        state["lines"] += 1
        if state["publication"] >= capture and state["lines"] > after_lines:
            raise OSError(errno.ENOSPC, "No space left on device")
        return real_encode(obj)

    monkeypatch.setattr(captures, "publish_capture", publish)
    monkeypatch.setattr(captures, "encode_line", encode)
    monkeypatch.setattr(record, "publish_capture", captures.publish_capture)  # what the loop calls


def _simulated_bus(tmp_path: Path):
    """(a FakeClock, the simulated bus in lock-step on it, the capture folder to be): every drill's start."""
    clock = FakeClock()
    return clock, open_source(URL, "bus", clock), tmp_path / "caps"


def _while_the_second_capture_gathers(action, done: list[bool]):
    """An on_progress callback that runs `action` once, while the second capture's window is open (the
    first one published), and notes it in `done`."""

    def progress(p):
        if p.captures and p.window_open and not done:
            action()
            done.append(True)

    return progress


def test_disk_full_mid_capture_stops_the_recording_and_keeps_the_first_capture(tmp_path, monkeypatch):
    _disk_fills_at(2, monkeypatch)
    clock, source, dest = _simulated_bus(tmp_path)
    out = run_record(source, clock, RecordSettings(dest=dest, duration_s=40.0), handle_signals=False)
    assert out.status == "publish-failed" and out.exit_code == 1, (out.status, out.reason)
    assert out.duration_s < 20.0  # stopped at the failure, not at the end of the 40 s
    assert len(out.captures) == 1
    header, samples = read_capture(out.captures[0].path)  # whole: its header's counts match
    assert header["trigger_axes"] == [12]
    assert len(out.publish_errors) == 1 and "No space left on device" in out.publish_errors[0]
    assert "recording stopped" in out.publish_errors[0]
    assert sorted(p.name for p in dest.iterdir()) == [out.captures[0].path.name]  # no temporary file left
    assert source.bus._closed  # the one ending closed the bus
    _read_only(source.bus.sim)


def test_a_capture_that_fails_at_the_ending_makes_the_outcome_publish_failed(tmp_path, monkeypatch):
    # the duration ends while axis 12's capture is open: it is published by the ending, and fails there;
    # the outcome (its status and exit code, in the JSON too) says so, not "complete" with exit 0
    _disk_fills_at(1, monkeypatch)
    clock, source, dest = _simulated_bus(tmp_path)
    out = run_record(source, clock, RecordSettings(dest=dest, duration_s=5.0), handle_signals=False)
    assert out.status == "publish-failed" and out.exit_code == 1, (out.status, out.reason)
    assert not out.captures and len(out.publish_errors) == 1 and out.reason == out.publish_errors[0]
    assert not dest.exists() or not list(dest.iterdir())  # nothing half-written left
    _read_only(source.bus.sim)


def test_capture_folder_removed_mid_recording_is_made_again_and_said(tmp_path):
    clock, source, dest = _simulated_bus(tmp_path)
    warned: list[str] = []
    removed: list[bool] = []
    progress = _while_the_second_capture_gathers(lambda: shutil.rmtree(dest), removed)
    out = run_record(
        source,
        clock,
        RecordSettings(dest=dest, duration_s=16.0),
        on_progress=progress,
        on_warning=warned.append,
        handle_signals=False,
    )
    assert removed and out.status == "complete" and out.exit_code == 0, out.reason
    assert [c.header["trigger_axes"] for c in out.captures] == [[12], [20]]
    assert not out.captures[0].path.exists()  # removed with its folder, by someone else
    header, _ = read_capture(out.captures[1].path)  # the evidence in hand is kept
    assert header["tail_complete"]
    (line,) = [w for w in warned if "removed" in w]
    assert str(dest) in line and "made again" in line
    assert line in out.warnings
    _read_only(source.bus.sim)


def test_a_file_where_the_capture_folder_was_stops_the_recording(tmp_path):
    clock, source, dest = _simulated_bus(tmp_path)
    swapped: list[bool] = []

    def swap() -> None:
        shutil.rmtree(dest)
        dest.write_text("not a folder")

    progress = _while_the_second_capture_gathers(swap, swapped)
    out = run_record(
        source, clock, RecordSettings(dest=dest, duration_s=40.0), on_progress=progress, handle_signals=False
    )
    assert out.status == "publish-failed" and out.exit_code == 1
    assert out.duration_s < 20.0
    assert len(out.publish_errors) == 1 and str(dest) in out.publish_errors[0]
    assert dest.read_text() == "not a folder"
    _read_only(source.bus.sim)


def test_the_command_says_it_in_one_line_and_exits_1(tmp_path, monkeypatch):
    import servotool.cli.record as cli_record
    from servotool.cli.app import app

    _disk_fills_at(2, monkeypatch)
    clock = FakeClock()
    opened = []

    def fake_open(url, kind, _clock):
        opened.append(open_source(URL, "bus", clock))
        return opened[-1]

    monkeypatch.setattr(cli_record, "MonotonicClock", lambda: clock)
    monkeypatch.setattr(cli_record, "open_source", fake_open)
    dest = tmp_path / "caps"
    result = CliRunner().invoke(app, ["record", "--duration", "40", "--out", str(dest), "--json"])
    assert result.exit_code == 1, result.output
    errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "No space left on device" in errors[0] and "recording stopped" in errors[0]
    data = json.loads(result.stdout)
    assert data["status"] == "publish-failed" and data["exit_code"] == 1 and len(data["captures"]) == 1
    assert [p.name for p in Path(dest).iterdir()] == [Path(data["captures"][0]["path"]).name]
    _read_only(opened[0].bus.sim)
