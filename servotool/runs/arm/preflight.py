"""The checks of an arm run, in order: before the device opens, then after connecting but before enabling.

1. `before_open(problems, url, out)`: the settings' problems (runs.settings) plus the output folder's; the
   joint speed limits and ranges used are those of the URL's model profile (`sim:fr3`, or
   `fairino://HOST?model=fr3`), so a goal no pose could reach is refused before anything is opened.
2. `on_connect(arm, goal_problems)`: nobody else streams to or moves the arm (the controller's state), and
   every goal from the measured start pose lies inside the arm's joint ranges (the controller's, else the
   profile's). Raises Refused; nothing has been enabled or sent.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from servotool.clock import Clock
from servotool.devices.registry import DeviceURLError, parse_url
from servotool.errors import Refused
from servotool.io.paths import out_dir_problem
from servotool.runs.arm.settings import Ranges
from servotool.runs.ownership import busy_problem

GoalCheck = Callable[[Ranges | None, Sequence[float] | None], list[str]]


def url_model(url: str) -> str | None:
    """The model a device URL names (sim:<profile>, or fairino://HOST?model=<m>); None when it names none."""
    try:
        parsed = parse_url(url)
    except DeviceURLError:
        return None
    if parsed.simulated:
        return parsed.target
    return parsed.params.get("model")


def _profile(model: str | None) -> Any:
    if model is None:
        return None
    from servotool.devices.fairino.profiles import PROFILES

    return PROFILES.get(model)


def profile_ranges(url: str) -> Ranges | None:
    """The joint ranges (deg, per joint) of the URL's model profile; for a FAIRINO address that names no
    known model, the ranges every known model allows (the narrowest)."""
    ranges = getattr(_profile(url_model(url)), "joint_ranges", None)
    if not ranges and url.lower().startswith("fairino:"):
        from servotool.devices.fairino import profiles

        ranges = getattr(profiles, "CONSERVATIVE_RANGES", None)
    return tuple((float(lo), float(hi)) for lo, hi in ranges) if ranges else None


def profile_speed_limits(url: str) -> tuple[float, ...] | None:
    """The joint speed limits (deg/s) of the URL's model profile; for a FAIRINO address that names no known
    model, the limits every known model keeps (the slowest), as the client uses once connected."""
    limits = getattr(_profile(url_model(url)), "joint_speed_limits", None)
    if not limits and url.lower().startswith("fairino:"):
        from servotool.devices.fairino import profiles

        limits = getattr(profiles, "CONSERVATIVE_LIMITS", None)
    return tuple(float(v) for v in limits) if limits else None


def before_open(problems: list[str], out: Path | None) -> list[str]:
    """The settings' problems plus the output folder's (created if missing, probed for writing)."""
    problems = list(problems)
    if out is not None:
        problem = out_dir_problem(Path(out))
        if problem:
            problems.append(problem)
    return problems


def arm_ranges(arm: Any) -> Ranges | None:
    """The joint ranges the controller reports (Arm.joint_ranges), else its model profile's."""
    ranges = getattr(arm, "joint_ranges", None)
    if ranges:
        return tuple((float(lo), float(hi)) for lo, hi in ranges)
    return profile_ranges(f"sim:{getattr(arm, 'model', '')}")


def on_connect(arm: Any, clock: Clock, goal_problems: GoalCheck) -> None:
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
