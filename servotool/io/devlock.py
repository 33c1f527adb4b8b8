"""One servotool process per device on this host: an OS advisory lock on a file named after the device.

The lock is `fcntl.flock` on `<lock dir>/<key>.lock`: the kernel drops it when the process ends, however it
ends (a crash or SIGKILL leaves no stale lock to clean up). The file holds the owner's pid and command line,
so a refusal can say who holds the device. The lock dir is $SERVOTOOL_LOCK_DIR, else the platformdirs user
runtime dir (the state dir's `locks` folder where the session has no runtime dir).
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import re
import stat
import sys
import time
from pathlib import Path
from types import TracebackType

import platformdirs

from servotool.errors import Refused


class DeviceBusy(Refused):
    """Another process holds the device's lock; nothing was opened or sent. `holder` says who (pid, since
    when, command line), as the lock file tells."""

    holder: str = "unknown"


def lock_dir(explicit: str | Path | None = None) -> Path:
    """The folder of the device lock files (see the module docstring)."""
    if explicit:
        return Path(explicit)
    env = os.environ.get("SERVOTOOL_LOCK_DIR")
    if env:
        return Path(env)
    if os.environ.get("XDG_RUNTIME_DIR"):
        return Path(platformdirs.user_runtime_dir("servotool"))
    # no per-user runtime dir (a container, a cron job): the state dir is per user and persistent
    return Path(platformdirs.user_state_dir("servotool")) / "locks"


def lock_name(key: str) -> str:
    """A file name for a device key: readable, safe on any filesystem, distinct for distinct keys."""
    safe = re.sub(r"[^A-Za-z0-9._-]+", "_", key).strip("_")[:60]
    digest = hashlib.sha1(key.encode()).hexdigest()[:10]
    return f"{safe}-{digest}.lock"


class LockUnavailable(Refused):
    """The device's lock file cannot be made or opened (the lock folder is a file, not writable...); the
    device is not opened without it."""


class DeviceLock:
    """Hold the lock of one device (`key`, e.g. "<scheme>-192.168.58.2-20003") for as long as the context;
    `name` is what a refusal calls the device (default: the key).

    `acquire` never waits: when another process holds the lock it raises DeviceBusy naming that process.
    Reentrant within a process is NOT supported (flock on a second descriptor conflicts with the first).
    """

    def __init__(self, key: str, folder: str | Path | None = None, name: str | None = None) -> None:
        self.key = key
        self.name = name or key  # what a refusal calls the device (a key can be a digest)
        self.path = lock_dir(folder) / lock_name(key)
        self._fd: int | None = None

    def acquire(self) -> DeviceLock:
        """Take the lock or refuse: DeviceBusy when another process holds it, LockUnavailable when the lock
        file cannot be made or opened (nothing goes ahead without the lock)."""
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            # never through a link (the lock is truncated: a link would truncate what it points to), never
            # blocking on a FIFO put in its place
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK, 0o644)
        except OSError as exc:
            raise LockUnavailable(
                f"{self.key}: cannot take the lock {self.path} ({exc.strerror or exc}: {exc.filename}): "
                "set SERVOTOOL_LOCK_DIR to a folder servotool can write"
            ) from None
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            os.close(fd)
            raise LockUnavailable(
                f"{self.key}: cannot take the lock {self.path}: not a regular file; "
                "remove it or set SERVOTOOL_LOCK_DIR to another folder"
            )
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = _read_holder(fd)
            os.close(fd)
            busy = DeviceBusy(
                f"{self.name} is in use by another servotool process ({holder}): one run per device"
            )
            busy.holder = holder
            raise busy from None
        except BaseException:
            os.close(fd)
            raise
        os.ftruncate(fd, 0)
        stamp = time.strftime("%Y-%m-%dT%H:%M:%S%z")
        os.write(fd, f"pid {os.getpid()} since {stamp}: {' '.join(sys.argv)}\n".encode())
        self._fd = fd
        return self

    def release(self) -> None:
        """Drop the lock (idempotent). The file stays: removing it could race a process opening it."""
        if self._fd is not None:
            with contextlib.suppress(OSError):
                os.ftruncate(self._fd, 0)
            os.close(self._fd)  # closing the descriptor releases the flock
            self._fd = None

    @property
    def held(self) -> bool:
        return self._fd is not None

    def __enter__(self) -> DeviceLock:
        return self.acquire()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.release()


def _read_holder(fd: int) -> str:
    with contextlib.suppress(OSError):
        text = os.pread(fd, 400, 0).decode(errors="replace").strip()
        if text:
            return text.splitlines()[0]
    return "holder unknown"
