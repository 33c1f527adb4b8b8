"""The interpreter held still for a loop that must answer within a cycle, by every part that needs it.

While any holder holds it (`hold()` ... `release()`, or `held()`), the cyclic garbage collector is off (a
collection keeps the interpreter for a large part of a cycle) and the switch interval is at most the
shortest one asked for (another thread otherwise keeps the interpreter for up to 5 ms when a cycle comes).
Holds may overlap in any order (a device's own answering thread, then the stream loop that takes over from
it): the settings from before the first are restored when the last one ends.
"""

from __future__ import annotations

import gc
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager

_lock = threading.Lock()
_holds = 0
_before: tuple[bool, float] = (True, 0.005)


def hold(switch_s: float) -> None:
    """Take a hold: the collector off, the switch interval at most switch_s (s)."""
    global _holds, _before
    with _lock:
        if _holds == 0:
            _before = (gc.isenabled(), sys.getswitchinterval())
        _holds += 1
        gc.disable()
        sys.setswitchinterval(min(sys.getswitchinterval(), switch_s))


def release() -> None:
    """End a hold; the last one restores the collector and the switch interval from before the first."""
    global _holds
    with _lock:
        if _holds == 0:
            return
        _holds -= 1
        if _holds:
            return
        enabled, switch = _before
        sys.setswitchinterval(switch)
        if enabled:
            gc.enable()


@contextmanager
def held(switch_s: float) -> Iterator[None]:
    """hold(switch_s) for the block."""
    hold(switch_s)
    try:
        yield
    finally:
        release()
