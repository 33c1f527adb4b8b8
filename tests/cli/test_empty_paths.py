"""An empty path ('') names no file or folder: every path option and argument refuses it (one line, exit 2)
before anything opens; it used to mean the current folder (Path('') is '.')."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, get_args

import pytest

from servotool.cli.app import COMMANDS, load_command, main

NOWHERE = "fairino://127.0.0.1?rpc_port=9&cnde_port=9&udp_port=9&model=fr3"


def _run(argv: list[str], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> list[str]:
    monkeypatch.setattr(sys, "argv", ["servotool", *argv])
    monkeypatch.setenv("COLUMNS", "80")
    with pytest.raises(SystemExit) as exit_info:
        main()
    assert exit_info.value.code == 2, capsys.readouterr()
    return capsys.readouterr().err.strip().splitlines()


@pytest.mark.parametrize(
    ("argv", "name"),
    [
        (["lag", "--out", "", "--robot", NOWHERE], "--out"),
        (["lag", "--out=", "--robot", NOWHERE], "--out"),
        (["step", "--out", "", "--robot", NOWHERE], "--out"),
        (["analyze", ""], "PATHS"),
        (["analyze", "x.csv", ""], "PATHS"),
        (["analyze", "x.csv", "--plot-dir", ""], "--plot-dir"),
        (["analyze", "x.csv", "--table", ""], "--table"),
        (["shape", ""], "FILE"),
        (["shape", "x.csv", "--plot-dir", ""], "--plot-dir"),
        (["sweep", "--out", "", "--bus", "hiwonder:///dev/nonexistent"], "--out"),
        (["sweep", "--limits", "", "--bus", "hiwonder:///dev/nonexistent"], "--limits"),
        (["record", "--out", "", "--duration", "0.1"], "--out"),
        (["incidents", "list", "--out", ""], "--out"),
        (["incidents", "plot", "last", "--plot", ""], "--plot"),
        (["servo", "move", "--to", "rest", "--limits", ""], "--limits"),
        (["servo", "relax", "--limits", ""], "--limits"),
        (["campaign", "check", ""], "FILE"),
        (["campaign", "run", "", "--dry-run"], "FILE"),
        (["campaign", "run", "x.yaml", "--out", ""], "--out"),
    ],
)
def test_an_empty_path_is_refused(
    argv: list[str],
    name: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.chdir(tmp_path)  # nothing may be written or read in the current folder
    lines = _run(argv, monkeypatch, capsys)
    assert len(lines) == 1 and lines[0].startswith("error: "), lines
    assert name in lines[0] and "empty path" in lines[0], lines
    assert list(tmp_path.iterdir()) == []


def _paths(tp: Any) -> bool:
    return tp is Path or any(_paths(a) for a in get_args(tp))


def test_every_path_parameter_is_covered() -> None:
    # a new path option is refused empty too: the check goes by the parameter's type, not by a list
    seen = []
    for entry in COMMANDS:
        stack = [(entry.name, load_command(entry))]
        while stack:
            name, cmd = stack.pop()
            for sub, child in getattr(cmd, "commands", {}).items():
                stack.append((f"{name} {sub}", child))
            for param in cmd.params:
                desc = getattr(param, "type_descriptor", None)
                if desc is not None and _paths(desc.annotation):
                    seen.append(f"{name} {param.name}")
                    assert getattr(param, "refuses_empty_path", False), f"{name} {param.name}"
    assert len(seen) >= 15, seen


@pytest.mark.parametrize(
    ("argv", "words"),
    [
        (["analyze", "in", "--table", "table.csv"], ["table.csv", "a folder"]),
        (["analyze", "in", "--table", "in"], ["in", "a folder"]),  # not "is a recording"
        (["incidents", "plot", "last", "--out", "in", "--plot", "table.csv"], ["a folder"]),
        (["shape", "table.csv"], ["Is a directory"]),
        (["campaign", "check", "table.csv"], ["Is a directory"]),
        (["servo", "move", "--to", "rest", "--limits", "table.csv"], ["Is a directory"]),
    ],
)
def test_a_folder_where_a_file_is_expected_is_refused(
    argv: list[str],
    words: list[str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "in").mkdir()
    (tmp_path / "table.csv").mkdir()  # a folder with a file's name
    monkeypatch.setenv("SERVOTOOL_BUS", "hiwonder:///dev/nonexistent")
    lines = _run(argv, monkeypatch, capsys)
    assert len(lines) == 1 and lines[0].startswith("error: "), lines
    assert all(w in lines[0] for w in words), lines
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in", "table.csv"]
    assert not any((tmp_path / "table.csv").iterdir())
