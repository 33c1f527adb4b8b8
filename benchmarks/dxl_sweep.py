"""Wall time of one telemetry sweep (SYNC READ of 126-146 over 14 servos) on the Dynamixel simulator.

Compares, on the same simulated bus (sim:microduck on a pty, served in this process):

* servotool's DxlBus.read_telemetry (dynamixel-sdk underneath; answers collected per servo, typed frame),
* dynamixel-sdk's own GroupSyncRead.txRxPacket + getData for every field (the anchor),

and prints the median, p99 and max in milliseconds with the ratio ours / anchor. Both share the simulator's
time, so the figure is the host-side cost plus the pty round trip, not a real bus's wire time (a real
1 Mbaud line adds about 14 x 32 bytes x 10 us = 4.5 ms). A second pair of figures shows the cost of one
silent servo: servotool marks it and keeps the others (one packet timeout), dynamixel-sdk's GroupSyncRead
fails the whole sweep after the same timeout. Run it on an otherwise idle machine:

    python benchmarks/dxl_sweep.py [--sweeps 300] [--json]
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time
from collections.abc import Callable

import numpy as np
from dynamixel_sdk import COMM_SUCCESS, GroupSyncRead, PacketHandler, PortHandler

from servotool.devices.dynamixel import control_table as ct
from servotool.devices.dynamixel.sim import start_sim
from servotool.devices.registry import open_bus


def _timed(fn: Callable[[], object], sweeps: int) -> dict[str, float]:
    fn()  # warm-up
    samples = []
    for _ in range(sweeps):
        t0 = time.perf_counter_ns()
        fn()
        samples.append(time.perf_counter_ns() - t0)
    ms = np.asarray(samples, dtype=float) / 1e6
    return {
        "median_ms": float(np.median(ms)),
        "p99_ms": float(np.percentile(ms, 99)),
        "max_ms": float(ms.max()),
    }


def ours(params: str, sweeps: int) -> tuple[dict[str, float], int]:
    bus = open_bus(f"sim:microduck?{params}" if params else "sim:microduck")
    try:
        answered = len(bus.ids) - len(bus.read_telemetry().silent)
        return _timed(bus.read_telemetry, sweeps), answered
    finally:
        bus.close()


def anchor(params: str, sweeps: int) -> tuple[dict[str, float], int]:
    server = start_sim("microduck", dict(p.split("=") for p in params.split("&")) if params else {})
    port = PortHandler(server.path)
    port.openPort()
    port.setBaudRate(1_000_000)
    ph = PacketHandler(2.0)
    group = GroupSyncRead(port, ph, ct.TELEMETRY_START, ct.TELEMETRY_LENGTH)
    for sid in server.sim.profile.ids:
        group.addParam(sid)

    def sweep() -> int:
        result = group.txRxPacket()
        if result == COMM_SUCCESS:
            for sid in server.sim.profile.ids:
                for reg in ct.TELEMETRY_FIELDS:
                    group.getData(sid, reg.address, reg.size)
            return len(server.sim.profile.ids)
        return 0

    try:
        return _timed(sweep, sweeps), sweep()
    finally:
        port.closePort()
        server.close()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sweeps", type=int, default=300)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    out = {"python": platform.python_version(), "sweeps": args.sweeps, "cases": {}}
    for case, params in (("all answer", ""), ("one silent", "silent=22")):
        mine, mine_n = ours(params, args.sweeps)
        theirs, theirs_n = anchor(params, args.sweeps)
        out["cases"][case] = {
            "servotool": mine,
            "servotool_answered": mine_n,
            "dynamixel_sdk": theirs,
            "dynamixel_sdk_answered": theirs_n,
            "ratio_median": mine["median_ms"] / theirs["median_ms"],
        }
    if args.json:
        print(json.dumps(out, indent=2))
        return 0
    for case, row in out["cases"].items():
        a, b = row["servotool"], row["dynamixel_sdk"]
        print(
            f"{case:>10}: servotool {a['median_ms']:.2f} ms median ({a['p99_ms']:.2f} p99, "
            f"{row['servotool_answered']} answered) | dynamixel-sdk GroupSyncRead {b['median_ms']:.2f} ms "
            f"({b['p99_ms']:.2f} p99, {row['dynamixel_sdk_answered']} answered) | ratio "
            f"{row['ratio_median']:.2f}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
