"""An environment variable an option reads that is set but empty is refused (one line, exit 2) before
anything opens: click reads it as unset, so `SERVOTOOL_ROBOT=` fell through to the config file's arm or the
default, and `SERVOTOOL_LIMITS=` meant no limits file without a word."""

from __future__ import annotations

import sys

import pytest

from servotool.cli.app import main

NOWHERE = "fairino://127.0.0.1?rpc_port=9&cnde_port=9&udp_port=9&model=fr3"


def _exit(argv: list[str], monkeypatch: pytest.MonkeyPatch) -> int:
    monkeypatch.setattr(sys, "argv", ["servotool", *argv])
    monkeypatch.setenv("COLUMNS", "80")
    with pytest.raises(SystemExit) as exit_info:
        main()
    code = exit_info.value.code
    return code if isinstance(code, int) else 1


@pytest.mark.parametrize(
    ("env", "argv"),
    [
        ("SERVOTOOL_ROBOT", ["lag", "--ramp"]),
        ("SERVOTOOL_OUT", ["lag", "--ramp", "--robot", NOWHERE]),
        ("SERVOTOOL_BUS", ["servo", "read"]),
        ("SERVOTOOL_LIMITS", ["servo", "move", "--to", "rest", "--bus", "hiwonder:///dev/nonexistent"]),
        ("SERVOTOOL_LIMITS", ["sweep", "--bus", "hiwonder:///dev/nonexistent"]),
    ],
)
@pytest.mark.parametrize("value", ["", "  "])
def test_a_set_but_empty_variable_is_refused(
    env: str, argv: list[str], value: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv(env, value)
    assert _exit(argv, monkeypatch) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and env in err[0] and "set but empty" in err[0], err


def test_the_option_on_the_command_line_wins_over_an_empty_variable(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("SERVOTOOL_BUS", "")
    # the bus given on the line is used (and, being absent, is unreachable: exit 3), not refused as empty
    assert _exit(["servo", "read", "--bus", "hiwonder:///dev/nonexistent"], monkeypatch) == 3
    assert "set but empty" not in capsys.readouterr().err


def test_help_is_shown_whatever_the_variables(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("SERVOTOOL_ROBOT", "")
    assert _exit(["lag", "--help"], monkeypatch) == 0
    assert "--robot" in capsys.readouterr().out


def test_config_show_names_an_empty_variable() -> None:
    from servotool.io.user_config import effective

    rows = {row.key: row for row in effective({"out": "runs"}, {"SERVOTOOL_OUT": " "})}
    assert rows["out"].value is None and "empty: refused" in rows["out"].source
