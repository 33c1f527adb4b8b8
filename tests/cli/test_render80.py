"""Every command's human output reads at 80 columns: the verdict first, no truncated cell or header."""

from collections.abc import Callable

import pytest
from rich.console import Console

from servotool.cli import campaign as campaign_cli
from servotool.cli.render import report_table
from servotool.runs.report import Report, ReportTable

STEP_HEADERS = ["run", "kind", "transport", "size deg", "first move ms", "arrive ms", "peak Δ deg",
                "travel deg", "x step", "peak deg/s", "rejects", "faults", "verdict"]
LAG_HEADERS = ["run", "joint", "transport", "speeds deg/s", "sweep deg", "L ms", "± ms", "midpoint L ms",
               "L vs speed", "passes", "complete"]


def _report() -> Report:
    steps = [
        ["run 1", "raw", "udp", "+1.5", "81", "89", "2.31", "30.7", "20.5", "150", "47", "1 (1/32)",
         "runaway"],
        ["run 2", "shaped a_max 12500", "rpc", "+10", "80", "288", "5.12", "10.0", "1.0", "67", "0", "0",
         "ok"],
        ["run 3", "raw", "udp", "+30", "-", "-", "-", "-", "-", "-", "0", "1 (1/23)", "no step measured"],
    ]
    lags = [
        ["run 1", "0", "udp", "5,10,20,40", "30", "79.6", "1.46", "78.3", "constant", "8", "yes"],
        ["run 2", "5", "rpc", "10,20", "60", "111.2", "0.21", "111.0", "varies", "4",
         "no: connection lost: no state frame for 112 ms"],
    ]
    return Report("r", tables=[ReportTable("step runs", STEP_HEADERS, steps),
                               ReportTable("lag runs (ramps)", LAG_HEADERS, lags)])


def _render(fn: Callable[[Console], None], width: int = 80) -> list[str]:
    out = Console(width=width, record=True, emoji=False)
    fn(out)
    text = out.export_text()
    assert "…" not in text
    lines = text.splitlines()
    assert all(len(line.rstrip()) <= width for line in lines)
    return lines


def test_report_tables_fit_80_columns_with_units_and_joint_names() -> None:
    lines = _render(lambda con: [con.print(report_table(t.title, t.headers, t.rows, False))
                                 for t in _report().tables])
    text = "\n".join(lines)
    for word in ("first", "arrive", "travel", "deg/s", "1 (1/32)", "runaway", "12500",
                 "no step", "measured", "J1", "J6", "5,10,20,40", "111.2", "mid L", "frame for"):
        assert word in text, word
    assert "rejects" not in text and "transport" not in text  # --wide only
    wide = "\n".join(_render(lambda con: [con.print(report_table(t.title, t.headers, t.rows, True))
                                          for t in _report().tables], width=200))
    for header in (*STEP_HEADERS, *LAG_HEADERS):
        assert header in wide, header


def test_uniform_text_column_goes_into_the_title() -> None:
    row = ["run 1", "shaped a_max 500", "rpc", "+2.5", "74", "178", "2.1", "2.5", "1.0", "39", "0", "0", "ok"]
    rows = [row] * 3
    lines = _render(lambda con: con.print(report_table("step runs", STEP_HEADERS, rows, False)))
    assert lines[0].startswith("step runs: kind shaped a_max 500, verdict ok")


def test_campaign_summary_renders_at_80(monkeypatch: pytest.MonkeyPatch) -> None:
    out = Console(width=80, record=True, emoji=False)
    monkeypatch.setattr(campaign_cli, "console", out)
    campaign_cli._render_summary(_report())
    text = out.export_text()
    assert "…" not in text and all(len(ln.rstrip()) <= 80 for ln in text.splitlines())


def test_config_show_and_ports_verdict_first_at_80(tmp_path, monkeypatch: pytest.MonkeyPatch) -> None:
    from typer.testing import CliRunner

    from servotool.cli.app import app

    monkeypatch.setenv("COLUMNS", "80")
    monkeypatch.setenv("SERVOTOOL_CONFIG", str(tmp_path / "c" / "config.yaml"))
    runner = CliRunner()
    res = runner.invoke(app, ["config", "show"])
    assert res.exit_code == 0, res.output
    lines = res.stdout.splitlines()
    assert lines[0].startswith("config ") and "key(s) set" in res.stdout
    assert "…" not in res.stdout and all(len(line.rstrip()) <= 80 for line in lines)
    res = runner.invoke(app, ["ports", "--no-probe", "--port", "/dev/servotool-none"])
    assert res.exit_code == 0, res.output
    assert "serial port(s)" in res.stdout.splitlines()[0] and "…" not in res.stdout
