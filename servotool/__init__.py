"""servotool: measure and explain what a robot controller does with the setpoints it is streamed.

`servotool.__version__` is the full version of the code that runs, made from git by setuptools-scm: "0.1.0"
on a release tag, "0.1.dev600+g1234abc" for a commit after it (".d20261201" appended when the tree had
uncommitted changes). It is worked out when first asked for, not at import: reading the installed
metadata costs tens of milliseconds that a command's start need not pay.
"""

from __future__ import annotations

import functools
import warnings
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from importlib.metadata import Distribution

# what a tree that neither an installed distribution nor git can name reports
UNKNOWN_VERSION = "0.0+unknown"
# pyproject's fallback_version: the version a clone without tags counts its commits from
_SCM_FALLBACK = "0.0"
_HERE = Path(__file__).resolve()


def __getattr__(name: str) -> str:
    if name == "__version__":
        return full_version()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


@functools.cache
def full_version() -> str:
    """The version of the servotool whose code runs in this process; never raises.

    A source tree (a git checkout on the path, or an editable install) says what git says of it, where
    setuptools-scm is importable: its metadata would date from the install, or from a build's leftovers.
    Otherwise the installed distribution that holds this code says its version (importlib.metadata); a
    copy that is neither says UNKNOWN_VERSION rather than the version of another copy."""
    root = _HERE.parent.parent
    from_git = _version_from_git(root)
    if from_git is not None:
        return from_git
    from importlib import metadata

    try:
        dist = metadata.distribution("servotool")
    except metadata.PackageNotFoundError:
        return UNKNOWN_VERSION
    return dist.version if _installed_from(dist, root) else UNKNOWN_VERSION


def _installed_from(dist: Distribution, root: Path) -> bool:
    """Whether `dist` is the install of the running code: it installed this very file, or it is an
    editable install of the tree at root."""
    import json
    from urllib.parse import unquote

    try:
        for item in dist.files or ():
            if item.as_posix() == "servotool/__init__.py":
                return Path(str(item.locate())).resolve() == _HERE
        origin = json.loads(dist.read_text("direct_url.json") or "{}")
        url = str(origin.get("url", ""))
        editable = bool(origin.get("dir_info", {}).get("editable"))
        return editable and url.startswith("file://") and Path(unquote(url[7:])).resolve() == root
    except (OSError, ValueError, TypeError, AttributeError):
        return False


def _version_from_git(root: Path) -> str | None:
    """setuptools-scm's version of the source tree at root, or None where it is no git checkout of
    servotool or setuptools-scm is not installed."""
    if not (root / "pyproject.toml").is_file() or not (root / ".git").exists():
        return None
    try:
        from setuptools_scm import get_version
    except ImportError:
        return None
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return str(get_version(root=str(root), fallback_version=_SCM_FALLBACK))
    except Exception:  # git missing or failing: the tree goes unnamed rather than the command failing
        return None
