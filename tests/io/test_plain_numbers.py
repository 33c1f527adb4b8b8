"""A number in a limits or campaign file is written in plain decimal or refused: YAML 1.1 reads `1_00` as
100, `010` as 8, `0x10` as 16 and `1:30` as 90, and a limit spelt so would silently be another number."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from servotool.cli.app import app
from servotool.io.campaign_file import CampaignFileError, read_campaign_text
from servotool.io.limits_yaml import LimitsFileError, load_limits, parse_limits

ODD = ["1_00", "010", "0x10", "1:30", "0b11", "1_0.5", "1:30.5", ".5", "00", "+0x1"]
PLAIN = ["100", "+100", "-0", "0", "1.5", "1.0e+3", "2.5E-1"]
# .inf and .nan are no digits read as another number: the readers refuse them as no finite number or no whole
# pulse (tests/campaign/test_campaign_file.py, tests/cli/test_servo_cli.py)
SPECIAL = [".inf", "-.inf", ".NaN"]

HEAD = "rosorin_board_driver:\n  ros__parameters:\n    arm_limit_2: [95, 941]\n"


@pytest.mark.parametrize("text", ODD)
def test_a_limit_in_an_odd_spelling_is_refused_with_file_line_and_key(tmp_path, text):
    path = tmp_path / "limits.yaml"
    path.write_text(HEAD + f"    arm_limit_3: [0, {text}]\n", encoding="utf-8")
    with pytest.raises(LimitsFileError) as err:
        load_limits(path)
    msg = str(err.value)
    assert msg.startswith(f"{path}:4: arm_limit_3: {text!r}") and "plain decimal" in msg


@pytest.mark.parametrize("text", ODD)
def test_any_number_of_a_limits_file_is_checked(text):
    for body in (f"    arm_rest_2: {text}\n", f"    baud: {text}\n", f"    {text}: 1\n"):
        with pytest.raises(LimitsFileError, match="plain decimal"):
            parse_limits(HEAD + body, "f.yaml")


@pytest.mark.parametrize("text", PLAIN + SPECIAL)
def test_plain_decimal_numbers_are_read(text):
    lf = parse_limits(HEAD + f"    arm_rest_2: {text}\n    other: [{text}]\n", "f.yaml")
    rest, other = lf.params["arm_rest_2"], lf.params["other"]
    assert lf.limits == {2: (95, 941)} and len(other) == 1
    assert other[0] == rest or (rest != rest and other[0] != other[0])  # nan is no equal of itself


def test_a_quoted_or_worded_value_is_no_number_and_not_this_check():
    lf = parse_limits(HEAD + "    note: '1_00'\n    arm_rest_2: 700\n", "f.yaml")
    assert lf.params["note"] == "1_00" and lf.poses == {"rest": {2: 700}}


@pytest.mark.parametrize("text", [t for t in ODD if ":" not in t] + ["0o10", "%1:30"])
def test_a_campaign_number_in_an_odd_spelling_is_refused(tmp_path, text):
    # YAML 1.2 (the campaign reader's default) reads 1:30 as text (and 0o10 as 8, where 1.1 reads it as text);
    # a file that asks for 1.1 reads 1:30 as 90
    head = "%YAML 1.1\n---\n" if text.startswith("%") else ""
    text = text.removeprefix("%")
    body = head + "name: t\ndevice: sim:fr3\nruns:\n  - command: step\n"
    body += f"    options: {{joint: 0, size: {text}}}"
    with pytest.raises(CampaignFileError) as err:
        read_campaign_text(body + "\n", tmp_path / "c.yaml")
    line = 7 if head else 5
    assert str(err.value).startswith(f"{tmp_path / 'c.yaml'}:{line}: size: {text!r}")


def test_servo_refuses_an_odd_limit_before_the_bus_opens(tmp_path, monkeypatch):
    monkeypatch.setenv("SERVOTOOL_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.setenv("SERVOTOOL_LOCK_DIR", str(tmp_path / "locks"))
    limits = tmp_path / "limits.yaml"
    limits.write_text(HEAD.replace("941", "9_41"), encoding="utf-8")
    result = CliRunner().invoke(
        app, ["servo", "move", "--to", "2=900", "--limits", str(limits), "--bus", "sim:rosorin-arm?clock=sim"]
    )
    assert result.exit_code == 2, result.output
    assert f"{limits}:3: arm_limit_2: '9_41'" in result.stderr and "SIMULATED" not in result.stderr


def test_campaign_check_refuses_an_odd_number(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text(
        "name: t\npurpose: p\ndevice: sim:fr3\nsafety: {joints: [0], max_step_deg: 0x10}\n"
        "runs:\n  - why: w\n    command: step\n    options: {joint: 0, size: 1}\n"
    )
    result = CliRunner().invoke(app, ["campaign", "check", str(path)])
    assert result.exit_code == 2, result.output
    assert f"{path}:4: max_step_deg: '0x10'" in result.stderr and "Traceback" not in result.output
