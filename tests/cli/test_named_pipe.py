"""A named pipe (FIFO) given where a file is read is one error line, never a wait for a writer forever.

Before, `servotool campaign check fifo`, `servotool shape fifo.csv` and SERVOTOOL_CONFIG=fifo hung in open()
with no word (nothing writes to the pipe). The commands run as subprocesses with a timeout, so a hang fails
the test instead of stopping the suite.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest


def _servotool(args: list[str], cwd: Path, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "servotool", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env={**os.environ, **env},
        stdin=subprocess.DEVNULL,
        timeout=60,
        check=False,
    )


@pytest.mark.parametrize(
    "args",
    [["campaign", "check", "p.yaml"], ["campaign", "run", "p.yaml"], ["shape", "p.csv"], ["config", "show"]],
)
def test_a_named_pipe_is_refused_not_waited_on(tmp_path, args):
    for name in ("p.yaml", "p.csv", "config.yaml"):
        os.mkfifo(tmp_path / name)
    res = _servotool(args, tmp_path, SERVOTOOL_CONFIG=str(tmp_path / "config.yaml"))
    assert res.returncode == 2, (res.returncode, res.stderr)
    lines = res.stderr.strip().splitlines()
    assert len(lines) <= 2 and "not a regular file" in res.stderr, res.stderr
    assert "Traceback" not in res.stderr


def test_analyze_says_a_named_pipe_is_no_regular_file(tmp_path):
    os.mkfifo(tmp_path / "p.csv")
    res = _servotool(["analyze", "p.csv"], tmp_path)
    assert res.returncode == 1 and "not a regular file" in res.stderr, res.stderr
