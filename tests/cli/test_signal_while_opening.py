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
    return subprocess.run(
        [sys.executable, str(SCRIPT), str(int(signum)), *args], capture_output=True, text=True, timeout=60
    )


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP, signal.SIGINT])
def test_record_ends_with_the_signal_exit_code_and_one_line(tmp_path: Path, signum: int) -> None:
    dest = tmp_path / "captures"
    done = run(signum, "record", "--bus", "sim:microduck", "--duration", "5", "--out", str(dest))
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
    done = subprocess.run(
        [sys.executable, str(PROBING), str(int(signum)), where, str(note)],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "SERVOTOOL_LOCK_DIR": str(tmp_path / "locks")},
    )
    assert done.returncode == EXIT[signum], (done.returncode, done.stderr)
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and NAME[signum] in lines[0] and "probing" in lines[0], done.stderr
    assert "Traceback" not in done.stderr and done.stdout == ""
    if where == "reading":  # the port was open: closed before the exit
        assert note.read_text() == "closed\n"


HOOKED = Path(__file__).with_name("bus_signal.py")
ARM = "sim:rosorin-arm?clock=sim"


def hooked(signum: int, target: str, call: int, count: int, *args: str) -> subprocess.CompletedProcess[str]:
    argv = [sys.executable, str(HOOKED), str(int(signum)), target, str(call), str(count), *args]
    return subprocess.run(argv, capture_output=True, text=True, timeout=60)


def one_line(done: subprocess.CompletedProcess[str], signum: int) -> str:
    assert done.returncode == EXIT[signum], (done.returncode, done.stderr)
    assert "Traceback" not in done.stderr
    notes = ("SIMULATED", "no --limits")  # the announcement and the note on the limits checked
    lines = [line for line in done.stderr.strip().splitlines() if not line.startswith(notes)]
    assert len(lines) == 1 and NAME[signum] in lines[0], done.stderr
    return lines[0]


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_during_a_plain_read_says_nothing_was_sent(signum: int) -> None:
    line = one_line(
        hooked(signum, "servotool.cli.servo:read_records", 1, 1, "servo", "read", "--bus", ARM), signum
    )
    assert "nothing was sent" in line and "move" not in line and "hold" not in line, line


def test_a_signal_before_a_move_sends_anything_says_so() -> None:
    # the limits are read before the move starts: nothing was sent yet
    line = one_line(
        hooked(
            signal.SIGTERM,
            "servotool.cli.servo:read_limits",
            1,
            1,
            "servo",
            "move",
            "--to",
            "rest",
            "--bus",
            ARM,
        ),
        signal.SIGTERM,
    )
    assert "nothing was sent" in line and "hold" not in line, line


def test_a_move_forced_to_end_mid_way_says_it_was_held() -> None:
    # three signals at the 5th frame: the third raises out of the move, which sends a hold first
    line = one_line(
        hooked(
            signal.SIGHUP,
            "servotool.runs.bus.servo:servo_pose",
            5,
            3,
            "servo",
            "move",
            "--to",
            "fold",
            "--bus",
            ARM,
        ),
        signal.SIGHUP,
    )
    assert "stopped with a hold" in line and "frame" in line, line


def test_a_signal_during_a_hold_lets_the_hold_go_out_first() -> None:
    line = one_line(
        hooked(signal.SIGTERM, "servotool.cli.servo:hold", 1, 1, "servo", "hold", "--bus", ARM),
        signal.SIGTERM,
    )
    assert "hold was sent" in line, line


def test_a_signal_before_a_relax_switches_anything_off_says_torque_is_as_it_was() -> None:
    line = one_line(
        hooked(signal.SIGINT, "servotool.runs.bus.servo:tuck_check", 1, 1, "servo", "relax", "--bus", ARM),
        signal.SIGINT,
    )
    assert "nothing was sent" in line and "torque is as it was" in line, line
