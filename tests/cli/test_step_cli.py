"""`servotool step` end to end: shaped by default, the raw runaway on the simulator, the raw-step gate."""

from __future__ import annotations

import json
import math
import subprocess
import sys
import time

import pytest
from rich.console import Console
from typer.testing import CliRunner

from servotool.analysis.step import StepMetrics, StepResult
from servotool.cli.app import app
from servotool.cli.render import render_step

runner = CliRunner()
# the embedded simulator in simulated time (lock-step): the same run whatever the load on the machine
LOCKSTEP = ["--robot", "sim:fr3?clock=sim"]


def test_shaped_step_json(tmp_path):
    res = runner.invoke(
        app, ["step", *LOCKSTEP, "--size", "10", "--steps", "2", "--out", str(tmp_path), "--json"]
    )
    assert res.exit_code == 0, res.stderr
    out = json.loads(res.stdout)
    result = out["analysis"]["result"]
    assert result["shaped"] and result["runaways"] == 0 and result["total_rejects"] == 0
    assert all(250 < s["arrive_ms"] < 360 for s in result["steps"])
    assert out["guard"]["margin_deg"] > 0


@pytest.mark.parametrize(
    "command", [["step"], ["step", "--shaper", "otg"], ["lag", "--sweep", "30", "--speeds", "20"]]
)
def test_a_long_command_period_never_makes_a_shaped_step_or_a_ramp_run_away(tmp_path, command):
    """At --cmd-ms 100 the default a_max changes the per-command step by 5 deg, inside the runaway band
    (the controller ran away 102 deg on a shaped 10 deg step): refused before the device opens. With the
    a_max the period allows, the same run is clean (the ramp's sweep leaves a cruise after its 1 s ramps:
    one without any is refused up front)."""
    res = runner.invoke(app, [*command, *LOCKSTEP, "--cmd-ms", "100", "--out", str(tmp_path)])
    assert res.exit_code == 2, res.stdout + res.stderr
    assert "error: refused: --a-max 500 at --cmd-ms 100" in res.stderr
    assert "lower --a-max to 20 or --cmd-ms to 20\n" in res.stderr
    assert not list(tmp_path.glob("*.csv")) and "Traceback" not in res.stderr
    extra = ["--steps", "2", "--hold-ms", "2000"] if command[0] == "step" else ["--ramp-ms", "1000"]
    res = runner.invoke(
        app,
        [*command, *LOCKSTEP, "--cmd-ms", "100", "--a-max", "20", *extra, "--out", str(tmp_path), "--json"],
    )
    assert res.exit_code == 0, res.stdout + res.stderr
    assert json.loads(res.stdout)["run"]["status"] == "complete"


@pytest.mark.parametrize("extra", ["", "&enable_ms=0"])
def test_a_slow_state_stream_tunes_the_guard_for_its_frame_age(tmp_path, extra):
    """A state stream at 50 ms (state_ms=50) left fewer than three frames to read after the short warm-up:
    the guard was tuned with a frame age of nan, a margin of 1.6 deg instead of one allowing a 50 ms old
    frame, and tripped on a healthy shaped step (exit 1, 'no arrival')."""
    robot = f"sim:fr3?clock=sim&state_ms=50&silence_ms=1000{extra}"
    res = runner.invoke(app, ["step", "--robot", robot, "--steps", "2", "--out", str(tmp_path), "--json"])
    assert res.exit_code == 0, res.stdout + res.stderr
    out = json.loads(res.stdout)
    assert out["guard"]["frame_age_ms"] == pytest.approx(50.0, abs=1.0)
    assert out["run"]["status"] == "complete" and out["analysis"]["result"]["runaways"] == 0


def test_raw_step_runs_away_exits_non_zero_and_says_so(tmp_path):
    res = runner.invoke(
        app,
        [
            "step",
            *LOCKSTEP,
            "--raw",
            "--size",
            "2.5",
            "--steps",
            "1",
            "--rpc",
            "--out",
            str(tmp_path),
            "--plot",
        ],
    )
    assert res.exit_code == 1
    assert "runaway" in res.stdout
    assert "run ended early" in res.stderr and "main 1 sub 32" in res.stderr
    assert list(tmp_path.glob("step_*.png"))
    analyzed = runner.invoke(app, ["analyze", str(tmp_path), "--json"])
    entry = json.loads(analyzed.stdout)["files"][0]
    assert not entry["complete"] and entry["result"]["steps"][0]["verdict"] == "runaway"


def test_a_plot_that_cannot_be_written_after_a_run_keeps_the_runs_exit(tmp_path, monkeypatch):
    import errno

    import servotool.cli.live as live

    def full_disk(fa, target):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(live, "draw_plot", full_disk)
    res = runner.invoke(
        app,
        [
            "step",
            *LOCKSTEP,
            "--size",
            "2",
            "--steps",
            "1",
            "--hold-ms",
            "300",
            "--out",
            str(tmp_path),
            "--plot",
            "--json",
        ],
    )
    assert res.exit_code == 0 and res.exception is None, res.output
    assert "cannot write the plot (No space left on device)" in res.stderr
    assert json.loads(res.stdout)["plot"] is None
    assert next(tmp_path.glob("step_*.csv")).read_text().endswith("# end: complete\n")


@pytest.mark.parametrize("signum, code, name", [(2, 130, "Ctrl-C"), (15, 143, "SIGTERM"), (1, 129, "SIGHUP")])
@pytest.mark.parametrize("instant", ["stream returns", "csv closes"])
def test_a_signal_as_the_stream_ends_is_named_on_the_end_line(
    tmp_path, monkeypatch, signum, code, name, instant
):
    # the signal is sent from inside the run at the named instant: no race with wall time
    import os

    import servotool.runs.arm.run as arm_run

    seams = {"stream returns": (arm_run.Streamer, "run"), "csv closes": (arm_run.ArmRun, "_stop_stream")}
    seam = seams[instant]
    original = getattr(*seam)

    def then_signal(*args, **kwargs):
        result = original(*args, **kwargs)
        os.kill(os.getpid(), signum)
        return result

    monkeypatch.setattr(*seam, then_signal)
    res = runner.invoke(
        app, ["step", *LOCKSTEP, "--size", "2", "--steps", "1", "--hold-ms", "300", "--out", str(tmp_path)]
    )
    assert res.exit_code == code, res.output
    assert "Traceback" not in res.output and name in res.stderr
    assert next(tmp_path.glob("step_*.csv")).read_text().splitlines()[-1] == f"# end: interrupted: {name}"


@pytest.mark.parametrize("signum, code, name", [(2, 130, "Ctrl-C"), (15, 143, "SIGTERM"), (1, 129, "SIGHUP")])
def test_a_signal_during_the_stop_after_a_lost_link_is_named_with_the_loss(
    tmp_path, monkeypatch, signum, code, name
):
    # the state stream goes silent mid-step (a lost link), and the signal comes while servo mode is being
    # ended, before the end line: the exit code is the signal's, so the end line and the verdict name it too
    import os

    import servotool.runs.arm.run as arm_run
    from servotool.runs.arm.stream import Streamer

    tick, end_servo = Streamer._tick, arm_run.end_servo

    def silent_mid_step(self, plan, k, *args):
        if k == 65:
            self.arm.sim.hold_stream(True)
        return tick(self, plan, k, *args)

    def then_signal(arm, keep):
        os.kill(os.getpid(), signum)
        return end_servo(arm, keep)

    monkeypatch.setattr(Streamer, "_tick", silent_mid_step)
    monkeypatch.setattr(arm_run, "end_servo", then_signal)
    res = runner.invoke(app, ["step", *LOCKSTEP, "--steps", "2", "--hold-ms", "400", "--out", str(tmp_path)])
    assert res.exit_code == code, res.output
    assert "Traceback" not in res.output
    end = next(tmp_path.glob("step_*.csv")).read_text().splitlines()[-1]
    assert end.startswith("# end: interrupted: connection lost:") and "no state frame" in end, end
    assert end.endswith(f"; {name} came as the run ended"), end
    assert f"{name} came as the run ended" in " ".join(res.stderr.split())


def test_a_recording_name_taken_meanwhile_or_a_full_disk_is_never_a_traceback(tmp_path, monkeypatch):
    import errno

    import servotool.runs.arm.stream as stream

    taken = tmp_path / "taken.csv"
    taken.write_text("another process's file\n")
    names = iter([taken])  # the first name is taken between the check and the open, as by a second process
    original = stream.unique_path
    monkeypatch.setattr(
        stream, "unique_path", lambda folder, name: next(names, None) or original(folder, name)
    )
    res = runner.invoke(
        app, ["step", *LOCKSTEP, "--size", "2", "--steps", "1", "--hold-ms", "300", "--out", str(tmp_path)]
    )
    assert res.exit_code == 0, res.output
    assert taken.read_text() == "another process's file\n" and len(list(tmp_path.glob("step_*.csv"))) == 1

    def full_disk(*args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(stream, "CsvLogWriter", full_disk)
    res = runner.invoke(app, ["step", *LOCKSTEP, "--size", "2", "--steps", "1", "--out", str(tmp_path)])
    assert res.exception is None or isinstance(res.exception, SystemExit), res.output
    assert res.exit_code == 2 and "No space left on device" in res.stderr and "Traceback" not in res.output


@pytest.fixture(scope="module")
def real_looking_arm():
    """A simulator in its own process, reached through a fairino:// address: not 'simulated' to the client.
    Real sockets on the real clock: the real path, end to end. One per module (its start-up is the cost)."""
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "servotool",
            "sim",
            "fairino",
            "--json",
            "--rpc-port",
            "0",
            "--cnde-port",
            "0",
            "--udp-port",
            "0",
            "--profile",
            "simmachine",
            "--duration",
            "60",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    text, deadline = "", time.monotonic() + 20
    info = None
    while info is None and time.monotonic() < deadline:
        text += proc.stdout.readline()
        try:
            info = json.loads(text)
        except json.JSONDecodeError:
            continue
    assert info is not None, text
    yield (
        f"fairino://127.0.0.1?rpc_port={info['rpc_port']}&cnde_port={info['cnde_port']}"
        f"&udp_port={info['udp_port']}&silence_ms=2000"  # link watchdog slack for a loaded host
    )
    proc.terminate()
    proc.wait(timeout=10)


@pytest.fixture
def terminal(monkeypatch):
    """A pseudo-terminal standing in for /dev/tty: `type(text)` puts keystrokes on it."""
    import os

    import servotool.cli.confirm as confirm

    master, slave = os.openpty()
    monkeypatch.setattr(confirm, "TTY", os.ttyname(slave))

    def type_(text: str) -> None:
        os.write(master, text.encode())

    yield type_
    os.close(master)
    os.close(slave)


def test_raw_steps_on_a_real_address_need_test_arm_and_the_typed_phrase(tmp_path, real_looking_arm, terminal):
    base = [
        "step",
        "--robot",
        real_looking_arm,
        "--raw",
        "--size",
        "0.5",
        "--steps",
        "1",
        "--out",
        str(tmp_path),
    ]
    res = runner.invoke(app, base)
    assert res.exit_code == 2 and "--test-arm" in res.stderr
    terminal("yes\n")
    res = runner.invoke(app, [*base, "--test-arm"])
    assert res.exit_code == 2 and "confirmation" in res.stderr
    # the phrase from a pipe is never an answer: only the terminal counts
    terminal("no\n")
    res = runner.invoke(app, [*base, "--test-arm"], input="RAW 0.5 J1\n")
    assert res.exit_code == 2 and "confirmation" in res.stderr
    assert not list(tmp_path.glob("*.csv"))  # nothing was streamed
    terminal("RAW 0.5 J1\n")
    res = runner.invoke(app, [*base, "--test-arm", "--json"])
    assert res.exit_code == 0, res.stderr
    out = json.loads(res.stdout)
    assert out["run"]["status"] == "complete" and not out["analysis"]["simulated"]


def test_raw_step_confirmation_from_a_pipe_without_a_terminal_is_refused(tmp_path, real_looking_arm):
    """`echo "RAW 10 J1" | servotool step --raw --test-arm ...` with no terminal: refused, nothing sent."""
    res = subprocess.run(
        [
            sys.executable,
            "-m",
            "servotool",
            "step",
            "--robot",
            real_looking_arm,
            "--raw",
            "--test-arm",
            "--size",
            "0.5",
            "--steps",
            "1",
            "--out",
            str(tmp_path),
        ],
        input="RAW 0.5 J1\n",
        capture_output=True,
        text=True,
        start_new_session=True,
        timeout=120,
    )
    assert res.returncode == 2, res.stderr
    assert "typed on a terminal" in res.stderr and "Traceback" not in res.stderr
    assert not list(tmp_path.glob("*.csv"))


def _metrics(index: int, size: float, **kw) -> StepMetrics:
    base = dict(
        index=index,
        t_step_s=0.5 + index,
        size_deg=size,
        from_deg=0.0,
        target_deg=size,
        pre_deg=0.0,
        first_move_ms=81.0,
        arrive_ms=288.0,
        peak_delta_deg=3.456,
        guard_lag_ms=210.0,
        travel_deg=abs(size),
        travel_ratio=1.0,
        overshoot_deg=0.0,
        peak_speed_deg_s=70.0,
        rejects=0,
        faults=0,
        fault_codes="",
        fault_ms=math.nan,
        guard_trip_ms=math.nan,
        guard_after_fault_ms=math.nan,
        guard_after_overshoot_ms=math.nan,
        crossed_ms=math.nan,
        guard_after_crossing_ms=math.nan,
        runaway=False,
        verdict="ok",
        window_s=0.6,
    )
    base.update(kw)
    return StepMetrics(**base)


def test_the_step_result_reads_at_80_columns_verdict_first():
    runaway = _metrics(
        1,
        -12.5,
        arrive_ms=math.nan,
        travel_deg=351.25,
        travel_ratio=28.1,
        peak_speed_deg_s=180.0,
        rejects=47,
        faults=1,
        fault_codes="1/32",
        fault_ms=8.0,
        guard_trip_ms=121.0,
        runaway=True,
        verdict="runaway",
        guard_after_fault_ms=113.0,
        guard_after_overshoot_ms=25.0,
        guard_after_crossing_ms=9.0,
    )
    result = StepResult(
        joint=0,
        shaped=False,
        cmd_period_s=0.01,
        noise_std_deg=0.0022,
        threshold_deg=0.013,
        steps=[_metrics(0, 12.5), runaway],
        runaways=1,
        total_rejects=47,
        total_faults=1,
        guard_trips=[{"t_s": 1.621, "reason": "q1 diverged"}],
    )
    out = Console(width=80, record=True, emoji=False)
    render_step(result, title="steps, J1 (sim:fr3)", out=out)
    text = out.export_text()
    lines = text.splitlines()
    assert "…" not in text and all(len(line) <= 80 for line in lines)
    assert lines[0] == "2 raw steps on J1: 1 runaway(s), 1 fault latch(es)"
    words = ("step", "size", "first", "arrive", "travel", "peak", "deg/s", "faults", "verdict", "1 (1/32)")
    for word in (*words, "runaway", "351.25", "-12.5"):
        assert word in text, word
    assert "guard lag" not in text  # --wide only
    out = Console(width=200, record=True, emoji=False)
    render_step(result, wide=True, out=out)
    wide = out.export_text()
    assert "…" not in wide and "guard" in wide and "rejects" in wide and "47" in wide
