"""The a_max caps and the default period a run is checked against are its device family's (MotionCaps)."""

from __future__ import annotations

import pytest

from servotool.devices.family import MotionCaps
from servotool.devices.registry import url_facts
from servotool.runs.arm.settings import GENERIC_CAPS, LagOptions, StepOptions
from servotool.runs.campaign.plan import CampaignInvalid, load_campaign

SLOW = MotionCaps(cmd_period_s=0.02, v_max=60.0, a_max=200.0, j_max=2000.0, a_cap=800.0, a_probe_cap=1600.0)


def test_a_family_with_lower_caps_refuses_what_the_generic_caps_allow():
    step = StepOptions(a_max=1800.0, given=frozenset({"a_max"}))
    assert step.problems() == []  # under the generic probe cap, on a simulator
    assert any("--a-max 1800" in p for p in step.problems(motion=SLOW))  # above this family's probe cap
    probe = StepOptions(a_max=1000.0, given=frozenset({"a_max"}))  # above its braked-stop cap: a probe
    assert probe.problems(simulated=False) == []
    assert any("--test-arm" in p for p in probe.problems(simulated=False, motion=SLOW))
    lag = LagOptions(a_max=1000.0, given=frozenset({"a_max"}))
    assert lag.problems(motion=GENERIC_CAPS) == []
    assert any("--a-max 1000" in p for p in lag.problems(motion=SLOW))


def test_what_the_user_does_not_give_is_the_familys_and_what_they_give_stays():
    step = StepOptions(v_max=90.0, given=frozenset({"v_max"})).for_device(SLOW)
    assert (step.cmd_ms, step.a_max, step.j_max, step.v_max) == (20.0, 200.0, 2000.0, 90.0)
    assert LagOptions().for_device(None) == LagOptions()


def test_the_arm_family_of_a_url_gives_its_caps():
    motion = url_facts("sim:fr3").motion
    assert motion is not None and motion.cmd_period_s > 0 and motion.a_cap <= motion.a_probe_cap


@pytest.mark.parametrize(("device", "command", "options"), [("sim:microduck", "sweep", "{joints: [1]}")])
def test_a_family_whose_campaigns_hold_no_run_is_refused_by_that_rule(
    write_campaign, device, command, options
):
    text = (
        f"name: x\npurpose: p\ndevice: {device}\nruns:\n  - why: w\n    command: {command}\n"
        f"    options: {options}\n"
    )
    with pytest.raises(CampaignInvalid) as info:
        load_campaign(write_campaign(text))
    assert any("campaigns do not drive" in p for p in info.value.problems), info.value.problems
