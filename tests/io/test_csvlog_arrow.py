"""The Arrow reader's columns: the same numbers pyarrow converts, and no pandas loaded to analyse a file."""

import subprocess
import sys

import numpy as np
import pytest

pa = pytest.importorskip("pyarrow")

from servotool.io import csvlog  # noqa: E402
from servotool.io.csvlog import CsvLogWriter  # noqa: E402


def test_float_chunks_with_nulls_and_offsets_match_pyarrow():
    col = pa.chunked_array(
        [pa.array([1.0, None, 3.0, None, 5.0]).slice(1), pa.array([None, 7.5]), pa.array([], pa.float64())]
    )
    got = csvlog._chunks_to_numpy(col.chunks, np.float64, np.nan)
    assert np.array_equal(got, col.to_numpy(), equal_nan=True)
    codes = pa.chunked_array(
        [pa.array(["a", None, "b"]).dictionary_encode(), pa.array(["b", "c"]).dictionary_encode()]
    )
    table = csvlog.ArrowColumns(pa.table({"event": codes}))
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
