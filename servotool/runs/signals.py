"""Signals that end a run (Ctrl-C, SIGTERM, SIGHUP, Ctrl-\\ = SIGQUIT) all take its one braked-stop path.

`StopSignals` installs handlers for SIGINT, SIGTERM, SIGHUP and SIGQUIT for the length of a run and restores
the previous ones after. What a signal does depends on the phase the run is in:

* raise (the default: opening, warm-up, analysis): raise `StopSignal` at once, a KeyboardInterrupt, so the
  run unwinds through its `finally` (servo mode ended, robot disabled, CSV closed) like Ctrl-C.
* latch (`with signals.latching():`, while streaming): the first signal is a stop request the loop polls
  (`signals.requested`), so it brakes from the current tick without a half-written row; a second one asks
  to skip the wait for rest; a third raises.
* defer (`with signals.deferring():`, while ending the servo mode and disabling): signals are only counted,
  so nothing cuts the safe ending short; the first one is raised when the block ends, unless the run is
  already stopping (`raise_after=False`).

Handlers can only be installed from the main thread; elsewhere the object does nothing and signals keep
their previous meaning.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from types import FrameType, TracebackType
from typing import Any

from servotool.errors import SIGNAL_EXITS, ExitCode, StopSignal, signal_name

# SIGQUIT too: Ctrl-\ at a terminal, whose default action (a core dump) ended a stream without its stop
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT)
RAISE, LATCH, DEFER = "raise", "latch", "defer"
LATCH_RAISE_AFTER = 3  # in latch mode, the third signal raises


class StopSignals:
    """Signal handlers for one run; see the module docstring. `received` lists every signal number taken."""

    def __init__(self, enabled: bool = True) -> None:
        self.received: list[int] = []
        self.mode = RAISE
        self._enabled = enabled and threading.current_thread() is threading.main_thread()
        self._previous: dict[int, Any] = {}

    # -- what happened --------------------------------------------------------------------------------------

    @property
    def requested(self) -> int | None:
        """The first signal taken (its number), or None."""
        return self.received[0] if self.received else None

    @property
    def count(self) -> int:
        return len(self.received)

    def reason(self) -> str | None:
        """ "Ctrl-C", "SIGTERM" or "SIGHUP" for the first signal taken; None when none came."""
        signum = self.requested
        if signum is None:
            return None
        return signal_name(signum)

    def exit_code(self) -> ExitCode | None:
        signum = self.requested
        return None if signum is None else SIGNAL_EXITS[signum]

    def stop_signal(self) -> StopSignal | None:
        """The exception for the first signal taken, to raise once the stop is done."""
        signum = self.requested
        return None if signum is None else StopSignal(signum)

    # -- handlers -------------------------------------------------------------------------------------------

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        self.received.append(signum)
        if self.mode == RAISE or (self.mode == LATCH and self.count >= LATCH_RAISE_AFTER):
            raise StopSignal(signum)

    def __enter__(self) -> StopSignals:
        if self._enabled:
            for signum in STOP_SIGNALS:
                try:
                    self._previous[signum] = signal.signal(signum, self._handle)
                except (ValueError, OSError):
                    continue
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        for signum, old in self._previous.items():
            signal.signal(signum, old)
        self._previous.clear()

    @contextmanager
    def _mode(self, mode: str) -> Iterator[StopSignals]:
        before, self.mode = self.mode, mode
        try:
            yield self
        finally:
            self.mode = before

    def latching(self) -> AbstractContextManager[StopSignals]:
        """While streaming: a signal is a request the loop polls (the third one raises)."""
        return self._mode(LATCH)

    def ending(self) -> None:
        """From now until the handlers are restored, signals are only counted: what is left of the ending
        (a device closed, a lock released) runs whole."""
        self.mode = DEFER

    def hold_to_exit(self) -> None:
        """For the process's outermost handlers, when its command is over: signals are only counted from now
        on and the handlers are not restored when the block ends, so a signal while the process exits (a
        second Ctrl-C, SIGTERM after SIGTERM) neither kills it by the signal's default action nor changes the
        exit code its command chose."""
        self.mode = DEFER
        self._previous.clear()

    @contextmanager
    def deferring(self, raise_after: bool = True) -> Iterator[StopSignals]:
        """While ending safely: signals are counted only; with raise_after, a signal that came during the
        block (and none before it) is raised when the block ends."""
        seen = self.count
        with self._mode(DEFER):
            yield self
        if raise_after and seen == 0 and self.count:
            raise StopSignal(self.received[0])
