"""Per-cycle cost of the motion generators on one machine, in one run.

Feeds the same seeded stream of stepped joint targets (steps at random intervals, bursts of 20 targets 5 ms
apart, holds) at a 1 kHz cycle to

* servotool.motion.shaper.StreamShaper (acceleration-bounded shaper),
* servotool.motion.otg.MultiOtg, synchronised, following its plan between target changes,
* the same MultiOtg re-anchored every cycle with set_position on a float32-rounded echo of its position (a
  controller that reports single precision), which re-plans on nearly every cycle,
* the same MultiOtg with its kept plan dropped before every step, so that every cycle is a full re-plan
  (every axis searched, every faster axis stretched): the worst case,
* ruckig.Ruckig(N, dt) with update() every cycle, when ruckig is installed,

for 1 and 6 joints, and prints the median, p99 and max of the wall time of one cycle (set the target if it
changed, step) in microseconds, with ratios to ruckig. The target_change rows time only the cycles on which
the target changes (where our generator re-plans every axis and ruckig computes a new trajectory), ours
against ruckig's on the same cycles of the same stream. Run it on an otherwise idle machine:

    python benchmarks/otg_cost.py [--cycles 20000] [--seed 1] [--json]
"""

from __future__ import annotations

import argparse
import gc
import json
import platform
import sys
import time

import numpy as np

import servotool.motion.otg as otg_module
import servotool.motion.otg_profile as pure_profile
from servotool.motion.compiled import implementation
from servotool.motion.otg import MultiOtg, OtgLimits

# the profile functions the generator calls (compiled where the install built them; see compiled.py)
_CALLED = (
    "axis_constants",
    "duration_bound_axis",
    "follow",
    "plan_to_rest",
    "plan_warm",
    "stretch_to",
    "stretch_warm_axis",
    "warm_constants_axis",
)

DT = 0.001
V_MAX, A_MAX, J_MAX = 1.0, 4.0, 40.0  # rad/s, rad/s^2, rad/s^3: a moderate joint budget


def target_stream(n_joints: int, cycles: int, seed: int) -> list[np.ndarray | None]:
    """One entry per cycle: the new target vector, or None when the target does not change that cycle."""
    rng = np.random.default_rng(seed)
    out: list[np.ndarray | None] = [None] * cycles
    current = np.zeros(n_joints)
    k = 0
    while k < cycles:
        if rng.random() < 0.15:
            for _ in range(20):  # a burst: 20 targets 5 ms apart
                if k >= cycles:
                    break
                current = current + rng.normal(0.0, 0.01, n_joints)
                out[k] = current.copy()
                k += 5
            continue
        current = current + rng.uniform(-0.5, 0.5, n_joints) * (rng.random(n_joints) < 0.8)
        out[k] = current.copy()
        k += int(rng.integers(20, 600))
    return out


def _summary(samples_ns: list[int]) -> dict[str, float]:
    us = np.asarray(samples_ns, dtype=float) / 1000.0
    return {
        "median_us": float(np.median(us)),
        "p99_us": float(np.percentile(us, 99)),
        "max_us": float(us.max()),
    }


def bench_shaper(n: int, stream) -> dict[str, float] | None:
    try:
        from servotool.motion.shaper import StreamShaper
    except ImportError:
        return None
    shaper = StreamShaper(V_MAX, A_MAX, DT, n_joints=n)
    shaper.prime(np.zeros(n))
    target = np.zeros(n)
    samples = []
    clock = time.perf_counter_ns
    for new in stream:
        t0 = clock()
        if new is not None:
            target = new
        shaper.step(target)
        samples.append(clock() - t0)
    return _summary(samples)


def _split(samples: list[int], stream) -> tuple[dict[str, float], dict[str, float] | None]:
    """Summary of every cycle, and of the cycles on which the target changed (None if there were none)."""
    changed = [s for s, new in zip(samples, stream, strict=True) if new is not None]
    return _summary(samples), (_summary(changed) if changed else None)


def bench_otg(n: int, stream, mode: str = "plain") -> tuple[dict[str, float], dict[str, float] | None]:
    """mode: "plain" (targets only), "f32_echo" (set_position on a float32-rounded echo before every step),
    "replan" (the kept plan dropped before every step, so every cycle is a full re-plan)."""
    gen = MultiOtg(np.zeros(n), OtgLimits(V_MAX, A_MAX, J_MAX))
    samples = []
    clock = time.perf_counter_ns
    f32 = mode == "f32_echo"
    replan = mode == "replan"
    for new in stream:
        echo = gen.position.astype(np.float32) if f32 else None
        t0 = clock()
        if new is not None:
            gen.set_target(new)
        if f32:
            gen.set_position(echo)
        elif replan:
            gen._plans = None  # white-box: measure the search itself on every cycle
        gen.step(DT)
        samples.append(clock() - t0)
    return _split(samples, stream)


def bench_otg_pure(n: int, stream) -> tuple[dict[str, float], dict[str, float] | None]:
    """bench_otg with the generator calling the pure-Python profile functions (same floats, no build)."""
    built = {name: getattr(otg_module, name) for name in _CALLED}
    try:
        for name in _CALLED:
            setattr(otg_module, name, getattr(pure_profile, name))
        bench_otg(n, stream[: min(500, len(stream))])
        return bench_otg(n, stream)
    finally:
        for name, f in built.items():
            setattr(otg_module, name, f)


def bench_ruckig(n: int, stream) -> tuple[dict[str, float], dict[str, float] | None] | None:
    try:
        import ruckig
    except ImportError:
        return None
    gen = ruckig.Ruckig(n, DT)
    inp = ruckig.InputParameter(n)
    out = ruckig.OutputParameter(n)
    inp.current_position = [0.0] * n
    inp.current_velocity = [0.0] * n
    inp.current_acceleration = [0.0] * n
    inp.target_position = [0.0] * n
    inp.target_velocity = [0.0] * n
    inp.target_acceleration = [0.0] * n
    inp.max_velocity = [V_MAX] * n
    inp.max_acceleration = [A_MAX] * n
    inp.max_jerk = [J_MAX] * n
    samples = []
    clock = time.perf_counter_ns
    for new in stream:
        t0 = clock()
        if new is not None:
            inp.target_position = new.tolist()
        gen.update(inp, out)
        out.pass_to_input(inp)
        samples.append(clock() - t0)
    return _split(samples, stream)


def run(cycles: int, seed: int) -> dict:
    results: dict = {
        "python": sys.version.split()[0],
        "machine": platform.machine(),
        "processor": platform.processor() or platform.machine(),
        "cycles": cycles,
        "profile_math": implementation(),
        "dt_s": DT,
        "limits": {"v": V_MAX, "a": A_MAX, "j": J_MAX},
        "joints": {},
    }
    for n in (1, 6):
        stream = target_stream(n, cycles, seed)
        # A short warm-up of every generator, so imports and first-call costs stay out of the figures.
        warm = stream[: min(500, cycles)]
        bench_shaper(n, warm)
        bench_otg(n, warm)
        bench_ruckig(n, warm)
        otg, otg_change = bench_otg(n, stream)
        theirs = bench_ruckig(n, stream)
        ruckig_all, ruckig_change = theirs if theirs is not None else (None, None)
        row = {
            "shaper": bench_shaper(n, stream),
            "otg": otg,
            "otg_f32_echo": bench_otg(n, stream, "f32_echo")[0],
            "otg_replan_every_cycle": bench_otg(n, stream, "replan")[0],
            "ruckig": ruckig_all,
            "otg_target_change": otg_change,
            "ruckig_target_change": ruckig_change,
        }
        if implementation() == "compiled":
            row["otg_target_change_python"] = bench_otg_pure(n, stream)[1]
        _ratios(row, "ruckig", ("shaper", "otg", "otg_f32_echo", "otg_replan_every_cycle"))
        _ratios(row, "ruckig_target_change", ("otg_target_change", "otg_target_change_python"))
        results["joints"][str(n)] = row
    return results


def _ratios(row: dict, ref_name: str, names: tuple[str, ...]) -> None:
    ref = row[ref_name]
    if ref is None:
        return
    for name in names:
        if row[name] is not None:
            row[name]["median_vs_ruckig"] = row[name]["median_us"] / ref["median_us"]
            row[name]["p99_vs_ruckig"] = row[name]["p99_us"] / ref["p99_us"]


def _print_table(results: dict) -> None:
    print(
        f"per-cycle cost, {results['cycles']} cycles at {results['dt_s'] * 1000:g} ms, "
        f"Python {results['python']} on {results['processor']}, profile math {results['profile_math']}"
    )
    cols = f"{'median us':>10}{'p99 us':>10}{'max us':>10}{'med/ruckig':>12}{'p99/ruckig':>12}"
    print(f"{'joints':>6}  {'generator':<24}{cols}")
    for n, row in results["joints"].items():
        for name, r in row.items():
            if r is None:
                print(f"{n:>6}  {name:<24}{'not available':>20}")
                continue
            ratios = ""
            if "median_vs_ruckig" in r:
                ratios = f"{r['median_vs_ruckig']:>12.1f}{r['p99_vs_ruckig']:>12.1f}"
            figures = f"{r['median_us']:>10.1f}{r['p99_us']:>10.1f}{r['max_us']:>10.1f}"
            print(f"{n:>6}  {name:<24}{figures}{ratios}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cycles", type=int, default=20000, help="cycles per generator and joint count")
    parser.add_argument("--seed", type=int, default=1, help="seed of the target stream")
    parser.add_argument("--json", action="store_true", help="print the results as JSON")
    parser.add_argument("--no-gc", action="store_true", help="disable the garbage collector while timing")
    args = parser.parse_args(argv)
    if args.no_gc:
        gc.disable()
    results = run(args.cycles, args.seed)
    results["gc_disabled"] = bool(args.no_gc)
    if args.json:
        print(json.dumps(results, indent=2))
    else:
        _print_table(results)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
