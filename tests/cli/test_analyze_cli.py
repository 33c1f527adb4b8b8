"""`servotool analyze` on folders of recordings: good, interrupted, foreign and damaged files."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from servotool.analysis.lag import simulate
from servotool.cli.app import app
from servotool.io.csvlog import CsvLogWriter
from servotool.motion.ramp import ramp_profile
from servotool.runs.arm.stream import columns, units

runner = CliRunner()
T = 0.01


def write_ramp(
    path: Path,
    lag: float,
    speeds=(10.0, 20.0),
    cut: float | None = None,
    seed: int = 0,
    device: str = "sim:fr3",
    simulated: bool = True,
    joint: int = 0,
) -> Path:
    """A ramp recording as the stream loop writes it, with a known lag (and cut short when `cut` is given)."""
    rng = np.random.default_rng(seed)
    prof = ramp_profile(0.0, 8.0, speeds, dt=T, ramp_s=0.1, settle_s=0.3)
    tc = np.arange(len(prof)) * T
    ts = np.arange(0.0, tc[-1] + 0.3, 0.008)
    m, _ = simulate(tc, prof.q, ts, lag, 0.0)
    m += rng.normal(0, 0.002, len(ts))
    rows = [
        (
            tc[k],
            {"event": "cmd", "seq": k, "pass": prof.pass_index[k], "phase": prof.phase[k], "q1": prof.q[k]},
        )
        for k in range(len(tc))
    ]
    rows += [
        (ts[i], {"event": "state", "q1": m[i], "main_code": 0, "sub_code": 0, "dev_t": ts[i]})
        for i in range(len(ts))
    ]
    rows.sort(key=lambda r: r[0])
    cfg = {
        "mode": "ramp",
        "joint": joint,
        "cmd_period_s": T,
        "a_max": 500.0,
        "v_max": 130.0,
        "transport": "udp",
    }
    with CsvLogWriter(
        path,
        device=device,
        simulated=simulated,
        config=cfg,
        units=units(6, False),
        columns=columns(6, False),
        command="servotool lag --ramp",
    ) as w:
        for t, row in rows:
            cells = {f"q{j}": 0.0 for j in range(1, 7)}
            if "q1" in row:
                cells[f"q{joint + 1}"] = row.pop("q1")
            w.write({"t": t, **cells, **row})
    if cut is not None:
        # what a crash at t = cut leaves: the rows up to then, half a row, no end line
        lines = path.read_text().splitlines(keepends=True)
        header = [ln for ln in lines if ln.startswith("#") and not ln.startswith("# end")]
        body = lines[len(header) :]
        kept = [body[0]] + [
            ln for ln in body[1:] if not ln.startswith("#") and float(ln.split(",")[0]) <= cut
        ]
        path.write_text("".join(header + kept) + "2.0,sta")
    return path


@pytest.mark.slow
def test_a_folder_is_searched_and_every_problem_gets_one_line(tmp_path):
    sub = tmp_path / "day1" / "fr20"
    sub.mkdir(parents=True)
    write_ramp(sub / "a.csv", 0.111, speeds=(5.0, 10.0), seed=1)
    write_ramp(tmp_path / "b.csv", 0.111, speeds=(10.0, 20.0), seed=2)
    write_ramp(tmp_path / "cut.csv", 0.111, cut=2.0, seed=3)
    (tmp_path / "foreign.csv").write_text("a,b\n1,2\n")
    (tmp_path / "broken.csv").write_text("# servotool-csv: 1\n# config: {not json\nt,event\n")
    (tmp_path / "notes.txt").write_text("ignored: not a csv")

    res = runner.invoke(app, ["analyze", str(tmp_path), "--json", "--plot-dir", str(tmp_path / "plots")])
    assert res.exit_code == 0, res.stderr
    out = json.loads(res.stdout)
    names = sorted(Path(f["file"]).name for f in out["files"])
    assert names == ["a.csv", "b.csv", "cut.csv"]
    problems = {Path(p["file"]).name: p["reason"] for p in out["problems"]}
    assert set(problems) == {"foreign.csv", "broken.csv"}
    assert "not a servotool-csv" in problems["foreign.csv"]
    assert "config" in problems["broken.csv"]
    cut = next(f for f in out["files"] if f["file"].endswith("cut.csv"))
    assert not cut["complete"] and "cut off" in cut["end_reason"]
    assert cut["result"]["fit"]["lag_ms"] == pytest.approx(111.0, abs=0.5)
    combined = out["combined_lag"]
    assert combined["n_files"] == 3 and combined["fit"]["lag_ms"] == pytest.approx(111.0, abs=0.3)
    assert len(list((tmp_path / "plots").glob("*.png"))) == 3
    # on the terminal: one line per skipped file, naming it and the reason
    text = runner.invoke(app, ["analyze", str(tmp_path)])
    skipped = [line for line in text.stderr.splitlines() if line.startswith("skipped")]
    assert len(skipped) == 2 and any("foreign.csv" in line for line in skipped)
    assert "interrupted" in text.stdout and "combined over 3 ramp files" in text.stdout
    first = text.stdout.splitlines()[0]
    assert first.startswith("3 file(s) analysed (3 ramp), 1 combined lag fit(s), 2 skipped"), first
    # a line naming a file is left whole for the terminal to wrap; every other line fits in 80 columns
    lines = [line for line in text.stdout.splitlines() if str(tmp_path) not in line]
    assert "…" not in text.stdout and all(len(line.rstrip()) <= 80 for line in lines), text.stdout
    assert sum(1 for line in text.stdout.splitlines() if str(tmp_path) in line) == 3  # one line per file


def test_nothing_analysable_exits_non_zero(tmp_path):
    (tmp_path / "foreign.csv").write_text("x\n1\n")
    res = runner.invoke(app, ["analyze", str(tmp_path / "foreign.csv"), str(tmp_path / "missing.csv")])
    assert res.exit_code == 1
    assert "no such file" in res.stderr and "no file could be analysed" in res.stderr
    empty = tmp_path / "empty"
    empty.mkdir()
    assert runner.invoke(app, ["analyze", str(empty)]).exit_code == 1


def test_other_modes_are_named_not_analysed(tmp_path):
    path = tmp_path / "servo.csv"
    with CsvLogWriter(
        path,
        device="sim:rosorin-arm",
        simulated=True,
        config={"mode": "servo"},
        units={},
        columns=["t", "event"],
        command="servotool servo",
    ) as w:
        w.write(t=0.0, event="x")
    res = runner.invoke(app, ["analyze", str(path), "--json"])
    assert res.exit_code == 1
    assert "mode 'servo'" in json.loads(res.stdout)["problems"][0]["reason"]


# ---------------------------------------------------------------------------------------------------------
# hostile files: never a traceback, stdout holds the JSON alone


def _lines(path: Path) -> list[str]:
    return path.read_text().splitlines(keepends=True)


def _first_row(lines: list[str]) -> int:
    """Index of the first data row (after the comment header and the column line)."""
    i = 0
    while lines[i].startswith("#"):
        i += 1
    return i + 1


def _analyze_json(*args: str) -> tuple[int, dict, str]:
    res = runner.invoke(app, ["analyze", *args, "--json", "--workers", "1"])
    assert "Traceback" not in res.stderr
    return res.exit_code, json.loads(res.stdout), res.stderr


def test_nan_cells_and_rows_are_skipped_and_counted(tmp_path):
    path = write_ramp(tmp_path / "nan.csv", 0.078, seed=4)
    lines = _lines(path)
    first = _first_row(lines)
    states = [i for i in range(first, len(lines)) if ",state," in lines[i]]
    for i in states[100:110]:  # ten state rows with a NaN joint value
        cells = lines[i].split(",")
        cells[5] = "nan"
        lines[i] = ",".join(cells)
    lines.insert(first + 5, ",".join(["nan"] * 16) + "\n")  # a row with no time at all
    path.write_text("".join(lines))
    code, out, _ = _analyze_json(str(path))
    assert code == 0
    skipped = out["files"][0]["skipped_rows"]
    assert skipped["nan_joint"] == 10 and skipped["no_time"] == 1 and skipped["malformed"] == 0
    assert out["files"][0]["result"]["fit"]["lag_ms"] == pytest.approx(78.0, abs=0.5)


def test_an_all_nan_joint_column_is_one_line_not_a_traceback(tmp_path):
    path = write_ramp(tmp_path / "allnan.csv", 0.078, seed=5)
    lines = _lines(path)
    for i in range(_first_row(lines), len(lines)):
        cells = lines[i].split(",")
        if len(cells) > 5 and cells[1] == "state":
            cells[5] = "nan"
            lines[i] = ",".join(cells)
    path.write_text("".join(lines))
    code, out, err = _analyze_json(str(path))
    assert code == 1 and out["files"] == []
    assert "measured state frames" in out["problems"][0]["reason"]
    assert len([ln for ln in err.splitlines() if ln.startswith("skipped")]) == 1


def _with_config_joint(tmp_path: Path, joint: object) -> Path:
    """A joint-0 ramp whose header's config says `joint` (as a hand-edited file might)."""
    path = write_ramp(tmp_path / "j.csv", 0.078, seed=7)
    text = path.read_text()
    assert text.count('"joint": 0,') == 1
    path.write_text(text.replace('"joint": 0,', f'"joint": {json.dumps(joint)},'))
    return path


@pytest.mark.parametrize(("joint", "shown"), [(1.5, "1.5"), (True, "true"), ("a", '"a"')])
def test_a_joint_that_is_no_whole_number_is_refused_not_rounded(tmp_path, joint, shown):
    # int(1.5) analysed joint 1 and int(True) joint 1, without a word
    code, out, err = _analyze_json(str(_with_config_joint(tmp_path, joint)))
    assert code == 1 and out["files"] == []
    assert f"config joint {shown} is not a joint index" in out["problems"][0]["reason"], out["problems"]


@pytest.mark.parametrize("joint", [0.0, "0"])
def test_a_whole_joint_written_as_a_float_or_text_is_that_joint(tmp_path, joint):
    code, out, _ = _analyze_json(str(_with_config_joint(tmp_path, joint)))
    assert code == 0 and out["files"][0]["result"]["fit"]["lag_ms"] == pytest.approx(78.0, abs=0.5)


def test_a_malformed_row_is_reported_with_its_line_and_skipped(tmp_path):
    path = write_ramp(tmp_path / "bad.csv", 0.078, seed=6)
    lines = _lines(path)
    at = _first_row(lines) + 40
    lines.insert(at, "0.4,cmd,not,enough\n")
    lines.insert(at + 10, '0.5,"state",' + ",".join(["1"] * 20) + "\n")
    path.write_text("".join(lines))
    code, out, _ = _analyze_json(str(path))
    assert code == 0
    skipped = out["files"][0]["skipped_rows"]
    assert skipped["malformed"] == 2
    assert [x["line"] for x in skipped["malformed_lines"]] == [at + 1, at + 11]
    assert "4 fields, expected 16" in skipped["malformed_lines"][0]["reason"]
    text = runner.invoke(app, ["analyze", str(path), "--workers", "1"])
    assert text.exit_code == 0 and f"line {at + 1}" in text.stderr


def test_a_50_mb_line_is_skipped_with_its_line_number(tmp_path):
    path = write_ramp(tmp_path / "huge.csv", 0.078, seed=7)
    lines = _lines(path)
    at = _first_row(lines) + 20
    lines.insert(at, "1" * (50 << 20) + "\n")
    path.write_text("".join(lines))
    code, out, _ = _analyze_json(str(path))
    assert code == 0
    skipped = out["files"][0]["skipped_rows"]
    assert skipped["malformed_lines"] == [{"line": at + 1, "reason": "longer than 65536 bytes"}]
    assert out["files"][0]["result"]["fit"]["lag_ms"] == pytest.approx(78.0, abs=0.5)


def test_an_end_line_in_the_middle_is_an_error_naming_its_line(tmp_path):
    path = write_ramp(tmp_path / "stray.csv", 0.078, seed=8)
    lines = _lines(path)
    at = _first_row(lines) + 30
    lines.insert(at, "# end: complete\n")
    path.write_text("".join(lines))
    code, out, _ = _analyze_json(str(path))
    assert code == 1 and out["files"] == []
    assert f"line {at + 1}" in out["problems"][0]["reason"]
    assert "followed by more rows" in out["problems"][0]["reason"]


def test_a_utf8_bom_is_accepted(tmp_path):
    path = write_ramp(tmp_path / "bom.csv", 0.078, seed=9)
    path.write_bytes(b"\xef\xbb\xbf" + path.read_bytes())
    code, out, _ = _analyze_json(str(path))
    assert code == 0 and out["files"][0]["result"]["fit"]["lag_ms"] == pytest.approx(78.0, abs=0.5)


def test_numerical_noise_on_descriptor_1_never_reaches_stdout(tmp_path, capfd, monkeypatch):
    import os

    import servotool.runs.offline.analyze as runs_analyze  # the command imports it when it runs

    path = write_ramp(tmp_path / "a.csv", 0.078, seed=10)
    real = runs_analyze.analyze_paths

    def noisy(*args, **kwargs):
        # what LAPACK does from Fortran: straight to file descriptor 1, past sys.stdout
        os.write(1, b" ** On entry to DLASCL parameter number  4 had an illegal value\n")
        return real(*args, **kwargs)

    monkeypatch.setattr(runs_analyze, "analyze_paths", noisy)
    res = runner.invoke(app, ["analyze", str(path), "--json", "--workers", "1"])
    assert res.exit_code == 0
    json.loads(res.stdout)  # the JSON alone
    captured = capfd.readouterr()
    assert "DLASCL" not in captured.out and "DLASCL" not in res.stdout
    assert "DLASCL" in captured.err


# ---------------------------------------------------------------------------------------------------------
# folders: groups, strict, the tidy table, sweeps, every core


def test_lag_runs_combine_per_device_joint_and_transport_only(tmp_path):
    write_ramp(tmp_path / "fr3_a.csv", 0.078, seed=1)
    write_ramp(tmp_path / "fr3_b.csv", 0.078, speeds=(5.0, 10.0), seed=2)
    write_ramp(tmp_path / "fr20.csv", 0.111, seed=3, device="sim:fr20")
    write_ramp(tmp_path / "fr3_50ms.csv", 0.050, seed=4, device="sim:fr3?lag_ms=50")
    write_ramp(tmp_path / "real_a.csv", 0.080, seed=5, device="fairino://10.0.0.2", simulated=False)
    write_ramp(tmp_path / "real_b.csv", 0.080, seed=6, device="fairino://10.0.0.2", simulated=False)
    write_ramp(tmp_path / "real_j2.csv", 0.080, seed=7, device="fairino://10.0.0.2", simulated=False, joint=1)
    code, out, _ = _analyze_json(str(tmp_path))
    assert code == 0 and len(out["files"]) == 7
    assert out["combined_lag"] is None  # several groups: no single combined fit
    groups = {(g["device"], g["simulated"], g["joint"]): g for g in out["combined_lags"]}
    assert set(groups) == {("sim:fr3", True, 0), ("fairino://10.0.0.2", False, 0)}
    assert groups[("sim:fr3", True, 0)]["fit"]["lag_ms"] == pytest.approx(78.0, abs=0.5)
    assert groups[("sim:fr3", True, 0)]["n_files"] == 2 and groups[("sim:fr3", True, 0)]["transport"] == "udp"
    assert groups[("fairino://10.0.0.2", False, 0)]["fit"]["lag_ms"] == pytest.approx(80.0, abs=0.5)
    assert "real dynamics" not in groups[("sim:fr3", True, 0)]["model"]["message"]


def test_strict_exits_1_on_an_interrupted_run(tmp_path):
    write_ramp(tmp_path / "ok.csv", 0.078, seed=1)
    write_ramp(tmp_path / "cut.csv", 0.078, cut=2.0, seed=2)
    assert runner.invoke(app, ["analyze", str(tmp_path), "--workers", "1"]).exit_code == 0
    res = runner.invoke(app, ["analyze", str(tmp_path), "--strict", "--workers", "1"])
    # however rich wraps the line
    assert res.exit_code == 1 and "cut.csv holds interrupted" in " ".join(res.stderr.split())


@pytest.mark.parametrize("suffix", [".parquet", ".csv"])
def test_table_has_one_tidy_row_per_pass(tmp_path, suffix):
    import pandas as pd

    data = tmp_path / "campaign"
    data.mkdir()
    write_ramp(data / "a.csv", 0.078, seed=1)
    write_ramp(data / "b.csv", 0.111, seed=2, device="sim:fr20")
    table = tmp_path / f"results{suffix}"
    code, out, _ = _analyze_json(str(data), "--table", str(table))
    assert code == 0 and out["table"] == str(table)
    df = pd.read_parquet(table) if suffix == ".parquet" else pd.read_csv(table)
    assert len(df) == 8  # two files, four passes each
    for col in ("device", "simulated", "joint", "transport", "speed", "size", "L_ms", "ci95_low_ms", "tau_ms",
                "rejects", "faults", "verdict", "file", "created"):  # fmt: skip
        assert col in df.columns
    fr20 = df[df["device"] == "sim:fr20"]
    assert fr20["L_ms"].mean() == pytest.approx(111.0, abs=1.0)
    assert set(df["kind"]) == {"pass"} and (df["rejects"] == 0).all()


def test_duckdb_reads_a_campaign_table(tmp_path):
    duckdb = pytest.importorskip("duckdb")
    data = tmp_path / "campaign"
    data.mkdir()
    write_ramp(data / "a.csv", 0.078, seed=1)
    write_ramp(data / "b.csv", 0.111, seed=2, device="sim:fr20")
    table = tmp_path / "results.parquet"
    assert runner.invoke(app, ["analyze", str(data), "--table", str(table), "--workers", "1"]).exit_code == 0
    # the query docs/explanation/analysis-at-scale.md shows
    rows = duckdb.sql(
        f"SELECT device, joint, count(*) AS passes, round(avg(L_ms), 1) AS mean_L_ms "
        f"FROM '{table}' WHERE kind = 'pass' GROUP BY device, joint ORDER BY device"
    ).fetchall()
    assert [(r[0], r[1], r[2]) for r in rows] == [("sim:fr20", 0, 4), ("sim:fr3", 0, 4)]
    assert rows[0][3] == pytest.approx(111.0, abs=1.0)


def test_a_table_format_that_cannot_be_written_is_refused_first(tmp_path, monkeypatch):
    path = write_ramp(tmp_path / "a.csv", 0.078, seed=1)
    res = runner.invoke(app, ["analyze", str(path), "--table", str(tmp_path / "t.xlsx")])
    assert res.exit_code == 2 and ".parquet or .csv" in res.stderr
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "pyarrow" else real(name, *a)
    )
    res = runner.invoke(app, ["analyze", str(path), "--table", str(tmp_path / "t.parquet")])
    assert res.exit_code == 2 and "needs pyarrow" in res.stderr and not (tmp_path / "t.parquet").exists()


def test_a_pass_cut_off_by_the_end_of_the_run_is_not_called_too_short(tmp_path):
    full = write_ramp(tmp_path / "full.csv", 0.078, seed=1).read_text().splitlines()
    header = [line for line in full if line.startswith("#") and not line.startswith("# end")]
    body = [line for line in full if not line.startswith("#")]
    cut = tmp_path / "cut.csv"  # stopped early in the first pass's cruise, as by an early Ctrl-C
    cut.write_text("\n".join(header + body[: len(body) // 20]) + "\n")
    code, out, _ = _analyze_json(str(cut))
    notes = [p["note"] for p in out["files"][0]["result"]["passes"]]
    assert notes[0] == "cut off by the end of the run before enough cruise"
    assert not any("lengthen --sweep" in n for n in notes)


def test_the_table_never_overwrites_a_recording(tmp_path):
    data = tmp_path / "campaign"
    data.mkdir()
    a = write_ramp(data / "a.csv", 0.078, seed=1)
    b = write_ramp(tmp_path / "b.csv", 0.111, seed=2)
    before_a, before_b = a.read_bytes(), b.read_bytes()
    for target in (a, b):  # an input itself, or any other recording
        res = runner.invoke(app, ["analyze", str(data), "--table", str(target), "--workers", "1"])
        assert res.exit_code == 2 and "never overwrites" in res.stderr
    assert a.read_bytes() == before_a and b.read_bytes() == before_b


def test_a_report_leaves_out_a_file_whose_config_it_cannot_read(tmp_path):
    data = tmp_path / "campaign"
    data.mkdir()
    write_ramp(data / "a.csv", 0.078, seed=1)
    bad = write_ramp(data / "b.csv", 0.078, seed=2)
    text = bad.read_text()
    bad.write_text(text.replace('"joint": 0,', '"joint": 0, "speeds_deg_s": "fast",', 1))
    assert '"speeds_deg_s": "fast"' in bad.read_text()
    res = runner.invoke(app, ["analyze", str(data), "--report", "--workers", "1"])
    assert res.exit_code == 0 and "Traceback" not in res.output
    assert "b.csv: left out of the report: config speeds_deg_s" in (data / "report.md").read_text()


def write_sweep(path: Path, device: str = "sim:rosorin-arm") -> Path:
    """A sweep recording as `servotool sweep` writes it: servo 2 up, stalled by an obstacle at 700."""
    cfg = {"mode": "sweep", "joints": [2], "directions": ["up", "down"], "speed": 100.0, "inside": 10}
    with CsvLogWriter(
        path,
        device=device,
        simulated=True,
        config=cfg,
        units={},
        columns=["t", "event", "joint", "direction", "cmd", "read"],
        command="servotool sweep",
    ) as w:
        t = 0.0
        for direction, sign, stop in (("up", 1, 700), ("down", -1, 120)):
            pos = 500
            for k in range(200):
                t += 0.02
                cmd = 500 + sign * 2 * (k + 1)
                pos = cmd if sign * (cmd - stop) < 0 else stop
                w.write(t=t, event="cmd", joint=2, direction=direction, cmd=cmd)
                w.write(t=t + 0.005, event="state", joint=2, direction=direction, read=pos)
                if sign * (cmd - stop) > 60:
                    break
            w.write(t=t + 0.1, event="hold", joint=2, direction=direction)
            w.write(t=t + 0.2, event="stop", joint=2, direction=direction, read=stop)
    return path


def test_sweep_files_give_limits_per_servo_and_direction(tmp_path):
    write_sweep(tmp_path / "sweep.csv")
    table = tmp_path / "t.csv"
    code, out, _ = _analyze_json(str(tmp_path / "sweep.csv"), "--table", str(table))
    assert code == 0
    sweeps = {s["direction"]: s for s in out["files"][0]["result"]["sweeps"]}
    assert sweeps["up"]["stop"] == 700 and sweeps["up"]["limit"] == 690
    assert sweeps["down"]["stop"] == 120 and sweeps["down"]["limit"] == 130
    assert sweeps["up"]["stall_t"] is not None
    text = runner.invoke(app, ["analyze", str(tmp_path / "sweep.csv"), "--workers", "1"])
    assert text.exit_code == 0 and "690" in text.stdout


def test_a_folder_on_every_core_matches_one_core_and_reports_progress(tmp_path):
    from servotool.runs.offline.analyze import analyze_paths

    for k in range(4):
        write_ramp(tmp_path / f"r{k}.csv", 0.078, seed=20 + k)
    seen: list[tuple[int, int]] = []
    one = analyze_paths([tmp_path], workers=1)
    many = analyze_paths([tmp_path], workers=2, keep_recordings=False,
                         on_progress=lambda done, total, path: seen.append((done, total)))  # fmt: skip
    assert seen == [(1, 4), (2, 4), (3, 4), (4, 4)]
    assert [f.path for f in many.files] == [f.path for f in one.files]
    assert all(f.kept is None for f in many.files)
    assert [f.result.fit.lag_ms for f in many.files] == [f.result.fit.lag_ms for f in one.files]
    import pandas as pd

    assert pd.DataFrame(many.table()).equals(pd.DataFrame(one.table()))


def test_a_plot_that_cannot_be_written_gets_one_line_not_a_traceback(tmp_path):
    csv = write_ramp(tmp_path / "r.csv", 0.078, speeds=(10.0, 20.0), seed=4)
    a_file = tmp_path / "a-file"
    a_file.write_text("x")
    blocked = tmp_path / "blocked"
    (blocked / "r.png").mkdir(parents=True)  # the PNG's name is taken by a folder
    (blocked / "r_accel-replay.png").mkdir()
    cases = [
        (["analyze", str(csv), "--plot-dir", str(a_file)], "--plot-dir"),
        (["analyze", str(csv), "--plot-dir", str(csv)], "--plot-dir"),
        (["analyze", str(csv), "--plot-dir", str(blocked)], "cannot write the plot"),
        (["shape", str(csv), "--plot-dir", str(a_file / "sub")], "--plot-dir"),
        (["shape", str(csv), "--plot-dir", str(blocked)], "cannot write the plot"),
    ]
    for args, word in cases:
        res = runner.invoke(app, args)
        assert res.exit_code == 2, (args, res.output)
        assert res.exception is None or isinstance(res.exception, SystemExit), (args, res.exception)
        assert word in res.stderr and "Traceback" not in res.output
    assert csv.read_text().endswith("# end: complete\n")  # the recording is untouched


def test_report_never_writes_over_a_file_it_did_not_write(tmp_path):
    folder = tmp_path / "notes"
    folder.mkdir()
    write_ramp(folder / "r.csv", 0.078, speeds=(10.0, 20.0), seed=4)
    (folder / "report.md").write_text("my own notes\n")
    res = runner.invoke(app, ["analyze", str(folder), "--report"])
    assert res.exit_code == 2 and "report.md" in res.stderr and "Traceback" not in res.output
    assert (folder / "report.md").read_text() == "my own notes\n" and not (folder / "report.html").exists()
    (folder / "report.md").unlink()
    (folder / "report.html").mkdir()  # a folder where the page would go: one line, not a traceback
    res = runner.invoke(app, ["analyze", str(folder), "--report"])
    assert res.exit_code == 2 and "report.html" in res.stderr and "Traceback" not in res.output
    (folder / "report.html").rmdir()
    res = runner.invoke(app, ["analyze", str(folder), "--report"])
    assert res.exit_code == 0, res.output
    again = runner.invoke(app, ["analyze", str(folder), "--report"])  # its own report is rewritten
    assert again.exit_code == 0, again.output


def test_a_plot_never_writes_over_a_recording(tmp_path):
    # a recording that happens to be named like its own figure (r.png: the plot would be r.png)
    csv = write_ramp(tmp_path / "r.png", 0.078, speeds=(10.0, 20.0), seed=4)
    before = csv.read_bytes()
    res = runner.invoke(app, ["analyze", str(csv), "--plot"])
    assert res.exit_code == 2 and "recording" in res.stderr and "Traceback" not in res.output
    assert csv.read_bytes() == before


@pytest.mark.slow
@pytest.mark.parametrize("signum, code", [(15, 143), (1, 129)])
def test_a_stop_signal_leaves_no_worker_behind(tmp_path, signum, code):
    # SIGTERM to the command alone (not its process group) killed it and left its workers waiting forever
    import os
    import subprocess
    import sys
    import time

    for k in range(40):
        write_ramp(tmp_path / f"r{k}.csv", 0.05, speeds=(10.0, 20.0), seed=k)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "servotool", "analyze", str(tmp_path), "--workers", "4"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env=env,
    )

    def children() -> list[int]:
        out = subprocess.run(["pgrep", "-P", str(proc.pid)], capture_output=True, text=True).stdout
        return [int(x) for x in out.split()]

    deadline = time.monotonic() + 60
    while len(children()) < 4 and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)  # polls a condition: the workers exist
    workers = children()
    assert len(workers) >= 4, "the workers did not start"
    proc.send_signal(signum)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == code and b"Traceback" not in err, err
    deadline = time.monotonic() + 30
    while any(os.path.exists(f"/proc/{w}") for w in workers) and time.monotonic() < deadline:
        time.sleep(0.05)
    alive = [w for w in workers if os.path.exists(f"/proc/{w}")]
    for w in alive:
        os.kill(w, 9)
    assert not alive, "workers were left behind"
