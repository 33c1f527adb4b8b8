"""The exit code of a live run names how the stream ended, whatever became of the analysis: a lost link is 3
even when the recording it cut short holds nothing to analyse (the analysis error is said on its own line)."""

from __future__ import annotations

from pathlib import Path

import pytest
import typer

from servotool.cli.live import exit_for
from servotool.runs.arm.run import RunResult
from servotool.runs.outcome import RunStatus, StreamOutcome


@pytest.mark.parametrize(
    ("status", "code"),
    [
        (RunStatus.CONNECTION_LOST, 3),
        (RunStatus.DEVICE_ERROR, 3),
        (RunStatus.FAULT, 1),
        (RunStatus.COMPLETE, 1),
    ],
)
def test_an_unanalysable_recording_keeps_the_runs_exit_code(status, code, capsys):
    reason = None if status == RunStatus.COMPLETE else "why"
    outcome = StreamOutcome(status=status, reason=reason, ticks_sent=66)
    run = RunResult(
        path=Path("run.csv"),
        outcome=outcome,
        analysis=None,
        analysis_error="run.csv: cannot be analysed: no labelled steps in the recording",
    )
    with pytest.raises(typer.Exit) as info:
        exit_for(run)
    assert info.value.exit_code == code
    assert "could not be analysed" in capsys.readouterr().err
