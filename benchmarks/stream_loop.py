"""Timing of the streaming loop servotool uses, next to a plain sleep(period) loop, in one run.

Streams N ticks at a fixed period to an arm that answers instantly (so only the loop is measured: the
absolute deadlines, the sleep-then-spin wait, building and writing the CSV rows), then the same number of
ticks with `time.sleep(period)` in a loop. Per loop it prints the period error (actual send time minus the
ideal time start + k * period) p50, p99 and max, the jitter of consecutive intervals, and the drift (how far
the last tick is from its ideal time).

Then memory over a long run: the same loop on a FakeClock (no waiting: `--memory-ticks` ticks take seconds,
not hours), one state frame per tick, rows written to a CSV on disk, with the process RSS sampled as it
goes; the growth between 10 % of the ticks and the end is extrapolated to one hour at the command period.
The anchor is a plain loop on the same clock that keeps every tick's send time in a Python list (what a
loop with a per-tick record does). Usage:

    python benchmarks/stream_loop.py [--ticks 3000] [--period-ms 10] [--no-realtime] [--memory-ticks 200000]
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

import numpy as np

from servotool.clock import FakeClock, MonotonicClock
from servotool.devices.arm import StateFrame
from servotool.io.csvlog import CsvLogWriter
from servotool.runs.arm.realtime import realtime
from servotool.runs.arm.stream import Streamer, StreamPlan, TickInfo, columns, units

POSE = (0.0, -90.0, 90.0, -90.0, -90.0, 0.0)


class InstantArm:
    """Takes every setpoint at once and reports one state frame per tick: the loop's work, without a link."""

    url, model, simulated, n_joints, joint_speed_limits = "bench:instant", "bench", True, 6, (180.0,) * 6

    def __init__(self, clock: MonotonicClock) -> None:
        self.clock = clock
        self.sent: list[float] = []
        self._frames: list[StateFrame] = []

    def servo_j(self, q, cmd_period_s):
        now = self.clock.now()
        self.sent.append(now)
        self._frames.append(StateFrame(t=now, q=tuple(q)))
        return None

    def poll_states(self):
        out, self._frames = self._frames, []
        return out

    def latest_state(self):
        return StateFrame(t=self.clock.now(), q=POSE)

    def replies(self):
        return []


class NullArm:
    """Takes every setpoint and reports one state frame per tick, keeping nothing (memory is the loop's)."""

    url, model, simulated, n_joints, joint_speed_limits = "bench:null", "bench", True, 6, (180.0,) * 6

    def __init__(self, clock: FakeClock) -> None:
        self.clock = clock
        self._frame: StateFrame | None = None

    def servo_j(self, q, cmd_period_s):
        self._frame = StateFrame(t=self.clock.now(), q=tuple(q))
        return None

    def poll_states(self):
        frame, self._frame = self._frame, None
        return [frame] if frame is not None else []

    def latest_state(self):
        return StateFrame(t=self.clock.now(), q=POSE)

    def replies(self):
        return []


def rss_bytes() -> int:
    """The process's resident set size now (Linux /proc; 0 where it cannot be read)."""
    try:
        with open("/proc/self/statm") as fh:
            return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return 0


def growth_per_hour(samples: list[tuple[int, int]], period: float) -> float:
    """Bytes per hour at `period`: the least-squares slope of RSS over ticks, from 10 % of the run on."""
    ticks = np.array([k for k, _ in samples], dtype=float)
    rss = np.array([r for _, r in samples], dtype=float)
    keep = ticks >= 0.1 * ticks.max()
    slope = np.polyfit(ticks[keep], rss[keep], 1)[0] if keep.sum() >= 2 else 0.0
    return float(slope) * 3600.0 / period


def servotool_memory(ticks: int, period: float, every: int) -> list[tuple[int, int]]:
    clock = FakeClock(1000.0)
    arm = NullArm(clock)
    plan = StreamPlan(np.tile(POSE, (ticks, 1)))  # the plan is allocated before the first sample
    samples: list[tuple[int, int]] = []

    def on_tick(info: TickInfo) -> None:
        if info.k % every == 0 or info.k == info.n - 1:
            samples.append((info.k, rss_bytes()))

    with (
        tempfile.TemporaryDirectory() as tmp,
        CsvLogWriter(
            Path(tmp) / "memory.csv",
            device=arm.url,
            simulated=True,
            config={"mode": "bench"},
            units=units(6, False),
            columns=columns(6, False),
            command="bench",
        ) as writer,
    ):
        Streamer(arm, clock, writer, period_s=period, catch_sigint=False, on_tick=on_tick, tick_every=1).run(
            plan
        )
    return samples


def anchor_memory(ticks: int, period: float, every: int) -> list[tuple[int, int]]:
    clock = FakeClock(1000.0)
    sent: list[float] = []
    samples: list[tuple[int, int]] = []
    start = clock.now()
    for k in range(ticks):
        clock.sleep_until(start + k * period)
        sent.append(clock.now() - (start + k * period))
        if k % every == 0 or k == ticks - 1:
            samples.append((k, rss_bytes()))
    return samples


def servotool_loop(ticks: int, period: float, rt: bool) -> tuple[np.ndarray, str]:
    clock = MonotonicClock()
    arm = InstantArm(clock)
    plan = StreamPlan(np.tile(POSE, (ticks, 1)))
    with tempfile.TemporaryDirectory() as tmp, realtime(rt) as outcome:
        path = Path(tmp) / "bench.csv"
        with CsvLogWriter(
            path,
            device=arm.url,
            simulated=True,
            config={"mode": "bench"},
            units=units(6, False),
            columns=columns(6, False),
            command="bench",
        ) as writer:
            streamer = Streamer(arm, clock, writer, period_s=period, catch_sigint=False)
            streamer.run(plan)
            start = streamer.start_time
    # the arm stamps the moment each setpoint reaches it: the send time, as the loop sees it
    return np.array(arm.sent) - start - np.arange(ticks) * period, outcome


def sleep_loop(ticks: int, period: float) -> np.ndarray:
    sent = np.empty(ticks)
    start = time.perf_counter()
    for k in range(ticks):
        sent[k] = time.perf_counter()
        time.sleep(period)
    return sent - start - np.arange(ticks) * period


def row(name: str, err: np.ndarray, period: float) -> str:
    jitter = np.abs(np.diff(err))
    ms = 1e3
    p50, p99 = np.percentile(np.abs(err), [50, 99]) * ms
    return (
        f"{name:<34} {p50:8.3f} {p99:8.3f} {np.max(np.abs(err)) * ms:8.3f} "
        f"{np.percentile(jitter, 99) * ms:9.3f} {err[-1] * ms:10.2f}"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ticks", type=int, default=3000)
    ap.add_argument("--period-ms", type=float, default=10.0)
    ap.add_argument("--no-realtime", action="store_true", help="do not ask for SCHED_FIFO")
    ap.add_argument("--memory-ticks", type=int, default=200_000, help="ticks of the memory run (0: skip)")
    args = ap.parse_args()
    period = args.period_ms / 1e3
    print(f"{args.ticks} ticks at {args.period_ms:g} ms per loop ({args.ticks * period:.0f} s each)")
    err_rt, outcome = servotool_loop(args.ticks, period, not args.no_realtime)
    err_plain = sleep_loop(args.ticks, period)
    print(f"real-time request: {outcome}")
    print(f"{'loop':<34} {'p50 ms':>8} {'p99 ms':>8} {'max ms':>8} {'jit99 ms':>9} {'drift ms':>10}")
    print(row("servotool (deadlines, sleep+spin)", err_rt, period))
    print(row("plain sleep(period)", err_plain, period))
    print(
        "period error = |send time - (start + k * period)|; jit99 = p99 of the change between ticks; "
        "drift = error of the last tick"
    )
    if args.memory_ticks > 0:
        memory(args.memory_ticks, period)


def memory(ticks: int, period: float) -> None:
    every = max(1, ticks // 200)
    ours = growth_per_hour(servotool_memory(ticks, period, every), period)
    anchor = growth_per_hour(anchor_memory(ticks, period, every), period)
    mb = 1024 * 1024
    hour = 3600.0 / period
    print(f"\nmemory: {ticks} ticks on a FakeClock, RSS growth extrapolated to one hour ({hour:.0f} ticks)")
    print(f"{'loop':<34} {'MB/hour':>10}")
    print(f"{'servotool (bounded statistics)':<34} {ours / mb:10.2f}")
    print(f"{'plain loop, one record per tick':<34} {anchor / mb:10.2f}")
    ratio = ours / anchor if anchor > 0 else float("nan")
    print(f"ratio servotool / anchor: {ratio:.3f} (RSS is counted in pages: below one page per run is noise)")


if __name__ == "__main__":
    main()
