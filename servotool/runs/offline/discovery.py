"""Finding the recordings to analyse: files named, *.csv under folders, and why an entry cannot be read."""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path


@dataclass
class Problem:
    path: str
    reason: str


def find_csv_files(paths: Iterable[str | Path]) -> tuple[list[Path], list[Problem]]:
    """Files named directly, plus every *.csv under the folders named (recursively, sorted; folders reached
    through a symbolic link are not entered). A file found twice (named twice, or through a link) is
    taken once."""
    found: list[Path] = []
    problems: list[Problem] = []
    seen: set[str] = set()
    for raw in paths:
        p = Path(raw)
        if p.is_dir():
            real = os.path.realpath(p)
            odd: list[Problem] = []
            items = sorted(_csv_under(p, real, odd), key=lambda item: item[0].parts)  # Path order, faster
            problems += sorted(odd, key=lambda o: Path(o.path).parts)
            if not items and not odd:
                problems.append(Problem(str(p), "folder holds no .csv file"))
        elif p.is_file():
            items = [(p, os.path.realpath(p))]
        else:
            problems.append(Problem(str(p), not_a_file(p)))
            continue
        for item, key in items:
            if key not in seen:
                seen.add(key)
                found.append(item)
    return found, problems


def not_a_file(path: Path) -> str:
    """Why `path`, which is neither a regular file nor a folder, cannot be read as a recording."""
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return "no such file or folder"
    except OSError as exc:
        return f"cannot read ({exc.strerror or exc})"
    if stat.S_ISLNK(mode):
        try:
            os.stat(path)
        except FileNotFoundError:
            return f"a symbolic link to nothing ({os.readlink(path)})"
        except OSError as exc:
            loop = exc.errno == errno.ELOOP
            return "a symbolic link loop" if loop else f"cannot read ({exc.strerror or exc})"
        return not_a_file(Path(os.path.realpath(path)))
    kinds = {stat.S_ISFIFO: "a named pipe", stat.S_ISSOCK: "a socket", stat.S_ISCHR: "a device",
             stat.S_ISBLK: "a device"}  # fmt: skip
    return f"not a regular file ({next((k for test, k in kinds.items() if test(mode)), 'nor a folder')})"


def _csv_under(folder: Path, real: str, odd: list[Problem]) -> Iterator[tuple[Path, str]]:
    """(path, resolved path) of every file named *.csv (any case) under folder, whose resolved path is
    `real`: one directory listing per folder, a path resolved only where it is a link. An entry named
    *.csv that is neither a regular file, a folder nor a link (a named pipe, a device) goes to `odd` with
    why: it gets its line, as a damaged file does."""
    try:
        with os.scandir(folder) as listing:
            entries = list(listing)
    except OSError:  # an unreadable folder holds nothing we can read
        return
    for entry in entries:
        name = entry.name
        try:
            if entry.is_dir() and not entry.is_symlink():
                yield from _csv_under(folder / name, os.path.join(real, name), odd)
                continue
            dot = name.rfind(".")
            if dot > 0 and name[dot:].lower() == ".csv":
                if entry.is_file():
                    link = entry.is_symlink()
                    yield folder / name, os.path.realpath(entry.path) if link else os.path.join(real, name)
                elif not entry.is_symlink() and not entry.is_dir():
                    # a named pipe or a device: named like a recording, never opened (a pipe would wait for
                    # a writer). A link to nothing is left out without a word, as a link to a folder
                    odd.append(Problem(str(folder / name), not_a_file(folder / name)))
        except OSError:
            continue
