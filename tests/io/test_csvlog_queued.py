"""QueuedCsvLogWriter: rows written by a thread of their own, none lost, a backlog raised, never dropped."""

import threading

import pytest

from servotool.io.csvlog import QueuedCsvLogWriter, RecordingBehind, read_csv


def _writer(path, **kw):
    return QueuedCsvLogWriter(
        path, device="sim:x", simulated=True, config={}, units={"t": "s"}, columns=["t", "event"], **kw
    )


def test_every_row_is_in_the_file_in_order_with_the_end_line(tmp_path):
    path = tmp_path / "q.csv"
    with _writer(path) as w:
        for k in range(5000):
            w.write({"t": k * 0.001, "event": "cmd"})
        with pytest.raises(ValueError, match="unknown CSV columns"):
            w.write({"x": 1})  # checked where it is written, not on the thread
    meta, df = read_csv(path)
    assert meta.complete and w.rows_written == 5000
    assert df.t.tolist() == pytest.approx([k * 0.001 for k in range(5000)])


class StalledFile:
    """The file's write blocks until released (a disk that stops answering)."""

    def __init__(self, fh):
        self.fh, self.release = fh, threading.Event()

    def write(self, text):
        self.release.wait(10)
        return self.fh.write(text)

    def __getattr__(self, name):
        return getattr(self.fh, name)


def test_a_stalled_disk_never_blocks_a_write_until_the_bound_then_raises_and_keeps_the_row(tmp_path):
    path = tmp_path / "q.csv"
    w = _writer(path, max_rows=50)
    stalled = w._fh = StalledFile(w._fh)
    for k in range(50):  # the thread may have taken the first rows: at most the bound waits
        w.write({"t": float(k), "event": "cmd"})

    def answer_again():  # the disk answers again once a write waits for room (a condition, not a time)
        while len(w._lines) <= w.max_rows:
            threading.Event().wait(0.001)
        stalled.release.set()

    threading.Thread(target=answer_again, daemon=True).start()
    behind = 0
    for k in range(50, 200):
        try:
            w.write({"t": float(k), "event": "cmd"})
        except RecordingBehind:
            behind += 1
    assert behind >= 1
    w.interrupt("the recording fell behind")
    w.close()
    meta, df = read_csv(path)
    assert df.t.tolist() == [float(k) for k in range(200)]  # nothing dropped
    assert not meta.complete and meta.end_reason == "the recording fell behind"


def test_a_failed_disk_write_is_raised_by_the_next_write_and_by_close(tmp_path):
    path = tmp_path / "q.csv"
    w = _writer(path)

    class Full:
        def write(self, text):
            raise OSError(28, "No space left on device")

        def close(self):
            pass

    w._fh = Full()
    w.write({"t": 0.0, "event": "cmd"})
    with pytest.raises(OSError, match="No space"):
        for _ in range(10_000):  # the thread's next batch finds the disk full
            w.write({"t": 0.0, "event": "cmd"})
            threading.Event().wait(0.001)
    with pytest.raises(OSError, match="No space"):
        w.close()
