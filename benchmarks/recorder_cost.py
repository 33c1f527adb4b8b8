"""What the flight recorder costs a control loop, on one machine, in one run.

1. Per frame, for a 14-axis bus (10 leg axes swept every frame, 4 neck axes on the context timer, the
   hardware-error answers of all 14 about once a second): plan + on_sweep + on_status when due +
   after_goal_write, the whole recorder side of one frame. Goal: < 50 us. Anchor: a bare
   collections.deque(maxlen=240).append of the same sweep object (the least any ring can cost).
   The one frame that closes a capture window also assembles the capture (printed once).
2. Publishing one full capture (240 fast sweeps, 36 context entries): JSONL to a temporary file, flush, fsync,
   atomic rename, directory fsync. Goal: < 30 ms. Anchor: the same bytes written to a file with no fsync and
   no rename (what durability adds on top of plain writing).

Sweeps are built once, outside the timed part (a device client builds them anyway). Prints median, p99 and max
with the ratio to the anchor; the figures depend on the machine and its load, and the fsync on the disk behind
--dest (default: a temporary folder next to the XDG state dir's captures, removed afterwards). Run:

    python benchmarks/recorder_cost.py [--frames 30000] [--publishes 30] [--dest DIR] [--json]
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import tempfile
import time
from collections import deque
from pathlib import Path

from servotool.io.captures import default_dest, encode_line, publish_capture
from servotool.recorder import AxisSample, FlightRecorder, RecorderSettings, Sweep

LEGS = (10, 11, 12, 13, 14, 20, 21, 22, 23, 24)
NECK = (30, 31, 32, 33)
PERIOD = 1 / 30


def _sweeps(n: int) -> tuple[list[Sweep], list[Sweep]]:
    legs = [
        Sweep(
            k * PERIOD,
            "legs",
            {a: AxisSample(2048.0 + k % 7, 2050.0, 100.0 + a, 0.5, 5.0, 31.0) for a in LEGS},
        )
        for k in range(n)
    ]
    neck = [
        Sweep(k * PERIOD, "neck", {a: AxisSample(2048.0, 2048.0, 30.0, 0.0, 5.0, 30.0) for a in NECK})
        for k in range(n)
    ]
    return legs, neck


def _stats(ns: list[int]) -> dict[str, float]:
    us = sorted(x / 1000.0 for x in ns)
    return {"median_us": statistics.median(us), "p99_us": us[int(0.99 * (len(us) - 1))], "max_us": us[-1]}


def frame_cost(frames: int) -> tuple[dict[str, float], dict[str, float]]:
    legs, neck = _sweeps(frames)
    healthy = {a: 0 for a in LEGS + NECK}
    rec = FlightRecorder(RecorderSettings())
    rec.connect(0.0)
    timer = time.perf_counter_ns
    cost = []
    for k in range(frames):
        now = k * PERIOD
        t0 = timer()
        plan = rec.plan(now, leg_sweep=True)
        rec.on_sweep(legs[k])
        if plan.context:
            rec.on_sweep(neck[k])
        if plan.status:
            rec.on_status(now, healthy)
        rec.after_goal_write(now)
        cost.append(timer() - t0)
    ring: deque[Sweep] = deque(maxlen=240)
    anchor = []
    for k in range(frames):
        t0 = timer()
        ring.append(legs[k])
        anchor.append(timer() - t0)
    return _stats(cost), _stats(anchor)


def _full_capture() -> tuple[str, dict, list[dict], float]:
    """A capture from a full ring, and the time (ms) of the after_goal_write call that assembled it."""
    n = 400
    legs, neck = _sweeps(n)
    rec = FlightRecorder(RecorderSettings())
    rec.connect(0.0)
    caps = []
    closing_ms = 0.0
    for k in range(n):
        now = k * PERIOD
        plan = rec.plan(now, leg_sweep=True)
        rec.on_sweep(legs[k])
        if plan.context:
            rec.on_sweep(neck[k])
        if plan.status:
            rec.on_status(now, {a: (0x20 if a == 12 and now > 10.0 else 0) for a in LEGS + NECK})
        t0 = time.perf_counter()
        ready = rec.after_goal_write(now)
        if ready:
            closing_ms = (time.perf_counter() - t0) * 1000
        caps += ready
    cap = caps[0]
    return cap.name, cap.header, cap.samples, closing_ms


def publish_cost(publishes: int, dest: Path) -> tuple[dict[str, float], dict[str, float], int, float]:
    name, header, samples, closing_ms = _full_capture()
    timer = time.perf_counter_ns
    cost, anchor = [], []
    size = 0
    for k in range(publishes):
        t0 = timer()
        path = publish_capture(dest, f"bench_{k}.jsonl", header, samples)
        cost.append(timer() - t0)
        size = path.stat().st_size
        t0 = timer()
        with open(dest / f"plain_{k}.jsonl", "wb") as fh:
            fh.write(encode_line(header))
            for s in samples:
                fh.write(encode_line(s))
        anchor.append(timer() - t0)
    return _stats(cost), _stats(anchor), size, closing_ms


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--frames", type=int, default=30000)
    ap.add_argument("--publishes", type=int, default=30)
    ap.add_argument("--dest", type=Path, default=None)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    parent = args.dest or default_dest().parent
    parent.mkdir(parents=True, exist_ok=True)
    folder = Path(tempfile.mkdtemp(prefix="recorder-bench-", dir=parent))
    try:
        frame, frame_anchor = frame_cost(args.frames)
        pub, pub_anchor, size, closing_ms = publish_cost(args.publishes, folder)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    result = {
        "command": " ".join([Path(sys.executable).name, *sys.argv]),
        "frame_14_axes": frame,
        "frame_anchor_deque_append": frame_anchor,
        "frame_ratio_median": frame["median_us"] / max(frame_anchor["median_us"], 1e-9),
        "frame_goal_us": 50.0,
        "publish_fsync": {k: v / 1000.0 for k, v in pub.items()},
        "publish_anchor_plain_write": {k: v / 1000.0 for k, v in pub_anchor.items()},
        "publish_ratio_median": pub["median_us"] / max(pub_anchor["median_us"], 1e-9),
        "publish_goal_ms": 30.0,
        "closing_frame_assembly_ms": closing_ms,
        "capture_bytes": size,
        "publish_folder_parent": str(parent),
    }
    if args.json:
        print(json.dumps(result, indent=2))
        return
    print(f"measured by: {result['command']}")
    print(
        f"per frame, 14 axes     median {frame['median_us']:7.2f} us  p99 {frame['p99_us']:7.2f} us  "
        f"max {frame['max_us']:8.1f} us   (goal < 50 us)"
    )
    print(
        f"anchor: deque append   median {frame_anchor['median_us']:7.2f} us  "
        f"p99 {frame_anchor['p99_us']:7.2f} us   ratio {result['frame_ratio_median']:.1f}x"
    )
    print(
        f"publish with fsync     median {pub['median_us'] / 1000:7.2f} ms  "
        f"p99 {pub['p99_us'] / 1000:7.2f} ms  max {pub['max_us'] / 1000:7.2f} ms   "
        f"(goal < 30 ms; {size / 1000:.0f} kB a capture)"
    )
    print(
        f"anchor: plain write    median {pub_anchor['median_us'] / 1000:7.2f} ms   "
        f"ratio {result['publish_ratio_median']:.1f}x"
    )
    print(f"the frame that closes a capture window also assembles it: {closing_ms:.2f} ms (once per capture)")


if __name__ == "__main__":
    main()
