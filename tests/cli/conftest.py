"""Fixtures the command-line tests share."""

from __future__ import annotations

import pytest


@pytest.fixture
def own_env(tmp_path, monkeypatch):
    """State, lock and config files of the test's own, and no device or folder from the environment: the
    command sees only what the test gives it."""
    monkeypatch.setenv("SERVOTOOL_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.setenv("SERVOTOOL_LOCK_DIR", str(tmp_path / "locks"))
    monkeypatch.setenv("SERVOTOOL_CONFIG", str(tmp_path / "config.yaml"))
    for name in ("SERVOTOOL_BUS", "SERVOTOOL_ROBOT", "SERVOTOOL_OUT"):
        monkeypatch.delenv(name, raising=False)
