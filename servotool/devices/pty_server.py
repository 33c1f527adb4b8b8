"""What every pty-served simulator shares: the pseudo-terminal, its serving thread, a clean stop.

A family's simulator subclasses `PtyServer`, sets up its parser, calls `_start(name)` and implements `_serve`
(read `_master`, answer with `_send`, return when `_stop` is set or the pty is gone). `path` is the device
node a client opens, exactly as it opens a real serial port.
"""

from __future__ import annotations

import contextlib
import os
import threading
import tty


class PtyServer:
    """A raw pseudo-terminal served from a daemon thread; `close()` stops the thread and frees every fd."""

    def __init__(self) -> None:
        self._master, self._slave = os.openpty()
        # raw from the start: the line discipline must not echo host frames back before anyone configured it
        tty.setraw(self._slave)
        os.set_blocking(self._master, False)
        self.path = os.ttyname(self._slave)
        self._wake_r, self._wake_w = os.pipe()
        self._stop = threading.Event()
        self.dropped_writes = 0
        self._thread: threading.Thread | None = None

    def _start(self, name: str) -> None:
        self._thread = threading.Thread(target=self._serve, name=f"{name} {self.path}", daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        raise NotImplementedError

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def _send(self, out: bytes) -> bool:
        """Write an answer; dropped (counted) when nobody reads the port, False once the pty is gone."""
        try:
            os.write(self._master, out)
        except (BlockingIOError, InterruptedError):
            self.dropped_writes += 1  # nobody reads the port: drop, never block the device
        except OSError:
            return False
        return True

    def close(self) -> None:
        """Stop the thread and release the pty (idempotent)."""
        if self._stop.is_set():
            return
        self._stop.set()
        with contextlib.suppress(OSError):
            os.write(self._wake_w, b"x")
        if self._thread is not None:
            self._thread.join(timeout=2.0)
        for fd in (self._master, self._slave, self._wake_r, self._wake_w):
            with contextlib.suppress(OSError):
                os.close(fd)

    def __enter__(self) -> PtyServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
