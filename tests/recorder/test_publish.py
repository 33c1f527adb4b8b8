"""Capture files: atomic publication (a published name is never a partial file), reading back, listing."""

from __future__ import annotations

import json
import os
import random
import signal
import time

import pytest

from servotool.io.captures import (
    CaptureFormatError,
    CaptureNotFound,
    default_dest,
    find_capture,
    inspect_destination,
    list_captures,
    publish_capture,
    read_capture,
)


def header(n: int, name: str = "capture_x") -> dict:
    return {"format": "servotool-capture", "version": 1, "id": name, "counts": {"fast": n, "context": 0}}


def samples(n: int) -> list[dict]:
    return [
        {"ring": "fast", "t": i * 0.033, "axes": {str(a): {"current": 100.0 + a} for a in range(14)}}
        for i in range(n)
    ]


def test_publish_and_read_back(tmp_path):
    dest = tmp_path / "a" / "b"
    path = publish_capture(dest, "capture_1.jsonl", header(3), samples(3))
    assert path == dest / "capture_1.jsonl"
    h, s = read_capture(path)
    assert h["id"] == "capture_x" and len(s) == 3
    again = publish_capture(dest, "capture_1.jsonl", header(1), samples(1))
    assert again.name == "capture_1-2.jsonl" and path.exists()  # never overwrites
    assert [p.name for p, _ in list_captures(dest)] == ["capture_1-2.jsonl", "capture_1.jsonl"]
    assert not [p for p in dest.iterdir() if p.name.startswith(".")]


def test_nan_is_written_as_null(tmp_path):
    path = publish_capture(tmp_path, "c.jsonl", header(1), [{"ring": "fast", "t": float("nan")}])
    assert json.loads(path.read_text().splitlines()[1])["t"] is None


def test_incomplete_or_foreign_files_are_refused(tmp_path):
    path = publish_capture(tmp_path, "c.jsonl", header(5), samples(5))
    lines = path.read_text().splitlines()
    cut = tmp_path / "cut.jsonl"
    cut.write_text("\n".join(lines[:3]) + "\n")
    with pytest.raises(CaptureFormatError, match="header counts 5"):
        read_capture(cut)
    other = tmp_path / "other.jsonl"
    other.write_text('{"hello": 1}\n')
    with pytest.raises(CaptureFormatError, match="not a servotool capture"):
        read_capture(other)


def test_find_by_index_prefix_and_path(tmp_path):
    a = publish_capture(tmp_path, "capture_20260101_a.jsonl", header(0), [])
    b = publish_capture(tmp_path, "capture_20260102_b.jsonl", header(0), [])
    assert find_capture(tmp_path, "-1") == b
    assert find_capture(tmp_path, "1") == a
    assert find_capture(tmp_path, "capture_20260102") == b
    assert find_capture(tmp_path, str(a)) == a
    with pytest.raises(CaptureNotFound, match="matches 2"):
        find_capture(tmp_path, "capture_2026")
    with pytest.raises(CaptureNotFound):
        find_capture(tmp_path, "nope")


def test_inspect_never_creates_and_reports(tmp_path, monkeypatch):
    missing = tmp_path / "missing"
    report = inspect_destination(missing)
    assert not report.exists and not missing.exists() and report.warnings() == []
    publish_capture(tmp_path, "c.jsonl", header(2), samples(2))
    (tmp_path / ".c2.jsonl.99.tmp").write_text("{")
    report = inspect_destination(tmp_path)
    assert report.captures == 1 and len(report.leftovers) == 1
    assert report.size_bytes > 0
    warns = report.warnings(size_warn_bytes=10)
    assert any("MB" in w for w in warns) and any("temporary" in w for w in warns)
    monkeypatch.setenv("SERVOTOOL_STATE_DIR", str(tmp_path / "state"))
    assert default_dest() == tmp_path / "state" / "captures"
    assert default_dest("x") == default_dest(tmp_path / "x").relative_to(tmp_path)


def _child_publishes_forever(dest, ready_w: int) -> None:
    try:
        os.write(ready_w, b"r")
        k = 0
        while True:
            k += 1
            n = 50 + (k * 37) % 200
            publish_capture(dest, f"capture_{os.getpid()}_{k}.jsonl", header(n), samples(n))
    finally:
        os._exit(0)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_sigkill_while_publishing_never_leaves_a_partial_published_file(tmp_path):
    rng = random.Random(3)
    dest = tmp_path / "caps"
    dest.mkdir()
    t_end = time.monotonic() + 12.0  # a bound on the test's length, not an assertion on speed
    runs = 0
    while runs < 50 and time.monotonic() < t_end:
        ready_r, ready_w = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(ready_r)
            _child_publishes_forever(dest, ready_w)
        os.close(ready_w)
        assert os.read(ready_r, 1) == b"r"
        os.close(ready_r)
        time.sleep(rng.uniform(0.0, 0.03))  # a random instant inside the publishing loop
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        runs += 1
    assert runs >= 20
    published = [p for p in dest.iterdir() if not p.name.startswith(".")]
    for path in published:
        h, s = read_capture(path)  # raises on any partial file
        assert len(s) == h["counts"]["fast"]
    # temporary files may remain from a killed publication; they are reported, never under a published name
    assert all(p.name.endswith(".tmp") for p in dest.iterdir() if p.name.startswith("."))


def test_dest_problem_creates_nothing(tmp_path):
    from servotool.io.captures import dest_problem

    assert dest_problem(tmp_path / "a" / "b") is None and not (tmp_path / "a").exists()
    (tmp_path / "f").write_text("x")
    assert dest_problem(tmp_path / "f" / "c") == f"{tmp_path / 'f' / 'c'}: {tmp_path / 'f'} is not a folder"
    assert dest_problem(tmp_path / "f") == f"{tmp_path / 'f'} is not a folder"  # one path named once


@pytest.mark.parametrize("ref", ["", " ", "capture_"])
def test_a_ref_that_names_no_capture_in_particular_is_refused(tmp_path, ref):
    # '' (or bare 'capture_') was a prefix of every capture: with one in the folder it was shown
    from servotool.io.captures import CaptureNotFound, find_capture

    publish_capture(tmp_path, "capture_20261130T101010.000Z_axis-12.jsonl", header(3), samples(3))
    with pytest.raises(CaptureNotFound, match="names no capture"):
        find_capture(tmp_path, ref)


def test_a_name_taken_by_another_recorder_after_it_was_chosen_is_never_written_over(tmp_path, monkeypatch):
    # two recorders publishing into one folder: the other one's capture lands on the chosen name between the
    # check and the rename; the rename must not replace it (that capture would be lost without a word)
    import servotool.io.captures as captures

    real = captures._free_name
    theirs = b'{"theirs": true}\n'

    def chosen_then_taken(dest, name):
        target = real(dest, name)
        if not (tmp_path / "capture_1.jsonl").exists():
            target.write_bytes(theirs)
        return target

    monkeypatch.setattr(captures, "_free_name", chosen_then_taken)
    path = publish_capture(tmp_path, "capture_1.jsonl", header(2), samples(2))
    assert (tmp_path / "capture_1.jsonl").read_bytes() == theirs
    assert path != tmp_path / "capture_1.jsonl" and read_capture(path)[0]["id"] == "capture_x"
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]


@pytest.mark.timeout(30)
def test_a_fifo_or_device_named_like_a_capture_is_unreadable_not_a_hang(tmp_path):
    # opening a FIFO for reading waits for a writer: `incidents list` hung on one in the folder, for ever
    publish_capture(tmp_path, "capture_1.jsonl", header(2), samples(2))
    os.mkfifo(tmp_path / "capture_2.jsonl")
    (tmp_path / "capture_3.jsonl").symlink_to("/dev/zero")  # endless, with no line break
    listed = dict(list_captures(tmp_path))
    assert listed[tmp_path / "capture_1.jsonl"] is not None
    assert listed[tmp_path / "capture_2.jsonl"] is None and listed[tmp_path / "capture_3.jsonl"] is None
    for name in ("capture_2.jsonl", "capture_3.jsonl"):
        with pytest.raises(CaptureFormatError, match="not a regular file"):
            read_capture(tmp_path / name)


@pytest.mark.timeout(30)
def test_a_header_line_without_end_is_refused_without_reading_it_all(tmp_path):
    path = tmp_path / "capture_big.jsonl"
    path.write_bytes(b'{"format": "servotool-capture", "x": "' + b"a" * (3 << 20))
    with pytest.raises(CaptureFormatError, match="line 1 is longer than"):
        read_capture(path)


def test_last_is_the_newest_capture_not_a_stray_file_named_after_it(tmp_path):
    publish_capture(tmp_path, "capture_20261130T101010.000Z_axis-12.jsonl", header(1), samples(1))
    (tmp_path / "notes.jsonl").write_text("my own notes\n")  # sorts after every capture_ name
    assert find_capture(tmp_path, "last").name == "capture_20261130T101010.000Z_axis-12.jsonl"
