"""A standalone simulator (`servotool sim FAMILY --json ...`) as a process of its own, for the tests that
dial it as a real device would: started, its address read from the JSON it prints, then stopped."""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
import time


def start_sim_process(family: str, *args: str, timeout_s: float = 30.0) -> tuple[subprocess.Popen, dict]:
    """The running simulator and what it printed (its URL and addresses); AssertionError with what it did
    print when no address came within timeout_s."""
    env = {**os.environ, "PYTHONUNBUFFERED": "1", "COLUMNS": "120"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "servotool", "sim", family, "--json", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
    )
    out, deadline = b"", time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        ready, _, _ = select.select([proc.stdout], [], [], 0.1)
        if ready:
            chunk = os.read(proc.stdout.fileno(), 65536)
            if not chunk:
                break
            out += chunk
            if out.rstrip().endswith(b"}"):
                return proc, json.loads(out)
    proc.kill()
    raise AssertionError(f"no address from the simulator: {out!r} {proc.stderr.read()!r}")


def stop_sim_process(proc: subprocess.Popen) -> str:
    """SIGTERM, a clean exit (status 0) within 20 s, and what it wrote on stderr."""
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(20) == 0
    err = proc.stderr.read().decode()
    proc.stdout.close()
    proc.stderr.close()
    return err
