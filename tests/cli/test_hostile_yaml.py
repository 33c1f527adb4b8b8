"""A YAML file a user hands servotool (a campaign, a limits file, the config file) is read within bounds:
nested 5,000 deep, a 5,000-digit integer, a list or mapping as a key, and a file past the size limit are each
refused in one line naming the file, exit 2, before anything is composed or opened (before: RecursionError,
ValueError, TypeError, all tracebacks). A small alias bomb (1.4 KB for 10^9 strings) used where text is meant
is refused at once with the value quoted briefly: the readers keep aliased nodes shared and nothing expands
them (before: a campaign's `why:` took 30 s, then MemoryError)."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import pytest

from servotool.cli.app import main
from servotool.io.strict_yaml import MAX_TEXT_BYTES, YamlBoundsError, check_bounds


def _bomb() -> str:
    """About 1.4 KB of YAML: one flow value whose nine levels of aliases stand for 10^9 strings."""
    levels = ["&l0 [" + ", ".join([f'"{"lol " * 24}"'] * 10) + "]"]
    levels += [f"&l{n} [" + ", ".join([f"*l{n - 1}"] * 10) + "]" for n in range(1, 9)]
    return "[" + ", ".join(levels) + "]"


CAMPAIGN = "name: q\npurpose: q\ndevice: sim:fr3\nruns:\n  - why: {why}\n    command: step\n"
HOSTILE = {
    "deep-flow": "name: " + "[" * 5000 + "]" * 5000 + "\n",
    "deep-block": "name:\n" + "- " * 5000 + "x\n",
    "deep-mapping": "name: " + "{a: " * 5000 + "1" + "}" * 5000 + "\n",
    "digits": "name: x\nsize: " + "9" * 5000 + "\n",
    "deep-aliases": "a0: &a0 "
    + "[" * 40
    + "]" * 40
    + "\n"
    + "".join(f"a{i}: &a{i} [*a{i - 1}]\n" for i in range(1, 60)),
    "list-key": f"? {_bomb()}\n: 1\n",
}
WHY = {
    "deep-flow": "nested deeper",
    "deep-block": "nested deeper",
    "deep-mapping": "nested deeper",
    "digits": "a number of 5000",
    "deep-aliases": "nested deeper",
    "list-key": "a key is a list",
    "big": "larger than",
}


def _write(tmp_path: Path, kind: str) -> Path:
    path = tmp_path / f"{kind}.yaml"
    if kind == "big":
        path.write_text("# a comment line\n" * (MAX_TEXT_BYTES // 17 + 2))
    else:
        path.write_text(HOSTILE[kind])
    return path


def _run(
    argv: list[str],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    lines_expected: int = 1,
) -> list[str]:
    monkeypatch.setattr(sys, "argv", ["servotool", *argv])
    started = time.monotonic()
    with pytest.raises(SystemExit) as exit_info:
        main()
    # refused at the bound (or with the value quoted briefly), never after expanding what aliases stand for
    assert time.monotonic() - started < 20
    captured = capsys.readouterr()
    assert exit_info.value.code == 2, captured
    lines = captured.err.strip().splitlines()
    assert len(lines) == lines_expected and all(ln.startswith("error: ") for ln in lines), captured.err
    assert "Traceback" not in captured.err + captured.out and "SIMULATED" not in captured.out
    assert len(captured.err) < 1000
    return lines


KINDS = [*HOSTILE, "big"]


@pytest.mark.parametrize("kind", KINDS)
def test_a_hostile_campaign_is_one_line_exit_2(kind, tmp_path, monkeypatch, capsys) -> None:
    path = _write(tmp_path, kind)
    (line,) = _run(["campaign", "check", str(path)], monkeypatch, capsys)
    assert str(path) in line and WHY[kind] in line


def test_an_alias_bomb_used_as_a_campaign_text_is_refused_at_once(tmp_path, monkeypatch, capsys) -> None:
    # `why:` was made text with str(): 10^9 strings, 30 s, then MemoryError
    path = tmp_path / "bomb.yaml"
    path.write_text(CAMPAIGN.format(why=_bomb()))
    problem, count = _run(["campaign", "check", str(path)], monkeypatch, capsys, lines_expected=2)
    assert problem.startswith(f"error: {path}:5: run 1: give a short `why:`") and "1 problem(s)" in count


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize(
    "command",
    [
        ["sweep", "--bus", "sim:rosorin-arm", "--out", "OUT"],
        ["servo", "move", "--bus", "sim:rosorin-arm", "--to", "1=500"],
    ],
)
def test_a_hostile_limits_file_is_one_line_exit_2(kind, command, tmp_path, monkeypatch, capsys) -> None:
    path = _write(tmp_path, kind)
    out = tmp_path / "out"
    argv = [str(out) if arg == "OUT" else arg for arg in command]
    (line,) = _run([*argv, "--limits", str(path)], monkeypatch, capsys)
    assert str(path) in line and WHY[kind] in line
    assert not out.exists() or not any(out.iterdir())


def test_an_alias_bomb_used_as_a_limit_is_refused_at_once(tmp_path, monkeypatch, capsys) -> None:
    path = tmp_path / "bomb.yaml"
    key = "arm_limit_1"
    path.write_text(f"n:\n  ros__parameters:\n    arm_limit_2: [100, 900]\n    {key}: {_bomb()}\n")
    (line,) = _run(
        ["servo", "move", "--bus", "sim:rosorin-arm", "--to", "1=500", "--limits", str(path)],
        monkeypatch,
        capsys,
    )
    assert str(path) in line and key in line


@pytest.mark.parametrize("kind", KINDS)
def test_a_hostile_config_file_is_one_line_exit_2(kind, tmp_path, monkeypatch, capsys) -> None:
    path = _write(tmp_path, kind)
    monkeypatch.setenv("SERVOTOOL_CONFIG", str(path))
    (line,) = _run(["config", "show"], monkeypatch, capsys)
    assert str(path) in line and WHY[kind] in line


def test_an_alias_bomb_used_as_a_config_text_is_refused_at_once(tmp_path, monkeypatch, capsys) -> None:
    path = tmp_path / "config.yaml"
    path.write_text(f"robot: {_bomb()}\n")
    monkeypatch.setenv("SERVOTOOL_CONFIG", str(path))
    (line,) = _run(["config", "show"], monkeypatch, capsys)
    assert str(path) in line and "robot must be a non-empty string" in line


def test_the_bomb_is_about_1_4_kb() -> None:
    assert 1300 <= len(_bomb()) <= 1500


def test_files_within_the_bounds_pass() -> None:
    check_bounds("a: &x [1, 2, 3]\nb: *x\nc: {d: [e, f, 123456789012345678901234567890]}\n", "f.yaml")
    check_bounds(f"a: {_bomb()}\n", "f.yaml")  # aliases stay shared: a bomb is refused where it is used
    check_bounds("a: [\n", "f.yaml")  # not YAML: its reader says so in its own words
    with pytest.raises(YamlBoundsError, match=r"^f\.yaml:1: "):
        check_bounds("a: " + "[" * 65 + "]" * 65, "f.yaml")
