"""Every command's human output reads at 80 columns: the verdict first, no truncated cell or header."""

from collections.abc import Callable

import pytest
from rich.console import Console

from servotool.cli import campaign as campaign_cli
from servotool.cli.render import report_table
from servotool.runs.campaign.report import Report, ReportTable

STEP_HEADERS = [
    "run",
    "kind",
    "transport",
    "size deg",
    "first move ms",
    "arrive ms",
    "peak Δ deg",
    "travel deg",
    "x step",
    "peak deg/s",
    "rejects",
    "faults",
    "verdict",
]
LAG_HEADERS = [
    "run",
    "joint",
    "transport",
    "speeds deg/s",
    "sweep deg",
    "L ms",
    "± ms",
    "midpoint L ms",
    "L vs speed",
    "passes",
    "complete",
]


def _report() -> Report:
    steps = [
        [
            "run 1",
            "raw",
            "udp",
            "+1.5",
            "81",
            "89",
            "2.31",
            "30.7",
            "20.5",
            "150",
            "47",
            "1 (1/32)",
            "runaway",
        ],
        [
            "run 2",
            "shaped a_max 12500",
            "rpc",
            "+10",
            "80",
            "288",
            "5.12",
            "10.0",
            "1.0",
            "67",
            "0",
            "0",
            "ok",
        ],
        ["run 3", "raw", "udp", "+30", "-", "-", "-", "-", "-", "-", "0", "1 (1/23)", "no step measured"],
    ]
    lags = [
        ["run 1", "J1", "udp", "5,10,20,40", "30", "79.6", "1.46", "78.3", "constant", "8", "yes"],
        [
            "run 2",
            "J6",
            "rpc",
            "10,20",
            "60",
            "111.2",
            "0.21",
            "111.0",
            "varies",
            "4",
            "no: connection lost: no state frame for 112 ms",
        ],
    ]
    return Report(
        "r",
        tables=[
            ReportTable("step runs", STEP_HEADERS, steps),
            ReportTable("lag runs (ramps)", LAG_HEADERS, lags),
        ],
    )


def _render(fn: Callable[[Console], None], width: int = 80) -> list[str]:
    out = Console(width=width, record=True, emoji=False)
    fn(out)
    text = out.export_text()
    assert "…" not in text
    lines = text.splitlines()
    assert all(len(line.rstrip()) <= width for line in lines)
    return lines


def test_report_tables_fit_80_columns_with_units_and_joint_names() -> None:
    lines = _render(
        lambda con: [con.print(report_table(t.title, t.headers, t.rows, False)) for t in _report().tables]
    )
    text = "\n".join(lines)
    for word in (
        "first",
        "arrive",
        "travel",
        "deg/s",
        "1 (1/32)",
        "runaway",
        "12500",
        "no step",
        "measured",
        "J1",
        "J6",
        "5,10,20,40",
        "111.2",
        "mid L",
        "frame for",
    ):
        assert word in text, word
    assert "rejects" not in text and "transport" not in text  # --wide only
    wide = "\n".join(
        _render(
            lambda con: [con.print(report_table(t.title, t.headers, t.rows, True)) for t in _report().tables],
            width=200,
        )
    )
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


def test_record_live_view_fits_80_columns_with_position_units() -> None:
    from servotool.cli.record import position_unit, render_view
    from servotool.recorder import Sweep
    from servotool.recorder.frames import AxisSample
    from servotool.runs.recorder.loop import RecordProgress

    sample = AxisSample(position=-2047.5, target=2047.5, current=-1234.0, voltage=12.34, temperature=85.0)
    fast = Sweep(
        t=1.0,
        group="legs",
        axes={10: sample, 11: None, 24: sample},
        codes={"main_code": 123456, "sub_code": 654321},
    )
    progress = RecordProgress(
        t=86399.9,
        frames=2_591_999,
        fast=fast,
        context=None,
        latched={10: 0x24, 99: 1},
        window_open=True,
        fast_count=240,
        context_count=36,
        captures=[],
        events=[],
        overruns=123456,
    )
    assert position_unit({"units": {"position": "pulse (4096 a turn)"}}) == "pulse"
    assert position_unit({"units": {"position": "deg"}}) == "deg"
    lines = _render(lambda con: con.print(render_view(progress, "pulse")))
    header = "\n".join(lines[:2])
    assert "position" in header and header.count("pulse") == 2  # position and gap
    assert any("overrun" in ln for ln in lines) and any("capture window open" in ln for ln in lines)


def test_servo_move_verdict_first_with_units_at_80() -> None:
    from servotool.cli.servo import move_table, move_verdict
    from servotool.runs.bus.servo import MoveResult

    result = MoveResult(
        start={1: 500, 2: 776, 3: 211},
        goal={1: 500, 2: 793, 3: 51},
        final={1: 500, 2: 791, 3: None},
        duration_s=2.11,
        frames=31,
        silent=[10],
        carried={},
        skipped={10: 499},
        limits={1: (10, 990), 2: (80, 960), 3: (0, 1000)},
    )
    lines = _render(
        lambda con: (con.print(move_verdict(result, "drive")), con.print(move_table(result, 250.0)))
    )
    assert lines[0].startswith("moved 3 servos to drive, within 2 pulses")
    assert "1 not read back" in lines[0] and "1 silent, not moved" in lines[0]
    header = "\n".join(lines[1:4])
    assert header.count("pulses") == 6 and "2.11 s" in header  # title's cap; start, goal, final, off, limits


def test_version_verdict_first_at_80(monkeypatch: pytest.MonkeyPatch) -> None:
    from servotool.cli import version as version_cli

    out = Console(width=80, record=True, emoji=False)
    monkeypatch.setattr(version_cli, "console", out)
    monkeypatch.setattr(version_cli, "_installed", lambda name: None if name == "ruckig" else "1.2.3")
    version_cli.version(json_out=False)
    lines = out.export_text().splitlines()
    assert lines[0].startswith("servotool ") and "12 of 13" in lines[0] and "ruckig" in lines[0]
    assert all(len(ln.rstrip()) <= 80 for ln in lines) and "…" not in "\n".join(lines)
    assert lines[-1].startswith("platform: ")
    assert lines[-2] in ("generator profile math: compiled", "generator profile math: python")


def test_shape_tables_carry_units_at_80(tmp_path, monkeypatch: pytest.MonkeyPatch) -> None:
    from typer.testing import CliRunner

    from servotool.cli.app import app
    from tests.cli.test_analyze_cli import write_ramp

    monkeypatch.setenv("COLUMNS", "80")
    runner = CliRunner()
    csv = write_ramp(tmp_path / "ramp.csv", 0.078)
    res = runner.invoke(app, ["shape", str(csv)])
    assert res.exit_code == 0, res.output
    lines = res.stdout.splitlines()
    assert lines[0].startswith("accel: ") and "runaway band" in lines[0]
    # the line naming the file is one line the terminal wraps: the path is never broken by a newline
    assert any(str(csv) in line for line in lines)
    assert "…" not in res.stdout and all(len(line.rstrip()) <= 80 for line in lines if str(csv) not in line)
    for unit in ("deg/s", "deg/s^2", "deg/s^3", "deg"):
        assert any(ln.split() and unit in ln.split() for ln in lines), unit


def test_a_wide_result_table_cuts_no_number_on_an_80_column_terminal(tmp_path) -> None:
    """--wide asks for every column: on a narrow terminal the table keeps its width (the terminal wraps the
    lines) rather than cut numbers to an ellipsis."""
    from servotool.cli.render import render_lag
    from servotool.runs.offline.analyze import analyze_paths
    from tests.cli.test_analyze_cli import write_ramp

    write_ramp(tmp_path / "r.csv", 0.078, seed=7)
    result = analyze_paths([tmp_path], workers=1).files[0].result
    out = Console(width=80, record=True, emoji=False)
    render_lag(result, wide=True, out=out)
    text = out.export_text()
    assert "…" not in text and "gΔ mean" in text and "gΔ peak" in text
    assert out.width == 80  # the console is left as it was
    short = Console(width=80, record=True, emoji=False)
    render_lag(result, wide=False, out=short)
    short_text = short.export_text()
    assert all(len(line.rstrip()) <= 80 for line in short_text.splitlines())
    assert "tau = " in short_text and "± -" not in " ".join(short_text.split())  # no error: no dangling ±


def test_record_view_keeps_every_group_and_marks_only_the_silent_servo_stale() -> None:
    from servotool.cli.record import render_view
    from servotool.recorder import Sweep
    from servotool.recorder.frames import AxisSample
    from servotool.runs.recorder.loop import RecordProgress

    s = AxisSample(position=2047.0, target=2048.0, current=40.0, voltage=4.7, temperature=30.0)
    old = AxisSample(position=1999.0, target=2048.0, current=40.0, voltage=4.7, temperature=30.0)
    fast = Sweep(t=5.0, group="legs", axes={21: s, 22: None, 23: None})
    neck = Sweep(t=4.9, group="neck", axes={30: s, 31: s, 32: s, 33: s})
    progress = RecordProgress(
        t=5.0,
        frames=150,
        fast=fast,
        context=neck,
        latched={},
        window_open=False,
        fast_count=150,
        context_count=5,
        captures=[],
        events=[],
        overruns=0,
        last_answers={21: (5.0, s), 22: (2.5, old), 30: (4.9, s)},
    )
    lines = _render(lambda con: con.print(render_view(progress, "pulse")))
    rows = {ln.split()[0]: ln for ln in lines[2:] if ln.split() and ln.split()[0].isdigit()}
    assert set(rows) == {"21", "22", "23", "30", "31", "32", "33"}  # the neck is there beside the silence
    assert "stale 2.5 s" in rows["22"] and "1999.0" in rows["22"]  # its last answer, marked stale
    assert rows["23"].split()[-1] == "silent"  # never answered
    assert "stale" not in rows["21"] and "silent" not in rows["30"]


def test_the_guard_line_prints_the_lag_in_a_few_significant_digits(monkeypatch: pytest.MonkeyPatch) -> None:
    from servotool.cli import common
    from servotool.cli.render import render_guard_setup
    from servotool.runs.arm.step import GuardSetup

    out = Console(width=80, record=True, emoji=False)
    monkeypatch.setattr(common, "err_console", out)
    render_guard_setup(GuardSetup(0.01, 0.1, 47 / 7, "profile franka-fr3", 1.0))
    text = out.export_text()
    assert "L = 6.71 ms" in text and "6.714" not in text
