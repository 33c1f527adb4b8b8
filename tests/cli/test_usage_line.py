"""The installed entry point reports a command-line mistake as one `error:` line with exit 2."""

from __future__ import annotations

import sys

import pytest

from servotool.cli.app import main


def _exit_code(argv: list[str], monkeypatch: pytest.MonkeyPatch) -> object:
    """Run `servotool ARGV` through the installed entry point; its exit code."""
    monkeypatch.setattr(sys, "argv", ["servotool", *argv])
    with pytest.raises(SystemExit) as exit_info:
        main()
    return exit_info.value.code


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
    monkeypatch.setenv("COLUMNS", "80")
    assert _exit_code(argv, monkeypatch) == 2
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
    assert _exit_code(["servo"], monkeypatch) == 2
    out = capsys.readouterr()
    assert "read" in out.out + out.err  # the group's subcommands are listed


def test_version_and_success_exit_zero(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    assert _exit_code(["--version"], monkeypatch) == 0
    assert capsys.readouterr().out.startswith("servotool ")


@pytest.mark.parametrize(
    ("argv", "pair"),
    [
        (["step", "--raw", "--shaped"], "--shaped and --raw"),
        (["step", "--shaped", "--raw"], "--shaped and --raw"),  # the last one won: a raw step
        (["step", "--guard", "--no-guard"], "--guard and --no-guard"),
        (["lag", "--ramp", "--no-ramp"], "--ramp and --no-ramp"),
        (["ports", "--no-probe", "--probe"], "--probe and --no-probe"),
    ],
)
def test_an_on_off_pair_given_both_ways_is_refused_before_anything_opens(
    argv: list[str], pair: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # refused while the command line is parsed: before the command runs, so before any device opens
    tail = ["--robot", "sim:fr3?clock=sim"] if argv[0] != "ports" else ["--no-probe"]
    assert _exit_code([*argv, *tail], monkeypatch) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and pair in lines[0], lines
    assert "exclude each other" in lines[0]


def test_a_flag_given_twice_the_same_way_is_no_conflict(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    assert _exit_code(["step", "--shaped", "--shaped", "-h"], monkeypatch) == 0
    words = " ".join(capsys.readouterr().out.replace("│", " ").split())
    assert "--shaped and --raw exclude each other" in words  # the help says so


@pytest.mark.parametrize(
    "argv",
    [
        ["step", "--shaped", "--out", "--raw"],  # a folder named --raw: the step stays shaped
        ["step", "--raw", "--out", "--shaped"],
        ["ports", "--no-probe", "--port", "--probe"],  # a device path spelled like the other flag
    ],
)
def test_a_value_spelled_like_the_other_flag_is_a_value_not_a_conflict(
    argv: list[str], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # what click parsed decides, not the raw words: "--raw" here is the value of --out (-h: nothing runs)
    assert _exit_code([*argv, "-h"], monkeypatch) == 0, capsys.readouterr().err
    assert "exclude each other" not in capsys.readouterr().err


def test_a_flag_pair_given_both_ways_after_a_value_is_still_refused(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    assert _exit_code(["step", "--out", "--raw", "--shaped", "--raw", "-h"], monkeypatch) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and "--shaped and --raw exclude each other" in lines[0], lines
