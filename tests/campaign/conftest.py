"""Helpers shared by the campaign tests: write a campaign file into a temporary folder."""

from pathlib import Path

import pytest


@pytest.fixture
def write_campaign(tmp_path):
    def write(text: str, name: str = "c.yaml") -> Path:
        path = tmp_path / name
        path.write_text(text.lstrip("\n"), encoding="utf-8")
        return path

    return write
