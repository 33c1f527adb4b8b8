"""A read returns only once pyarrow has let go of the Python objects it was handed.

pyarrow's threaded CSV reader drops its last references to its input buffer and to the row handler on a
pool thread, at times after read_csv has returned. A pool thread that still holds one when the interpreter
exits cannot take the interpreter's lock and aborts the process (exit 134, "terminate called without an
active exception"): a command that had printed its results ended with a crash. Seen 3 times in 200 runs of
a short `read_columns` script on a loaded machine, with a core dump showing the pool thread in
~PyBuffer -> PyGILState_Ensure during Py_FinalizeEx.
"""

import io
import sys

from servotool.io.csvlog import arrow_reader, rows

HEADER = ("t", "event", "seq", "q1", "info")


def _body(rows: int) -> bytes:
    rows_ = (b"%.3f,%s,%d,%.1f,\n" % (i / 100, b"cmd" if i % 2 else b"state", i, i) for i in range(rows))
    return b"".join(rows_)


def test_the_row_handler_is_released_before_a_threaded_read_returns():
    body = _body(200)
    shape = arrow_reader._Shape(HEADER, None, ints=True)
    held_after = 0
    for _ in range(300):
        sink = rows._RowSink()
        before = sys.getrefcount(sink)
        table, _ = arrow_reader._arrow_read(io.BytesIO(body), 0, shape, sink, True, count=False, short=True)
        held_after += sys.getrefcount(sink) > before
        assert table.num_rows == 200
    assert held_after == 0, f"pyarrow still held the row handler after {held_after} of 300 reads"


def test_an_empty_or_one_byte_body_is_handed_over_as_an_object_of_its_own(monkeypatch):
    # b"" and one-byte bytes are shared objects whose reference counts move with the rest of the program: a
    # read handed one would wait out RELEASE_WAIT_S; the body goes over as a bytearray of its own instead
    given = []
    parse = arrow_reader._parse
    monkeypatch.setattr(arrow_reader, "_parse", lambda body, *a: given.append(body) or parse(body, *a))
    monkeypatch.setattr(arrow_reader, "RELEASE_WAIT_S", 600.0)  # a wait would show as the suite's timeout
    shape = arrow_reader._Shape(HEADER, None, ints=True)
    for body in (b"", b"\n", b"1"):
        arrow_reader._arrow_read(io.BytesIO(body), 0, shape, rows._RowSink(), True, count=False, short=True)
    assert [type(b) for b in given] == [bytearray] * 3
