"""Run a servotool command that receives a signal while its Dynamixel bus is still opening.

`python opening_signal.py SIGNUM ARGS...` makes the process send itself SIGNUM inside the port opening (the
simulator is up, the port not yet open), then runs `servotool ARGS...`. A signal in that instant used to
end the process with no word (the default disposition: killed by the signal).
"""

from __future__ import annotations

import os
import sys


def main() -> None:
    import servotool.devices.dynamixel.client as client

    signum = int(sys.argv[1])
    real = client._open_port

    def opening(*args: object, **kwargs: object) -> object:
        os.kill(os.getpid(), signum)
        return real(*args, **kwargs)  # type: ignore[arg-type]

    client._open_port = opening  # type: ignore[assignment]
    from servotool.cli.app import main as servotool

    sys.argv = ["servotool", *sys.argv[2:]]
    servotool()


if __name__ == "__main__":
    main()
