"""A signal in a command's plain work (no device open, no run): the signal's exit code and one line, never
"Aborted!" with exit 1 (Ctrl-C) nor a death without a word (SIGTERM, SIGHUP)."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

import pytest

HOOKED = Path(__file__).with_name("bus_signal.py")
CAMPAIGN = Path(__file__).parents[2] / "campaigns" / "fairino-7-shaped-steps.yaml"
EXIT = {signal.SIGINT: 130, signal.SIGTERM: 143, signal.SIGHUP: 129}
NAME = {signal.SIGINT: "Ctrl-C", signal.SIGTERM: "SIGTERM", signal.SIGHUP: "SIGHUP"}


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP])
def test_a_signal_while_a_campaign_is_checked(signum: int) -> None:
    argv = [
        sys.executable,
        str(HOOKED),
        str(int(signum)),
        "servotool.runs.campaign.plan:validate",
        "1",
        "1",
        "campaign",
        "check",
        str(CAMPAIGN),
    ]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=60)
    assert done.returncode == EXIT[signum], (done.returncode, done.stderr)
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and NAME[signum] in lines[0], done.stderr
    assert done.stdout == ""


TINY = """
name: tiny
purpose: one short shaped step
device: "sim:fr3?clock=sim"
safety: {joints: [0]}
runs:
  - why: a short shaped step
    command: step
    options: {joint: 0, size: 1, steps: 1, hold_ms: 300, realtime: false}
"""


def test_a_signal_while_the_campaign_report_is_written_keeps_the_runs_and_says_how_to_report(
    tmp_path: Path,
) -> None:
    campaign = tmp_path / "tiny.yaml"
    campaign.write_text(TINY.lstrip(), encoding="utf-8")
    argv = [
        sys.executable,
        str(HOOKED),
        str(int(signal.SIGTERM)),
        "servotool.runs.campaign.report:render_html",
        "1",
        "1",
        "campaign",
        "run",
        str(campaign),
        "--out",
        str(tmp_path / "out"),
    ]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=120)
    assert done.returncode == 143, (done.returncode, done.stderr)
    last = done.stderr.strip().splitlines()[-1]
    assert "SIGTERM" in last and "--report" in last, done.stderr
    (folder,) = (tmp_path / "out").iterdir()
    assert len(list(folder.glob("*.csv"))) == 1  # the run is kept
    assert not (folder / "report.html").exists()
    assert not [p for p in folder.iterdir() if p.name.startswith(".")]  # no temporary file left


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP])
@pytest.mark.parametrize("where", ["typer.main:get_command", "typer._click.core:_OptionParser"])
def test_a_signal_while_the_command_line_is_read(signum: int, where: str) -> None:
    # before any command runs (the command tree built, the options parsed): no traceback, no silent 130, the
    # signal's own code and one line
    argv = [sys.executable, str(HOOKED), str(int(signum)), where, "1", "1", "lag", "--robot", "sim:fr3"]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=60)
    assert done.returncode == EXIT[signum], (done.returncode, done.stderr)
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and NAME[signum] in lines[0], done.stderr
    assert done.stdout == ""


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP])
def test_a_signal_while_the_process_exits_keeps_the_commands_exit_code(signum: int) -> None:
    # the command done, the interpreter shutting down (a second Ctrl-C, SIGTERM after SIGTERM): not a death
    # by the signal's default action, nor a traceback
    argv = [sys.executable, str(HOOKED), str(int(signum)), "threading:_shutdown", "1", "2", "version"]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, (done.returncode, done.stderr)
    assert "Traceback" not in done.stderr and "Exception ignored" not in done.stderr, done.stderr
    assert done.stdout.startswith("servotool ")
