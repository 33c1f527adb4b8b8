"""What the `servotool sim` commands share: the key=value parameter parsing, and serving until Ctrl-C,
SIGTERM or --duration."""

from __future__ import annotations

import signal
import threading
import time
from collections.abc import Callable, Sequence

from servotool.cli.common import err_console, fail


def sim_params(
    arguments: Sequence[str], options: Sequence[str], named: dict[str, str], example: str, keys: Sequence[str]
) -> dict[str, str]:
    """The simulator parameters given as positional `arguments` and `--param` `options` (each `key=value`,
    or several joined by `&` as in a URL), the later winning, then the `named` options' values. A part
    that is not key=value ends the command with one error line naming it, `example` and the known `keys`
    (exit 2)."""
    out: dict[str, str] = {}
    for given_as_option, items in ((False, arguments), (True, options)):
        for item in items:
            for part in item.split("&"):
                key, sep, value = part.partition("=")
                if not sep or not key.strip():
                    want = "expected key=value" if given_as_option else "want key=value"
                    fail(f"--param {part!r}: {want} (e.g. {example}; keys: {', '.join(keys)})")
                out[key.strip()] = value.strip()
    out.update(named)
    return out


def serve(
    close: Callable[[], None],
    duration: float | None,
    announce: Callable[[], None],
    poll: Callable[[], None] | None = None,
) -> None:
    """Announce the simulator, then serve until Ctrl-C, SIGTERM or `duration` seconds, calling `poll` about
    every 0.1 s (to log what the simulator latched); `close` stops the simulator and the previous SIGTERM
    handler is put back however it ends."""
    stop = threading.Event()
    previous = signal.getsignal(signal.SIGTERM)
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    try:
        announce()
        err_console.print("serving; Ctrl-C to stop", style="dim")
        end = None if duration is None else time.monotonic() + duration
        while not stop.is_set() and (end is None or time.monotonic() < end):
            if poll is not None:
                poll()
            stop.wait(0.1 if end is None else max(0.0, min(0.1, end - time.monotonic())))
    except KeyboardInterrupt:
        pass
    finally:
        close()
        signal.signal(signal.SIGTERM, previous)
    err_console.print("simulator stopped", style="dim")
