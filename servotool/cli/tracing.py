"""The wire traces the root options ask for: `-v` shows them on stderr, `--trace FILE` writes them to FILE.

The clients log their frames and calls under devices.trace's root logger at debug level; here its handlers
are set for one invocation (one process may run several commands: the previous handlers are removed).
Without either option the logger stays below debug and the clients format nothing.
"""

from __future__ import annotations

import logging
import sys
from pathlib import Path

from servotool.devices.trace import ROOT

_OURS = "_servotool_trace"  # marks the handlers installed here


def configure(verbose: bool, trace_file: Path | None) -> None:
    """Route the traces to stderr (`verbose`) and/or to `trace_file` (truncated, one line per record with
    its time). OSError when the file cannot be opened."""
    log = logging.getLogger(ROOT)
    for handler in [h for h in log.handlers if getattr(h, _OURS, False)]:
        log.removeHandler(handler)
        handler.close()
    log.setLevel(logging.NOTSET)
    log.propagate = True
    handlers: list[logging.Handler] = []
    if trace_file is not None:
        to_file = logging.FileHandler(trace_file, mode="w", encoding="utf-8")
        to_file.setFormatter(
            logging.Formatter("%(asctime)s.%(msecs)03d %(name)s %(message)s", datefmt="%Y-%m-%dT%H:%M:%S")
        )
        handlers.append(to_file)
    if verbose:
        to_stderr = logging.StreamHandler(sys.stderr)
        to_stderr.setFormatter(logging.Formatter("trace %(name)s: %(message)s"))
        handlers.append(to_stderr)
    if not handlers:
        return
    for handler in handlers:
        setattr(handler, _OURS, True)
        handler.setLevel(logging.DEBUG)
        log.addHandler(handler)
    log.setLevel(logging.DEBUG)
    log.propagate = False  # the traces go where they were asked to, not to an application's root logger
