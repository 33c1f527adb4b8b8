"""A confirmation typed by a person at a terminal, never read from a pipe or a file.

The prompt and the answer go through the controlling terminal (/dev/tty), not stdin/stdout: `echo "RAW 10
J1" | servotool step --raw ...` cannot answer it, and with no terminal at all (a cron job, a CI runner, a
detached process) the answer is a refusal, not a default.
"""

from __future__ import annotations

import os
import textwrap
from pathlib import Path

from servotool.errors import Refused

TTY = "/dev/tty"


class NoTerminal(Refused):
    """A typed confirmation was needed and no terminal is attached; nothing was sent."""


class NotConfirmed(Refused):
    """The typed answer was not the phrase asked for; nothing was sent."""


def _width(fd: int) -> int:
    """The terminal's width in columns (80 when it does not say)."""
    try:
        return os.get_terminal_size(fd).columns or 80
    except OSError:
        return 80


def fold(text: str, width: int) -> str:
    """`text` folded between words to `width` columns: the terminal would cut a word in two at its edge. A
    word longer than the line (a URL) is kept whole on a line of its own, never split."""
    return "\n".join(
        textwrap.fill(p, width=max(20, width - 1), break_long_words=False, break_on_hyphens=False)
        for p in text.split("\n")
    )


def confirm_typed(warning: str, phrase: str, *, tty: str | Path | None = None) -> None:
    """Show `warning` and ask for `phrase` on the terminal; return only when it was typed exactly (surrounding
    blanks ignored). Raises NoTerminal when `tty` cannot be opened as a terminal, NotConfirmed otherwise."""
    tty = TTY if tty is None else tty  # read at call time: tests point TTY at a pseudo-terminal
    try:
        fd = os.open(tty, os.O_RDWR | os.O_NOCTTY)
    except OSError:
        raise NoTerminal(
            f'this needs the confirmation "{phrase}" typed on a terminal, and none is attached '
            "(a pipe or a file is never taken as an answer)"
        ) from None
    try:
        if not os.isatty(fd):
            raise NoTerminal(f"{tty} is not a terminal: the confirmation must be typed by a person")
        # unbuffered: a terminal is not seekable, so a buffered read-write text file cannot be opened on it
        with open(fd, "r+b", buffering=0, closefd=False) as term:
            term.write(f'{fold(warning, _width(fd))}\nType "{phrase}" to go on: '.encode())
            answer = term.readline(1024).decode(errors="replace")
    finally:
        os.close(fd)
    if answer.strip() != phrase:
        raise NotConfirmed("confirmation not given: nothing was sent")
