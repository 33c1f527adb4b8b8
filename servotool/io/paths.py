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


def link_problem(path: str | Path, option: str, want: str = "folder") -> str | None:
    """Why `path`, given to `option` as a `want` ("folder" or "file") to write, cannot be used as one once
    its symbolic links are followed, or None: a dangling link (anywhere in the path: a write would create
    whatever it points to, or fail once the work is done), a link loop, a link to a file where a folder is
    meant (or to a folder where a file is). Only links are judged here: a path with no link in the way
    (missing, a plain file, a name too long) is left to the caller's own checks. One line naming the option
    and the path."""
    p = Path(path)
    where = f"{option} {p}"
    try:
        st = os.stat(p)  # follows every link, as the open or mkdir of the work would
    except FileNotFoundError:
        for part in (p, *p.parents):
            if os.path.islink(part) and not os.path.exists(part):
                named = "" if part == p else f" ({part})"
                return f"{where}: a symbolic link{named} to {os.readlink(part)}, which does not exist"
        return None
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            return f"{where}: a symbolic link loop (the links point at each other)"
        return None
    if not os.path.islink(p):
        return None
    is_dir = stat.S_ISDIR(st.st_mode)
    if want == "folder" and not is_dir:
        return f"{where}: a symbolic link to {os.path.realpath(p)}, a file, not a folder"
    if want == "file" and is_dir:
        return f"{where}: a symbolic link to {os.path.realpath(p)}, a folder, not a file"
    return None


def out_dir_problem(folder: Path, option: str = "--out") -> str | None:
    """Why files could not be written into `folder` (created if missing), or None when they can; the
    problem names `option` (--out, --plot-dir).

    Checked before a device is opened or any work is done: the path is resolved first (see link_problem: a
    dangling link, a link loop, a link to a file), then probed by creating and removing a probe file:
    permission bits alone do not tell (read-only mounts, ACLs, a file where the folder should be)."""
    if problem := link_problem(folder, option, "folder"):
        return problem
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


def out_file_problem(path: Path, option: str) -> str | None:
    """Why a file could not be written at `path` (its folder made if missing), or None: the path resolved
    (see link_problem) and its folder, the real one behind any link, probed as out_dir_problem does."""
    if problem := link_problem(path, option, "file"):
        return problem
    folder = Path(os.path.realpath(path)).parent
    if problem := out_dir_problem(folder, option):
        return problem
    return None
