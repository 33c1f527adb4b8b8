"""Errors that say what to do next: the URLs of the command's own kind, the dialout group on a port's
permission error, the closest URL parameter, and shipped campaigns by the names `campaign list` shows."""

import errno
import json

import pytest
import serial
from typer.testing import CliRunner

from servotool.cli.app import app

runner = CliRunner()


@pytest.fixture(autouse=True)
def own_dirs(own_env):
    """Every test here runs in its own state, lock and config files (tests/cli/conftest.py)."""


def _error(result) -> str:
    assert result.exit_code == 2, result.output
    return result.stderr


def test_a_bus_command_given_a_bare_port_suggests_bus_urls():
    err = _error(runner.invoke(app, ["servo", "read", "--bus", "/dev/ttyUSB0"]))
    assert "hiwonder:///dev/ttyUSB0" in err and "dxl:///dev/ttyUSB0" in err
    assert "a bus URL is one of" in err
    assert "fairino://" not in err and "sim:fr3" not in err


@pytest.mark.parametrize("command", [["sweep"], ["record", "--duration", "0.1"]])
def test_every_bus_command_suggests_bus_urls(command):
    err = _error(runner.invoke(app, [*command, "--bus", "/dev/ttyUSB0"]))
    assert "hiwonder:///dev/ttyUSB0" in err and "fairino://" not in err


def test_an_arm_command_given_a_bare_host_suggests_arm_urls():
    err = _error(runner.invoke(app, ["lag", "--robot", "192.168.58.2"]))
    assert "fairino://192.168.58.2" in err and "an arm URL is one of" in err
    assert "hiwonder://" not in err and "sim:rosorin-arm" not in err


def test_a_bus_url_given_to_an_arm_command_names_the_arm_urls():
    err = _error(runner.invoke(app, ["step", "--robot", "sim:rosorin-arm"]))
    assert "opens a bus" in err and "an arm URL is one of" in err and "sim:fr3" in err


def test_permission_denied_on_a_port_names_the_dialout_group(monkeypatch):
    def denied(*args, **kwargs):
        raise serial.SerialException(
            errno.EACCES, "could not open port /dev/ttyUSB0: [Errno 13] Permission denied: '/dev/ttyUSB0'"
        )

    monkeypatch.setattr(serial, "Serial", denied)
    result = runner.invoke(app, ["servo", "read", "--bus", "hiwonder:///dev/ttyUSB0"])
    assert result.exit_code == 3, result.output
    assert "Permission denied" in result.stderr
    assert "dialout group: sudo usermod -aG dialout $USER, then log in again" in result.stderr


@pytest.mark.parametrize(
    ("command", "url"),
    [
        (["lag", "--robot"], "sim:fr3?lag_m=70"),
        (["lag", "--robot"], "sim:fake-arm?lag_m=70"),
        (["servo", "read", "--bus"], "sim:rosorin-arm?lag_m=70"),
    ],
)
def test_a_misspelled_url_parameter_gets_the_close_match(command, url):
    err = _error(runner.invoke(app, [*command, url]))
    assert "lag_m (did you mean lag_ms?)" in err or "'lag_m' (did you mean lag_ms?)" in err


def test_no_close_match_no_guess():
    err = _error(runner.invoke(app, ["lag", "--robot", "sim:fr3?zzzz=1"]))
    assert "zzzz" in err and "did you mean" not in err


def test_campaign_run_takes_a_name_campaign_list_shows(tmp_path):
    listed = runner.invoke(app, ["campaign", "list", "--json"])
    assert listed.exit_code == 0
    names = [row["name"] for row in json.loads(listed.stdout)]
    assert "rosorin-arm-limits" in names
    result = runner.invoke(
        app, ["campaign", "run", "rosorin-arm-limits", "--dry-run", "--out", str(tmp_path)]
    )
    assert result.exit_code == 0, result.output
    assert "dry run: 5 run(s)" in result.stdout
    checked = runner.invoke(app, ["campaign", "check", "rosorin-arm-limits.yaml"])
    assert checked.exit_code == 0, checked.output


def test_a_misspelled_campaign_name_names_the_close_one():
    err = _error(runner.invoke(app, ["campaign", "run", "rosorin-limits", "--dry-run"]))
    assert "did you mean rosorin-arm-limits?" in err and "campaign list" in err
