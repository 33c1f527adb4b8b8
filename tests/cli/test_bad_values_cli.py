"""Impossible readings end to end: a value no device could report is a bad frame, counted and left out."""

import json
import shutil
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from servotool.cli.app import app
from servotool.io.limits_yaml import load_limits

runner = CliRunner()
EXAMPLE = Path(__file__).resolve().parents[2] / "params" / "rosorin-arm-limits.yaml"


@pytest.fixture(autouse=True)
def own_state_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("SERVOTOOL_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.setenv("SERVOTOOL_LOCK_DIR", str(tmp_path / "locks"))


def test_an_impossible_position_during_a_sweep_is_no_stall_and_the_merged_limit_is_true(tmp_path):
    limits = tmp_path / "arm_limits.yaml"
    shutil.copy(EXAMPLE, limits)
    out = tmp_path / "out"
    args = ["--joint", "4", "--direction", "down", "--limits", str(limits), "--out", str(out), "--json"]
    clean = runner.invoke(app, ["sweep", "--bus", "sim:rosorin-arm?clock=sim", *args])
    assert clean.exit_code == 0, clean.output
    # every 7th read of servo 4 answers 15496, checksum valid: the reply the board's decoder accepts
    bus = "sim:rosorin-arm?clock=sim&bad_read_4=15496&bad_read_every=7"
    result = runner.invoke(app, ["sweep", "--bus", bus, *args])
    assert result.exit_code == 0, result.output
    data, truth = json.loads(result.stdout), json.loads(clean.stdout)
    (sw,) = data["sweeps"]
    assert sw["reason"] == truth["sweeps"][0]["reason"] == "reached stored limit"
    assert data["found"]["4"]["lo"] == truth["found"]["4"]["lo"] == 20
    assert data["bad_frames_left_out"] > 5 and truth["bad_frames_left_out"] == 0
    assert any(n.startswith(f"{data['bad_frames_left_out']} bad frames left out") for n in data["notes"])
    merged = load_limits(Path(data["outputs"]["yaml"]))
    assert merged.limits[4][0] == 20
    (csv_path,) = data["outputs"]["csv"]
    rows = Path(csv_path).read_text().splitlines()
    bad_rows = [line for line in rows if ",bad," in line]
    assert len(bad_rows) == data["bad_frames_left_out"] and all(r.endswith(",15496") for r in bad_rows)
    # recorded as it came, on its own rows: never a state reading the stall test or the limit saw
    assert not [line for line in rows if ",state," in line and line.endswith(",15496")]
    assert yaml.safe_load(limits.read_text()) == yaml.safe_load(EXAMPLE.read_text())


LAG = ["lag", "--speeds", "30", "--sweep", "15", "--json"]
BAD_ARM = "sim:fake-arm?clock=sim&bad_q1=1e300&bad_every=40"


def _lag(tmp_path, robot, name):
    result = runner.invoke(app, [*LAG, "--robot", robot, "--out", str(tmp_path / name)])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    return data, Path(data["analysis"]["file"])


def _analyze(path):
    result = runner.invoke(app, ["analyze", str(path), "--json"])
    assert result.exit_code == 0, result.output
    (one,) = json.loads(result.stdout)["files"]
    return one, result


@pytest.mark.filterwarnings("error::RuntimeWarning")
def test_a_live_lag_run_whose_state_frames_read_1e300_leaves_them_out_and_counts_them(tmp_path):
    data, path = _lag(tmp_path, BAD_ARM, "bad")
    n = data["run"]["bad_frames_left_out"]
    assert n >= 2 and f"{n} bad frames left out (impossible readings: q1 = 1e+300)" in data["notes"]
    assert data["analysis"]["skipped_rows"]["absurd_joint"] == n
    assert data["analysis"]["result"]["fit"]["lag_ms"] == pytest.approx(50.0, abs=0.5)
    # read back offline: the same rows left out, the same lag
    offline, _ = _analyze(path)
    assert offline["skipped_rows"]["absurd_joint"] == n
    assert offline["result"]["fit"]["lag_ms"] == data["analysis"]["result"]["fit"]["lag_ms"]


def _crafted(clean: Path, out: Path, value: str, rows: int = 3, keep_header: bool = True) -> Path:
    lines = clean.read_text().splitlines()
    if not keep_header:  # a file from before the header said what the arm can report
        lines = [line for line in lines if not line.startswith("# readable:")]
    states = [i for i, line in enumerate(lines) if ",state," in line]
    for i in states[len(states) // 2 : len(states) // 2 + rows]:
        cells = lines[i].split(",")
        cells[5] = value  # q1
        lines[i] = ",".join(cells)
    out.write_text("\n".join(lines) + "\n")
    return out


@pytest.mark.filterwarnings("error::RuntimeWarning")
@pytest.mark.parametrize(
    ("value", "keep_header"),
    [("1e300", True), ("1e300", False), ("-3e7", False), ("5000", True)],
    ids=["1e300", "1e300-no-header", "past-1e6-deg", "past-the-joint-range"],
)
def test_analyze_leaves_out_and_counts_finite_absurd_rows_as_it_does_non_finite_ones(
    tmp_path, value, keep_header
):
    _, clean = _lag(tmp_path, "sim:fake-arm?clock=sim", "clean")
    truth, _ = _analyze(clean)
    path = _crafted(clean, tmp_path / "crafted.csv", value, keep_header=keep_header)
    one, result = _analyze(path)
    assert one["skipped_rows"]["absurd_joint"] == 3 and one["skipped_rows"]["nan_joint"] == 0
    assert one["result"]["fit"]["lag_ms"] == pytest.approx(truth["result"]["fit"]["lag_ms"], abs=0.01)
    text = runner.invoke(app, ["analyze", str(path)])
    assert text.exit_code == 0 and "3 row(s) with a value of the analysed joint no device could report" in (
        text.stderr
    )


def test_a_non_finite_row_is_still_counted_apart(tmp_path):
    _, clean = _lag(tmp_path, "sim:fake-arm?clock=sim", "clean")
    one, _ = _analyze(_crafted(clean, tmp_path / "nan.csv", "nan", rows=2))
    assert (one["skipped_rows"]["nan_joint"], one["skipped_rows"]["absurd_joint"]) == (2, 0)


def test_the_guard_trip_message_for_an_absurd_pose_is_a_few_digits():
    from servotool.motion.guard import DivergenceGuard

    verdict = DivergenceGuard(0.9, 0.06).check([0.0] * 6, [1e300, 0, 0, 0, 0, 0], [0.0] * 6)
    assert verdict is not None and len(verdict.reason) < 160, verdict.reason
    assert "1e+300" in verdict.reason
    huge = DivergenceGuard(0.9, 0.06).check([0.0], [-1.7976931348623157e308], [1e308])
    assert huge is not None and len(huge.reason) < 160, huge.reason


@pytest.mark.filterwarnings("error::RuntimeWarning")
def test_analyze_of_a_sweep_file_leaves_out_impossible_read_backs_and_counts_them(tmp_path):
    out = tmp_path / "out"
    args = ["--bus", "sim:rosorin-arm?clock=sim", "--joint", "4", "--direction", "down"]
    result = runner.invoke(app, ["sweep", *args, "--out", str(out), "--json"])
    assert result.exit_code == 0, result.output
    (clean,) = json.loads(result.stdout)["outputs"]["csv"]
    lines = Path(clean).read_text().splitlines()
    assert "# readable: [[-250.0, 1250.0]]" in lines  # what the board's servos can report
    states = [i for i, line in enumerate(lines) if ",state," in line]
    for i in states[10:13]:
        lines[i] = ",".join([*lines[i].split(",")[:5], "15496"])
    crafted = tmp_path / "crafted.csv"
    crafted.write_text("\n".join(lines) + "\n")
    one, _ = _analyze(crafted)
    assert one["skipped_rows"]["absurd_joint"] == 3
    (sw,) = one["result"]["sweeps"]
    assert sw["limit"] == 20 and sw["verdict"].startswith("stopped at 0, limit 20")
    assert "3 impossible read-back(s) left out" in sw["verdict"]
