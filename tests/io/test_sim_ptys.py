"""servotool.io.sim_ptys: a standalone simulator's pty is known as one while it serves."""

from __future__ import annotations

import json
import os

from servotool.io.sim_ptys import register, served_by, unregister


def test_a_registered_pty_is_served_until_it_is_unregistered(tmp_path):
    master, slave = os.openpty()
    try:
        path = os.ttyname(slave)
        assert served_by(path, tmp_path) is None
        entry = register(path, "hiwonder", "rosorin-arm", tmp_path)
        assert entry is not None
        info = served_by(path, tmp_path)
        assert info is not None and info["family"] == "hiwonder" and info["pid"] == os.getpid()
        unregister(entry)
        assert served_by(path, tmp_path) is None
    finally:
        os.close(master)
        os.close(slave)


def test_a_simulator_that_is_gone_serves_nothing(tmp_path):
    master, slave = os.openpty()
    try:
        path = os.ttyname(slave)
        entry = register(path, "dynamixel", "microduck", tmp_path)
        assert entry is not None
        info = json.loads(entry.read_text())
        entry.write_text(json.dumps({**info, "pid": 2**22 + 12345}))  # beyond any pid the kernel hands out
        assert served_by(path, tmp_path) is None
    finally:
        os.close(master)
        os.close(slave)


def test_a_plain_file_is_never_a_simulator(tmp_path):
    path = tmp_path / "file"
    path.write_text("")
    assert register(path, "hiwonder", "rosorin-arm", tmp_path / "reg") is None
    assert served_by(path, tmp_path / "reg") is None
