"""A campaign report leads with its answer: the outcome lines, SIMULATED wherever a simulator made a figure,
the HTML rendered from the Markdown, and plots that show the headline."""

from __future__ import annotations

import math

from servotool.plots.campaign import (
    AmaxRun,
    SizePoint,
    amax_ceiling_figure,
    number_order,
    shaped_arrival_figure,
)
from servotool.runs.campaign.report import (
    Report,
    ReportTable,
    SweepRow,
    limits_block,
    outcome_lines,
    render_html,
    render_markdown,
)


def _sweep(
    joint: int, direction: str, stop: float, simulated: bool = True, stalled: bool = False
) -> SweepRow:
    return SweepRow(
        "run 1", "sim:rosorin-arm", joint, direction, 500, (10, 990), stop, 20, True, simulated, stalled
    )


def test_numbers_in_legend_labels_sort_as_numbers():
    labels = ["a_max 1000", "a_max 10000", "a_max 600", "a_max 1500", "run 10 raw", "run 9 raw"]
    assert sorted(labels, key=number_order) == [
        "a_max 600",
        "a_max 1000",
        "a_max 1500",
        "a_max 10000",
        "run 9 raw",
        "run 10 raw",
    ]


def test_the_a_max_figure_shows_the_ceiling_and_the_first_fault():
    runs = [AmaxRun(a, [300.0 - a / 100, 301.0 - a / 100], True) for a in (600, 1000, 2000, 10000)]
    runs.append(AmaxRun(12500, [math.nan], False))
    fig = amax_ceiling_figure(runs, "SIMULATED")
    assert fig is not None
    ax = fig.axes[0]
    assert ax.get_title().startswith("SIMULATED")
    labels = ax.get_legend_handles_labels()[1]
    assert "ceiling: clean up to 10000 deg/s²" in labels and "first fault at 12500 deg/s²" in labels
    lo, hi = ax.get_xlim()
    assert lo < 600 and 12500 < hi < 12500 * 1.5  # the axis fits the a_max tried
    assert amax_ceiling_figure([AmaxRun(600, [250.0], True)]) is None  # one a_max: no ceiling to draw


def test_shaped_arrival_against_size_needs_two_sizes():
    one = [SizePoint(10.0, 200.0, "a_max 600"), SizePoint(10.0, 150.0, "a_max 10000")]
    assert shaped_arrival_figure(one) is None
    fig = shaped_arrival_figure([*one, SizePoint(5.0, 120.0, "a_max 600")])
    assert fig is not None
    assert fig.axes[0].get_legend_handles_labels()[1] == ["a_max 600", "a_max 10000"]


def test_a_simulated_limits_block_says_so_and_the_outcome_names_the_stall():
    sweeps = [_sweep(1, "down", 10), _sweep(1, "up", 880, stalled=True)]
    block = limits_block(sweeps)
    assert block.splitlines()[0] == "# SIMULATED: mapped on sim:rosorin-arm, not on a real arm"
    assert "arm_limit_1: [30, 860]" in block
    lines = outcome_lines([], [], sweeps, "sim:rosorin-arm")
    assert lines[0].startswith("**SIMULATED**") and "sim:rosorin-arm" in lines[0]
    assert "1 [30, 860]" in lines[1] and "stalls: servo 1 up at 880" in lines[1]
    real = [_sweep(1, "down", 10, simulated=False), _sweep(1, "up", 990, simulated=False)]
    assert "SIMULATED" not in limits_block(real)
    lines = outcome_lines([], [], real, "")
    assert len(lines) == 1 and "no stall" in lines[0]
    assert outcome_lines([], [], [], "") == [
        "**Nothing measured**: the folder holds no run the report can read."
    ]


def test_the_html_page_is_the_markdown_rendered_with_text_kept_as_text():
    report = Report(
        "Campaign report: demo",
        intro=["Folder: `/tmp/x`. A <name> placeholder & an ampersand."],
        tables=[ReportTable("lag runs (ramps)", ["run", "L ms"], [["run 1", "78.0"]], "note with `code`")],
        outcome=["**Lag: L = 78.00 ms** (95 % CI 77.90 to 78.10 ms)"],
        limits="# SIMULATED: mapped on sim:rosorin-arm, not on a real arm\nnode:\n  ros__parameters: {}",
    )
    md = render_markdown(report)
    assert md.splitlines()[:4] == ["# Campaign report: demo", "", "## Outcome", ""]
    page = render_html(report)
    assert page.startswith("<!DOCTYPE html>") and "Campaign report: " in page
    assert "`" not in page and "**" not in page
    assert "<code>/tmp/x</code>" in page and "&lt;name&gt;" in page and "&amp;" in page
    assert "<strong>Lag: L = 78.00 ms</strong>" in page and "<td>78.0</td>" in page
    assert "<pre><code" in page and "# SIMULATED: mapped on sim:rosorin-arm" in page


def test_a_cold_start_outcome_counts_the_runaways():
    from types import SimpleNamespace

    from servotool.runs.campaign.report import _cold_outcome

    cold = [SimpleNamespace(recording=SimpleNamespace(fault_t=[1.0])) for _ in range(2)]
    cold.append(SimpleNamespace(recording=SimpleNamespace(fault_t=[])))
    assert _cold_outcome(cold) == [
        "**Ramps from a disabled robot: 2 of 3 ran away** (see the cold-start table)."
    ]
    assert _cold_outcome([]) == []
