"""Fault and latch codes are shown with their names (from the device's family), and times relative to an
event read 'before' or 'after', never a negative 'after'."""

from __future__ import annotations

import re

from typer.testing import CliRunner

from servotool.cli.app import app
from servotool.cli.incidents import _axis_bits
from servotool.cli.record import latch_line
from servotool.cli.render import relative_ms, relative_s
from servotool.devices.registry import fault_names, status_names

runner = CliRunner()


def test_the_families_name_their_codes():
    assert status_names(0x20, family="dynamixel") == "overload"
    assert status_names(0x24, family="dynamixel") == "overheating, overload"
    assert "TCP speed" in fault_names((1, 32), url="sim:fr3")
    assert "TCP speed" in status_names((1 << 16) | 32, family="fairino")
    assert fault_names((9, 99), url="sim:fr3") == ""  # not in the table
    assert status_names(0x20, url="sim:rosorin-arm") == ""  # a family that names no status bits
    assert status_names(0x20) == "" and fault_names((1, 32)) == ""  # no device: no guess


def test_latches_are_shown_by_name():
    def shown(bits, family, table=None):
        device = {"family": family, **({"status_bits": table} if table else {})}
        return _axis_bits({"device": device}, {"axis": 12, "bits": bits})

    assert shown(0x20, "dynamixel") == "0x20 (overload)"
    assert shown((1 << 16) | 32, "fairino").startswith("1/32 (TCP speed")
    assert shown(0x20, None) == "0x20"
    # the capture's own names of the axis's bits come first
    assert shown(0x20, "dynamixel", {"12": ["a", "b", "c", "d", "e", "own_name"]}) == "0x20 (own_name)"
    assert "12 0x20 (overload)" in latch_line({12: 0x20}, "dynamixel")
    assert latch_line({}, "dynamixel") == ""


def test_times_read_before_or_after():
    assert relative_s(-0.051, "the fault") == "51 ms before the fault"
    assert relative_s(0.051, "the fault") == "51 ms after the fault"
    assert relative_s(0.0, "detection") == "at detection"
    assert relative_s(-2.5, "detection") == "2.500 s before detection"
    assert relative_s(None, "detection") == "-" and relative_s(float("nan"), "x") == "-"
    assert relative_ms(-51, "the fault") == "51 ms before the fault"


def test_a_raw_step_names_its_fault_and_no_time_reads_negative_after(tmp_path):
    result = runner.invoke(
        app,
        ["step", "--robot", "sim:fr3?clock=sim", "--raw", "--size", "20", "--out", str(tmp_path)],
        env={"COLUMNS": "80"},
    )
    assert result.exit_code == 1, result.output
    out = " ".join(result.stdout.split())  # the prose may wrap between words
    assert "faults: 1/23 axis 1 command speed over the limit" in out
    assert "ms after" in out or "ms before" in out
    assert not re.search(r"-\d+(\.\d+)? m?s after", out)
    # the recording's path, longer than the terminal, is whole on its line (the terminal wraps it)
    (csv,) = tmp_path.glob("step_*.csv")
    assert len(f"recording: {csv}") > 80 and f"recording: {csv}" in result.stdout.splitlines()


def test_the_campaign_report_names_the_fault_codes_of_its_step_table(tmp_path):
    result = runner.invoke(
        app, ["step", "--robot", "sim:fr3?clock=sim", "--raw", "--size", "20", "--out", str(tmp_path)]
    )
    assert result.exit_code == 1, result.output
    result = runner.invoke(app, ["analyze", str(tmp_path), "--report", "--workers", "1"])
    assert result.exit_code == 0, result.output
    assert "faults: 1/23 axis 1 command speed over the limit" in (tmp_path / "report.md").read_text()
