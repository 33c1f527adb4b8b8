"""The installed entry point reports a command-line mistake as one `error:` line with exit 2."""

from __future__ import annotations

import sys

import pytest

from servotool.cli.app import main


@pytest.mark.parametrize(
    ("argv", "words"),
    [
        (["step", "--size", "abc", "sim:fr3"], ["--size", "valid number", "step -h"]),
        (["lag", "--bogus"], ["No such option: --bogus", "lag -h"]),
        (["bogus"], ["No such command 'bogus'"]),
        (["step", "--shaper", "nope"], ["'nope' is not one of 'accel', 'otg'"]),
        (["config", "set", "nope", "1"], ["'nope' is not one of"]),
    ],
)
def test_usage_error_is_one_line(
    argv: list[str], words: list[str], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(sys, "argv", ["servotool", *argv])
    monkeypatch.setenv("COLUMNS", "80")
    with pytest.raises(SystemExit) as exit_info:
        main()
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("error: ")
    assert "Value error" not in lines[0]
    for word in words:
        assert word in lines[0]


def test_bare_group_still_shows_help(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(sys, "argv", ["servotool", "servo"])
    with pytest.raises(SystemExit) as exit_info:
        main()
    assert exit_info.value.code == 2
    out = capsys.readouterr()
    assert "read" in out.out + out.err  # the group's subcommands are listed


def test_version_and_success_exit_zero(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(sys, "argv", ["servotool", "--version"])
    with pytest.raises(SystemExit) as exit_info:
        main()
    assert exit_info.value.code == 0
    assert capsys.readouterr().out.startswith("servotool ")
