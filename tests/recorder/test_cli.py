"""`servotool record` and `servotool incidents` from the command line."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from servotool.cli.app import app
from servotool.clock import FakeClock
from servotool.recorder.capture import capture_stamp
from servotool.runs.recorder.loop import RecordSettings, run_record
from tests.recorder.helpers import ScriptedSource

runner = CliRunner()


@pytest.fixture
def captures(tmp_path):
    clock = FakeClock()
    out = run_record(
        ScriptedSource(clock, overload={12: 4.0}, latched_at_start=(31,)),
        clock,
        RecordSettings(dest=tmp_path, duration_s=12.0),
        handle_signals=False,
    )
    assert len(out.captures) == 1
    return tmp_path


def test_help_lists_both_commands():
    res = runner.invoke(app, ["--help"])
    assert "record" in res.output and "incidents" in res.output
    for args in (["record", "--help"], ["incidents", "list", "--help"], ["incidents", "plot", "--help"]):
        assert runner.invoke(app, args).exit_code == 0


def test_record_refuses_bad_usage(tmp_path, monkeypatch):
    monkeypatch.setenv("SERVOTOOL_LOCK_DIR", str(tmp_path / "locks"))
    res = runner.invoke(
        app, ["record", "--bus", "sim:microduck", "--robot", "sim:fr3", "--out", str(tmp_path)]
    )
    assert res.exit_code == 2 and "not both" in res.output
    res = runner.invoke(app, ["record", "--robot", "sim:fr3", "--duration", "-1", "--out", str(tmp_path)])
    assert res.exit_code == 2 and "duration" in res.output
    res = runner.invoke(app, ["record", "--bus", "bogus:x", "--duration", "1", "--out", str(tmp_path)])
    assert res.exit_code == 2 and "Traceback" not in res.output


def test_record_refuses_a_bus_without_telemetry(tmp_path):
    res = runner.invoke(
        app, ["record", "--bus", "sim:rosorin-arm", "--duration", "1", "--out", str(tmp_path)]
    )
    assert res.exit_code == 2 and "dxl://" in res.output  # the recordable URLs, from the registry


def test_record_refuses_a_bus_in_simulated_time(tmp_path):
    # nothing would move its clock: the recorder watches in real time
    res = runner.invoke(
        app, ["record", "--bus", "sim:microduck?clock=sim", "--duration", "1", "--out", str(tmp_path)]
    )
    assert res.exit_code == 2 and "simulated time" in res.output
    assert not any(tmp_path.iterdir())


@pytest.mark.slow
def test_record_on_the_fairino_simulator_json(tmp_path):
    # silence_ms: a loaded test machine can starve the simulator's stream for longer than the 100 ms default
    dest = tmp_path / "caps"
    res = runner.invoke(
        app,
        ["record", "--robot", "sim:fr3?silence_ms=1000", "--duration", "1", "--out", str(dest), "--json"],
    )
    assert res.exit_code == 0, res.output
    data = json.loads(res.stdout[res.stdout.index("{") :])
    assert data["status"] == "complete" and data["captures"] == [] and data["frames"] > 10
    assert not dest.exists()  # connecting creates no directory


def test_incidents_list_show_plot(captures, tmp_path):
    res = runner.invoke(app, ["incidents", "list", "--out", str(captures), "--json"])
    assert res.exit_code == 0
    listed = json.loads(res.stdout)
    assert len(listed) == 1 and listed[0]["header"]["trigger_axes"] == [12]
    res = runner.invoke(app, ["incidents", "show", "last", "--out", str(captures), "--json"])
    assert res.exit_code == 0
    shown = json.loads(res.stdout)
    first = shown["axes"][0]
    assert first["axis"] == "12" and first["trigger"] and first["current"]["change"] > 500
    res = runner.invoke(app, ["incidents", "show", "1", "--out", str(captures)])
    assert res.exit_code == 0 and "last clean answer" in res.output
    png = tmp_path / "x.png"
    res = runner.invoke(app, ["incidents", "plot", "1", "--out", str(captures), "--plot", str(png)])
    assert res.exit_code == 0 and png.stat().st_size > 1000


def test_incidents_errors(captures, tmp_path):
    res = runner.invoke(app, ["incidents", "show", "nope", "--out", str(captures)])
    assert res.exit_code == 2 and "no capture" in res.output
    bad = captures / "capture_bad.jsonl"
    bad.write_text('{"format": "servotool-capture", "version": 1, "counts": {"fast": 3}}\n{}\n')
    res = runner.invoke(app, ["incidents", "show", str(bad)])
    assert res.exit_code == 2 and "header counts 3" in res.output
    res = runner.invoke(app, ["incidents", "list", "--out", str(tmp_path / "none")])
    assert res.exit_code == 0 and "no captures" in res.output


@pytest.mark.slow
def test_record_live_view_on_the_dynamixel_simulator(tmp_path):
    dest = tmp_path / "caps"
    url = "sim:microduck?overload=12@1.4&overload_ramp_s=0.4&latched=31"
    res = runner.invoke(app, ["record", "--bus", url, "--duration", "2.6", "--out", str(dest)])
    assert res.exit_code == 0, res.output
    text = " ".join(res.output.split())
    assert "SIMULATED" in text and "recorded 2." in text and "1 capture(s)" in text
    assert "axis 31 latched 0x20 at connection" in text
    caps = list(dest.glob("capture_*axis-12.jsonl"))
    assert len(caps) == 1


def test_record_refuses_a_destination_it_cannot_write(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    res = runner.invoke(
        app, ["record", "--robot", "sim:fr3", "--duration", "1", "--out", str(blocker / "caps")]
    )
    assert res.exit_code == 2 and "not a folder" in res.output


def test_incidents_read_at_80_columns(captures, monkeypatch):
    monkeypatch.setenv("COLUMNS", "80")
    res = runner.invoke(app, ["incidents", "list", "--out", str(captures)])
    assert res.exit_code == 0, res.output
    lines = res.stdout.splitlines()
    assert lines[0].startswith("1 capture(s) in ")
    res = runner.invoke(app, ["incidents", "show", "1", "--out", str(captures)])
    assert res.exit_code == 0, res.output
    lines = res.stdout.splitlines()
    assert lines[0].startswith("fault latch on 12 ")
    assert "mA" in res.stdout and "I before" not in res.stdout  # --wide only
    rule = next(i for i, line in enumerate(lines) if line.startswith("\u2500"))
    assert lines[rule - 1].split()[0] == "axis" and lines[rule + 1].split()[0] == "12"  # trigger axis first
    for out in (res.stdout, runner.invoke(app, ["incidents", "list", "--out", str(captures)]).stdout):
        # a line naming the captures' folder or file is one line the terminal wraps: its path stays whole
        assert "…" not in out and all(
            len(line.rstrip()) <= 80 for line in out.splitlines() if str(captures) not in line
        )
        assert any(str(captures) in line for line in out.splitlines())
    from rich.console import Console

    import servotool.cli.incidents as incidents_cli

    monkeypatch.setattr(incidents_cli, "console", Console(width=200))  # --wide is for a wider terminal
    wide = runner.invoke(app, ["incidents", "show", "1", "--out", str(captures), "--wide"])
    assert wide.exit_code == 0 and "I before" in wide.stdout


@pytest.mark.parametrize("unit", ["pulse", "deg"])
def test_incidents_show_heads_the_gap_with_the_captures_own_unit(captures, monkeypatch, unit):
    # the gap column was headed "pos. unit" whatever the device: pulses on a bus, degrees on an arm
    monkeypatch.setenv("COLUMNS", "80")
    (path,) = captures.glob("*.jsonl")
    lines = path.read_text().splitlines()
    header = json.loads(lines[0])
    header["device"]["units"] = {**header["device"].get("units", {}), "gap": unit}
    path.write_text("\n".join([json.dumps(header), *lines[1:]]) + "\n")
    res = runner.invoke(app, ["incidents", "show", "1", "--out", str(captures)])
    assert res.exit_code == 0, res.output
    heads = next(line.split() for line in res.stdout.splitlines() if line.split()[:2] == ["axis", "mA"])
    assert heads[:5] == ["axis", "mA", "mA", unit, unit] and "pos. unit" not in res.stdout


def test_incidents_plot_refuses_an_out_it_would_damage_or_misname(captures, tmp_path):
    capture = next(captures.glob("capture_*.jsonl"))
    recording = tmp_path / "run.csv"
    recording.write_text("# servotool-csv: 1\n# end: complete\n")
    folder = tmp_path / "figs"
    folder.mkdir()
    for out, word in [
        (recording, ".png"),
        (capture, ".png"),
        (folder, "folder"),
        (tmp_path / "fig.PDF", ".png"),
    ]:
        before = out.read_bytes() if out.is_file() else None
        res = runner.invoke(app, ["incidents", "plot", "last", "--out", str(captures), "--plot", str(out)])
        assert res.exit_code == 2, (out, res.output)
        assert res.exception is None or isinstance(res.exception, SystemExit), res.exception
        assert word in res.stderr
        assert before is None or out.read_bytes() == before
    assert not (tmp_path / "figs.png").exists()


def test_incidents_list_shows_the_capture_time_whole_and_it_finds_the_capture(captures, monkeypatch):
    monkeypatch.setenv("COLUMNS", "80")
    res = runner.invoke(app, ["incidents", "list", "--out", str(captures)])
    assert res.exit_code == 0, res.output
    assert "device scripted:" in res.stdout  # one device: named once, above the table
    row = next(line for line in res.stdout.splitlines() if line.startswith("1  "))
    stamp = row.split()[1]
    assert stamp.endswith("Z") and "T" in stamp and "capture_" not in stamp
    shown = runner.invoke(app, ["incidents", "show", stamp, "--out", str(captures), "--json"])
    assert shown.exit_code == 0, shown.output
    assert json.loads(shown.stdout)["header"]["id"].startswith("capture_" + stamp)


def test_an_empty_bus_is_refused_not_replaced_by_the_default(tmp_path):
    res = runner.invoke(app, ["record", "--bus", "", "--duration", "1", "--out", str(tmp_path)])
    assert res.exit_code == 2 and "no scheme" in res.output


@pytest.mark.parametrize("version", [2, 99, "1", None, True, 1.0])
def test_a_capture_of_another_format_version_is_refused_not_misread(captures, version):
    # version 99 was shown and plotted as if it were version 1 (exit 0)
    path = sorted(captures.glob("capture_*.jsonl"))[0]
    lines = path.read_text().splitlines()
    header = json.loads(lines[0])
    header["version"] = version
    other = captures / "capture_20200101T000000.000Z_axis-1.jsonl"
    other.write_text("\n".join([json.dumps(header), *lines[1:]]) + "\n")
    for cmd in ("show", "plot"):
        res = runner.invoke(app, ["incidents", cmd, str(other)])
        assert res.exit_code == 2, res.output
        assert "capture format version" in res.output and "reads version 1 only" in res.output
    res = runner.invoke(app, ["incidents", "list", "--out", str(captures), "--json"])
    assert res.exit_code == 0


def test_the_reader_knows_the_version_the_recorder_writes():
    from servotool.io.captures import CAPTURE_VERSION
    from servotool.recorder.capture import FORMAT_VERSION

    assert CAPTURE_VERSION == FORMAT_VERSION


def test_one_unreadable_file_leaves_the_list_readable(captures, monkeypatch):
    # a truncated capture (its first line cut) and a stray file in the folder: the list grew a device column,
    # the stray's whole name widened the time column, and the device URL was folded one character a line
    monkeypatch.setenv("COLUMNS", "80")
    good = sorted(captures.glob("capture_*.jsonl"))[0]
    (captures / "capture_20200101T000000.000Z_axis-3.jsonl").write_bytes(good.read_bytes()[:40])
    (captures / "notes-about-the-overload-on-the-left-leg-of-the-robot.jsonl").write_text("see above\n")
    res = runner.invoke(app, ["incidents", "list", "--out", str(captures)])
    assert res.exit_code == 0, res.output
    lines = res.stdout.splitlines()
    # the line naming the folder is one line the terminal wraps: its path stays whole
    assert all(len(line.rstrip()) <= 80 for line in lines if str(captures) not in line)
    assert "device scripted:" in res.stdout  # every readable capture has one device: named once, above
    rule = next(i for i, line in enumerate(lines) if line.startswith("\u2500"))
    rows = [line for line in lines[rule + 1 :] if line[:1].isdigit()]
    assert len(rows) == 3, res.stdout
    assert rows[0].split()[1] == "20200101T000000.000Z" and "unreadable" in rows[0]
    assert rows[1].split()[1] == capture_stamp(good.stem)
    assert "unreadable" in rows[2] and rows[2].split()[1] == "-"  # not a capture's name: the name is shown
    assert "notes-about" in "".join(line.strip() for line in lines[rule + 1 :])
