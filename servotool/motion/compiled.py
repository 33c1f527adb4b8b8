"""Which implementation of the generator's profile math runs: the compiled one when it is current.

The install compiles a copy of otg_profile.py with mypyc as _otg_profile_c (see setup.py), about three
times faster per re-plan and the same floats bit for bit. It is used only while its recorded SHA-256 is
that of the otg_profile.py beside it (an edited source with a stale build runs the source), and never with
SERVOTOOL_PURE_PYTHON=1 in the environment. Otherwise, and where the install could not compile, the pure
module runs: nothing but speed depends on the choice.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.machinery
import importlib.util
import os
import struct
from pathlib import Path
from types import ModuleType

from servotool.motion import otg_profile

__all__ = ["PURE_ENV", "current_build", "implementation", "profile_module"]

PURE_ENV = "SERVOTOOL_PURE_PYTHON"


BUILD_NAME = "servotool.motion._otg_profile_c"


def current_build(source: Path | None = None, name: str = BUILD_NAME) -> ModuleType | None:
    """The compiled module `name` if it is installed, compiled (not a plain copy), made from `source`
    (default: the installed otg_profile.py) and not switched off by SERVOTOOL_PURE_PYTHON; else None."""
    if os.environ.get(PURE_ENV, "") not in ("", "0"):
        return None
    try:
        if not _whole(name):
            return None
        mod = importlib.import_module(name)
    except (ImportError, OSError):  # absent, or a build for another Python or platform: the source runs
        return None
    if not str(getattr(mod, "__file__", "")).endswith((".so", ".pyd")):
        return None  # a plain copy of the source is no faster: only a compiled build counts
    path = Path(otg_profile.__file__) if source is None else source
    try:
        digest = hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError:
        return mod  # no source installed beside it: the build is all there is
    return mod if getattr(mod, "SOURCE_SHA256", None) == digest else None


def _whole(name: str) -> bool:
    """False if the extension module `name`, or a library of its own beside it (mypyc's `name`__mypyc), is
    an ELF file cut short (an interrupted copy, a full disk): the loader would map pages past its end, and
    touching one kills the process (SIGBUS) where no exception can catch it. True otherwise (absent, or
    not ELF: there the loader's own error is an ImportError)."""
    spec = importlib.util.find_spec(name)
    if spec is None or not spec.origin:
        return True
    origin = Path(spec.origin)
    stem = origin.name.partition(".")[0]
    return not any(
        _cut_short(path)
        for path in origin.parent.glob(f"{stem}*")
        if path.name.endswith(tuple(importlib.machinery.EXTENSION_SUFFIXES))
    )


def _cut_short(path: Path) -> bool:
    """True if `path` is an ELF file shorter than its section header table (written last by linkers) says."""
    with path.open("rb") as f:
        head = f.read(64)
        size = os.fstat(f.fileno()).st_size
    if head[:4] != b"\x7fELF" or len(head) < 64 or head[5] not in (1, 2):
        return False
    order = "<" if head[5] == 1 else ">"
    if head[4] == 2:  # 64-bit
        (offset,) = struct.unpack_from(order + "Q", head, 0x28)
        entry, count = struct.unpack_from(order + "HH", head, 0x3A)
    else:
        (offset,) = struct.unpack_from(order + "I", head, 0x20)
        entry, count = struct.unpack_from(order + "HH", head, 0x2E)
    return offset + entry * count > size


_MODULE: ModuleType = current_build() or otg_profile


def profile_module() -> ModuleType:
    """The module whose functions the generator calls (the compiled build or otg_profile itself)."""
    return _MODULE


def implementation() -> str:
    """'compiled' or 'python': which one profile_module() is, for reports and benchmarks."""
    return "python" if _MODULE is otg_profile else "compiled"
