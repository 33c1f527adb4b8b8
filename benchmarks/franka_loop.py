"""servotool's 1 kHz loop on a Franka, next to a bare pylibfranka loop, against the simulator, in one run.

Both loops talk to the same simulated robot (sim:franka-fr3, pylibfranka unchanged, real time):

* servotool: `run_step` on J6, steps of `--step-deg` through the jerk-limited generator with the
  deviation guard and the CSV, for `--seconds` (the real stream code path: what `servotool step` runs);
* bare: pylibfranka's readOnce / writeOnce with the robot's own echo q_d sent back, nothing else, for
  the same time.

Per loop it prints the missed cycles (gaps in the robot's own clock between two states the loop answered),
the robot's last control_command_success_rate, and the compute time of each cycle: from the moment readOnce
returned a state to the next readOnce call, less the time writeOnce itself took (what the loop spends
between two robot cycles: for servotool the generator, the guard, the CSV row, the state bookkeeping).
Then the ratio servotool / bare, and the resident memory (RSS) of the process sampled once a second in
each loop: start (after its first second) and end, to show it flat. Usage:

    python benchmarks/franka_loop.py [--seconds 60] [--step-deg 2] [--hold-s 1.0] [--lockstep] [--json]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

try:
    import pylibfranka as pf
except ImportError:  # pragma: no cover - the benchmark needs the bindings
    sys.exit("pylibfranka is not installed: pip install 'servotool[franka]'")

CYCLE_S = 0.001


SIM_PRIORITY = 60  # the simulator above both loops (50): the robot side must not be what loses cycles


def raise_simulators(priority: int = SIM_PRIORITY) -> str:
    """Every thread of this process's simulator children under SCHED_FIFO `priority`, when permitted."""
    done, refused = 0, ""
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
            cmdline = (stat.parent / "cmdline").read_bytes()
        except OSError:
            continue
        if int(fields[1]) != os.getpid() or b"servotool.devices.franka.sim" not in cmdline:
            continue
        for task in (stat.parent / "task").iterdir():
            try:
                os.sched_setscheduler(int(task.name), os.SCHED_FIFO, os.sched_param(priority))
                done += 1
            except OSError as exc:
                refused = exc.strerror or str(exc)
    return f"SCHED_FIFO {priority} on {done} simulator threads" if done else f"not raised ({refused})"


def rss_mb() -> float:
    """The process's resident set size now, MB (Linux /proc; 0 where it cannot be read)."""
    try:
        with open("/proc/self/statm") as fh:
            return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20
    except (OSError, ValueError, IndexError):
        return 0.0


class Timing:
    """What one loop did per cycle: the robot's time of each state, the compute between cycles, RSS. The
    arrays are allocated and touched up front, so the measurement itself adds nothing to the RSS it
    samples (cycles beyond `capacity` are counted, not kept)."""

    def __init__(self, capacity: int) -> None:
        self.robot_t = np.full(capacity, np.nan)
        self.compute_s = np.full(capacity, np.nan)
        self.n_t = self.n_c = 0
        self.rss: list[tuple[float, float]] = [(0.0, 0.0)] * 1000  # (s since the first state, MB)
        self.n_rss = 0
        self.success_rate = math.nan
        self._returned: float | None = None  # when the last readOnce returned
        self._write_s = 0.0  # writeOnce's own time since then
        self._t0: float | None = None

    def read_called(self) -> None:
        now = time.perf_counter()
        if self._returned is not None and self.n_c < len(self.compute_s):
            self.compute_s[self.n_c] = now - self._returned - self._write_s
            self.n_c += 1

    def read_returned(self, state: Any) -> None:
        now = time.perf_counter()
        self._returned, self._write_s = now, 0.0
        if self.n_t < len(self.robot_t):
            self.robot_t[self.n_t] = state.time.to_sec()
            self.n_t += 1
        self.success_rate = float(state.control_command_success_rate)
        if self._t0 is None:
            self._t0 = now
        if self.n_t % 1000 == 0 and self.n_rss < len(self.rss):
            self.rss[self.n_rss] = (now - self._t0, rss_mb())
            self.n_rss += 1

    def wrote(self, seconds: float) -> None:
        self._write_s += seconds

    def summary(self) -> dict[str, Any]:
        t = self.robot_t[: self.n_t]
        gaps = np.round(np.diff(t) / CYCLE_S).astype(int) if len(t) > 1 else np.zeros(0, int)
        c = self.compute_s[: self.n_c] * 1e6
        p50, p99 = np.percentile(c, [50, 99]) if len(c) else (math.nan, math.nan)
        after_first = [mb for s, mb in self.rss[: self.n_rss] if s >= 1.0]
        return {
            "cycles": len(t),
            "missed": int(np.sum(np.maximum(gaps - 1, 0))),
            "success_rate": self.success_rate,
            "compute_us": {"p50": float(p50), "p99": float(p99), "max": float(c.max()) if len(c) else 0},
            "rss_mb": {
                "start": after_first[0] if after_first else math.nan,
                "end": after_first[-1] if after_first else math.nan,
            },
        }


def capacity(seconds: float) -> int:
    """Cycles a loop of `seconds` may take, its warm-up, settling and finish included."""
    return int(seconds / CYCLE_S * 1.2) + 20_000


class TimedControl:
    """pylibfranka's active control, timed: readOnce and writeOnce as the loop calls them."""

    def __init__(self, control: Any, timing: Timing) -> None:
        self._control, self._timing = control, timing

    def readOnce(self) -> Any:
        self._timing.read_called()
        state, period = self._control.readOnce()
        self._timing.read_returned(state)
        return state, period

    def writeOnce(self, command: Any) -> None:
        start = time.perf_counter()
        self._control.writeOnce(command)
        self._timing.wrote(time.perf_counter() - start)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._control, name)


class TimedRobot:
    """pylibfranka's Robot whose joint position control is a TimedControl (the rest passes through)."""

    timing: Timing | None = None

    def __init__(self, host: str, config: Any) -> None:
        self._robot = _REAL_ROBOT(host, config)

    def start_joint_position_control(self, mode: Any) -> Any:
        control = self._robot.start_joint_position_control(mode)
        return control if TimedRobot.timing is None else TimedControl(control, TimedRobot.timing)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._robot, name)


_REAL_ROBOT = pf.Robot


def servotool_loop(url: str, seconds: float, step_deg: float, hold_s: float) -> dict[str, Any]:
    """`servotool step` on J6 for about `seconds`: generator, guard and CSV, timed at the bindings."""
    from servotool.clock import FakeClock, MonotonicClock
    from servotool.devices.registry import ARM, open_arm, url_facts
    from servotool.runs.arm.settings import StepOptions
    from servotool.runs.arm.step import run_step

    timing = Timing(capacity(seconds))
    pf.Robot = TimedRobot  # the client opens its robot through the module: it gets the timed one
    TimedRobot.timing = timing
    lockstep = url.endswith("clock=sim")
    clock: Any = FakeClock() if lockstep else MonotonicClock()
    steps = max(4, 4 * math.ceil(seconds / hold_s / 4))
    # as `servotool step --joint 5 --size S --steps N --hold-ms H --shaper otg` builds them: the family's
    # period and bounds, the jerk-limited generator
    options = StepOptions(joint=5, size=step_deg, steps=steps, hold_ms=hold_s * 1e3, shaper="otg")
    settings = options.for_device(url_facts(url, ARM).motion).run_settings()
    try:
        opened = open_arm(url, clock=clock) if lockstep else open_arm(url, now=clock.now)
        with tempfile.TemporaryDirectory() as tmp, opened as arm:
            sim = raise_simulators()
            run = run_step(arm, settings, clock=clock, out_dir=Path(tmp), command="bench franka_loop")
    finally:
        pf.Robot, TimedRobot.timing = _REAL_ROBOT, None
    out = timing.summary()
    out["status"] = str(run.outcome.status)
    out["reason"] = run.outcome.reason
    out["scheduling"] = f"loop: as servotool step asks (SCHED_FIFO 50 where permitted); {sim}"
    return out


def bare_loop(host: str, seconds: float) -> dict[str, Any]:
    """pylibfranka alone: each state's q_d written back, for `seconds`, then a finish on the same pose."""
    from servotool.runs.arm.realtime import realtime

    timing = Timing(capacity(seconds))
    sim = raise_simulators()
    robot = _REAL_ROBOT(host, pf.RealtimeConfig.kIgnore)
    status, reason = "complete", None
    with realtime(True) as granted:  # what servotool's run asks for its loop, the same here
        control = TimedControl(robot.start_joint_position_control(pf.ControllerMode.JointImpedance), timing)
        n = int(round(seconds / CYCLE_S))
        try:
            for k in range(n):
                state, _ = control.readOnce()
                command = pf.JointPositions(list(state.q_d))
                command.motion_finished = k == n - 1
                control.writeOnce(command)
        except pf.ControlException as exc:  # the robot's refusal (a reflex): the figures so far stand
            status, reason = "reflex", str(exc)
    del control, robot
    out = timing.summary()
    out.update(status=status, reason=reason, scheduling=f"loop: {granted}; {sim}")
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--seconds", type=float, default=60.0, help="seconds of each loop (default 60)")
    ap.add_argument("--step-deg", type=float, default=2.0, help="servotool's step size on J6 (deg)")
    ap.add_argument("--hold-s", type=float, default=1.0, help="servotool's hold at each level (s)")
    ap.add_argument(
        "--lockstep",
        action="store_true",
        help="the simulator waits for every answer (clock=sim): on a loaded host no cycle is lost and no "
        "loop ends early; compute and memory are measured as in real time, missed cycles are 0 by design",
    )
    ap.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = ap.parse_args()
    from servotool.devices.franka.sim import spawn, stop

    # the bare loop's robot: its own simulator, dialled directly
    proc, host = spawn("franka-fr3", lockstep=args.lockstep)
    try:
        bare = bare_loop(host, args.seconds)
    finally:
        stop(proc)
    url = "sim:franka-fr3?clock=sim" if args.lockstep else "sim:franka-fr3"
    ours = servotool_loop(url, args.seconds, args.step_deg, args.hold_s)
    report(ours, bare, args)


def report(ours: dict[str, Any], bare: dict[str, Any], args: argparse.Namespace) -> None:
    ratio = {k: ours["compute_us"][k] / bare["compute_us"][k] for k in ("p50", "p99", "max")}
    if args.json:
        print(json.dumps({"servotool": ours, "bare": bare, "ratio": ratio}, indent=2))
        return
    pace = "in lock-step (clock=sim)" if args.lockstep else "at 1 kHz in real time"
    print(f"{args.seconds:g} s per loop against sim:franka-fr3 {pace} (load {os.getloadavg()[0]:.1f})")
    head = f"{'loop':<30} {'cycles':>7} {'missed':>7} {'rate':>6} {'p50 us':>8} {'p99 us':>8} {'max us':>8}"
    print(head + f" {'RSS MB start':>13} {'end':>6}")
    for name, r in (("servotool (otg, guard, CSV)", ours), ("bare pylibfranka echo", bare)):
        c, m = r["compute_us"], r["rss_mb"]
        print(
            f"{name:<30} {r['cycles']:7d} {r['missed']:7d} {r['success_rate']:6.3f} {c['p50']:8.1f} "
            f"{c['p99']:8.1f} {c['max']:8.1f} {m['start']:13.1f} {m['end']:6.1f}"
        )
    p50, p99, top = ratio["p50"], ratio["p99"], ratio["max"]
    print(f"ratio servotool / bare: p50 {p50:.1f}x, p99 {p99:.1f}x, max {top:.1f}x")
    for name, r in (("servotool", ours), ("bare", bare)):
        print(f"{name}: {r['scheduling']}")
        if r.get("reason"):
            print(f"{name}'s loop ended early: {r['status']} ({r['reason']})")
    print(
        "missed = gaps in the robot's clock between answered states; compute = readOnce return to the next "
        "readOnce call, less writeOnce"
    )


if __name__ == "__main__":
    main()
