"""The shipped Franka campaigns, run as files against the Franka simulator through pylibfranka in lock-step
(`clock=sim`), reproduce their findings and report them: raw steps refused by discontinuity reflexes, the
same steps through the generator landing exactly with a backstop that never binds, and lost packets with and
without the one-step-per-command rule. A few seconds of CPU each, hence `slow`."""

from __future__ import annotations

import pytest

from servotool.io.campaign_file import shipped_campaign_files
from servotool.runs.campaign.plan import load_campaign
from servotool.runs.campaign.report import build_report
from servotool.runs.campaign.run import run_campaign, start_campaign

pytest.importorskip("pylibfranka", reason="pylibfranka (servotool[franka]) is not installed")
pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]


def run_shipped(stem: str, tmp_path):
    path = next(f for f in shipped_campaign_files() if f.stem == stem)
    campaign = load_campaign(path)
    robot = campaign.device
    assert "clock=sim" in robot  # the file's simulator, in simulated time: a loaded host misses no cycle
    cr = start_campaign(campaign, tmp_path, robot)
    state = run_campaign(campaign, cr)
    report = build_report(cr.folder)
    (endings,) = [t for t in report.tables if t.title == "how each step run ended"]
    return state, endings.rows


def test_raw_steps_are_refused_by_discontinuity_reflexes(tmp_path) -> None:
    state, rows = run_shipped("franka-1-raw-step", tmp_path)
    assert [r.status for r in state.runs] == ["fault", "fault"]
    assert rows[0][2] == "interrupted: controller fault joint_motion_generator_acceleration_discontinuity"
    assert rows[1][2] == "interrupted: controller fault joint_motion_generator_velocity_discontinuity"


def test_the_generator_lands_exactly_and_the_backstop_never_binds(tmp_path) -> None:
    state, rows = run_shipped("franka-2-generator-step", tmp_path)
    assert state.done and [r.status for r in state.runs] == ["complete"] * 3
    for row in rows:
        assert row[2] == "complete" and row[4] == "0" and row[5] == "0" and row[6].startswith("0 of ")


def test_lost_packets_with_and_without_rule_2(tmp_path) -> None:
    state, rows = run_shipped("franka-3-lost-packets", tmp_path)
    assert state.done and [r.status for r in state.runs] == ["complete", "complete"]
    nominal, measured = rows
    for row in rows:
        assert row[3].endswith("(longest 4 ms)") and int(row[3].split()[0]) > 200  # periods of 2-4 ms
    assert nominal[5] == "0" and nominal[4] == "0"
    assert float(measured[5]) > 0.01 and int(measured[6].split()[0]) > 100  # the backstop bound
