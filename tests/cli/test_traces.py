"""Wire traces: `--trace FILE` writes each family's frames and calls with their times, `-v` shows them on
stderr, and without either nothing is logged (the clients format nothing)."""

from __future__ import annotations

import logging
import re

import pytest
from typer.testing import CliRunner

from servotool.devices.registry import ARM, FAMILIES, sim_names
from servotool.devices.trace import ROOT, short_hex

runner = CliRunner()
STAMP = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3} ")


def _run_args(fam, tmp_path) -> list[str]:
    """A short command on the family's first simulator."""
    url = f"sim:{sim_names(fam)[0]}"
    if fam.kind == ARM:
        return ["-q", "step", "--robot", f"{url}?clock=sim", "--out", str(tmp_path / "out")]
    return ["servo", "read", "--bus", url, "--json"]


# families with a wire to trace (an in-process family has no frames)
WIRED = [fam for fam in FAMILIES if fam.schemes]


@pytest.fixture(autouse=True)
def _own_folders(monkeypatch, tmp_path):
    monkeypatch.setenv("SERVOTOOL_LOCK_DIR", str(tmp_path / "locks"))
    monkeypatch.setenv("SERVOTOOL_CONFIG", str(tmp_path / "config.yaml"))
    monkeypatch.setenv("SERVOTOOL_STATE_DIR", str(tmp_path / "state"))


def _app():
    from servotool.cli.app import app

    return app


@pytest.mark.parametrize("fam", WIRED, ids=lambda f: f.name)
def test_trace_file_holds_the_familys_frames_with_their_times(fam, tmp_path):
    trace = tmp_path / "wire.log"
    result = runner.invoke(_app(), ["--trace", str(trace), *_run_args(fam, tmp_path)])
    assert result.exit_code == 0, result.output
    lines = trace.read_text(encoding="utf-8").splitlines()
    assert lines and all(STAMP.match(line) for line in lines)
    ours = [line for line in lines if f" {ROOT}.{fam.name} " in line]
    assert any(" tx " in line for line in ours) and any(" rx " in line for line in ours)
    assert "trace " not in result.stderr  # a file asked for: stderr stays as it was


def test_verbose_shows_the_traces_on_stderr(tmp_path):
    fam = next(f for f in WIRED if f.kind != ARM)
    result = runner.invoke(_app(), ["-v", *_run_args(fam, tmp_path)])
    assert result.exit_code == 0, result.output
    assert f"trace {ROOT}.{fam.name}: tx " in result.stderr


def test_without_either_option_nothing_is_logged(tmp_path):
    fam = next(f for f in WIRED if f.kind != ARM)
    seen: list[logging.LogRecord] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            seen.append(record)

    keep = Keep(level=logging.DEBUG)
    logging.getLogger(ROOT).addHandler(keep)
    try:
        result = runner.invoke(_app(), _run_args(fam, tmp_path))
        assert result.exit_code == 0, result.output
    finally:
        logging.getLogger(ROOT).removeHandler(keep)
    assert not seen and "trace " not in result.stderr
    assert not logging.getLogger(f"{ROOT}.{fam.name}").isEnabledFor(logging.DEBUG)


def test_an_arms_remote_calls_are_traced_with_their_answers(tmp_path):
    fam = next(f for f in WIRED if f.kind == ARM)
    trace = tmp_path / "wire.log"
    result = runner.invoke(_app(), ["--trace", str(trace), *_run_args(fam, tmp_path)])
    assert result.exit_code == 0, result.output
    text = trace.read_text(encoding="utf-8")
    assert re.search(r" call \w+\(", text) and re.search(r" answer \w+ -> ", text)


def test_a_trace_file_that_cannot_be_written_is_one_error_line(tmp_path):
    result = runner.invoke(_app(), ["--trace", str(tmp_path / "no" / "such" / "dir" / "f.log"), "version"])
    assert result.exit_code == 2
    assert result.stderr.strip().startswith("error: --trace") and len(result.stderr.strip().splitlines()) == 1


def test_a_long_frame_is_cut_and_counted():
    assert short_hex(b"\x01\x02") == "01 02"
    assert short_hex(bytes(100)).endswith("... (100 bytes)")
