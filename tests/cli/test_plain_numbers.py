"""A number on the command line is written in plain ASCII decimal: `1_0` (Python's digit grouping, read as 10
where 1.0 may have been meant) and digits of other scripts (`١٠`, full-width `１０`) are refused (exit 2)
before anything opens, in typed options and in lists alike."""

from __future__ import annotations

import sys

import pytest

from servotool.cli.app import main


@pytest.mark.parametrize(
    "argv",
    [
        ["step", "--size", "1_0"],
        ["step", "--steps", "1_0"],
        ["step", "--hold-ms", "6_00"],
        ["step", "--joint", "０"],
        ["step", "--lag-ms", "７８"],
        ["lag", "--speeds", "1_5,30"],
        ["lag", "--speeds", "١٥,30"],
        ["lag", "--sweep", "1_5"],
        ["lag", "--cmd-ms", "1_0"],
    ],
)
def test_a_number_not_in_plain_ascii_decimal_is_refused_before_anything_opens(
    argv: list[str], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path
) -> None:
    monkeypatch.setattr(sys, "argv", ["servotool", *argv, "--robot", "sim:fr3", "--out", str(tmp_path)])
    with pytest.raises(SystemExit) as exit_info:
        main()
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), err
    assert "SIMULATED" not in err
    assert not list(tmp_path.iterdir())
