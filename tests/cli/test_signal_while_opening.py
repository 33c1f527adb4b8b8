"""SIGTERM, SIGHUP or Ctrl-C while a bus is still opening: the documented exit code and one line saying so,
never a silent death, and no file left behind."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).with_name("opening_signal.py")
EXIT = {signal.SIGINT: 130, signal.SIGTERM: 143, signal.SIGHUP: 129}
NAME = {signal.SIGINT: "Ctrl-C", signal.SIGTERM: "SIGTERM", signal.SIGHUP: "SIGHUP"}


def run(signum: int, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(SCRIPT), str(int(signum)), *args], capture_output=True,
                          text=True, timeout=60)


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP, signal.SIGINT])
def test_record_ends_with_the_signal_exit_code_and_one_line(tmp_path: Path, signum: int) -> None:
    dest = tmp_path / "captures"
    done = run(signum, "record", "--bus", "sim:microduck", "--duration", "5", "--dest", str(dest))
    assert done.returncode == EXIT[signum], (done.returncode, done.stderr)
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and NAME[signum] in lines[0] and "nothing was recorded" in lines[0], done.stderr
    assert "Traceback" not in done.stderr
    assert not dest.exists() or not any(dest.iterdir())  # no capture, no temporary file


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP, signal.SIGINT])
def test_servo_read_watch_ends_with_the_signal_exit_code_and_one_line(signum: int) -> None:
    done = run(signum, "servo", "read", "--watch", "--bus", "sim:microduck")
    assert done.returncode == EXIT[signum], (done.returncode, done.stderr)
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and NAME[signum] in lines[0] and "nothing was sent" in lines[0], done.stderr
    assert done.stdout == ""


PROBING = Path(__file__).with_name("probing_signal.py")


@pytest.mark.parametrize("where", ["opening", "reading"])
@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP, signal.SIGINT])
def test_ports_ends_with_the_signal_exit_code_and_one_line(tmp_path: Path, signum: int, where: str) -> None:
    note = tmp_path / "closed.txt"
    done = subprocess.run([sys.executable, str(PROBING), str(int(signum)), where, str(note)],
                          capture_output=True, text=True, timeout=60,
                          env={**os.environ, "SERVOTOOL_LOCK_DIR": str(tmp_path / "locks")})
    assert done.returncode == EXIT[signum], (done.returncode, done.stderr)
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and NAME[signum] in lines[0] and "probing" in lines[0], done.stderr
    assert "Traceback" not in done.stderr and done.stdout == ""
    if where == "reading":  # the port was open: closed before the exit
        assert note.read_text() == "closed\n"
