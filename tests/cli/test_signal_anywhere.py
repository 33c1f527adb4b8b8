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
    argv = [sys.executable, str(HOOKED), str(int(signum)), "servotool.runs.campaign:validate", "1", "1",
            "campaign", "check", str(CAMPAIGN)]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=60)
    assert done.returncode == EXIT[signum], (done.returncode, done.stderr)
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and NAME[signum] in lines[0], done.stderr
    assert done.stdout == ""
