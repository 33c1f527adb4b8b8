"""Where servotool puts files: run recordings (an output folder) and recorder state (the XDG state dir)."""

from __future__ import annotations

import errno
import os
import stat
import tempfile
from pathlib import Path
from typing import BinaryIO

import platformdirs

DEFAULT_OUT_DIR = Path("servotool-runs")


def open_readable(path: str | Path) -> BinaryIO:
    """`path` opened for reading bytes, as open(path, "rb") does, except that a named pipe (or a socket) is
    refused at once (OSError EINVAL "not a regular file") instead of waiting for a writer forever; a folder
    raises IsADirectoryError. Devices (/dev/null, /dev/zero) open as before: readers bound what they read."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    try:
        mode = os.fstat(fd).st_mode
        if stat.S_ISDIR(mode):
            raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), str(path))
        if stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode):
            raise OSError(errno.EINVAL, "not a regular file (a named pipe)", str(path))
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def out_dir(explicit: str | Path | None = None) -> Path:
    """The folder for run CSVs: the given one, else $SERVOTOOL_OUT, else ./servotool-runs."""
    if explicit:
        return Path(explicit)
    env = os.environ.get("SERVOTOOL_OUT")
    return Path(env) if env else DEFAULT_OUT_DIR


def state_dir(explicit: str | Path | None = None) -> Path:
    """The folder for recorder captures: the given one, else $SERVOTOOL_STATE_DIR, else the XDG state dir."""
    if explicit:
        return Path(explicit)
    env = os.environ.get("SERVOTOOL_STATE_DIR")
    return Path(env) if env else Path(platformdirs.user_state_dir("servotool"))


def out_dir_problem(folder: Path, option: str = "--out") -> str | None:
    """Why files could not be written into `folder` (created if missing), or None when they can; the
    problem names `option` (--out, --plot-dir).

    Checked before a device is opened or any work is done, by creating and removing a probe file:
    permission bits alone do not tell (read-only mounts, ACLs, a file where the folder should be)."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        return f"{option} {folder}: cannot create the folder ({exc.strerror or exc})"
    if not folder.is_dir():
        return f"{option} {folder}: not a folder"
    try:
        with tempfile.NamedTemporaryFile(dir=folder, prefix=".servotool-probe-"):
            pass
    except OSError as exc:
        return f"{option} {folder}: cannot write there ({exc.strerror or exc})"
    return None
