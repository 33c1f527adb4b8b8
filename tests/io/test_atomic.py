"""servotool.io.atomic: a file replaced whole, through a symbolic link to the file it names."""

from __future__ import annotations

import os

from servotool.io.atomic import write_atomic


def test_a_write_through_a_symlink_replaces_the_target_and_keeps_the_link(tmp_path):
    real = tmp_path / "real" / "limits.yaml"
    real.parent.mkdir()
    real.write_text("old\n")
    real.chmod(0o640)
    link = tmp_path / "limits.yaml"
    link.symlink_to(os.path.relpath(real, tmp_path))
    write_atomic(link, "new\n")
    assert link.is_symlink() and real.read_text() == "new\n"
    assert real.stat().st_mode & 0o777 == 0o640
    assert sorted(p.name for p in real.parent.iterdir()) == ["limits.yaml"]  # no temporary file left


def test_a_dangling_symlink_is_written_through_as_open_would(tmp_path):
    link = tmp_path / "config.yaml"
    link.symlink_to("elsewhere/config.yaml")
    write_atomic(link, "x: 1\n")
    assert link.is_symlink() and (tmp_path / "elsewhere" / "config.yaml").read_text() == "x: 1\n"


def test_a_backup_name_taken_by_a_dangling_link_is_not_written_through(tmp_path):
    # FILE.bak a link to a file that does not exist: exists() said free, and the copy created the link's
    # target wherever it pointed
    from servotool.io.limits_yaml import update_in_place

    limits = tmp_path / "limits.yaml"
    limits.write_text("n:\n  ros__parameters:\n    arm_limit_2: [100, 900]\n")
    (tmp_path / "limits.yaml.bak").symlink_to(tmp_path / "elsewhere" / "x")
    (tmp_path / "elsewhere").mkdir()
    old = limits.read_text()
    _, backup = update_in_place(limits, old.replace("900", "800"), old)
    assert backup == tmp_path / "limits.yaml.bak.1" and backup.read_text() == old
    assert not (tmp_path / "elsewhere" / "x").exists()
