"""Run `servotool ports` on a simulated board's pty and send the process a signal while it probes.

`python probing_signal.py SIGNUM WHERE NOTE` starts a Hiwonder-style board simulator on a pty, makes the
process send itself SIGNUM either while the port opens (WHERE = "opening") or on the first servo read, the
port open (WHERE = "reading"), then runs `servotool ports --port PTY`. Each close of a probed port is
written to the file NOTE as a line "closed", so a test can tell the port was closed before the exit.
"""

from __future__ import annotations

import signal
import sys
from typing import Any


def main() -> None:
    from serial.tools import list_ports

    import servotool.devices.hiwonder.client as client
    from servotool.devices.hiwonder.sim import start_sim

    signum, where, note = int(sys.argv[1]), sys.argv[2], sys.argv[3]
    list_ports.comports = lambda: []  # never this computer's own ports
    board = start_sim("rosorin-arm")
    real_open = client.open_url  # the board family's probe opens the port through it

    def opening(parsed: Any, **kwargs: Any) -> Any:
        if where == "opening":
            signal.raise_signal(signum)
        bus = real_open(parsed, **kwargs)
        real_close, real_read = bus.close, bus.read_position

        def close() -> None:
            real_close()
            with open(note, "a") as out:
                out.write("closed\n")

        def read(sid: int) -> Any:
            if where == "reading":
                signal.raise_signal(signum)
            return real_read(sid)

        bus.close, bus.read_position = close, read
        return bus

    client.open_url = opening
    from servotool.cli.app import main as servotool

    sys.argv = ["servotool", "ports", "--port", board.path, "--timeout-ms", "1000"]
    try:
        servotool()
    finally:
        board.close()


if __name__ == "__main__":
    main()
