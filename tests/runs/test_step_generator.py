"""`step` on a 1 kHz arm through the jerk-limited generator (the Franka family's default), end to end on a
lock-step arm with the Franka simulator's physics and checks (tests/runs/paced_arm.py): landing, the backstop,
the settle before the finish, the guard's stop, a raw step's reflex, and lost cycles with and without rule 2.
"""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from servotool.devices.franka.family import SETTLE_CYCLES, motion_caps
from servotool.devices.franka.profiles import FR3
from servotool.motion.replay import rates
from servotool.runs.arm.settings import StepOptions
from servotool.runs.arm.step import StepRun, run_step
from tests.runs.paced_arm import PacedArm

CAPS = motion_caps((FR3,))


def _run(arm: PacedArm, tmp_path: Path, **options: object) -> StepRun:
    opts = StepOptions(**options).for_device(CAPS)  # type: ignore[arg-type]
    assert opts.problems(n_joints=7, motion=CAPS) == []
    settings = opts.run_settings()
    settings.realtime = False
    return run_step(arm, settings, clock=arm.clock, out_dir=tmp_path)


def _rows(path: Path) -> tuple[pd.DataFrame, str]:
    lines = path.read_text().splitlines()
    body = "\n".join(line for line in lines if not line.startswith("#"))
    return pd.read_csv(io.StringIO(body)), lines[-1]


# the CSV keeps ten significant digits: finite differences of its positions carry that rounding
CSV_REL = 1e-2


def _cmd_rates(df: pd.DataFrame) -> np.ndarray:
    q = np.radians(df[df.event == "cmd"][[f"q{j + 1}" for j in range(7)]].to_numpy(dtype=float))
    return rates(q, q[0], 0.001).max(axis=0)


def test_the_family_steps_through_the_generator_by_default() -> None:
    s = StepOptions().for_device(CAPS).run_settings()
    assert s.shaper == "otg" and s.reanchor and s.nominal_step
    assert s.backstop == (CAPS.backstop) and s.settle_cycles == SETTLE_CYCLES
    assert (
        StepOptions(shaper="accel", given=frozenset({"shaper"})).for_device(CAPS).run_settings().backstop
        is None
    )


def test_a_shaped_step_lands_exactly_holds_and_finishes_on_a_still_command(tmp_path) -> None:
    arm = PacedArm()
    run = _run(arm, tmp_path, size=5.0, steps=2, hold_ms=700)
    out = run.outcome
    assert out.complete and arm.reflex is None
    assert out.backstop_alteration_deg == 0.0 and out.backstop_altered == 0
    assert arm.finished is True and arm.still_before_finish >= SETTLE_CYCLES
    df, end = _rows(run.path)
    assert end == "# end: complete"
    held = df[(df.event == "cmd") & (df.phase == "hold")]
    last = held.iloc[-1]
    assert last.q1 == last.r1  # landed exactly on the last level...
    level = held[held.r1 == last.r1]
    on = (level.q1 == level.r1).to_numpy()
    assert on.any() and on[int(np.argmax(on)) :].all()  # ...and held it, bit for bit, from then on
    assert "largest alteration 0 deg" in df[df.event == "backstop"]["info"].iloc[0]
    v, a, j = _cmd_rates(df) / np.radians([CAPS.v_max, CAPS.a_max, CAPS.j_max])
    assert v <= 1 + CSV_REL and a <= 1 + CSV_REL and j <= 1 + CSV_REL
    assert run.to_dict()["run"]["backstop_alteration_deg"] == 0.0


@pytest.mark.parametrize(
    ("size", "reflex"),
    [
        (0.05, "joint_motion_generator_acceleration_discontinuity"),
        (5.0, "joint_motion_generator_velocity_discontinuity"),
    ],
)
def test_a_raw_step_is_refused_by_the_reflex_name(tmp_path, size, reflex) -> None:
    arm = PacedArm()
    run = _run(arm, tmp_path, size=size, steps=1, hold_ms=300, shaped=False)
    assert arm.reflex == reflex
    assert run.outcome.status == "fault" and reflex in (run.outcome.reason or "")
    _, end = _rows(run.path)
    assert end == f"# end: interrupted: controller fault {reflex}"


def test_the_guard_freezes_the_target_and_the_generator_brings_the_arm_to_rest(tmp_path) -> None:
    arm = PacedArm(dead_after_s=0.55)  # the joints stop following mid-step
    run = _run(arm, tmp_path, size=10.0, steps=2, hold_ms=800)
    assert run.outcome.status == "guard" and arm.reflex is None
    assert arm.finished is True and arm.still_before_finish >= SETTLE_CYCLES
    df, _ = _rows(run.path)
    stop = df[(df.event == "cmd") & (df.phase == "stop")]
    assert len(stop) > 0  # the generator ran on toward the frozen target, within the limits
    v, a, j = _cmd_rates(df) / np.radians([CAPS.v_max, CAPS.a_max, CAPS.j_max])
    assert v <= 1 + CSV_REL and a <= 1 + CSV_REL and j <= 1 + CSV_REL


LOST = {
    int(k): 1 + int(k) % 3 for k in np.random.default_rng(1).choice(np.arange(600, 2500), 52, replace=False)
}


def test_lost_cycles_never_double_an_increment_under_rule_2(tmp_path) -> None:
    arm = PacedArm(lose_states=LOST)
    run = _run(arm, tmp_path, size=10.0, steps=4, hold_ms=600)
    assert run.outcome.complete and arm.reflex is None
    assert run.outcome.backstop_alteration_deg == 0.0 and arm.finished is True


def test_stepping_the_measured_period_makes_the_backstop_bind(tmp_path) -> None:
    arm = PacedArm(lose_states=LOST)
    run = _run(arm, tmp_path, size=10.0, steps=4, hold_ms=600, measured_step=True)
    assert arm.reflex is None  # the backstop caught every doubled increment...
    alteration = run.outcome.backstop_alteration_deg
    assert alteration is not None and alteration > 1e-3  # ...and says by how much it had to
    assert (run.outcome.backstop_altered or 0) > 0


def test_the_measured_step_is_refused_on_a_real_arm() -> None:
    opts = StepOptions(measured_step=True).for_device(CAPS)
    assert any("measured_step" in p for p in opts.problems(n_joints=7, simulated=False, motion=CAPS))


def test_the_campaign_report_says_how_each_step_run_ended(tmp_path) -> None:
    from servotool.runs.campaign.report import build_report

    _run(PacedArm(), tmp_path, size=5.0, steps=2, hold_ms=700)
    _run(PacedArm(), tmp_path, size=0.05, steps=1, hold_ms=300, shaped=False)
    _run(PacedArm(lose_states=LOST), tmp_path, size=10.0, steps=4, hold_ms=600, measured_step=True)
    (table,) = [t for t in build_report(tmp_path).tables if t.title == "how each step run ended"]
    shaped, raw, measured = table.rows
    assert shaped[1:3] == ["otg", "complete"] and shaped[4:6] == ["0", "0"]
    assert raw[1] == "raw" and raw[2].endswith("joint_motion_generator_acceleration_discontinuity")
    assert measured[1] == "otg, measured period" and float(measured[5]) > 1e-3
    assert measured[3].startswith("52 (longest 4 ms)")
