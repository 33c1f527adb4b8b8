"""`servotool analyze` fed recordings that were damaged after they were written: every file gets an answer
(its analysis or one line saying why), and no verdict claims more than the rows hold."""

from __future__ import annotations

import json
import math
import warnings
from pathlib import Path

import pytest
from typer.testing import CliRunner

from servotool.cli.app import app
from servotool.runs.offline.analyze import FileAnalysis, NotAnalyzable, analyze_any

runner = CliRunner()


class _Recorded(dict):
    """The recordings by mode; shown by name in a failure report, not as the files' text."""

    def __repr__(self) -> str:
        return f"<recordings: {', '.join(self)}>"


@pytest.fixture(scope="module")
def recorded(tmp_path_factory) -> dict[str, str]:
    """Real recordings, one per mode, made by the commands on the simulators in simulated time: their text
    by mode (ramp, step, sweep)."""
    base = tmp_path_factory.mktemp("recorded")
    commands = {
        "ramp": ["lag", "--ramp", "--robot", "sim:fr3?clock=sim", "--sweep", "4", "--speeds", "10,20"],
        "step": ["step", "--robot", "sim:fr3?clock=sim", "--size", "5", "--steps", "2"],
        "sweep": ["sweep", "--bus", "sim:rosorin-arm?clock=sim", "--servo", "2", "--direction", "down"],
    }
    out = _Recorded()
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("SERVOTOOL_STATE_DIR", str(base / "state"))
        mp.setenv("SERVOTOOL_LOCK_DIR", str(base / "locks"))
        mp.setenv("SERVOTOOL_CONFIG", str(base / "no-config.yaml"))
        for mode, command in commands.items():
            folder = base / mode
            res = runner.invoke(app, [*command, "--out", str(folder)])
            assert res.exit_code == 0, res.output
            (csv,) = sorted(folder.glob(f"{mode}*.csv"))
            out[mode] = csv.read_text()
    return out


def _retime(path: Path, scale: float) -> Path:
    """The file with every row's time multiplied by `scale` (a spreadsheet that wrote nanoseconds)."""
    out = []
    for line in path.read_text().splitlines(keepends=True):
        head, sep, rest = line.partition(",")
        if sep and not line.startswith("#") and head != "t":
            head = repr(float(head) * scale)
        out.append(head + sep + rest)
    path.write_text("".join(out))
    return path


def test_a_ramp_stamped_in_nanoseconds_is_answered_not_a_memory_error(tmp_path, recorded):
    # the dynamic fit sampled the command on a 1 ms grid over the whole span: some 1e12 cells asked for
    path = tmp_path / "ns.csv"
    path.write_text(recorded["ramp"])
    _retime(path, 1e9)
    try:
        fa = analyze_any(path)
    except NotAnalyzable:
        return
    assert isinstance(fa, FileAnalysis)
    assert fa.result.dynamics is None
    assert any("dynamic fit" in w for w in fa.result.warnings)


@pytest.mark.parametrize("reader", ["arrow", "arrow-threads", "plain"])
@pytest.mark.parametrize("mode", ["ramp", "step", "sweep"])
def test_two_recordings_joined_are_refused_where_the_second_starts(
    tmp_path, monkeypatch, recorded, mode, reader
):
    from servotool.io.csvlog import arrow_reader

    monkeypatch.setattr(arrow_reader, "HAVE_ARROW", reader != "plain" and arrow_reader.HAVE_ARROW)
    monkeypatch.setattr(arrow_reader, "THREADED_BYTES", -1 if reader == "arrow-threads" else 1 << 40)
    text = recorded[mode]
    # the first run cut off (no end line), the next appended to the same file: `cat a.csv b.csv > c.csv`
    first = "".join(line for line in text.splitlines(keepends=True) if not line.startswith("# end:"))
    path = tmp_path / "joined.csv"
    path.write_text(first + text)
    second = len(first.splitlines()) + 1
    with pytest.raises(NotAnalyzable, match=rf"line {second}: a second recording starts here"):
        analyze_any(path)
    # with its end line, the first run's rows are followed by another's: refused as such
    path.write_text(text + text)
    with pytest.raises(NotAnalyzable, match=r"is followed by a second recording"):
        analyze_any(path)


def _with_config(text: str, **changes) -> str:
    """The recording with its header config's keys changed (None: the key removed)."""
    out = []
    for line in text.splitlines(keepends=True):
        if line.startswith("# config: "):
            cfg = json.loads(line[len("# config: ") :])
            for key, value in changes.items():
                if value is None:
                    cfg.pop(key, None)
                else:
                    cfg[key] = value
            line = "# config: " + json.dumps(cfg) + "\n"
        out.append(line)
    return "".join(out)


@pytest.mark.parametrize("inside", [-5, 201, 10**9, 2.5, True, "x", [20]])
def test_a_sweep_whose_inside_margin_no_sweep_could_have_is_refused(tmp_path, recorded, inside):
    # inside -5 put the limit 5 pulses beyond where the servo stopped; 10**9 a billion pulses away
    path = tmp_path / "sweep-j2-down.csv"
    path.write_text(_with_config(recorded["sweep"], inside=inside))
    with pytest.raises(NotAnalyzable, match="config inside"):
        analyze_any(path)


def test_the_report_leaves_out_a_sweep_whose_header_it_cannot_read(tmp_path, recorded):
    from servotool.runs.campaign.report import build_report

    good = _with_config(recorded["sweep"])
    edits = {
        "stored_limit": {"stored_limit": "x"},
        "stored_nan": {"stored_limit": [float("nan"), 990]},
        "start": {"start": "middle"},
        "joint": {"joint": "x"},
        "inside": {"inside": -5},
    }
    for name, change in edits.items():
        (tmp_path / f"sweep-{name}.csv").write_text(_with_config(good, **change))
    head, _, body = good.partition("\nt,")
    cols = "t," + body.split("\n", 1)[0]
    no_read = good.replace(cols, cols.replace(",read", ",reading"))
    (tmp_path / "sweep-noread.csv").write_text(no_read)
    (tmp_path / "sweep-good.csv").write_text(good)
    report = build_report(tmp_path)
    rows = [t for t in report.tables if t.title == "limit sweeps"]
    assert len(rows) == 1 and len(rows[0].rows) == 1
    named = " ".join(report.problems)
    for name in [*edits, "noread"]:
        assert f"sweep-{name}.csv" in named, (name, report.problems)


@pytest.mark.parametrize("mode", ["ramp", "step"])
def test_rows_that_all_have_one_time_give_no_verdict(tmp_path, recorded, mode):
    # a spreadsheet that filled the t column down: the step run read "ok", "no arrival" and "runaway"
    path = tmp_path / f"{mode}.csv"
    path.write_text(recorded[mode])
    _retime(path, 0.0)
    with pytest.raises(NotAnalyzable, match="all have one time"):
        analyze_any(path)


@pytest.mark.timeout(60)
def test_a_fifo_a_link_loop_and_a_broken_link_each_get_their_reason(tmp_path, recorded):
    import os

    from servotool.runs.offline.analyze import analyze_paths

    (tmp_path / "step.csv").write_text(recorded["step"])
    os.mkfifo(tmp_path / "fifo.csv")  # opened for reading, it would wait for a writer forever
    (tmp_path / "loop.csv").symlink_to("loop.csv")
    (tmp_path / "gone.csv").symlink_to(tmp_path / "nowhere.csv")
    want = {
        "fifo.csv": "not a regular file (a named pipe)",
        "loop.csv": "a symbolic link loop",
        "gone.csv": "a symbolic link to nothing",
    }
    # named: each its reason (a loop and a broken link read "no such file or folder")
    report = analyze_paths([tmp_path / name for name in sorted(want)], workers=1)
    reasons = {Path(p.path).name: p.reason for p in report.problems}
    assert set(reasons) == set(want) and not report.analysed, reasons
    for name, reason in want.items():
        assert reasons[name].startswith(reason), reasons
    # in a folder: the named pipe gets its line (it was passed over without one); links to nothing are
    # left out as before
    report = analyze_paths([tmp_path], workers=1)
    assert [Path(f.path).name for f in report.analysed] == ["step.csv"]
    assert [(Path(p.path).name, p.reason) for p in report.problems] == [("fifo.csv", want["fifo.csv"])]


@pytest.mark.parametrize("mode", ["ramp", "step"])
@pytest.mark.parametrize("period", [0, -0.01, float("nan"), 1e300, 1e-300, "fast", True])
def test_a_command_period_no_run_could_have_is_refused(tmp_path, recorded, mode, period):
    # NaN, 1e300 and 1e-300 gave every ramp pass "cruise too short for the lag: lengthen --sweep or lower
    # the speed", and a step run with 0 or -0.01 read "ok" through divisions by zero
    path = tmp_path / f"{mode}.csv"
    path.write_text(_with_config(recorded[mode], cmd_period_s=period))
    with pytest.raises(NotAnalyzable, match="config cmd_period_s"):
        analyze_any(path)


def _rows_changed(text: str, change) -> str:
    """The recording with change(rows) applied to its rows (the comment and column lines kept)."""
    lines = text.splitlines(keepends=True)
    start = next(i for i, line in enumerate(lines) if not line.startswith("#")) + 1
    rows = [x for x in lines[start:] if not x.startswith("#")]
    return "".join(lines[:start] + change(rows) + [x for x in lines[start:] if x.startswith("#")])


def _back_after(rows: list[str], at: float, by: float) -> list[str]:
    out = []
    for row in rows:
        t, _, rest = row.partition(",")
        out.append(f"{float(t) - by!r},{rest}" if float(t) > at else row)
    return out


@pytest.mark.parametrize("mode", ["ramp", "step"])
def test_a_clock_that_went_back_is_refused_but_shuffled_rows_are_read(tmp_path, recorded, mode):
    # a step run whose clock went back two hours a second in read "no arrival" for its first step and
    # "runaway" for its last: the rows after the jump were sorted in among those before it
    path = tmp_path / f"{mode}.csv"
    path.write_text(_rows_changed(recorded[mode], lambda rows: _back_after(rows, 1.0, 7200.0)))
    with pytest.raises(NotAnalyzable, match=r"the command counter \(seq\) goes back"):
        analyze_any(path)
    # rows in another order (sorted by event in a spreadsheet, say) keep their times: read as written
    path.write_text(recorded[mode])
    healthy = json.dumps(analyze_any(path, keep_recording=False).to_dict()["result"])
    path.write_text(_rows_changed(recorded[mode], lambda rows: sorted(rows, key=lambda r: r.split(",")[1])))
    assert json.dumps(analyze_any(path, keep_recording=False).to_dict()["result"]) == healthy


@pytest.mark.parametrize("value", ["1e308", "inf", "-1e300"])
@pytest.mark.parametrize("mode", ["ramp", "step"])
def test_huge_numbers_get_one_line_not_numpy_noise(tmp_path, recorded, mode, value):
    # a pass label or a code of 1e308 cast to an integer: numpy's "invalid value encountered in cast"
    # warning and the line of our source that raised it went to stderr
    def huge(rows: list[str]) -> list[str]:
        out = []
        for row in rows:
            cells = row.rstrip("\n").split(",")
            out.append(",".join([cells[0], cells[1], *(value if c else c for c in cells[2:])]) + "\n")
        return out

    path = tmp_path / f"{mode}.csv"
    path.write_text(_rows_changed(recorded[mode], huge))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a warning numpy printed is raised here
        res = runner.invoke(app, ["analyze", str(path), "--workers", "1"])
    assert res.exception is None or isinstance(res.exception, SystemExit), repr(res.exception)
    assert res.exit_code in (0, 1)
    lines = [line for line in res.stderr.splitlines() if line.strip()]
    assert all(line.startswith(("skipped", "error:", "rows left out")) for line in lines), res.stderr


@pytest.mark.parametrize("scale", [1e3, 1e9])
def test_host_times_rescaled_against_the_controller_clock_give_no_negative_lag(tmp_path, recorded, scale):
    # t in ms or ns (a spreadsheet's unit), dev_t still in s: the frames were mapped onto the host clock
    # through the controller's timestamps as if both ran at one rate, and the lag read -499082716986 ms
    path = tmp_path / "ramp.csv"
    path.write_text(recorded["ramp"])
    fa = analyze_any(_retime(path, scale))
    assert isinstance(fa, FileAnalysis)
    lags = [p.lag_ms for p in fa.result.passes if math.isfinite(p.lag_ms)]
    if fa.result.fit is not None:
        lags.append(fa.result.fit.lag_ms)
    assert all(lag > 0 for lag in lags), lags


def _stop_read(read: str):
    def change(rows: list[str]) -> list[str]:
        out = []
        for row in rows:
            cells = row.rstrip("\n").split(",")
            if cells[1] == "stop":
                cells[-1] = read
            out.append(",".join(cells) + "\n")
        return out

    return change


@pytest.mark.parametrize("read", ["1e308", "-1e6", "1000001", "32768"])
def test_a_sweep_stop_no_servo_could_read_gives_no_limit(tmp_path, recorded, read):
    # a stop read of 1e308 gave a limit of some 300 digits; a read-back is an int16 on the wire
    path = tmp_path / "sweep-j2-down.csv"
    path.write_text(_rows_changed(recorded["sweep"], _stop_read(read)))
    (sweep,) = analyze_any(path).result.sweeps
    assert sweep.limit is None and sweep.stop is None and "outside" in sweep.verdict, sweep
    # a sagging servo reads a little below 0: still a stop, and a limit inside it
    path.write_text(_rows_changed(recorded["sweep"], _stop_read("-3")))
    (sweep,) = analyze_any(path).result.sweeps
    assert sweep.stop == -3 and sweep.limit == -3 + 20, sweep


def test_a_step_run_whose_joint_never_moved_has_no_ok_step(tmp_path, recorded):
    # every measured frame frozen at the first (a joint that never followed): the steps back to the start
    # read "ok", the joint "arriving" where it had stood all along
    def frozen(rows: list[str]) -> list[str]:
        first, out = None, []
        for row in rows:
            cells = row.rstrip("\n").split(",")
            if cells[1] == "state":
                first = cells[5] if first is None else first
                cells[5] = first
            out.append(",".join(cells) + "\n")
        return out

    path = tmp_path / "step.csv"
    path.write_text(_rows_changed(recorded["step"], frozen))
    steps = analyze_any(path).result.steps
    assert steps and all(s.verdict != "ok" for s in steps), [(s.verdict, s.first_move_ms) for s in steps]
