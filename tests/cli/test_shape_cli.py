"""`servotool step --shaper otg` and `servotool shape`: the jerk-limited generator at the wire and offline."""

from __future__ import annotations

import json

import numpy as np
import pytest
from typer.testing import CliRunner

from servotool.analysis.recording import recording_from_frame
from servotool.cli.app import app
from servotool.io.csvlog import read_csv, read_meta
from servotool.runs.offline.shape import replay_file

runner = CliRunner()


def test_otg_shaped_step_records_its_shaper_and_replays_offline(tmp_path):
    res = runner.invoke(
        app,
        [
            "step",
            "--robot",
            "sim:fr3?clock=sim",  # simulated time: the same run whatever the load on the machine
            "--shaper",
            "otg",
            "--j-max",
            "5000",
            "--size",
            "10",
            "--steps",
            "2",
            "--out",
            str(tmp_path),
            "--json",
        ],
    )
    assert res.exit_code == 0, res.stderr
    out = json.loads(res.stdout)
    result = out["analysis"]["result"]
    assert result["runaways"] == 0 and result["total_rejects"] == 0
    assert all(s["verdict"] == "ok" for s in result["steps"])
    csv = next(tmp_path.glob("step_*.csv"))
    cfg = read_meta(csv).config
    assert cfg["shaper"] == "otg" and cfg["j_max"] == 5000.0 and cfg["shaped"]

    # offline: the same raw targets through both shapers; otg bounds jerk, both stay out of the band
    figures = {}
    for kind in ("accel", "otg"):
        replay = runner.invoke(
            app,
            [
                "shape",
                str(csv),
                "--shaper",
                kind,
                "--j-max",
                "5000",
                "--json",
                "--plot-dir",
                str(tmp_path / "plots"),
            ],
        )
        assert replay.exit_code == 0, replay.stderr
        # offline a jerk bound the accel shaper cannot use is said, not refused
        assert ("--j-max bounds the otg shaper only" in replay.stderr) == (kind == "accel")
        figures[kind] = json.loads(replay.stdout)
        assert (tmp_path / "plots" / f"{csv.stem}_{kind}-replay.png").stat().st_size > 0
    for data in figures.values():
        assert data["source"].startswith("raw target")
        assert data["raw_crosses_runaway_band"] and not data["shaped_crosses_runaway_band"]
        assert max(data["shaped"]["peak_velocity"]) <= 130 + 1e-6
        assert max(data["shaped"]["peak_acceleration"]) <= 500 * (1 + 1e-6)
        assert all(a["arrive_s"] is not None for a in data["arrivals"] if abs(a["size"]) > 1)
    assert max(figures["otg"]["shaped"]["peak_jerk"]) <= 5000 * (1 + 1e-6)
    assert max(figures["accel"]["shaped"]["peak_jerk"]) > 5000  # the accel shaper is only C1

    # replaying the otg shaper offline reproduces what went on the wire, tick for tick
    fr = replay_file(csv, kind="otg", j_max=5000.0)
    rec = recording_from_frame(read_csv(csv)[1])
    assert np.allclose(fr.result.shaped, rec.cmd_q, atol=1e-6)
    table = runner.invoke(app, ["shape", str(csv), "--shaper", "otg", "--j-max", "5000"])
    assert table.exit_code == 0 and "arrivals" in table.stdout


def test_shaped_step_without_guard_is_refused(tmp_path):
    res = runner.invoke(app, ["step", "--no-guard", "--steps", "1", "--out", str(tmp_path)])
    assert res.exit_code == 2
    assert "guard" in res.stderr
    assert not list(tmp_path.glob("*.csv"))


@pytest.mark.parametrize("args", [["--shaper", "accel"], ["--raw", "--shaper", "otg"], []])
def test_a_jerk_bound_that_would_bound_nothing_is_refused(tmp_path, args):
    res = runner.invoke(
        app,
        [
            "step",
            "--robot",
            "sim:fr3?clock=sim",
            *args,
            "--j-max",
            "5",
            "--steps",
            "1",
            "--out",
            str(tmp_path),
        ],
    )
    assert res.exit_code == 2 and "--j-max bounds the otg shaper only" in res.stderr
    assert not list(tmp_path.glob("*.csv"))


def test_unknown_shaper_and_bad_files_get_one_line(tmp_path):
    res = runner.invoke(app, ["step", "--shaper", "spline", "--steps", "1", "--out", str(tmp_path)])
    assert res.exit_code == 2 and "spline" in res.stderr
    foreign = tmp_path / "foreign.csv"
    foreign.write_text("a,b\n1,2\n")
    res = runner.invoke(app, ["shape", str(foreign)])
    assert res.exit_code == 2 and "foreign.csv" in res.stderr
    res = runner.invoke(app, ["shape", str(tmp_path / "missing.csv")])
    assert res.exit_code == 2 and "missing.csv" in res.stderr


def test_hostile_files_never_show_a_traceback(tmp_path):
    from tests.cli.test_analyze_cli import _first_row, _lines, write_ramp

    path = write_ramp(tmp_path / "a.csv", 0.078, seed=11)
    lines = _lines(path)
    at = _first_row(lines) + 15
    lines.insert(at, "0.3,cmd,broken\n")
    path.write_bytes(b"\xef\xbb\xbf" + "".join(lines).encode())
    res = runner.invoke(app, ["shape", str(path), "--json"])
    assert res.exit_code == 0, res.stderr
    out = json.loads(res.stdout)
    assert out["skipped_rows"]["malformed_lines"][0]["line"] == at + 1
    lines.insert(at + 50, "# end: complete\n")
    path.write_text("".join(lines))
    res = runner.invoke(app, ["shape", str(path)])
    assert res.exit_code == 2 and f"line {at + 51}" in res.stderr and "Traceback" not in res.stderr
    cells = [ln.split(",") for ln in lines[_first_row(lines) :] if ",cmd," in ln and ln.count(",") == 15]
    nan_cmds = "".join(",".join(c[:5] + ["nan"] + c[6:]) for c in cells)
    path.write_text("".join(lines[: _first_row(lines)]) + nan_cmds + "# end: complete\n")
    res = runner.invoke(app, ["shape", str(path)])
    assert res.exit_code == 2 and "commands" in res.stderr and "Traceback" not in res.stderr
