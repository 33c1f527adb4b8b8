"""What every pty-served simulator shares: the pseudo-terminal, its serving thread, a clean stop.

A family's simulator subclasses `PtyServer`, sets up its parser, calls `_start(name)` and implements `_serve`
(read `_master`, answer with `_send`, `_count` each frame or packet once answered, return when `_stop` is set
or the pty is gone). `path` is the device node a client opens, exactly as it opens a real serial port.
`wait_done` lets an in-process client wait for those answers as a condition (woken at each one) instead of
polling or timing out.
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
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
        self.done = 0  # frames or packets taken and answered (an answer is in the pty when this counts it)
        self.replies_sent = 0  # the answers among them that were written (not dropped)
        self._progress = threading.Condition()

    def _start(self, name: str) -> None:
        self._thread = threading.Thread(target=self._serve, name=f"{name} {self.path}", daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        raise NotImplementedError

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def _count(self, replied: bool) -> None:
        """One more frame or packet taken and answered (`replied`: an answer was written for it)."""
        with self._progress:
            self.replies_sent += replied
            self.done += 1
            self._progress.notify_all()

    def wait_done(self, count: int, timeout_s: float) -> bool:
        """Wait until `count` frames or packets have been taken and answered; False when timeout_s passed
        first or the serving thread stopped."""
        deadline = time.monotonic() + timeout_s
        with self._progress:
            while self.done < count:
                left = deadline - time.monotonic()
                if left <= 0 or not self.running:
                    return False
                self._progress.wait(min(left, 0.05))  # woken by each answer; the cap notices a stopped thread
        return True

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
