"""Where a simulated servo arm is between commands: a small JSON file per simulator URL in the state dir.

Each `servotool servo` command against a `sim:` URL starts a fresh simulator; without this file every
command would find the arm back in its start pose, so `move` then `relax` could not be rehearsed. The file
holds the simulator parameters that restart it where the last command left it ({"start_2": "960.000", ...}),
keyed by the URL exactly as typed. A file that cannot be read is ignored (the simulator starts fresh), and so
is anything in it but a pose.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import math
from pathlib import Path

from servotool.io.atomic import write_atomic
from servotool.io.paths import state_dir


def state_file(url: str, folder: Path | None = None) -> Path:
    """The state file of one simulator URL (under state_dir()/sim-arms by default)."""
    digest = hashlib.sha256(url.encode("utf-8")).hexdigest()[:16]
    return (folder or state_dir() / "sim-arms") / f"{digest}.json"


def lock_key(url: str) -> str:
    """The host-wide lock key of the simulated arm behind `url` (one per state file): a command on it holds
    the lock as a command on a real arm holds the device's, so two never drive one simulated arm at once."""
    return f"sim-arm-{state_file(url, Path('.')).stem}"


def lock_name_of(url: str) -> str:
    """What a refusal calls the simulated arm behind `url` (its lock key is a digest)."""
    return f"the simulated arm {url}"


def load_sim_state(url: str, folder: Path | None = None) -> dict[str, str]:
    """The saved simulator parameters of `url` ({} when none were saved or the file is unreadable)."""
    path = state_file(url, folder)
    with contextlib.suppress(OSError, ValueError):
        data = json.loads(path.read_text(encoding="utf-8"))
        if isinstance(data, dict) and data.get("url") == url and isinstance(data.get("params"), dict):
            return {str(k): str(v) for k, v in data["params"].items() if _pose_param(str(k), v)}
    return {}


def _pose_param(key: str, value: object) -> bool:
    """Whether a saved parameter is one a pose is made of (what save_sim_state writes: start_N a finite
    position, torque_N 0 or 1); anything else in the file (a silent servo, an obstacle) is left out."""
    kind, _, sid = key.rpartition("_")
    if not sid.isdigit() or not isinstance(value, str):
        return False
    if kind == "torque":
        return value in ("0", "1")
    if kind != "start":
        return False
    try:
        return math.isfinite(float(value))
    except ValueError:
        return False


def save_sim_state(url: str, params: dict[str, str], folder: Path | None = None) -> Path:
    """Remember where the simulator of `url` is now."""
    return write_atomic(state_file(url, folder), json.dumps({"url": url, "params": params}, indent=1) + "\n")


def forget_sim_state(url: str, folder: Path | None = None) -> bool:
    """Drop the saved state of `url` (the next command starts the simulator fresh); True if there was one."""
    path = state_file(url, folder)
    existed = path.exists()
    path.unlink(missing_ok=True)
    return existed
