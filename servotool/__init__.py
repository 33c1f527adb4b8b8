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
    """The version of the servotool whose code runs in this process.

    An installed copy that holds this very file says its version (importlib.metadata). A source tree
    (a checkout on the path, or an editable install, whose metadata dates from its install) says what git
    says of it, where setuptools-scm is importable; failing that, the installed distribution's version,
    else UNKNOWN_VERSION. Never raises."""
    from importlib import metadata

    try:
        dist: metadata.Distribution | None = metadata.distribution("servotool")
    except metadata.PackageNotFoundError:
        dist = None
    if dist is not None and _holds_this_file(dist):
        return dist.version
    from_git = _version_from_git(_HERE.parent.parent)
    if from_git is not None:
        return from_git
    return dist.version if dist is not None else UNKNOWN_VERSION


def _holds_this_file(dist: Distribution) -> bool:
    """Whether `dist` (an installed distribution) installed the servotool/__init__.py that runs."""
    try:
        for item in dist.files or ():
            if item.as_posix() == "servotool/__init__.py":
                return Path(str(item.locate())).resolve() == _HERE
    except (OSError, ValueError):
        pass
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
