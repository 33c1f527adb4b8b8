"""A figure is written whole or not at all: a signal or a full disk in the middle of the PNG leaves neither
a truncated PNG at its name nor a temporary file beside it, and a figure already there is kept."""

from __future__ import annotations

from pathlib import Path

import pytest
from matplotlib.figure import Figure

from servotool.plots import save_png


def _half_then(exc: BaseException):
    def savefig(self, fname, **kwargs):
        Path(fname).write_bytes(b"\x89PNG\r\n\x1a\n half")  # the first bytes, then the interruption
        raise exc

    return savefig


@pytest.mark.parametrize("exc", [KeyboardInterrupt(), OSError(28, "No space left on device")])
def test_an_interrupted_figure_leaves_no_half_written_file(tmp_path, monkeypatch, exc):
    target = tmp_path / "run.png"
    monkeypatch.setattr(Figure, "savefig", _half_then(exc))
    with pytest.raises(type(exc)):
        save_png(Figure(), target)
    assert list(tmp_path.iterdir()) == []
    target.write_bytes(b"an older figure")
    with pytest.raises(type(exc)):
        save_png(Figure(), target)
    assert target.read_bytes() == b"an older figure" and list(tmp_path.iterdir()) == [target]


def test_a_figure_is_written(tmp_path):
    target = tmp_path / "sub" / "run.png"
    assert save_png(Figure(), target) == target
    assert target.read_bytes().startswith(b"\x89PNG") and list(target.parent.iterdir()) == [target]
