"""Settings every test shares."""

import pytest


@pytest.fixture(autouse=True)
def _no_user_config(tmp_path_factory, monkeypatch):
    """Keep the user's own config file (default device, output folder) out of every test."""
    monkeypatch.setenv("SERVOTOOL_CONFIG", str(tmp_path_factory.getbasetemp() / "no-user-config.yaml"))
