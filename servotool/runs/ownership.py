"""One owner per arm: a run starts only when no other servotool process on this host holds the device and
the controller itself says nobody else is streaming to it or moving it.

Two checks, at two moments:

* `claim(url)`, before the device is opened: the host-wide advisory lock of the device address
  (io.devlock). Embedded simulators (`sim:...`) are each their own device, so they are never locked.
* `busy_problem(arm)`, after connecting and before enabling: what the controller's state stream says
  (another client in servo mode, the arm moving, a program running), through the Arm's `busy_reason()`.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from servotool.devices.arm import Arm, ReportsOwner
from servotool.devices.registry import lock_keys
from servotool.errors import Refused
from servotool.io.devlock import DeviceBusy, DeviceLock, LockUnavailable


def device_keys(url: str) -> list[str]:
    """Every key a run on this URL must hold, [] for an embedded simulator (its own device), as its family
    gives them (devices.locks): every URL reaching the same device shares the first key, whichever spelling,
    parameters or family. DeviceURLError for a URL no family registers: an unknown device is refused before
    anything opens, never run unlocked."""
    return lock_keys(url)


def device_key(url: str) -> str | None:
    """The key that names the device a URL opens (the first of `device_keys`), or None for an embedded
    simulator."""
    keys = device_keys(url)
    return keys[0] if keys else None


@contextlib.contextmanager
def claim(url: str) -> Iterator[DeviceLock | None]:
    """Hold the device's host-wide locks (`device_keys`) for the context; DeviceBusy (a Refused, exit 2)
    when another process holds any of them. Yields the first lock, None for an embedded simulator."""
    keys = device_keys(url)
    if not keys:
        yield None
        return
    with contextlib.ExitStack() as stack:
        locks = [stack.enter_context(DeviceLock(key)) for key in keys]
        yield locks[0]


def busy_problem(arm: Arm) -> str | None:
    """What the controller's state says about another owner, or None when the arm is free (or the backend
    cannot tell: not ReportsOwner). Call after connecting, before enabling."""
    if not isinstance(arm, ReportsOwner):
        return None
    text = arm.busy_reason()
    return f"{arm.url} is busy: {text}; one run per arm" if text else None


def require_free(arm: Arm) -> None:
    """Refused when `busy_problem(arm)` finds another owner."""
    problem = busy_problem(arm)
    if problem:
        raise Refused(problem)


__all__ = [
    "DeviceBusy",
    "LockUnavailable",
    "busy_problem",
    "claim",
    "device_key",
    "device_keys",
    "require_free",
]
