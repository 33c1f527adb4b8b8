"""Every output path is resolved and probed before anything opens or moves: a dangling symbolic link, a
link loop, and a link to a file where a folder is meant are refused in one line, exit 2, with nothing
written (before: `record --dest` on a dangling link lost its first capture, "File exists", exit 1;
`analyze --table` on a link loop was a traceback). Backups of `sweep --update-limits` are whole or absent."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from servotool.cli.app import main
from servotool.io import atomic
from servotool.io.limits_yaml import update_in_place
from servotool.io.paths import link_problem, out_dir_problem, out_file_problem

CAMPAIGN = Path(__file__).resolve().parents[2] / "campaigns" / "fairino-1-simmachine-baseline.yaml"


@pytest.fixture
def links(tmp_path: Path) -> dict[str, Path]:
    (tmp_path / "a-file").write_text("x")
    made = {name: tmp_path / name for name in ("dangling", "to-a-file")}
    made["loop"] = tmp_path / "loop1"
    made["dangling"].symlink_to(tmp_path / "nowhere")
    (tmp_path / "loop2").symlink_to(tmp_path / "loop1")
    made["loop"].symlink_to(tmp_path / "loop2")
    made["to-a-file"].symlink_to(tmp_path / "a-file")
    made["under-dangling"] = made["dangling"] / "sub"
    return made


WHY = {
    "dangling": "which does not exist",
    "loop": "symbolic link loop",
    "to-a-file": "a file, not a folder",
    "under-dangling": "which does not exist",
}


def _refused(argv: list[str], monkeypatch, capsys) -> str:
    monkeypatch.setattr(sys, "argv", ["servotool", *argv])
    with pytest.raises(SystemExit) as exit_info:
        main()
    captured = capsys.readouterr()
    assert exit_info.value.code == 2, captured
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), captured.err
    assert "Traceback" not in captured.err and "SIMULATED" not in captured.out
    return lines[0]


FOLDER_COMMANDS = {
    "lag --out": ["lag", "--robot", "sim:fr3?clock=sim", "--out"],
    "step --out": ["step", "--robot", "sim:fr3?clock=sim", "--out"],
    "sweep --out": ["sweep", "--bus", "sim:rosorin-arm?clock=sim", "--servo", "1", "--out"],
    "record --out": ["record", "--bus", "sim:rosorin-arm", "--duration", "0.5", "--out"],
    "campaign run --out": ["campaign", "run", str(CAMPAIGN), "--out"],
}


@pytest.mark.parametrize("kind", list(WHY))
@pytest.mark.parametrize("command", list(FOLDER_COMMANDS))
def test_a_folder_option_naming_a_bad_link_is_one_line_exit_2(command, kind, links, monkeypatch, capsys):
    line = _refused([*FOLDER_COMMANDS[command], str(links[kind])], monkeypatch, capsys)
    assert str(links[kind]) in line and WHY[kind] in line
    assert not (links["dangling"].parent / "nowhere").exists()  # nothing made where the link points


@pytest.mark.parametrize("kind", list(WHY))
@pytest.mark.parametrize("option", ["--plot-dir", "--table"])
def test_analyze_outputs_naming_a_bad_link_are_one_line_exit_2(
    option, kind, links, tmp_path, monkeypatch, capsys
):
    csv = tmp_path / "run.csv"
    csv.write_text("t,event\n")
    line = _refused(["analyze", str(csv), option, str(links[kind])], monkeypatch, capsys)
    if option == "--table" and kind == "to-a-file":
        assert "no suffix" in line  # a link to a file is a file: its name is what is wrong
    else:
        assert str(links[kind]) in line and (WHY[kind] in line or kind == "to-a-file")


def test_a_table_through_a_link_loop_with_a_suffix_is_one_line(tmp_path, monkeypatch, capsys):
    (tmp_path / "b.csv").symlink_to(tmp_path / "a.csv")
    (tmp_path / "a.csv").symlink_to(tmp_path / "b.csv")
    csv = tmp_path / "run.csv"
    csv.write_text("t,event\n")
    line = _refused(["analyze", str(csv), "--table", str(tmp_path / "a.csv")], monkeypatch, capsys)
    assert "symbolic link loop" in line


def test_the_probes(links, tmp_path):
    assert link_problem(tmp_path / "new" / "folder", "--out") is None  # made when needed
    assert out_dir_problem(tmp_path / "new" / "folder") is None
    assert link_problem(tmp_path, "--table", "file") is None  # no link: the table's own check says why
    (tmp_path / "to-a-folder").symlink_to(tmp_path)
    assert "a folder, not a file" in link_problem(tmp_path / "to-a-folder", "--table", "file")
    assert out_file_problem(tmp_path / "x.csv", "--table") is None
    assert "symbolic link loop" in out_file_problem(links["loop"], "--update-limits")
    assert "(" + str(links["dangling"]) + ")" in link_problem(links["under-dangling"], "--out")


@pytest.mark.parametrize("where", ["copy", "sync", "link"])
def test_a_backup_cut_short_leaves_no_backup(where, tmp_path, monkeypatch):
    # killed while the backup was being made, 2 of 36 kills left an empty FILE.bak
    limits = tmp_path / "limits.yaml"
    old = "n:\n  ros__parameters:\n    arm_limit_2: [100, 900]\n"
    limits.write_text(old)

    def killed(*args, **kwargs):
        if where == "copy":
            Path(args[1]).write_text(old[:5])  # half a copy, then the signal
        raise KeyboardInterrupt

    target = {"copy": (atomic.shutil, "copy2"), "sync": (atomic, "fsync_path"), "link": (atomic.os, "link")}
    monkeypatch.setattr(*target[where], killed)
    with pytest.raises(KeyboardInterrupt):
        update_in_place(limits, old.replace("900", "800"), old)
    assert limits.read_text() == old
    assert sorted(p.name for p in tmp_path.iterdir()) == ["limits.yaml"]  # no FILE.bak, no temporary file


def test_a_backup_is_whole_and_keeps_mode_and_times(tmp_path):
    limits = tmp_path / "limits.yaml"
    old = "n:\n  ros__parameters:\n    arm_limit_2: [100, 900]\n"
    limits.write_text(old)
    limits.chmod(0o640)
    _, backup = update_in_place(limits, old.replace("900", "800"), old)
    assert backup.read_text() == old and backup.stat().st_mode & 0o777 == 0o640
    with pytest.raises(FileExistsError):
        atomic.copy_new(limits, backup)  # an existing backup is never replaced
    assert backup.read_text() == old


@pytest.fixture
def a_capture(tmp_path: Path) -> Path:
    from servotool.clock import FakeClock
    from servotool.runs.recorder.loop import RecordSettings, run_record
    from tests.recorder.helpers import ScriptedSource

    clock = FakeClock()
    dest = tmp_path / "caps"
    out = run_record(
        ScriptedSource(clock, overload={12: 4.0}),
        clock,
        RecordSettings(dest=dest, duration_s=8.0),
        handle_signals=False,
    )
    assert len(out.captures) == 1
    return dest


PNG_WHY = {
    "dangling": "which does not exist",
    "loop": "symbolic link loop",
    "to-a-folder": "a folder, not a file",
    "under-dangling": "which does not exist",
}


@pytest.mark.parametrize("kind", list(PNG_WHY))
def test_incidents_plot_naming_a_bad_link_is_one_line_exit_2(kind, a_capture, tmp_path, monkeypatch, capsys):
    links = {
        "dangling": tmp_path / "dangling.png",
        "loop": tmp_path / "loop1.png",
        "to-a-folder": tmp_path / "folder.png",
        "under-dangling": tmp_path / "gone" / "plot.png",
    }
    links["dangling"].symlink_to(tmp_path / "nowhere.png")
    (tmp_path / "loop2.png").symlink_to(links["loop"])
    links["loop"].symlink_to(tmp_path / "loop2.png")
    (tmp_path / "a-folder").mkdir()
    links["to-a-folder"].symlink_to(tmp_path / "a-folder")
    (tmp_path / "gone").symlink_to(tmp_path / "no-folder")
    argv = ["incidents", "plot", "1", "--out", str(a_capture), "--plot", str(links[kind])]
    line = _refused(argv, monkeypatch, capsys)
    assert "--plot" in line and PNG_WHY[kind] in line, line
    assert not (tmp_path / "nowhere.png").exists() and not (tmp_path / "no-folder").exists()
    assert list((tmp_path / "a-folder").iterdir()) == []  # nothing written through the link
