"""At 80 columns the output breaks no path, URL or number with a newline (the terminal wraps long lines,
so copy and paste rejoins them), and `analyze` on several files leads with the combined fits, then gives a
line per file."""

from __future__ import annotations

import re

from typer.testing import CliRunner

from servotool.cli.app import app
from tests.cli.test_analyze_cli import write_ramp, write_sweep

runner = CliRunner()
LONG_URL = "sim:rosorin-arm?clock=sim&obstacle_2=740&start_1=500.000&start_2=776.000&start_3=211.000"


def _analyze(*args: str):
    return runner.invoke(app, ["analyze", *args, "--workers", "1"], env={"COLUMNS": "80"}, terminal_width=80)


def _folder(tmp_path, n_ramps: int = 6):
    deep = tmp_path / "a-campaign-folder-with-a-long-name" / "20261201T234314.049Z-results"
    deep.mkdir(parents=True)
    paths = [
        write_ramp(deep / f"ramp_sim-fr3_2026120{i}T234314.049Z.csv", 0.078, seed=i) for i in range(n_ramps)
    ]
    sweep = deep / "sweep-j2-down_sim-rosorin-arm_20261201T234516.678Z.csv"
    write_sweep(sweep, device=LONG_URL)
    return deep, [*paths, sweep]


def test_a_folder_prints_the_combined_fit_first_and_a_line_per_file(tmp_path):
    folder, paths = _folder(tmp_path)
    result = _analyze(str(folder))
    assert result.exit_code == 0, result.output
    out = result.stdout
    lines = out.splitlines()
    assert out.index("combined:") < min(out.index(str(p)) for p in paths)
    for p in paths:  # each file on exactly one line, its path whole
        assert sum(str(p) in line for line in lines) == 1
    assert len(lines) < 15 + len(paths)
    assert "-v or --json" in out


def test_no_path_url_or_number_is_split_by_a_newline(tmp_path):
    folder, paths = _folder(tmp_path, n_ramps=2)
    for args, shown in (([str(folder)], paths), ([str(folder), "-v"], paths), ([str(paths[-1])], paths[-1:])):
        out = _analyze(*args).stdout
        for p in shown:
            assert str(p) in out, (args, p)
        assert LONG_URL in out
        # no line ends inside a number ("78." then "11" on the next line)
        assert not re.search(r"\d[.,]\n\d", out)


def test_details_for_every_file_with_verbose(tmp_path):
    folder, paths = _folder(tmp_path, n_ramps=2)
    out = _analyze(str(folder), "-v").stdout
    assert out.index("combined:") < out.index(str(paths[0]))
    assert "midpoint cross-check" in out  # the per-file details
    assert out.count("midpoint cross-check") >= 3  # the combined fit's and each ramp file's
