"""Stop drills: every way a run is told to end takes the one braked stop, run as the real command.

A simulated FR3 runs in a process of its own (tests/cli/simproc.py, which reports its state on request);
`servotool lag` and `servotool step` run as subprocesses against its ports, through a fairino:// address like
a real controller. Each drill sends a signal (Ctrl-C, SIGTERM, SIGHUP) at a seeded random instant of a phase
(the enable window, the warm-up, a step stream, a ramp stream, or twice: during the braked stop) and checks:
the exit code of the signal, the CSV's end line naming it, every commanded velocity change within a_max *
period (the stream braked, never jumped), the stream ending at rest, and the controller out of servo mode and
disabled. docs/explanation/reliability.md lists the figures.

A second group runs two commands on one controller: the second is refused with one line, the first
completes with its lag and no fault.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

from servotool.io.csvlog import read_csv

sys.path.insert(0, str(Path(__file__).parent))
from simproc import SimProcess  # noqa: E402
from warmcmd import WarmCommand  # noqa: E402

pytestmark = pytest.mark.slow

SEED = 20261130
A_MAX = 500.0
PERIOD_S = 0.01
# ~1.4 s of stream; the guard tuned from a generous lag: on a loaded machine late state frames must not end a
# drill by the guard before its signal (the guard has tests of its own)
STEP_ARGS = ["step", "--steps", "3", "--hold-ms", "300", "--lag-ms", "200", "--no-realtime"]
LAG_ARGS = ["lag", "--sweep", "10", "--speeds", "20,40", "--settle-ms", "200", "--no-realtime"]  # ~3 s
STREAM_S = {"step": 1.4, "lag": 3.0}
EXIT = {signal.SIGINT: 130, signal.SIGTERM: 143, signal.SIGHUP: 129}
REASON = {signal.SIGINT: "Ctrl-C", signal.SIGTERM: "SIGTERM", signal.SIGHUP: "SIGHUP"}
PHASE_TIMEOUT_S = 60.0


def _wait(cond: Callable[[], bool], what: str, proc: subprocess.Popen | None = None) -> None:
    deadline = time.monotonic() + PHASE_TIMEOUT_S
    while not cond():
        if proc is not None and proc.poll() is not None:
            raise AssertionError(f"the run ended (exit {proc.returncode}) before {what}")
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.005)


def _sim(seed: int) -> tuple[SimProcess, str]:
    sim = SimProcess(seed)
    return sim, sim.url


def _start(args: list[str], url: str, out: Path, env: dict[str, str]) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "servotool", *args, "--robot", url, "--out", str(out)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    e = dict(os.environ)
    e["SERVOTOOL_LOCK_DIR"] = str(tmp_path / "locks")
    e["COLUMNS"] = "200"
    return e


@dataclass
class Drill:
    command: str
    signum: int
    phase: str  # enable (the enable window), warm-up (servo mode, the held pose streamed), stream, stop
    delay_s: float


def _drills() -> list[Drill]:
    rng = random.Random(SEED)
    drills = []
    for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        drills.append(Drill("step", signum, "enable", rng.uniform(0.0, 0.3)))
        drills.append(Drill("step", signum, "warm-up", rng.uniform(0.0, 0.05)))
        drills.append(Drill("step", signum, "stream", rng.uniform(0.05, STREAM_S["step"] - 0.4)))
        drills.append(Drill("lag", signum, "stream", rng.uniform(0.05, STREAM_S["lag"] - 0.5)))
        drills.append(Drill("lag", signum, "stop", rng.uniform(0.05, STREAM_S["lag"] - 0.5)))
    return drills


def assert_braked(csv: Path, reason: str) -> dict[str, float]:
    """The CSV ends interrupted naming `reason`, has a stop row, every commanded velocity change is within
    a_max * period, and the stream ends at rest. Returns the figures of the stop."""
    text = csv.read_text().rstrip().splitlines()
    assert text[-1].startswith("# end: interrupted:") and reason in text[-1], text[-1]
    _, df = read_csv(csv)
    stops = df[df["event"] == "stop"]
    assert len(stops) == 1 and reason in str(stops["info"].iloc[0])
    cmd = df[df["event"] == "cmd"]
    q = cmd["q1"].to_numpy(dtype=float)
    v = np.diff(q) / PERIOD_S
    dv = np.abs(np.diff(v))
    bound = A_MAX * PERIOD_S
    assert dv.max() <= bound * (1 + 1e-6) + 1e-6, (dv.max(), bound)
    assert abs(v[-1]) < 1e-9  # held at rest at the end
    t_stop = float(stops["t"].iloc[0])
    before = int((cmd["t"] < t_stop).sum())
    speed = abs(float(v[before - 2])) if before >= 2 else 0.0
    return {"stop_ticks": len(cmd) - before, "peak_dv": float(dv.max()), "speed": speed}


def _run_group(drills: list[tuple[int, Drill]], base: Path, env: dict[str, str]) -> list[dict[str, object]]:
    """Drills one after the other on one simulator (its own process, started once)."""
    sim, url = _sim(SEED + drills[0][0])
    try:
        return [_run_drill(drill, index, base, env, sim, url) for index, drill in drills]
    finally:
        sim.stop()


def _run_drill(
    drill: Drill, index: int, base: Path, env: dict[str, str], sim: SimProcess, url: str
) -> dict[str, object]:
    out = base / f"drill{index}"
    args = STEP_ARGS if drill.command == "step" else LAG_ARGS
    proc = _start(args, url, out, env)
    if drill.phase == "enable":
        _wait(lambda: sim.state()["enabled"], "the robot enabled", proc)
    elif drill.phase == "warm-up":
        _wait(lambda: sim.state()["servo_active"], "servo mode", proc)
    else:
        _wait(lambda: out.is_dir() and any(out.glob("*.csv")), "the stream", proc)
    time.sleep(drill.delay_s)  # the seeded random instant within the phase
    proc.send_signal(drill.signum)
    if drill.phase == "stop":
        time.sleep(0.05)  # a second signal while braking: the stop still completes braked
        proc.send_signal(drill.signum)
    stdout, stderr = proc.communicate(timeout=60)
    snap = sim.state()
    assert "Traceback" not in stderr, stderr
    assert proc.returncode == EXIT[drill.signum], (drill, proc.returncode, stderr)
    assert not snap["servo_active"] and not snap["enabled"], drill
    files = sorted(out.glob("*.csv")) if out.is_dir() else []
    figures: dict[str, object] = {"drill": drill, "recorded": bool(files), "exit": proc.returncode}
    if drill.phase not in ("enable", "warm-up"):
        assert files, (drill, stderr)
    if files:
        try:
            figures.update(assert_braked(files[0], REASON[drill.signum]))
        except AssertionError as exc:
            raise AssertionError(f"{drill}: {exc}\n{stderr[-1500:]}") from None
    return figures


def test_every_signal_at_random_instants_ends_braked(tmp_path: Path, env: dict[str, str]) -> None:
    drills = list(enumerate(_drills()))
    groups = [[d for d in drills if d[1].signum == signum] for signum in EXIT]  # one simulator per signal
    with ThreadPoolExecutor(max_workers=len(groups)) as pool:
        results = [r for group in pool.map(lambda g: _run_group(g, tmp_path, env), groups) for r in group]
    assert len(results) == 15
    for r in results:  # the figures docs/explanation/reliability.md quotes (pytest -s shows them)
        d = r["drill"]
        assert isinstance(d, Drill)
        print(
            f"{d.command:4} {REASON[d.signum]:7} {d.phase:7} at +{d.delay_s:.2f} s: exit {r['exit']}, "
            f"recorded {r['recorded']}, speed {r.get('speed', 0):.1f} deg/s, stop ticks "
            f"{r.get('stop_ticks', '-')}, peak dv {r.get('peak_dv', 0):.3f} deg/s per tick"
        )
    # a stream interrupted mid-motion stops within a few ticks of braking, never in one jump
    assert all(r["peak_dv"] <= A_MAX * PERIOD_S * (1 + 1e-6) + 1e-6 for r in results if "peak_dv" in r)


# -- one owner per arm ---------------------------------------------------------------------------------------


def _lock_held(folder: Path) -> bool:
    return folder.is_dir() and any(p.read_text().strip() for p in folder.glob("*.lock"))


@pytest.mark.parametrize("phase", ["start", "stream"])
def test_a_second_run_on_the_same_controller_is_refused(tmp_path: Path, env: dict[str, str], phase: str):
    """The second command comes while the first holds the lock: as it starts, or mid-stream."""
    sim, url = _sim(SEED)
    second_cmd = WarmCommand(env)  # started beforehand: it acts at the phase, however slow a start-up is
    try:
        first_args = ["lag", "--sweep", "10", "--speeds", "10,20", "--settle-ms", "200", "--no-realtime"]
        first = _start(first_args, url, tmp_path / "first", env)
        _wait(lambda: _lock_held(Path(env["SERVOTOOL_LOCK_DIR"])), "the first run's lock", first)
        if phase == "stream":
            _wait(lambda: sim.state()["servo_active"], "the first run's stream", first)
        assert first.poll() is None
        second = second_cmd.run([*STEP_ARGS, "--robot", url, "--out", str(tmp_path / "b")])
        _, stderr = first.communicate(timeout=120)
        faults = sim.state()["main_code"]
    finally:
        second_cmd.close()
        sim.stop()
    assert first.returncode == 0, stderr  # the first ran to its end: it held the lock all along
    assert second.returncode == 2, second.stderr
    lines = [line for line in second.stderr.splitlines() if line.startswith("error:")]
    assert len(lines) == 1 and "in use by another servotool process" in lines[0], second.stderr
    assert not any((tmp_path / "b").glob("*.csv"))
    assert first.returncode == 0, stderr
    csv = next((tmp_path / "first").glob("*.csv"))
    assert csv.read_text().rstrip().endswith("# end: complete")
    _, df = read_csv(csv)
    assert not (df["event"] == "fault").any() and faults == 0


def test_a_run_from_another_host_is_refused_by_the_controller_state(tmp_path: Path, env: dict[str, str]):
    """No shared lock (as from another host): the controller's state says someone streams; refused before
    enabling, and the first run is not disturbed."""
    from servotool.devices.fairino.client import FairinoArm

    if not hasattr(FairinoArm, "busy_reason"):
        pytest.skip("the FAIRINO client does not read busy evidence from the state stream yet")
    sim, url = _sim(SEED + 100)
    # started beforehand (a start-up can outlast a short run on a loaded machine), with a lock dir of its own
    second_cmd = WarmCommand(dict(env, SERVOTOOL_LOCK_DIR=str(tmp_path / "other-host-locks")))
    try:
        # about 7.6 s of stream: the second command's open and busy check fit inside it on a loaded machine
        first_args = ["lag", "--sweep", "10", "--speeds", "5,10", "--settle-ms", "200", "--no-realtime"]
        first = _start(first_args, url, tmp_path / "first", env)
        _wait(lambda: sim.state()["servo_active"], "the stream", first)
        second = second_cmd.run([*STEP_ARGS, "--robot", url, "--out", str(tmp_path / "b")])
        _, stderr = first.communicate(timeout=120)
        faults = sim.state()["main_code"]
    finally:
        second_cmd.close()
        sim.stop()
    assert second.returncode == 2, second.stderr
    lines = [line for line in second.stderr.splitlines() if line.startswith("error:")]
    assert len(lines) == 1 and "busy" in lines[0], second.stderr
    assert first.returncode == 0, stderr
    csv = next((tmp_path / "first").glob("*.csv"))
    assert csv.read_text().rstrip().endswith("# end: complete")
    assert faults == 0


# -- a controller that stops answering -----------------------------------------------------------------------


def test_a_controller_frozen_mid_step_ends_lost_within_seconds(tmp_path: Path, env: dict[str, str]):
    """The simulator's process is stopped (SIGSTOP: its sockets stay open, nothing answers) while the first
    step moves, with the guard tuned from the profile's lag: the stale pose is no guard trip, the run ends
    with exit 3 and the lost-link reason, and the stop it still tries (servo end, disable; each unanswered)
    holds the exit about a second, not the 2 x 5 s of the command timeout."""
    # a 300 ms watchdog: a loaded machine must not starve the live stream into a loss before the freeze
    sim = SimProcess(SEED + 200, silence_ms=300)
    out = tmp_path / "frozen"
    try:
        proc = _start(["step", "--steps", "2", "--hold-ms", "600", "--no-realtime"], sim.url, out, env)
        _wait(lambda: 1.0 < sim.state()["last_target"][0] < 9.0, "the first step under way", proc)
        os.kill(sim.proc.pid, signal.SIGSTOP)
        frozen_at = time.monotonic()
        try:
            _, stderr = proc.communicate(timeout=60)
            took = time.monotonic() - frozen_at
        finally:
            os.kill(sim.proc.pid, signal.SIGCONT)
    finally:
        sim.stop()
    assert proc.returncode == 3, stderr
    assert "Traceback" not in stderr, stderr
    end = next(out.glob("*.csv")).read_text().rstrip().splitlines()[-1]
    _, df = read_csv(next(out.glob("*.csv")))
    assert not (df["event"] == "guard").any(), end
    assert end.startswith("# end: interrupted: connection lost:") and "no state frame" in end, end
    assert "the stop could not be confirmed: ServoMoveEnd got no answer within 0.5 s" in end, end
    verdict = " ".join(stderr.split())  # however rich wrapped it
    assert "run ended early: connection lost:" in verdict, stderr
    assert "the stop could not be confirmed" in verdict, stderr
    # 0.3 s to find the loss, two unanswered calls of 0.5 s, the verdict: well inside 5 s (before: over 10 s)
    print(f"frozen controller: exit {proc.returncode} {took:.2f} s after the freeze")
    assert took < 5.0, took
