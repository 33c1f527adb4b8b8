"""`servotool campaign` and `analyze --report` from the command line."""

import json

import pytest
from typer.testing import CliRunner

from servotool.cli.app import app

runner = CliRunner()

SHORT = """
# L of the SimMachine, one short pass
name: short
purpose: a short lag campaign
device: "sim:simmachine?enable_ms=100&clock=sim"
safety: {joints: [0], max_speed_deg_s: 10, ramp_only: true}
runs:
  - why: one pass out and back
    command: lag
    options: {joint: 0, sweep: 8, speeds: [10], settle_ms: 200, realtime: false}
"""


def test_check_lists_every_problem_and_exits_2(write_campaign):
    path = write_campaign(SHORT.replace("speeds: [10]", "speeds: [20], size: 3"))
    result = runner.invoke(app, ["campaign", "check", str(path)])
    assert result.exit_code == 2
    lines = [ln for ln in result.stderr.splitlines() if ln.startswith("error:")]
    assert len(lines) == 3, result.stderr  # unknown option, speed above the rule, the summary
    assert f"{path}:9:" in result.stderr
    assert "Traceback" not in result.output


def test_check_valid_and_dry_run_open_nothing(write_campaign, tmp_path):
    path = write_campaign(SHORT)
    result = runner.invoke(app, ["campaign", "check", str(path), "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["runs"][0]["command"] == "lag"
    result = runner.invoke(app, ["campaign", "run", str(path), "--dry-run", "--out", str(tmp_path / "o")])
    assert result.exit_code == 0 and "dry run" in result.stdout
    assert not (tmp_path / "o").exists()


def test_robot_swap_refuses_a_real_arm_for_a_simulator_campaign(write_campaign):
    path = write_campaign(SHORT.replace("ramp_only: true", "ramp_only: true, simulators_only: true"))
    result = runner.invoke(app, ["campaign", "run", str(path), "--robot", "fairino://192.0.2.1"])
    assert result.exit_code == 2 and "simulators only" in result.stderr


def test_list_shows_the_shipped_campaigns():
    result = runner.invoke(app, ["campaign", "list", "--json"])
    assert result.exit_code == 0
    rows = {r["name"]: r for r in json.loads(result.stdout)}
    assert "fairino-8-fr20-lag" in rows and rows["fairino-8-fr20-lag"]["purpose"]
    assert all(not r["problems"] for r in rows.values())


def test_run_then_analyze_report(write_campaign, tmp_path):
    path = write_campaign(SHORT)
    out = tmp_path / "o"
    result = runner.invoke(app, ["campaign", "run", str(path), "--out", str(out), "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    folder = out / data["folder"].split("/")[-1]
    assert data["next_index"] == 1 and data["runs"][0]["status"] == "complete"
    md = (folder / "report.md").read_text()
    assert "| run 1 | J1 | udp | 10 | 8 |" in md
    (folder / "report.md").unlink()
    result = runner.invoke(app, ["analyze", str(folder), "--report"])
    assert result.exit_code == 0, result.output
    again = (folder / "report.md").read_text()
    assert again == md  # recomputed from the CSVs alone
    row = next(ln for ln in again.splitlines() if ln.startswith("| run 1 |"))
    assert float(row.split("|")[6]) > 0  # L itself: test_shipped_campaigns (one short pass is load-sensitive)


def test_check_list_and_dry_run_verdict_first_at_80_columns(write_campaign, tmp_path, monkeypatch):
    monkeypatch.setenv("COLUMNS", "80")
    path = write_campaign(SHORT)
    for args in (
        ["campaign", "check", str(path)],
        ["campaign", "list"],
        ["campaign", "run", str(path), "--dry-run", "--out", str(tmp_path / "o")],
    ):
        result = runner.invoke(app, args)
        assert result.exit_code == 0, result.output
        first = result.stdout.splitlines()[0]
        assert first.startswith(("valid:", "dry run:")) or "shipped campaign(s)" in first, first
        assert "…" not in result.stdout
        # the verdict is one line the terminal wraps (a path in it stays whole); the tables fit 80 columns
        assert all(len(line.rstrip()) <= 80 for line in result.stdout.splitlines()[1:])
        if "--dry-run" in args:
            assert str(tmp_path / "o") in first and "estimated" in first


# eight levels of aliases: 9^8 leaves when expanded; a message quoting the value in full never ends
LAUGHS = "".join(
    f"{a}: &{a} [{', '.join([f'*{b}'] * 9)}]\n" for a, b in zip("bcdefgh", "abcdefg", strict=True)
)
LAUGHS = "a: &a [x, x, x, x, x, x, x, x, x]\n" + LAUGHS


@pytest.mark.timeout(120)
def test_a_value_made_of_nested_aliases_is_quoted_briefly(write_campaign, tmp_path):
    text = (
        LAUGHS.replace("a: &a", "x_a: &a") + "name: q\npurpose: q\ndevice: sim:fr3\nruns:\n"
        "  - why: w\n    command: step\n    options: {joint: *h, size: *h}\n"
    )
    res = runner.invoke(app, ["campaign", "check", str(write_campaign(text))])
    assert res.exit_code == 2 and "option joint: expected a joint name" in res.output
    assert len(res.output) < 4000
    limits = tmp_path / "limits.yaml"
    limits.write_text(LAUGHS.replace("h: &h", "arm_limit_2: &h").replace("a: &a", "x_a: &a"))
    res = runner.invoke(
        app, ["servo", "move", "--bus", "sim:rosorin-arm?clock=sim", "--to", "2=500", "--limits", str(limits)]
    )
    assert res.exit_code == 2 and "arm_limit_2 must be" in res.output and len(res.output) < 4000


def test_an_empty_robot_is_refused_not_replaced_by_the_campaigns_device(write_campaign, tmp_path):
    # `--robot "$ARM"` with ARM unset would otherwise run on whatever device the file names
    path = write_campaign(SHORT)
    out = tmp_path / "out"
    for args in (["check", str(path)], ["run", str(path), "--out", str(out)]):
        res = runner.invoke(app, ["campaign", *args, "--robot", ""])
        assert res.exit_code == 2 and "--robot ''" in res.output, res.output
    assert not out.exists()


def test_an_out_that_is_a_file_is_refused_with_one_line(write_campaign, tmp_path):
    a_file = tmp_path / "a-file"
    a_file.write_text("x")
    res = runner.invoke(app, ["campaign", "run", str(write_campaign(SHORT)), "--out", str(a_file)])
    assert res.exit_code == 2 and res.stderr.startswith("error: refused: --out") and "Errno" not in res.stderr


def test_a_report_that_cannot_be_written_keeps_the_runs_and_is_one_line(
    write_campaign, tmp_path, monkeypatch
):
    """A full disk (or a file size limit) as the report is written: before, a traceback and exit 1."""
    import errno

    import servotool.runs.campaign.report as report

    def full(path, data):
        raise OSError(errno.ENOSPC, "No space left on device", str(path))

    monkeypatch.setattr(report, "write_atomic", full)
    path = write_campaign(SHORT)
    res = runner.invoke(app, ["campaign", "run", str(path), "--out", str(tmp_path / "out")])
    assert res.exit_code == 1 and isinstance(res.exception, SystemExit), res.output
    (folder,) = (tmp_path / "out").iterdir()
    assert len(list(folder.glob("ramp_*.csv"))) == 1  # the run is kept
    last = " ".join(res.stderr.split()).split("error: ")[-1]
    assert "cannot write the report (No space left on device)" in last
    assert f"analyze {folder} --report" in last
