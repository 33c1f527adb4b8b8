"""`config set` and `config unset` write the config file whole or not at all: a full disk or a signal in the
middle of the write leaves the old file as it was and no temporary file beside it."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from servotool.io.user_config import UserConfigError, load_config, set_value

OLD = "bus: sim:rosorin-arm\nout: runs\n"


class _HalfWriter:
    """A file that takes the first half of what is written to it, then fails as `exc`."""

    def __init__(self, fh, exc: BaseException):
        self._fh, self._exc = fh, exc

    def write(self, data):
        self._fh.write(data[: len(data) // 2])
        self._fh.flush()
        raise self._exc

    def __enter__(self):
        return self

    def __exit__(self, *exc_info):
        self._fh.close()

    def __getattr__(self, name):
        return getattr(self._fh, name)


def _fail_writes_under(monkeypatch, folder: Path, exc: BaseException) -> None:
    real = io.open

    def fake_open(file, mode="r", *args, **kwargs):
        fh = real(file, mode, *args, **kwargs)
        if any(m in mode for m in "wax+") and Path(file).parent == folder:
            return _HalfWriter(fh, exc)
        return fh

    monkeypatch.setattr(io, "open", fake_open)


@pytest.mark.parametrize("exc", [OSError(28, "No space left on device"), KeyboardInterrupt()])
@pytest.mark.parametrize("value", ["sim:fr3", None])
def test_an_interrupted_config_write_keeps_the_old_file(tmp_path, monkeypatch, exc, value):
    path = tmp_path / "config.yaml"
    path.write_text(OLD, encoding="utf-8")
    _fail_writes_under(monkeypatch, tmp_path, exc)
    with pytest.raises(UserConfigError if isinstance(exc, OSError) else KeyboardInterrupt):
        set_value(path, "robot" if value else "out", value)
    monkeypatch.undo()
    assert path.read_text(encoding="utf-8") == OLD
    assert list(tmp_path.iterdir()) == [path]
    assert load_config(path) == {"bus": "sim:rosorin-arm", "out": "runs"}


def test_a_config_write_is_whole_and_keeps_the_mode(tmp_path):
    path = tmp_path / "sub" / "config.yaml"
    assert set_value(path, "robot", "sim:fr3") == {"robot": "sim:fr3"}
    path.chmod(0o600)
    set_value(path, "out", "runs")
    assert load_config(path) == {"robot": "sim:fr3", "out": "runs"}
    assert path.stat().st_mode & 0o777 == 0o600 and list(path.parent.iterdir()) == [path]
