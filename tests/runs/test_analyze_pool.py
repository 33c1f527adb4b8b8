"""A folder on a pool of processes: the same results whether the workers or this process analyse the files,
and in file order either way."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

import servotool.runs.offline.analyze as analyze
import servotool.runs.offline.pool as pool
from tests.cli.test_analyze_cli import write_ramp


@pytest.fixture
def folder(tmp_path):
    for k in range(6):
        write_ramp(tmp_path / f"r{k}.csv", 0.040 + 0.01 * k, seed=30 + k)
    return tmp_path


def _lags(report):
    return [(f.path.name, f.result.fit.lag_ms) for f in report.files]


@pytest.mark.parametrize("method", ["fork", "forkserver"] if sys.platform.startswith("linux") else [None])
def test_every_chunk_on_the_workers_once_they_answer(folder, monkeypatch, method):
    one = analyze.analyze_paths([folder], workers=1)
    monkeypatch.setattr(pool, "START_METHOD", method)
    # the workers are waited for before the first chunk, and this process must not analyse any
    monkeypatch.setattr(pool._Workers, "up", property(lambda self: self._up.wait(60)))
    parent, real = os.getpid(), pool._analyse_one

    def not_here(*args: object) -> object:
        if os.getpid() == parent:
            raise AssertionError("a file was analysed in the parent process")
        return real(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(pool, "_analyse_one", not_here)  # forkserver workers import their own
    many = analyze.analyze_paths([folder], workers=2, keep_recordings=False)
    assert _lags(many) == _lags(one)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="workers are forked on Linux only")
def test_workers_are_forked_from_a_single_threaded_process_only(monkeypatch):
    monkeypatch.setattr(pool, "START_METHOD", None)
    monkeypatch.setattr(pool.threading, "active_count", lambda: 1)
    assert pool._context().get_start_method() == "fork"
    monkeypatch.setattr(pool.threading, "active_count", lambda: 2)
    assert pool._context().get_start_method() == "forkserver"


def test_every_chunk_here_while_the_workers_start(folder, monkeypatch):
    one = analyze.analyze_paths([folder], workers=1)
    monkeypatch.setattr(pool._Workers, "up", property(lambda self: False))
    seen: list[int] = []
    many = analyze.analyze_paths([folder], workers=2, on_progress=lambda done, total, path: seen.append(done))
    assert _lags(many) == _lags(one) and seen == [1, 2, 3, 4, 5, 6]


def test_a_cold_start_or_faulted_ramp_stays_out_of_the_combined_fit(tmp_path):
    write_ramp(tmp_path / "a.csv", 0.078, seed=1)
    write_ramp(tmp_path / "b.csv", 0.078, seed=2)
    cold = write_ramp(tmp_path / "cold.csv", 0.300, seed=3)  # a runaway's "lag": no lag measurement
    cold.write_text(cold.read_text().replace('"mode": "ramp",', '"mode": "ramp", "cold_start": true,', 1))
    faulted = write_ramp(tmp_path / "faulted.csv", 0.300, seed=4)
    lines = faulted.read_text().splitlines(keepends=True)
    end = next(i for i, line in enumerate(lines) if line.startswith("# end"))
    row = "2.5,fault" + "," * (lines[end - 1].count(",") - 1) + "\n"  # a fault row as the stream writes it
    faulted.write_text("".join(lines[:end] + [row] + lines[end:]))
    report = analyze.analyze_paths([tmp_path], workers=1)
    assert len(report.files) == 4
    (group,) = report.groups
    assert sorted(Path(f).name for f in group.files) == ["a.csv", "b.csv"]
    assert abs(group.combined.fit.lag_ms - 78.0) < 1.0


def test_the_pool_is_never_larger_than_the_chunks(folder, monkeypatch):
    # --workers 1000 on six files started a thousand processes
    sizes: list[int] = []
    real = pool._Workers

    class Counted(real):  # type: ignore[misc, valid-type]
        def __init__(self, n: int) -> None:
            sizes.append(n)
            super().__init__(n)

    monkeypatch.setattr(pool, "_Workers", Counted)
    monkeypatch.setattr(pool._Workers, "up", property(lambda self: False))
    analyze.analyze_paths([folder], workers=1000)
    assert sizes and max(sizes) <= 6


def test_a_worker_count_past_the_bound_is_a_usage_error(folder):
    from typer.testing import CliRunner

    from servotool.cli.app import app

    res = CliRunner().invoke(app, ["analyze", str(folder), "--workers", "100000"])
    assert res.exit_code == 2 and "--workers" in res.output


def test_files_are_found_sorted_once_each_without_entering_linked_folders(tmp_path):
    (tmp_path / "a" / "b").mkdir(parents=True)
    (tmp_path / "a-b").mkdir()
    (tmp_path / "a" / "d.csv").mkdir()  # a folder named like a recording
    for name in ("a/x.csv", "a/b/y.CSV", "a-b/z.csv", ".hidden.csv", "a/.csv", "a/w.csv.bak", "a/noext"):
        (tmp_path / name).write_text("")
    os.symlink(tmp_path / "a" / "x.csv", tmp_path / "a-b" / "link.csv")  # the same file again
    os.symlink(tmp_path / "a", tmp_path / "a-b" / "dirlink")  # not entered
    os.symlink(tmp_path / "nowhere.csv", tmp_path / "a" / "broken.csv")
    found, problems = analyze.find_csv_files([tmp_path, tmp_path / "a" / "x.csv"])
    names = [str(p.relative_to(tmp_path)) for p in found]
    # in Path order (by path component: a/ before a-b/), the linked copy of a/x.csv left out
    assert names == [".hidden.csv", "a/b/y.CSV", "a/x.csv", "a-b/z.csv"] and problems == []
