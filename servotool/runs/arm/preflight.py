"""The checks of an arm run, in order: before the device opens, then after connecting but before enabling.

1. `before_open(problems, url, out)`: the settings' problems (runs.settings) plus the output folder's; the
   joint speed limits and ranges used are those the URL's family knows from the URL alone
   (devices.registry.url_facts: a simulator's profile, or the model a real address names), so a goal no
   pose could reach is refused before anything is opened.
2. `on_connect(arm, goal_problems)`: nobody else streams to or moves the arm (the controller's state), and
   every goal from the measured start pose lies inside the arm's joint ranges (the controller's, else the
   facts of its URL). Raises Refused; nothing has been enabled or sent.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

from servotool.clock import Clock
from servotool.devices.arm import Arm, ReportsJointRanges
from servotool.devices.family import DeviceFacts
from servotool.devices.registry import ARM, DeviceURLError, url_facts
from servotool.errors import Refused
from servotool.io.paths import out_dir_problem
from servotool.runs.arm.settings import Ranges
from servotool.runs.ownership import busy_problem

GoalCheck = Callable[[Ranges | None, Sequence[float] | None], list[str]]


def arm_facts(url: str) -> DeviceFacts | None:
    """What the URL's family knows of the arm from the URL alone; None when the URL names no known arm or
    holds parameters its family refuses (opening it says why)."""
    try:
        return url_facts(url, ARM)
    except DeviceURLError:
        return None


def url_model(url: str) -> str | None:
    """The model a device URL names (its family's profile or model), None when it names none."""
    facts = arm_facts(url)
    return facts.model or None if facts is not None else None


def profile_ranges(url: str) -> Ranges | None:
    """The joint ranges (deg, per joint) the URL's family knows before opening: a simulator's profile, a
    named model's, or for an address that names none the ranges every model of the family allows (the
    narrowest). None when unknown."""
    facts = arm_facts(url)
    if facts is None or not facts.joint_ranges:
        return None
    return tuple((float(lo), float(hi)) for lo, hi in facts.joint_ranges)


def profile_speed_limits(url: str) -> tuple[float, ...] | None:
    """The joint speed limits (deg/s) the URL's family knows before opening (as profile_ranges), the limits
    the client uses once connected. None when unknown."""
    facts = arm_facts(url)
    if facts is None or not facts.joint_speed_limits:
        return None
    return tuple(float(v) for v in facts.joint_speed_limits)


def profile_joint_count(url: str) -> int | None:
    """How many joints the URL's family knows the arm has before opening; None when unknown (the count is
    checked once the arm is connected)."""
    facts = arm_facts(url)
    return facts.n_joints if facts is not None and facts.n_joints else None


def before_open(problems: list[str], out: Path | None) -> list[str]:
    """The settings' problems plus the output folder's (created if missing, probed for writing)."""
    problems = list(problems)
    if out is not None:
        problem = out_dir_problem(Path(out))
        if problem:
            problems.append(problem)
    return problems


def arm_ranges(arm: Arm) -> Ranges | None:
    """The joint ranges the opened arm declares (ReportsJointRanges: the controller's, else its model's),
    else those the facts of its URL give."""
    if isinstance(arm, ReportsJointRanges):
        ranges = arm.joint_ranges
        if ranges:
            return tuple((float(lo), float(hi)) for lo, hi in ranges)
    return profile_ranges(arm.url)


def on_connect(arm: Arm, clock: Clock, goal_problems: GoalCheck) -> None:
    """Refuse (Refused) a run on an arm someone else drives, or whose goals from the measured pose leave the
    joint ranges. Call after connecting and before enabling, OUTSIDE the run's safe ending: a refused run
    must not end servo mode or disable an arm that another client drives."""
    from servotool.runs.arm.prepare import wait_for_state  # numpy: loaded when a run connects, not for `-h`

    start_pose = [float(x) for x in wait_for_state(arm, clock).q[: arm.n_joints]]
    problems = []
    busy = busy_problem(arm)
    if busy:
        problems.append(busy)
    problems += goal_problems(arm_ranges(arm), start_pose)
    if problems:
        raise Refused("\n".join(problems))
