"""A reader that went away (`servotool step 2>&1 | head -1`) never cuts a run or a campaign short.

The output goes to a pipe whose reading end is closed before the command starts, so every line it prints
fails (EPIPE): deterministic, whatever the timing. Before, the first such line raised SystemExit(1) from
wherever it was printed: a run ended after its warm-up with the end line `no stream: SystemExit 1`, and a
campaign stopped between runs with the finished run missing from its state file, exit 1, no word said.
"""

from __future__ import annotations

import errno
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

CAMPAIGN = """\
name: closed-pipe
purpose: a campaign whose output nobody reads
device: sim:fr3?clock=sim
safety: {joints: [0]}
runs:
  - why: a short ramp
    command: lag
    options: {joint: 0, sweep: 3, speeds: [20]}
  - why: one shaped step
    command: step
    options: {joint: 0, size: 2, steps: 1, hold_ms: 300}
"""


def _run_into_a_closed_pipe(args: list[str], cwd: Path) -> subprocess.CompletedProcess[bytes]:
    read_end, write_end = os.pipe()
    os.close(read_end)  # nobody will ever read: every write fails with EPIPE
    try:
        return subprocess.run(
            [sys.executable, "-m", "servotool", *args],
            stdout=write_end,
            stderr=write_end,
            stdin=subprocess.DEVNULL,
            cwd=cwd,
            timeout=120,
            check=False,
        )
    finally:
        os.close(write_end)


@pytest.mark.parametrize("json_out", [[], ["--json"]])
def test_a_step_whose_output_nobody_reads_runs_to_its_end(tmp_path, json_out):
    res = _run_into_a_closed_pipe(
        ["step", "--robot", "sim:fr3?clock=sim", "--steps", "2", "--out", "runs", *json_out], tmp_path
    )
    assert res.returncode == 0  # the run's own exit code (a raw runaway would still give 1)
    (csv,) = (tmp_path / "runs").glob("step_*.csv")
    assert csv.read_text().rstrip().endswith("# end: complete")


def test_a_campaign_whose_output_nobody_reads_records_every_run(tmp_path):
    (tmp_path / "c.yaml").write_text(CAMPAIGN)
    res = _run_into_a_closed_pipe(["campaign", "run", "c.yaml", "--out", "out"], tmp_path)
    assert res.returncode == 0
    (folder,) = (tmp_path / "out").iterdir()
    state = json.loads((folder / "campaign-state.json").read_text())
    assert [r["status"] for r in state["runs"]] == ["complete", "complete"]
    assert (folder / "report.md").is_file()


class _HungUp:
    """A terminal that went away: every write fails with EIO, as on a tty whose other end was closed."""

    def write(self, text: str) -> int:
        raise OSError(errno.EIO, "Input/output error")

    def flush(self) -> None:
        raise OSError(errno.EIO, "Input/output error")

    def isatty(self) -> bool:
        return True

    def fileno(self) -> int:
        raise OSError(errno.EBADF, "no descriptor here")


def test_a_terminal_that_hung_up_silences_the_console_and_nothing_more():
    """After SIGHUP from a closed terminal, the braked stop was done and the end line written, then the
    verdict's print met EIO: the command ended with exit 1 (a traceback to nowhere), not 129."""
    from servotool.cli.common import _PipeSafe

    console = _PipeSafe(file=_HungUp(), force_terminal=True)
    console.print("run ended early: SIGHUP")  # raised OSError before
    assert console.quiet
    console.print("and nothing more is tried")
