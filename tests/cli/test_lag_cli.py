"""`servotool lag --ramp` end to end on the built-in simulator, and `analyze` giving back the same result."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from rich.console import Console
from typer.testing import CliRunner

from servotool.analysis.lag import simulate
from servotool.cli.app import app
from servotool.cli.render import render_lag
from servotool.io.csvlog import CsvLogWriter
from servotool.motion.ramp import ramp_profile
from servotool.runs.arm.ramp import RampSettings, check_settings
from servotool.runs.arm.stream import columns, units
from servotool.runs.offline.analyze import analyze_file

runner = CliRunner()
T = 0.01
SHORT = ["--sweep", "5", "--speeds", "10,20", "--ramp-ms", "100", "--settle-ms", "300"]


def test_lag_ramp_json_plot_and_analyze_agree(tmp_path, slack):
    res = runner.invoke(
        app,
        [
            "lag",
            "--ramp",
            "--robot",
            "sim:simmachine?clock=sim",
            *SHORT,
            "--out",
            str(tmp_path),
            "--json",
            "--plot",
        ],
    )
    assert res.exit_code == 0, res.stderr
    assert "SIMULATED simmachine" in res.stderr
    live = json.loads(res.stdout)
    assert live["run"]["status"] == "complete"
    result = live["analysis"]["result"]
    late = live["run"]["late_ticks"]
    assert result["fit"]["lag_ms"] == pytest.approx(39.0, abs=slack(0.5, 39.0, late)), late
    assert result["midpoint"]["agrees"]
    assert len(result["passes"]) == 4
    for key in ("fit", "host_fit", "guard_fit", "link", "model", "dynamics", "noise", "tuning"):
        assert result[key] is not None, key
    assert result["tuning"]["lag_s"] == pytest.approx(0.04)
    assert live["plot"].endswith(".png") and (tmp_path / live["plot"].split("/")[-1]).stat().st_size > 10_000
    csv = live["analysis"]["file"]

    again = runner.invoke(app, ["analyze", csv, "--json"])
    assert again.exit_code == 0, again.stderr
    redo = json.loads(again.stdout)
    assert len(redo["files"]) == 1 and redo["problems"] == []
    entry = redo["files"][0]
    entry.pop("plot")
    assert entry == live["analysis"]  # the same figures, recomputed from the CSV alone

    text = runner.invoke(app, ["analyze", csv])
    assert text.exit_code == 0
    for word in (
        "lag L",
        "guard-view lag",
        "midpoint cross-check",
        "model check",
        "dynamics",
        "guard tuning",
    ):
        assert word in text.stdout


def test_lag_refuses_bad_options_with_one_line(tmp_path):
    res = runner.invoke(app, ["lag", "--speeds", "5,fast", "--out", str(tmp_path)])
    assert res.exit_code == 2 and "--speeds" in res.stderr and "Traceback" not in res.stderr
    res = runner.invoke(app, ["lag", "--robot", "sim:fr3", "--speeds", "300", "--out", str(tmp_path)])
    assert res.exit_code == 2 and "refused" in res.stderr
    res = runner.invoke(app, ["lag", "--robot", "nowhere", "--out", str(tmp_path)])
    assert res.exit_code == 2 and "nowhere" in res.stderr
    assert not list(tmp_path.glob("*.csv"))


def test_a_pass_too_short_to_cruise_is_reported_not_a_crash(tmp_path):
    res = runner.invoke(
        app,
        [
            "lag",
            "--ramp",
            "--robot",
            "sim:fr3?clock=sim",
            "--sweep",
            "4",
            "--speeds",
            "10,40",
            "--out",
            str(tmp_path),
            "--json",
        ],
    )
    assert res.exit_code == 0, res.stderr
    out = json.loads(res.stdout)
    passes = out["analysis"]["result"]["passes"]
    # the 40 deg/s passes of a 4 deg sweep are triangles: reported as such and left out of the fit
    assert [p["note"] for p in passes[2:]] == ["no cruise", "no cruise"]
    assert out["analysis"]["result"]["fit"]["n_passes"] == 2


def _ramp_csv(path: Path, lag: float, speeds: tuple[float, ...], seed: int = 0) -> Path:
    """A ramp recording as the stream loop writes it, with a known lag and a little noise."""
    rng = np.random.default_rng(seed)
    prof = ramp_profile(0.0, 8.0, speeds, dt=T, ramp_s=0.1, settle_s=0.3)
    tc = np.arange(len(prof)) * T
    ts = np.arange(0.0, tc[-1] + 0.3, 0.008)
    m, _ = simulate(tc, prof.q, ts, lag, 0.0)
    m += rng.normal(0, 0.002, len(ts))
    rows = [
        (
            tc[k],
            {"event": "cmd", "seq": k, "pass": prof.pass_index[k], "phase": prof.phase[k], "q1": prof.q[k]},
        )
        for k in range(len(tc))
    ]
    rows += [
        (ts[i], {"event": "state", "q1": m[i], "main_code": 0, "sub_code": 0, "dev_t": ts[i]})
        for i in range(len(ts))
    ]
    rows.sort(key=lambda r: r[0])
    cfg = {"mode": "ramp", "joint": 0, "cmd_period_s": T, "a_max": 500.0, "v_max": 130.0}
    with CsvLogWriter(
        path,
        device="sim:fr3",
        simulated=True,
        config=cfg,
        units=units(6, False),
        columns=columns(6, False),
        command="servotool lag --ramp",
    ) as w:
        for t, row in rows:
            w.write({"t": t, **{f"q{j}": 0.0 for j in range(2, 7)}, **row})
    return path


def _render(result, width: int, wide: bool = False) -> str:
    out = Console(width=width, record=True, emoji=False)
    render_lag(result, title="lag, J1 (sim:fr3)", wide=wide, out=out)
    return out.export_text()


def _verdict_lag(line: str) -> float:
    assert line.startswith("L = "), line
    return float(line.split()[2])


def test_the_lag_result_reads_at_80_columns_verdict_first(tmp_path):
    result = analyze_file(_ramp_csv(tmp_path / "a.csv", 0.078, (10.0, 20.0))).result
    text = _render(result, 80)
    lines = text.splitlines()
    assert "…" not in text and all(len(line) <= 80 for line in lines)
    assert _verdict_lag(lines[0]) == pytest.approx(78.0, abs=0.5)
    assert "(95 % CI " in lines[0] and " to " in lines[0] and "constant across speeds" in lines[0]
    assert "±" not in text  # one convention: the interval by its bounds, the standard error by its name
    assert "standard error" in text
    for header in ("pass", "dir", "deg/s", "frames", "Δ", "deg", "L", "ms", "mid L", "over"):
        assert header in text, header
    assert "gΔ mean" not in text  # the guard-view columns are --wide only
    wide = _render(result, 200, wide=True)
    assert "…" not in wide and "gΔ mean" in wide and "gΔ peak" in wide and "g L" in wide


def test_a_single_speed_does_not_claim_that_l_is_constant(tmp_path):
    result = analyze_file(_ramp_csv(tmp_path / "one.csv", 0.078, (20.0,))).result
    text = _render(result, 80)
    assert "…" not in text
    first = text.splitlines()[0]
    assert _verdict_lag(first) == pytest.approx(78.0, abs=0.5) and "constancy needs two" in first
    assert "constant across speeds" not in first
    assert "needs two speeds or more" in text
    assert "L is constant across speeds" not in text


def test_the_default_ramp_is_short_and_has_two_speeds():
    s = RampSettings()
    assert len(set(s.speeds_deg_s)) >= 2
    prof = ramp_profile(
        0.0, s.sweep_deg, s.speeds_deg_s, dt=s.cmd_period_s, ramp_s=s.ramp_s, settle_s=s.settle_s
    )
    assert len(prof) * s.cmd_period_s <= 5.0
    # every cruise outlasts a 200 ms lag plus its corner transient
    for v in s.speeds_deg_s:
        assert abs(s.sweep_deg) / v - s.ramp_s >= 0.35
    check_settings(s)


def test_a_sweep_too_short_for_any_cruise_is_refused_before_anything_moves(tmp_path):
    res = runner.invoke(app, ["lag", "--speeds", "15,30", "--sweep", "1", "--out", str(tmp_path)])
    assert res.exit_code == 2, res.stderr
    assert "L not measurable" in res.stderr and "--sweep 9 " in res.stderr
    assert "SIMULATED" not in res.stderr and not list(tmp_path.glob("*.csv"))  # nothing was opened
    res = runner.invoke(app, ["lag", "--speeds", "15,30", "--sweep", "-1", "--out", str(tmp_path)])
    assert res.exit_code == 2 and "--sweep -9 " in res.stderr


def test_a_run_that_measured_no_lag_exits_1(tmp_path):
    # 2 deg at 15 deg/s leaves a cruise of a few ticks: the run goes ahead, but it is shorter than the lag
    args = [
        "lag",
        "--robot",
        "sim:fr3?clock=sim",
        "--speeds",
        "15,30",
        "--sweep",
        "2",
        "--out",
        str(tmp_path),
    ]
    res = runner.invoke(app, args)
    assert res.exit_code == 1, res.stderr
    assert res.stdout.splitlines()[0].startswith("L not measurable")
    assert "error: L not measurable" in res.stderr
    res = runner.invoke(app, [*args, "--json"])
    assert res.exit_code == 1 and json.loads(res.stdout)["analysis"]["result"]["fit"] is None


def test_the_fit_names_its_interval_and_standard_error_in_the_json(tmp_path):
    result = analyze_file(_ramp_csv(tmp_path / "a.csv", 0.078, (10.0, 20.0))).result
    fit = result.to_dict()["fit"]
    assert {"stderr_ms", "ci95_low_ms", "ci95_high_ms"} <= set(fit) and "se_ms" not in fit
    assert fit["ci95_low_ms"] < fit["lag_ms"] < fit["ci95_high_ms"]
    assert {"lag_stderr_ms", "tau_stderr_ms", "offset_stderr_deg"} <= set(result.to_dict()["dynamics"])


def test_an_interrupted_run_says_so_first_and_tunes_nothing(tmp_path):
    path = _ramp_csv(tmp_path / "cut.csv", 0.078, (10.0, 20.0))
    lines = path.read_text().splitlines()
    end = next(i for i, line in enumerate(lines) if line.startswith("# end"))
    # the run stopped by Ctrl-C half way: the file ends there, with the end line of an interruption
    body = [i for i, line in enumerate(lines) if not line.startswith("#")]
    keep = lines[: body[len(body) // 2]]
    keep.append(lines[end].replace("complete", "interrupted: Ctrl-C"))
    path.write_text("\n".join(keep) + "\n")
    fa = analyze_file(path)
    assert not fa.meta.complete
    assert fa.result.fit is not None and fa.result.tuning is None
    assert any("no guard tuning" in w for w in fa.result.warnings)
    out = Console(width=80, record=True, emoji=False)
    render_lag(
        fa.result, title="lag", out=out, ended_early="RUN ENDED EARLY (Ctrl-C): 2 of 4 passes measured"
    )
    text = out.export_text()
    assert text.startswith("RUN ENDED EARLY") and "guard tuning" not in text
