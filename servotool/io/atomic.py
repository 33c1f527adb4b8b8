"""Files replaced whole or not at all: written beside their name, synced, and renamed into place.

A crash, a full disk or a signal during the write leaves the old file as it was (or no file) and no
temporary file beside it, never a truncated one that every later read would stop on. A name that is a
symbolic link has the file it points to replaced; the link stays.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import stat
import tempfile
from collections.abc import Iterator
from pathlib import Path


def _umask_mode() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return 0o666 & ~mask


def fsync_path(path: Path) -> None:
    """Sync the file or folder at `path` to disk (OSError if it cannot be opened or synced)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _fsync_folder(folder: Path) -> None:
    """The rename itself made durable; best effort (some filesystems cannot sync a folder)."""
    with contextlib.suppress(OSError):
        fsync_path(folder)


@contextlib.contextmanager
def replacing(path: str | Path) -> Iterator[Path]:
    """A temporary path in `path`'s folder (made if missing) for the caller to write the new file to; when
    the block ends normally the file is synced to disk and renamed onto `path`. When the block, the sync or
    the rename fails (any exception, KeyboardInterrupt too) the temporary file is removed and `path` is
    untouched. An existing file keeps its permission bits; a new one gets the usual 0666 & ~umask. A
    symbolic link is followed as open() would: the file it names is replaced and the link kept (renaming onto
    the link would turn it into a file of its own and leave the file every other reader opens as it was)."""
    path = Path(os.path.realpath(path))
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        mode = stat.S_IMODE(path.stat().st_mode)
    except FileNotFoundError:
        mode = _umask_mode()
    fd, name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".part", dir=path.parent)
    os.close(fd)
    tmp = Path(name)
    try:
        yield tmp
        fsync_path(tmp)
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            tmp.unlink(missing_ok=True)
        raise
    _fsync_folder(path.parent)


def write_atomic(path: str | Path, text: str | bytes) -> Path:
    """Write text (UTF-8) or bytes to path through `replacing`: readers see the old or the new file, never
    half, and an interrupted write leaves neither a half file nor a temporary one. Returns the path."""
    with replacing(path) as tmp:
        tmp.write_bytes(text.encode("utf-8") if isinstance(text, str) else text)
    return Path(path)


def copy_new(src: str | Path, dst: str | Path) -> Path:
    """Copy `src` (mode and times kept) to `dst`, a name that must not exist yet, whole or not at all: the
    copy is written beside `dst`, synced, and linked into place, so a kill during the copy leaves no `dst`
    (nor a temporary file, when the process lives to remove it) instead of an empty or half one. Raises
    FileExistsError when `dst` appeared meanwhile (it is never replaced), OSError when the copy fails.
    Where the filesystem has no hard links the synced copy is renamed into place instead."""
    dst = Path(dst)
    fd, name = tempfile.mkstemp(prefix=f".{dst.name}.", suffix=".part", dir=dst.parent)
    os.close(fd)
    tmp = Path(name)
    try:
        shutil.copy2(src, tmp)
        fsync_path(tmp)
        try:
            os.link(tmp, dst)
        except FileExistsError:
            raise
        except OSError:  # no hard links here (some network and FAT filesystems)
            if os.path.lexists(dst):
                raise FileExistsError(f"{dst} exists") from None
            os.replace(tmp, dst)
    finally:
        with contextlib.suppress(OSError):
            tmp.unlink(missing_ok=True)
    _fsync_folder(dst.parent)
    return dst
