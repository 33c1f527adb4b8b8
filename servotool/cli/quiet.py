"""Keep numerical libraries' console output off stdout.

Some compiled code under scipy (LAPACK's DLASCL warnings, for one) writes straight to file descriptor 1,
past Python's sys.stdout. Where stdout carries the one JSON document of --json, that text would corrupt it,
so the numerical work runs with descriptor 1 pointing at stderr.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator


@contextlib.contextmanager
def stdout_to_stderr() -> Iterator[None]:
    """Point file descriptor 1 at stderr for the duration (child processes started inside inherit it);
    sys.stdout is flushed on the way in and out, so nothing written before or after is reordered."""
    sys.stdout.flush()
    try:
        saved = os.dup(1)
    except OSError:  # no descriptor 1 at all: nothing to protect
        yield
        return
    try:
        sys.stderr.flush()
        os.dup2(2, 1)
        yield
    finally:
        with contextlib.suppress(OSError, ValueError):
            sys.stdout.flush()
        os.dup2(saved, 1)
        os.close(saved)
