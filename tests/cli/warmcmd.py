"""A servotool command whose interpreter is started (and servotool imported) before the instant it runs.

A test that needs a second command to act at a chosen instant of another run cannot count on a fresh
`python -m servotool` starting in time on a loaded machine: its start-up alone can outlast the first run.
`WarmCommand(env)` starts the interpreter and waits until it has imported the command line; `run(argv)`
then hands it the arguments and returns the finished process, which ran `servotool.cli.app.main` exactly as
`python -m servotool` does.
"""

from __future__ import annotations

import json
import subprocess
import sys

SCRIPT = """
import json, sys
from servotool.cli.app import main
print("ready", flush=True)
sys.argv = ["servotool", *json.loads(sys.stdin.readline())]
main()
"""


class WarmCommand:
    def __init__(self, env: dict[str, str]) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-c", SCRIPT],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if line.strip() != "ready":
            self.proc.kill()
            raise AssertionError(f"the command did not start: {line!r} {self.proc.stderr.read()!r}")

    def run(self, args: list[str], timeout: float = 120.0) -> subprocess.CompletedProcess[str]:
        """Run the command with `args` (without the program name); its exit code, stdout and stderr."""
        stdout, stderr = self.proc.communicate(json.dumps(args) + "\n", timeout=timeout)
        return subprocess.CompletedProcess(self.proc.args, self.proc.returncode, stdout, stderr)

    def close(self) -> None:
        """End the process if it never ran (idempotent)."""
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.communicate()
