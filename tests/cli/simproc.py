"""A FAIRINO simulator in a process of its own, for tests that drive real commands against it.

In-process simulators share the test's interpreter lock with each other; on a loaded machine that starves
their physics and makes the divergence guard trip for the wrong reason. Run as a script it prints the
simulator's address as one JSON line, then answers each line "state" on stdin with a JSON line holding
the controller state (servo_active, enabled, main_code, sub_code, cmd_num, last_target: the last setpoint
taken); it stops at end of input.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any


def _serve(seed: int, enable_ms: float) -> None:
    from servotool.devices.fairino.sim import FairinoSim

    overrides = {"enable_ms": enable_ms, "seed": seed}
    sim = FairinoSim("fr3", rpc_port=0, cnde_port=0, udp_port=0, overrides=overrides)
    sim.start()
    try:
        print(json.dumps(sim.address()), flush=True)
        for line in sys.stdin:
            if line.strip() == "state":
                s = sim.snapshot()
                state = {
                    "servo_active": s.servo_active,
                    "enabled": s.enabled,
                    "main_code": s.main_code,
                    "sub_code": s.sub_code,
                    "cmd_num": s.cmd_num,
                    "last_target": list(s.last_target),
                }
                print(json.dumps(state), flush=True)
    finally:
        sim.stop()


class SimProcess:
    """Start with `SimProcess(seed)`; `.url` for --robot, `.state()` for the controller state, `.stop()`.
    `silence_ms`: the client's link watchdog written into the URL (None: the client's own 100 ms)."""

    def __init__(self, seed: int, enable_ms: float = 300.0, silence_ms: int | None = 1000) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, str(Path(__file__)), str(seed), str(enable_ms)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self.proc.stdout is not None
        info = json.loads(self.proc.stdout.readline())
        # a loaded test machine can starve the simulator's state stream for more than the client's 100 ms
        # link watchdog; these tests are about stops and owners, not about lost links (tested elsewhere)
        silence = f"&silence_ms={silence_ms}" if silence_ms is not None else ""
        self.url = info["url"] + "&model=fr3" + silence

    def state(self) -> dict[str, Any]:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write("state\n")
        self.proc.stdin.flush()
        return json.loads(self.proc.stdout.readline())

    def stop(self) -> None:
        if self.proc.stdin is not None:
            self.proc.stdin.close()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


if __name__ == "__main__":
    _serve(int(sys.argv[1]), float(sys.argv[2]))
