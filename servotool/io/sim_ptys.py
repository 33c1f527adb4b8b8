"""Which pseudo-terminals a standalone bus simulator (`servotool sim <family>` of a serial family) serves.

Such a simulator is opened with a real URL (`<scheme>:///dev/pts/3`): on the wire it is a board like any
other, so without a word from it a client would take it for real hardware and record it so. The simulator
leaves a small file per pty in the lock folder (keyed by the pty's device number, so another name for the same
pty finds it too) while it serves; a client that opens a device path asks `served_by` and calls the bus
simulated. A file whose process is gone (the simulator was killed) is ignored.
"""

from __future__ import annotations

import contextlib
import json
import os
from pathlib import Path
from typing import Any

from servotool.io.atomic import write_atomic
from servotool.io.devlock import lock_dir


def _entry(path: str | Path, folder: Path | None) -> Path | None:
    rdev = os.stat(path).st_rdev
    if not rdev:  # no device (a plain file): no simulator serves it
        return None
    return (folder or lock_dir() / "sim-ptys") / f"{os.major(rdev)}-{os.minor(rdev)}.json"


def register(path: str | Path, family: str, profile: str, folder: Path | None = None) -> Path | None:
    """Say that this process serves a `family` simulator (the family's registry name) on the pty `path`;
    the file written (None when it could not be: the simulator serves all the same)."""
    with contextlib.suppress(OSError):
        entry = _entry(path, folder)
        if entry is not None:
            info = {"pid": os.getpid(), "path": str(path), "family": family, "profile": profile}
            return write_atomic(entry, json.dumps(info) + "\n")
    return None


def unregister(entry: Path | None) -> None:
    """Remove what `register` wrote (if it is still this process's)."""
    if entry is None:
        return
    with contextlib.suppress(OSError, ValueError):
        if json.loads(entry.read_text(encoding="utf-8")).get("pid") == os.getpid():
            entry.unlink()


def served_by(path: str | Path, folder: Path | None = None) -> dict[str, Any] | None:
    """What a live standalone simulator says of the device at `path` ({"pid", "path", "family", "profile"}),
    or None: no simulator registered it, or the one that did is gone."""
    try:
        entry = _entry(path, folder)
        if entry is None:
            return None
        info = json.loads(entry.read_text(encoding="utf-8"))
        pid = int(info["pid"])
        os.kill(pid, 0)
    except PermissionError:  # alive, another user's
        return info if isinstance(info, dict) else None
    except (OSError, ValueError, TypeError, KeyError):
        return None
    return info if isinstance(info, dict) else None
