"""Ctrl-\\ (SIGQUIT) at a terminal ends a run the way Ctrl-C does: braked stop, end line, exit 131.

Its default action killed the process on the spot: mid-stream, the arm moving, no stop row and no end line in
the CSV, and the controller left enabled and in servo mode (the next run was refused as busy).
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

DRIVER = textwrap.dedent("""
    import signal, sys
    from servotool.runs.arm.stream import Streamer

    signal.signal(signal.SIGQUIT, signal.SIG_DFL)  # as at a terminal, whatever this process inherited
    tick = Streamer._tick

    def quit_mid_step(self, plan, k, *args):
        if k == 65:  # in the first shaped step, the arm moving
            signal.raise_signal(signal.SIGQUIT)
        return tick(self, plan, k, *args)

    Streamer._tick = quit_mid_step
    from servotool.cli.app import main
    sys.argv = ["servotool", "step", "--robot", "sim:fr3?clock=sim", "--steps", "2", "--out", sys.argv[1]]
    main()
""")


def test_ctrl_backslash_mid_stream_brakes_and_closes_the_recording(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-c", DRIVER, str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 131, (done.returncode, done.stderr)
    assert "Traceback" not in done.stderr and "SIGQUIT" in done.stderr
    lines = next(tmp_path.glob("step_*.csv")).read_text().splitlines()
    assert lines[-1] == "# end: interrupted: SIGQUIT"
    assert any(",stop," in line and "SIGQUIT" in line for line in lines)
