"""Where servotool puts files: run recordings (an output folder) and recorder state (the XDG state dir)."""

from __future__ import annotations

import os
from pathlib import Path

import platformdirs

DEFAULT_OUT_DIR = Path("servotool-runs")


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
