"""One error family for the whole package, and the exit codes every command shares.

Every error servotool raises derives from `ServotoolError` and carries the exit code a command ends with when
that error stops it, so the CLI maps errors to exits in one place:

| exit | meaning |
|---|---|
| 0 | done |
| 1 | the run ended on a controller fault or the guard |
| 2 | bad usage, or refused before anything moved |
| 3 | the device could not be reached, or was lost mid-run |
| 129 / 130 / 131 / 143 | interrupted by SIGHUP / Ctrl-C / SIGQUIT (Ctrl-\\) / SIGTERM (after the stop) |

Families subclass these with distinct names (`CndeFrameError`, `BoardFrameError`, ...): no two classes of the
package share a name.
"""

from __future__ import annotations

import enum
import signal


class ExitCode(enum.IntEnum):
    """The process exit status of every command."""

    DONE = 0
    FAULT = 1
    USAGE = 2
    DEVICE = 3
    SIGHUP = 129
    INTERRUPTED = 130
    SIGQUIT = 131  # Ctrl-\ at a terminal: its default action killed the process mid-stream, unbraked
    SIGTERM = 143


class ServotoolError(Exception):
    """Base of every error of the package. `exit_code` is the exit status a command ends with on it."""

    exit_code: ExitCode = ExitCode.USAGE


class SettingsError(ServotoolError, ValueError):
    """A setting is not finite, out of range or inconsistent; found before any device is opened."""


class Refused(ServotoolError):
    """The one kind of refusal: a goal, a run or a file operation refused with its reason; nothing moved."""


class FileFormatError(ServotoolError, ValueError):
    """A file cannot be read as what it claims to be (the message names the file and, where known, a line)."""


class ProtocolError(ServotoolError, ValueError):
    """Bytes on a wire that do not decode. Decoders raise only their family's subclass of this."""


class DeviceError(ServotoolError, RuntimeError):
    """A device failed in a way the run must stop for (unreachable, refused command, timeout)."""

    exit_code = ExitCode.DEVICE


class ConnectionLost(DeviceError):
    """The link to the device went away; raised within 100 ms of the loss, never a hang."""


class RunFault(ServotoolError):
    """A run ended on a controller fault or on the divergence guard (after its braked stop)."""

    exit_code = ExitCode.FAULT


# the exit status of a run stopped by a signal, after its braked stop
SIGNAL_EXITS: dict[int, ExitCode] = {
    signal.SIGINT: ExitCode.INTERRUPTED,
    signal.SIGTERM: ExitCode.SIGTERM,
    signal.SIGHUP: ExitCode.SIGHUP,
    signal.SIGQUIT: ExitCode.SIGQUIT,
}


class StopSignal(KeyboardInterrupt):
    """A run stopped by a signal (SIGINT, SIGTERM, SIGHUP, SIGQUIT). Not an error: like KeyboardInterrupt it
    is a BaseException, so no `except Exception` swallows it, and every stop path that takes Ctrl-C takes
    it."""

    def __init__(self, signum: int) -> None:
        self.signum = int(signum)
        self.name = signal.Signals(self.signum).name
        super().__init__(self.name)

    @property
    def exit_code(self) -> ExitCode:
        return SIGNAL_EXITS.get(self.signum, ExitCode.INTERRUPTED)

    @property
    def label(self) -> str:
        """How messages and CSV end lines name it: "Ctrl-C" for SIGINT, else the signal's name."""
        return signal_name(self.signum)


def signal_name(signum: int) -> str:
    """How messages and CSV end lines name a signal: "Ctrl-C" for SIGINT, else its name ("SIGTERM")."""
    return "Ctrl-C" if signum == signal.SIGINT else signal.Signals(signum).name


def signal_label(exc: KeyboardInterrupt) -> str:
    """How an error line names the signal behind `exc`: "Ctrl-C" (a plain KeyboardInterrupt too), "SIGTERM"
    or "SIGHUP"."""
    return exc.label if isinstance(exc, StopSignal) else "Ctrl-C"


def exit_code_of(exc: BaseException) -> ExitCode:
    """The exit status a command ends with when `exc` stops it: the one mapping every command uses.
    A ServotoolError or StopSignal carries its own; Ctrl-C is 130; anything else (a bug) is 1."""
    if isinstance(exc, (ServotoolError, StopSignal)):
        return exc.exit_code
    if isinstance(exc, KeyboardInterrupt):
        return ExitCode.INTERRUPTED
    return ExitCode.FAULT
