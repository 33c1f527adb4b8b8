"""The guard tuning a campaign report gives is the one `servotool lag` gives for the same recording."""

from __future__ import annotations

import re

from servotool.motion.guard import margin_floor
from servotool.runs.campaign.report import tuning_block
from servotool.runs.offline.analyze import analyze_paths
from tests.cli.test_analyze_cli import write_ramp


def test_report_margin_is_the_lag_commands_margin(tmp_path):
    write_ramp(tmp_path / "ramp.csv", 0.078, seed=5)
    lag = analyze_paths([tmp_path], workers=1).files[0]
    advice = lag.result.tuning
    block, note = tuning_block([lag], [], "sim:fr3")
    margin = float(re.search(r"margin_deg: ([0-9.]+)", block).group(1))
    assert margin == round(advice.margin_deg, 1)
    # the frame's age counts: the plain floor a_max * L^2 / 2 + noise is not enough to brake through it
    assert margin > margin_floor(lag.result.fit.lag_ms / 1e3, 500.0, advice.noise_deg) + 0.1
    assert "age" in note and f"lag_s: {advice.lag_s:.2f}" in block


def test_a_ramp_run_that_ended_early_tunes_no_guard(tmp_path):
    path = write_ramp(tmp_path / "ramp.csv", 0.078, seed=5)
    text = path.read_text().replace("# end: complete", "# end: interrupted: Ctrl-C")
    path.write_text(text)
    lag = analyze_paths([tmp_path], workers=1).files[0]
    assert not lag.meta.complete and lag.result.fit is not None and lag.result.tuning is None
    block, note = tuning_block([lag], [], "sim:fr3")
    assert block == "" and "whole sweep" in note
