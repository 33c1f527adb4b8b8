import json
from datetime import datetime, timezone

import pytest

from servotool.io.csvlog import (
    CsvFormatError,
    CsvLogWriter,
    NotServotoolCsv,
    device_slug,
    read_csv,
    read_meta,
    run_file_name,
    unique_path,
)

COLUMNS = ["t", "event", "seq", "q1", "q2"]


def _write(path, rows, **kw):
    with CsvLogWriter(
        path,
        device="sim:fr3",
        simulated=True,
        config={"mode": "ramp", "joint": 0, "speeds": [5, 10], "cmd_period_s": 0.01},
        units={"t": "s", "q1": "deg", "q2": "deg"},
        columns=COLUMNS,
        command="servotool lag --ramp",
        **kw,
    ) as w:
        for r in rows:
            w.write(r)
    return w


def test_round_trip_keeps_header_and_rows(tmp_path):
    path = tmp_path / "a.csv"
    rows = [
        {"t": 0.0012345, "event": "cmd", "seq": 0, "q1": 1.25, "q2": -3.0},
        {"t": 0.0051, "event": "state", "q1": 1.2},
    ]
    _write(path, rows, extra={"realtime": "SCHED_FIFO 50"})
    meta, df = read_csv(path)
    assert meta.complete and meta.end_reason is None
    assert meta.device == "sim:fr3" and meta.simulated
    assert meta.config == {"mode": "ramp", "joint": 0, "speeds": [5, 10], "cmd_period_s": 0.01}
    assert meta.units["q1"] == "deg"
    assert meta.command == "servotool lag --ramp"
    assert meta.tool.startswith("servotool ")
    assert meta.extra == {"realtime": "SCHED_FIFO 50"}
    assert meta.mode == "ramp"
    assert list(df.columns) == COLUMNS
    assert df["t"].tolist() == [0.0012345, 0.0051]
    assert df["event"].tolist() == ["cmd", "state"]
    assert df["q2"].isna().tolist() == [False, True]
    datetime.fromisoformat(meta.created)  # parses


def test_a_header_value_with_a_line_break_stays_on_its_line(tmp_path):
    # `--out $'x\n# end: complete'` put a raw newline into the command line: the header ended early
    path = tmp_path / "a.csv"
    with CsvLogWriter(
        path,
        device="fairino://h\r\n# end: complete",
        simulated=False,
        config={"mode": "ramp"},
        units={"t": "s"},
        columns=COLUMNS,
        command="servotool lag --out 'x\n# end: complete'",
        extra={"realtime": "a\x00b\rc"},
    ) as w:
        w.write({"t": 0.5, "event": "cmd"})
    meta, df = read_csv(path)
    assert meta.complete and meta.mode == "ramp" and len(df) == 1
    assert meta.command == "servotool lag --out 'x\\n# end: complete'"
    assert meta.device == "fairino://h\\r\\n# end: complete"
    assert "\x00" not in path.read_text()


def test_config_is_one_line_json(tmp_path):
    path = tmp_path / "a.csv"
    _write(path, [])
    lines = path.read_text().splitlines()
    assert lines[0] == "# servotool-csv: 1"
    cfg = [line for line in lines if line.startswith("# config: ")]
    assert len(cfg) == 1
    assert json.loads(cfg[0][len("# config: ") :])["speeds"] == [5, 10]
    assert lines[-1] == "# end: complete"


def test_rows_are_flushed_as_written(tmp_path):
    path = tmp_path / "a.csv"
    with CsvLogWriter(
        path,
        device="sim:fr3",
        simulated=True,
        config={"mode": "step"},
        units={},
        columns=COLUMNS,
        command="x",
    ) as w:
        w.write(t=0.5, event="cmd", seq=1, q1=2.0)
        # another reader sees the row before the writer closes
        meta, df = read_csv(path)
        assert not meta.complete
        assert df["q1"].tolist() == [2.0]


def test_exception_marks_interrupted_and_propagates(tmp_path):
    path = tmp_path / "a.csv"
    with (
        pytest.raises(KeyboardInterrupt),
        CsvLogWriter(
            path,
            device="sim:fr3",
            simulated=True,
            config={"mode": "step"},
            units={},
            columns=COLUMNS,
            command="x",
        ) as w,
    ):
        w.write(t=0.1, event="cmd")
        raise KeyboardInterrupt
    meta, df = read_csv(path)
    assert not meta.complete
    assert meta.end_reason == "Ctrl-C"
    assert path.read_text().splitlines()[-1] == "# end: interrupted: Ctrl-C"
    assert len(df) == 1


def test_explicit_interrupt_reason(tmp_path):
    path = tmp_path / "a.csv"
    with CsvLogWriter(
        path, device="d", simulated=False, config={}, units={}, columns=COLUMNS, command="x"
    ) as w:
        w.interrupt("controller fault main 1 sub 32")
    meta, _ = read_csv(path)
    assert meta.end_reason == "controller fault main 1 sub 32"
    assert not meta.simulated


def test_cut_off_file_reads_as_interrupted_and_drops_torn_row(tmp_path):
    path = tmp_path / "a.csv"
    _write(path, [{"t": 0.1, "event": "cmd", "q1": 1.0}, {"t": 0.2, "event": "cmd", "q1": 2.0}])
    text = path.read_text().splitlines()
    # crash: no end line, last row torn mid-write
    path.write_text("\n".join(text[:-2]) + "\n0.2,cm")
    meta, df = read_csv(path)
    assert not meta.complete
    assert "cut off" in meta.end_reason
    assert df["t"].tolist() == [0.1]


def test_foreign_file_refused_with_its_name(tmp_path):
    path = tmp_path / "other.csv"
    path.write_text("a,b\n1,2\n")
    with pytest.raises(NotServotoolCsv, match="other.csv"):
        read_csv(path)
    binary = tmp_path / "blob.csv"
    binary.write_bytes(b"\xff\xfe\x00garbage")
    with pytest.raises(NotServotoolCsv, match="blob.csv"):
        read_meta(binary)


def test_damaged_header_refused(tmp_path):
    path = tmp_path / "bad.csv"
    path.write_text("# servotool-csv: 1\n# config: {not json\n# units: {}\nt,event\n")
    with pytest.raises(CsvFormatError, match="bad.csv.*config"):
        read_csv(path)
    path.write_text("# servotool-csv: 7\n")
    with pytest.raises(CsvFormatError, match="version 7"):
        read_csv(path)


def test_writer_refuses_unknown_columns_and_never_overwrites(tmp_path):
    path = tmp_path / "a.csv"
    w = _write(path, [])
    with pytest.raises(ValueError):
        w.write(t=1.0)  # closed
    with pytest.raises(FileExistsError):
        _write(path, [])
    with (
        CsvLogWriter(
            tmp_path / "b.csv", device="d", simulated=False, config={}, units={}, columns=COLUMNS, command="x"
        ) as w2,
        pytest.raises(ValueError, match="unknown"),
    ):
        w2.write(bogus=1)


def test_file_names():
    when = datetime(2026, 11, 29, 22, 31, 5, 123456, tzinfo=timezone.utc)
    assert run_file_name("ramp", "sim:fr3", when) == "ramp_sim-fr3_20261129T223105.123Z.csv"
    assert device_slug("fairino://192.168.58.2?transport=udp") == "fairino-192.168.58.2"
    assert device_slug("hiwonder:///dev/ttyAMA0?baud=1000000") == "hiwonder-dev-ttyAMA0"


def test_unique_path(tmp_path):
    first = unique_path(tmp_path / "sub", "x.csv")
    first.write_text("")
    second = unique_path(tmp_path / "sub", "x.csv")
    assert second.name == "x-2.csv"


# ---------------------------------------------------------------------------------------------------------
# hostile bodies, through the Arrow reader and the plain one alike


@pytest.fixture(params=["arrow", "plain"])
def reader(request, monkeypatch):
    from servotool.io.csvlog import arrow_reader

    if request.param == "plain":
        monkeypatch.setattr(arrow_reader, "HAVE_ARROW", False)
    return request.param


def _body(path, extra_lines, end="# end: complete\n"):
    _write(path, [])
    head = [ln for ln in path.read_text().splitlines(keepends=True) if not ln.startswith("# end")]
    path.write_text("".join(head) + "".join(extra_lines) + end)
    return len(head)  # lines before the first body line


def test_malformed_and_overlong_rows_are_skipped_with_their_lines(tmp_path, reader):
    path = tmp_path / "a.csv"
    n = _body(
        path,
        [
            "0.1,cmd,0,1.0,2.0\n",
            "0.2,cmd,1,1.0\n",  # one field short
            "x" * 70000 + "\n",  # longer than any row of ours
            "\n",
            "# a comment line\n",
            '0.3,cmd,2,"1.5",2.5\n',
            "0.4,cmd,3,1.0,2.0,9\n",  # one field too many
        ],
    )
    meta, df = read_csv(path)
    assert meta.complete
    assert [(b.line, b.reason.split(",")[0]) for b in meta.bad_rows] == [
        (n + 2, "4 fields"),
        (n + 3, "longer than 65536 bytes"),
        (n + 7, "6 fields"),
    ]
    assert meta.n_bad_rows == 3
    t = df["t"].dropna().tolist()
    assert t == [0.1, 0.3]


def test_an_end_line_followed_by_rows_is_refused_with_its_line(tmp_path, reader):
    path = tmp_path / "a.csv"
    n = _body(path, ["0.1,cmd,0,1.0,2.0\n", "# end: complete\n", "0.2,cmd,1,1.0,2.0\n"])
    with pytest.raises(CsvFormatError, match=f"line {n + 2}: '# end: complete' is followed by more rows"):
        read_csv(path)


def test_bom_and_torn_last_row(tmp_path, reader):
    path = tmp_path / "a.csv"
    _body(path, ["0.1,cmd,0,1.0,2.0\n", "0.2,cm"], end="")
    path.write_bytes(b"\xef\xbb\xbf" + path.read_bytes())
    meta, df = read_csv(path)
    assert not meta.complete and meta.n_bad_rows == 0
    assert df["t"].tolist() == [0.1] and meta.device == "sim:fr3"
