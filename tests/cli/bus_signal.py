"""Run a servotool command that receives signals at a chosen call, the device open.

`python bus_signal.py SIGNUM MODULE:NAME CALL COUNT ARGS...` wraps the function NAME of MODULE (as that
module looks it up) so that its CALL-th call (1 = the first) first sends the process SIGNUM, COUNT times,
then runs `servotool ARGS...`. A move latches the first signal as a stop request; the third one raises.
"""

from __future__ import annotations

import importlib
import signal
import sys
from typing import Any


def main() -> None:
    signum, target, call, count = int(sys.argv[1]), sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    module_name, name = target.split(":")
    module = importlib.import_module(module_name)
    real = getattr(module, name)
    calls = [0]

    def signalled(*args: Any, **kwargs: Any) -> Any:
        calls[0] += 1
        if calls[0] == call:
            for _ in range(count):  # to this thread (the main one): handled before the call goes on
                signal.raise_signal(signum)
        return real(*args, **kwargs)

    setattr(module, name, signalled)
    from servotool.cli.app import main as servotool

    sys.argv = ["servotool", *sys.argv[5:]]
    servotool()


if __name__ == "__main__":
    main()
