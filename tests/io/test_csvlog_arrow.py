"""The Arrow reader's columns: the same numbers pyarrow converts, and no pandas loaded to analyse a file."""

import subprocess
import sys

import numpy as np
import pytest

pa = pytest.importorskip("pyarrow")

from servotool.io import csvlog  # noqa: E402
from servotool.io.csvlog import CsvLogWriter, arrow_reader  # noqa: E402


def test_float_chunks_with_nulls_and_offsets_match_pyarrow():
    col = pa.chunked_array(
        [pa.array([1.0, None, 3.0, None, 5.0]).slice(1), pa.array([None, 7.5]), pa.array([], pa.float64())]
    )
    got = arrow_reader._chunks_to_numpy(col.chunks, np.float64, np.nan)
    assert np.array_equal(got, col.to_numpy(), equal_nan=True)
    codes = pa.chunked_array(
        [pa.array(["a", None, "b"]).dictionary_encode(), pa.array(["b", "c"]).dictionary_encode()]
    )
    table = arrow_reader.ArrowColumns(pa.table({"event": codes}))
    c, names = table.codes("event")
    assert [names[k] if k >= 0 else None for k in c] == ["a", None, "b", "b", "c"]


def test_analysing_a_recording_does_not_load_pandas(tmp_path):
    path = tmp_path / "r.csv"
    cols = ["t", "event", "seq", "q1", "info"]
    with CsvLogWriter(path, device="d", simulated=True, config={}, units={}, columns=cols, command="x") as w:
        for i in range(50):
            w.write(t=i / 100, event="cmd" if i % 2 else "state", q1=float(i), info="" if i % 7 else "a, b")
    code = (
        "import sys\n"
        "from servotool.io.csvlog import read_columns\n"
        "from servotool.analysis.recording import recording_from_frame\n"
        f"rec = recording_from_frame(read_columns({str(path)!r})[1])\n"
        "assert len(rec.cmd_t) == 25 and len(rec.state_t) == 25, rec\n"
        "assert 'pandas' not in sys.modules, 'pandas was loaded'\n"
    )
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert res.returncode == 0, res.stderr[-2000:]


def _recording(path, rows, cols=("t", "event", "seq", "pass", "phase", "q1", "q2", "errcode", "info")):
    cols = list(cols)
    with CsvLogWriter(path, device="d", simulated=True, config={}, units={}, columns=cols, command="x") as w:
        for row in rows:
            w.write(row)
    return path


def test_only_the_selected_columns_are_converted_and_the_rest_refuse_to_be_read(tmp_path):
    rows = [{"t": i / 100, "event": "cmd", "seq": i, "q1": float(i), "q2": "x"} for i in range(5)]
    path = _recording(tmp_path / "r.csv", [*rows, {"t": 0.05, "event": "state"}])
    meta, cols = csvlog.read_columns(path, lambda m, header: ["t", "event", "seq", "q1"])
    assert cols.columns == ["t", "event", "seq", "pass", "phase", "q1", "q2", "errcode", "info"]
    assert cols.numbers("seq")[0].dtype == np.int64 and cols["seq"].dtype == np.float64
    assert np.array_equal(cols["q1"], [0, 1, 2, 3, 4, np.nan], equal_nan=True)
    with pytest.raises(KeyError):
        cols["q2"]  # left out: its "x" was never converted


@pytest.mark.parametrize(("cell", "expected"), [("7", 7.0), ("1.5", 1.5), ("nan", np.nan), ("abc", np.nan)])
def test_a_counter_that_is_no_integer_reads_as_before(tmp_path, cell, expected):
    """int64 where every cell is one; a cell that is not goes one type down (float64, then text) and
    the recording's numbers are those of the float reader."""
    from servotool.analysis.recording import recording_from_frame

    rows = [{"t": i / 100, "event": "cmd", "pass": 1, "q1": float(i), "q2": 0.0} for i in range(4)]
    rows[2]["pass"] = cell
    path = _recording(tmp_path / "p.csv", rows)
    rec = recording_from_frame(csvlog.read_columns(path)[1])
    want = np.array([1, 1, -1 if np.isnan(expected) else int(expected), 1])
    assert np.array_equal(rec.cmd_pass, want)
    if cell != "abc":  # (a column of text comes back as labels, as it always did)
        assert np.array_equal(csvlog.read_columns(path)[1]["pass"], [1, 1, expected, 1], equal_nan=True)


def test_a_recording_of_one_joint_leaves_the_others_out(tmp_path):
    from servotool.analysis.recording import columns_for, recording_from_frame

    rows = []
    for i in range(6):
        q2 = "nan" if i == 1 else i
        rows.append({"t": i / 10, "event": "cmd", "pass": 0, "phase": "cruise", "q1": i, "q2": q2})
        rows.append({"t": i / 10 + 0.01, "event": "state", "q1": "nan" if i == 4 else i, "q2": 0})
    rows.append({"t": 0.7, "event": "reply", "errcode": 3, "info": "L" * 40})
    path = _recording(tmp_path / "j.csv", rows)
    cols = columns_for(csvlog.read_columns(path)[1].columns, [0], raw=False)
    assert "q2" not in cols and "seq" not in cols and "q1" in cols
    rec = recording_from_frame(csvlog.read_columns(path, lambda m, h: cols)[1], [0], raw=False)
    assert rec.n_joints == 2 and np.isnan(rec.cmd_q[:, 1]).all() and len(rec.cmd_t) == 6
    assert rec.skipped["nan_joint"] == 1 and len(rec.state_t) == 5  # q2's nan is no longer looked at
    assert rec.reply_cmd.tolist() == ["L" * 40] and rec.cmd_phase.tolist() == ["cruise"] * 6
    assert rec.reply_err.tolist() == [3]


def test_a_lazy_column_is_converted_when_first_read_and_only_then(tmp_path, monkeypatch):
    rows = [{"t": i / 10, "event": "state", "q1": i, "errcode": i % 3} for i in range(5)]
    path = _recording(tmp_path / "lazy.csv", [*rows, {"t": 0.6, "event": "reply", "errcode": "1.5"}])
    parses = []
    real = arrow_reader._arrow_read
    monkeypatch.setattr(
        arrow_reader, "_arrow_read", lambda *a, **k: parses.append(a[2].include) or real(*a, **k)
    )
    wanted = ["t", "event", "q1", "errcode"]
    cols = csvlog.read_columns(path, lambda m, h: wanted, lazy=("errcode", "info"))[1]
    assert parses == [("t", "event", "q1")]
    assert np.array_equal(cols["errcode"], [0, 1, 2, 0, 1, 1.5])  # demoted to float64 on its own parse
    assert parses[1:] == [("errcode",)] * (len(parses) - 1) and len(cols["q1"]) == 6
