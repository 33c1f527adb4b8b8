"""Ask the OS to run the streaming thread in real time, and say what it granted.

The streaming loop keeps its deadlines much better under SCHED_FIFO: a normal-priority thread can be
preempted by any busy process for a whole scheduler slice. The request is best effort (it needs root or
CAP_SYS_NICE, and Linux); the outcome is a short text recorded in every run's CSV header, so a jittery
recording can be told apart from a jittery controller. The previous policy is restored on exit, since the
process may go on doing other things (tests, analysis) after the run.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager, suppress

DEFAULT_PRIORITY = 50


def _try_fifo(priority: int) -> tuple[str, tuple[int, int] | None]:
    if not hasattr(os, "sched_setscheduler"):
        return "not available on this platform", None
    try:
        old = (os.sched_getscheduler(0), os.sched_getparam(0).sched_priority)
    except OSError as exc:
        return f"not permitted: {exc.strerror or exc}", None
    try:
        # pid 0 is the calling thread on Linux: only the streaming thread is raised, not the receivers
        os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(priority))
    except (OSError, ValueError) as exc:
        return f"not permitted: SCHED_FIFO {priority}: {getattr(exc, 'strerror', None) or exc}", None
    return f"SCHED_FIFO {priority}", old


def _try_nice(step: int = -5) -> tuple[str, int | None]:
    try:
        before = os.getpriority(os.PRIO_PROCESS, 0)
        os.setpriority(os.PRIO_PROCESS, 0, before + step)
    except (OSError, AttributeError) as exc:
        return f"nice {step} not permitted: {getattr(exc, 'strerror', None) or exc}", None
    return f"nice {before + step}", before


@contextmanager
def realtime(enabled: bool = True, priority: int = DEFAULT_PRIORITY) -> Iterator[str]:
    """Run the block with the calling thread under SCHED_FIFO `priority` when permitted, else try a better
    nice value; yields the outcome ("SCHED_FIFO 50", "not permitted: ...; nice -5 not permitted: ...",
    "off"). Always restores what it changed, and never raises for a refusal."""
    if not enabled:
        yield "off (not requested)"
        return
    outcome, old_policy = _try_fifo(priority)
    old_nice = None
    if old_policy is None:
        nice_outcome, old_nice = _try_nice()
        outcome = f"{outcome}; {nice_outcome}"
    try:
        yield outcome
    finally:
        if old_policy is not None:
            with suppress(OSError):
                os.sched_setscheduler(0, old_policy[0], os.sched_param(old_policy[1]))
        if old_nice is not None:
            # raising the priority back needs privileges we may not have: the thread then stays nicer
            with suppress(OSError):
                os.setpriority(os.PRIO_PROCESS, 0, old_nice)
