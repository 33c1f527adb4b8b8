"""The report of a campaign folder, recomputed from its CSV files: `report.md` and a self-contained
`report.html` (the same Markdown rendered by Python-Markdown, plots embedded as base64 PNG, also saved as PNG
files under `plots/`).

A report opens with its measured outcome (what the runs found: the lag, the a_max ceiling, the mapped
limits), and says SIMULATED first, in the limits and tuning blocks and in every plot title, wherever a
simulator produced the figures.

Every figure comes from the recordings: each CSV's header says what run it was (mode, settings, device, and
the campaign run it belongs to in its command line); the campaign copy (`campaign.yaml`), when present, adds
the campaign's purpose and safety rules. The tuning block is motion.guard's tuning from the measured lag,
with the highest clean a_max of the shaped steps (else the shaper's default) and the shaper's v_max.
"""

from __future__ import annotations

import base64
import html
import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from servotool.analysis.lag import LagResult, combine_lag, guard_advice
from servotool.analysis.recording import RecordingError
from servotool.analysis.step import StepResult
from servotool.analysis.sweep import limit_from_stop
from servotool.analysis.sweep_files import config_inside
from servotool.analysis.uncertainty import ci95_text
from servotool.devices.registry import DeviceURLError, family_of, fault_names, parse_url
from servotool.io.atomic import write_atomic
from servotool.io.campaign_file import read_campaign_file
from servotool.io.csvlog import CsvFormatError, CsvMeta, read_csv
from servotool.runs.campaign.endings import ENDING_HEADERS, ENDING_NOTE, ending_rows
from servotool.runs.campaign.plan import Campaign, parse_campaign
from servotool.runs.offline.analyze import FileAnalysis, analyze_paths

if TYPE_CHECKING:  # matplotlib is imported only when a report draws its figures (analyze never does)
    import pandas as pd

    from servotool.plots.campaign import AmaxRun, StepTrace
from servotool.runs.arm.step import StepSettings

_RUN_RE = re.compile(r"# run (\d+) \((\w+)\) of (\d+): (.*)$")
DEFAULT_SHAPER = StepSettings()  # the shaper's bounds when a campaign names none


def _f(x: Any, fmt: str = ".1f") -> str:
    if x is None or (isinstance(x, float) and not math.isfinite(x)):
        return "-"
    return f"{x:{fmt}}"


@dataclass
class ReportTable:
    title: str
    headers: list[str]
    rows: list[list[str]]
    note: str = ""


@dataclass
class ReportFigure:
    name: str
    title: str
    png: bytes


@dataclass
class Report:
    """Everything the report says, before it is written as markdown or HTML."""

    title: str
    intro: list[str] = field(default_factory=list)
    tables: list[ReportTable] = field(default_factory=list)
    figures: list[ReportFigure] = field(default_factory=list)
    tuning: str = ""
    tuning_note: str = ""
    limits: str = ""
    problems: list[str] = field(default_factory=list)
    outcome: list[str] = field(default_factory=list)  # what the runs measured, the report's first lines
    simulated: str = ""  # the simulators that produced the figures ("" for a real device)


def run_label(command: str) -> tuple[str, str]:
    """(`run N`, why) from a campaign run's command line header, else ("", "")."""
    m = _RUN_RE.search(command or "")
    return (f"run {m.group(1)}", m.group(4)) if m else ("", "")


def _load_campaign(folder: Path) -> Campaign | None:
    path = folder / "campaign.yaml"
    if not path.is_file():
        return None
    try:
        campaign, _problems = parse_campaign(read_campaign_file(path))
    except ValueError:
        return None
    return campaign


def _label(fa: FileAnalysis) -> str:
    run, _why = run_label(fa.meta.command)
    return run or fa.path.name


def _transport(cfg: dict[str, Any]) -> str:
    return "rpc" if cfg.get("transport") == "rpc" else "udp"


def _ci95(fit: Any) -> str:
    """The fit's 95 % confidence interval, `78.04 to 78.18` (ms), or "-" for a fit of one pass."""
    lo, hi = fit.ci95_ms
    return f"{lo:.2f} to {hi:.2f}" if math.isfinite(lo) and math.isfinite(hi) else "-"


def lag_table(files: Sequence[FileAnalysis]) -> ReportTable:
    rows = []
    for fa in files:
        r = fa.result
        assert isinstance(r, LagResult)
        cfg = fa.meta.config
        fit, mid = r.fit, r.midpoint
        speeds = ",".join(f"{v:g}" for v in cfg.get("speeds_deg_s", []))
        rows.append(
            [
                _label(fa),
                f"J{r.joint + 1}",
                _transport(cfg),
                speeds,
                f"{cfg.get('sweep_deg', 0):g}",
                _f(fit.lag_ms, ".1f") if fit else "-",
                _ci95(fit) if fit else "-",
                _f(mid.mean_ms, ".1f") if mid else "-",
                ("constant" if r.model.constant else "varies") if r.model else "-",
                str(len(r.passes)),
                "yes" if fa.meta.complete else f"no: {fa.meta.end_reason}",
            ]
        )
    headers = [
        "run",
        "joint",
        "transport",
        "speeds deg/s",
        "sweep deg",
        "L ms",
        "95 % CI ms",
        "midpoint L ms",
        "L vs speed",
        "passes",
        "complete",
    ]
    note = (
        "L: delta = v * L fitted through the origin over the passes, with its 95 % confidence interval; "
        "midpoint: the crossing cross-check"
    )
    return ReportTable("lag runs (ramps)", headers, rows, note)


def step_table(files: Sequence[FileAnalysis]) -> ReportTable:
    rows = []
    for fa in files:
        r = fa.result
        assert isinstance(r, StepResult)
        cfg = fa.meta.config
        kind = f"shaped a_max {cfg.get('a_max', 0):g}" if r.shaped else "raw"
        for m in r.steps:
            rows.append(
                [
                    _label(fa),
                    kind,
                    _transport(cfg),
                    f"{m.size_deg:+g}",
                    _f(m.first_move_ms, ".0f"),
                    _f(m.arrive_ms, ".0f"),
                    _f(m.peak_delta_deg, ".2f"),
                    _f(m.travel_deg, ".1f"),
                    _f(m.travel_ratio, ".1f"),
                    _f(m.peak_speed_deg_s, ".0f"),
                    str(m.rejects),
                    str(m.faults) + (f" ({m.fault_codes})" if m.fault_codes else ""),
                    m.verdict,
                ]
            )
        if not r.steps:
            rows.append(
                [_label(fa), kind, _transport(cfg), f"{cfg.get('size_deg', 0):+g}"]
                + ["-"] * 6
                + [str(r.total_rejects), str(r.total_faults), "no step measured"]
            )
    headers = [
        "run",
        "kind",
        "transport",
        "size deg",
        "first move ms",
        "arrive ms",
        "peak Δ deg",
        "travel deg",
        "x step",
        "peak deg/s",
        "rejects",
        "faults",
        "verdict",
    ]
    note = "arrive: first frame within 10 % of the target; travel: how far the joint went; x step: the ratio"
    return ReportTable("step runs", headers, rows, note + _fault_names(files))


def _fault_names(files: Sequence[FileAnalysis]) -> str:
    """'; faults: 1/32 TCP speed over the limit, ...': each fault code the table shows, named by the family
    of the device that latched it ("" when none latched)."""
    named: dict[str, str] = {}
    for fa in files:
        assert isinstance(fa.result, StepResult)
        for m in fa.result.steps:
            for code in (c.strip() for c in (m.fault_codes or "").split(",")):
                main, _, sub = code.partition("/")
                if code and code not in named and main.isdigit() and sub.isdigit():
                    name = fault_names((int(main), int(sub)), url=fa.meta.device)
                    named[code] = name or "not in the family's table"
    return "; faults: " + "; ".join(f"{c} {n}" for c, n in named.items()) if named else ""


def cold_table(files: Sequence[FileAnalysis]) -> ReportTable:
    """Ramps started inside the enable window: the gap when execution started, the travel that followed."""
    rows = []
    for fa in files:
        rec, j = fa.recording, int(fa.meta.config.get("joint", 0))
        start = float(fa.meta.config.get("start_pose", [0.0] * (j + 1))[j])
        fault_t = float(rec.fault_t[0]) if len(rec.fault_t) else math.nan
        sent = rec.cmd_t <= fault_t if math.isfinite(fault_t) else np.ones(len(rec.cmd_t), bool)
        gap = float(np.max(np.abs(rec.cmd_q[sent, j] - start))) if sent.any() else math.nan
        ts, qs = rec.measured(j)
        travel = float(np.nanmax(np.abs(qs - start))) if len(qs) else math.nan
        speed = float(np.nanmax(np.abs(np.diff(qs) / np.diff(ts)))) if len(qs) > 2 else math.nan
        rows.append(
            [
                _label(fa),
                f"J{j + 1}",
                _f(gap, ".1f"),
                "yes" if math.isfinite(fault_t) else "no",
                _f(travel, ".1f"),
                _f(travel / gap if gap else math.nan, ".1f"),
                _f(speed, ".0f"),
            ]
        )
    return ReportTable(
        "ramps from a disabled robot (cold start)",
        ["run", "joint", "gap at fault deg", "runaway", "travel deg", "x gap", "peak deg/s"],
        rows,
    )


@dataclass
class SweepRow:
    run: str
    device: str
    joint: int
    direction: str
    start: int
    stored: tuple[int, int]
    stop: float
    inside: int
    complete: bool
    simulated: bool = False
    stalled: bool = False  # it stopped short of the stored limit: an obstacle or the joint's real end

    @property
    def limit(self) -> int | None:
        """The limit this sweep implies, as the sweep itself and `analyze` set it: `inside` pulses back from
        its stop (a stall or the stored limit alike); None for a sweep without a stop or one the run was
        interrupted in (its stop says where the joint was, not where it can go)."""
        if not self.complete or not math.isfinite(self.stop):
            return None
        return limit_from_stop(int(round(self.stop)), -1 if self.direction == "down" else 1, self.inside)


def read_sweeps(folder: Path) -> tuple[list[SweepRow], list[str]]:
    """Every limit sweep recorded in the folder (sweep-*.csv), from the files alone; and a problem line
    ("<file>: left out of the report: <why>") for each sweep file whose header or rows it cannot read."""
    rows, problems = [], []
    for path in sorted(folder.glob("sweep-*.csv")):
        try:
            meta, df = read_csv(path)
        except CsvFormatError:
            continue  # analyze names it
        try:
            rows.append(_sweep_row(path, meta, df))
        except (RecordingError, ValueError, TypeError, KeyError) as exc:
            problems.append(f"{path}: left out of the report: {exc}")
    return rows, problems


def _whole(value: Any) -> bool:
    return _is_number(value) and math.isfinite(value) and value == int(value)


def _sweep_row(path: Path, meta: CsvMeta, df: pd.DataFrame) -> SweepRow:
    """The report's row of one sweep file. Raises ValueError (or RecordingError) saying which header key
    or column it cannot read: a limit is never made up from a value no sweep wrote."""
    cfg = meta.config
    stored = cfg.get("stored_limit") or [0, 0]
    if not (isinstance(stored, list) and len(stored) == 2 and all(_whole(x) for x in stored)):
        raise ValueError(f"config stored_limit is {stored!r}, not two pulse counts")
    for key in ("joint", "start"):
        if not _whole(cfg.get(key, 0)):
            raise ValueError(f"config {key} is {cfg.get(key)!r}, not a whole number")
    for col in ("event", "read"):
        if col not in df.columns:
            raise ValueError(f"no '{col}' column")
    stops = df[df["event"] == "stop"]
    stop = float(stops["read"].iloc[-1]) if not stops.empty else math.nan
    lo, hi = (int(x) for x in stored)
    direction = str(cfg.get("direction"))
    tol = cfg.get("limit_tol", 2)
    bound = lo if direction == "down" else hi
    stalled = meta.complete and math.isfinite(stop) and abs(stop - bound) > (tol if _is_number(tol) else 2)
    return SweepRow(run_label(meta.command)[0] or path.name, meta.device, int(cfg.get("joint", 0)),
                    direction, int(cfg.get("start", 0)), (lo, hi), stop,
                    config_inside(cfg), meta.complete, meta.simulated, stalled)  # fmt: skip


def sweep_table(sweeps: Sequence[SweepRow]) -> ReportTable:
    rows = [
        [
            r.run,
            str(r.joint),
            r.direction,
            str(r.start),
            f"{r.stored[0]}..{r.stored[1]}",
            _f(r.stop, ".0f"),
            "-" if r.limit is None else str(r.limit),
        ]
        for r in sweeps
    ]
    headers = ["run", "servo", "direction", "start", "stored limit", "stop (pulses)", "limit"]
    note = "limit: `inside` pulses back from the stop, as the sweep set it"
    return ReportTable("limit sweeps", headers, rows, note)


def _limits_node(sweeps: Sequence[SweepRow]) -> str:
    """The parameter file's node of the swept device's family (the first sweep's device)."""
    for r in sweeps:
        try:
            node = family_of(parse_url(r.device)).limits_node
        except DeviceURLError:
            continue
        if node:
            return node
    return "arm_driver"  # a device no family reads any more: the block still says what was mapped


def limits_block(sweeps: Sequence[SweepRow]) -> str:
    """The mapped limits as ROS 2 parameters (arm_limit_N: [lo, hi]) for the arm's parameter file, under the
    node its family names; a first comment line says SIMULATED when a simulator's sweeps mapped them, so
    the mark travels with the pasted block."""
    found: dict[int, list[int]] = {}
    for r in sweeps:
        pair = found.setdefault(r.joint, list(r.stored))
        if r.limit is not None:  # a sweep without a limit leaves the stored one
            pair[0 if r.direction == "down" else 1] = r.limit
    lines = [f"    arm_limit_{j}: [{lo}, {hi}]" for j, (lo, hi) in sorted(found.items())]
    sims = sorted({r.device for r in sweeps if r.simulated})
    mark = [f"# SIMULATED: mapped on {', '.join(sims)}, not on a real arm"] if sims else []
    return "\n".join([*mark, f"{_limits_node(sweeps)}:", "  ros__parameters:", *lines])


def _lag_source(lags: Sequence[FileAnalysis]) -> tuple[float, str, float]:
    """(L in s, where it comes from, peak noise at rest in deg) for the tuning, the noise figure the lag
    command tunes with; NaN when no ramp was measured."""
    results = [fa.result for fa in lags if isinstance(fa.result, LagResult)]
    combined = combine_lag(results) if len(results) >= 2 else None
    fit = combined.fit if combined is not None else None
    noise = max((r.noise.peak_deg for r in results if r.noise is not None), default=0.0)
    if fit is not None and math.isfinite(fit.lag_ms):
        return fit.lag_ms / 1e3, f"one fit over the passes of {len(results)} ramp runs", noise
    for fa in lags:
        r = fa.result
        if isinstance(r, LagResult) and r.fit is not None and math.isfinite(r.fit.lag_ms):
            return r.fit.lag_ms / 1e3, f"{_label(fa)}", noise
    return math.nan, "", noise


def clean_a_max(steps: Sequence[FileAnalysis]) -> tuple[float, float, float]:
    """(highest a_max of a shaped run with no fault and no reject, its v_max, lowest a_max that faulted)."""
    clean, v_max, faulted = math.nan, DEFAULT_SHAPER.v_max, math.nan
    for fa in steps:
        r = fa.result
        if not isinstance(r, StepResult) or not r.shaped:
            continue
        a = float(fa.meta.config.get("a_max", DEFAULT_SHAPER.a_max))
        if r.total_faults or r.total_rejects or not fa.meta.complete:
            faulted = a if not math.isfinite(faulted) else min(faulted, a)
        elif not math.isfinite(clean) or a > clean:
            clean, v_max = a, float(fa.meta.config.get("v_max", v_max))
    return clean, v_max, faulted


def tuning_block(lags: Sequence[FileAnalysis], steps: Sequence[FileAnalysis], device: str) -> tuple[str, str]:
    """(YAML block to paste into a controller's guard config, a note on where each number comes from). The
    block's first line names the device, SIMULATED when a simulator measured the lag.

    The margin follows the rules `servotool lag` tunes by (analysis.lag.guard_advice): the braking
    transient seen through a state frame one state period old, plus the peak noise at rest."""
    whole = [fa for fa in lags if fa.meta.complete]  # a ramp run that ended early tunes nothing
    lag_s, source, noise = _lag_source(whole)
    if not math.isfinite(lag_s):
        if len(whole) < len(lags):
            return "", "no ramp run here ran its whole sweep, so no guard tuning follows from this folder"
        return "", "no ramp run measured a lag here, so no guard tuning follows from this folder"
    lags = whole
    clean, v_max, faulted = clean_a_max(steps)
    a_max = clean if math.isfinite(clean) else DEFAULT_SHAPER.a_max
    period = float(lags[0].meta.config.get("cmd_period_s", 0.01)) if lags else 0.01
    age = max(
        (
            fa.result.state_period_s
            for fa in lags
            if isinstance(fa.result, LagResult) and math.isfinite(fa.result.state_period_s)
        ),
        default=0.0,
    )
    t = guard_advice(lag_s, a_max=a_max, v_max=v_max, noise_deg=noise, dt=period, frame_age_s=age)
    sim = " (SIMULATED)" if any(fa.meta.simulated for fa in lags) and "SIMULATED" not in device else ""
    block = "\n".join(
        [
            f"# guard tuning for {device}{sim}: L = {lag_s * 1e3:.1f} ms ({source})",
            "stream_shaper:",
            f"  v_max_deg_s: {t.v_max:g}",
            f"  a_max_deg_s2: {t.a_max:g}",
            "divergence_guard:",
            f"  lag_s: {t.lag_s:.2f}",
            f"  margin_deg: {t.margin_deg:.1f}",
        ]
    )
    a_src = (
        f"the highest a_max of a clean shaped run ({clean:g} deg/s^2)"
        if math.isfinite(clean)
        else f"the shaper's default a_max ({a_max:g} deg/s^2): no shaped run here"
    )
    if math.isfinite(faulted):
        a_src += f"; the lowest a_max that faulted was {faulted:g} deg/s^2"
    note = (
        f"lag_s is L rounded up to 10 ms; margin_deg = a_max * (L + age)^2 / 2 + peak noise at rest + "
        f"v_max * (L + age - lag_s) when positive ({t.braking_deg:.3f} + {t.noise_deg:.4f} + "
        f"{t.frame_age_deg:.3f} deg, age = one state period, {t.frame_age_ms:.1f} ms) rounded up to "
        f"0.1 deg; a_max is {a_src}. The shaper trails a target "
        f"moving at v_max by {t.trail_deg:.1f} deg ({t.trail_s * 1e3:.0f} ms)."
    )
    return block, note


def _lag_outcome(lags: Sequence[FileAnalysis]) -> list[str]:
    """The lag the ramp runs measured: one fit over every ramp's passes, or the one run's."""
    results = [fa.result for fa in lags if isinstance(fa.result, LagResult)]
    if not results:
        return []
    fit = combine_lag(results).fit if len(results) >= 2 else results[0].fit
    if fit is None or not math.isfinite(fit.lag_ms):
        return ["**Lag: not measurable**: no ramp pass had a cruise long enough (see the lag table)."]
    model = combine_lag(results).model if len(results) >= 2 else results[0].model
    speeds = {round(p.speed_deg_s, 1) for r in results for p in r.passes if math.isfinite(p.lag_ms)}
    if len(speeds) < 2:
        how = "one speed, so whether it is the same at every speed is not checked"
    elif model is not None:
        how = "the same at every speed" if model.constant else "not the same at every speed"
    else:
        how = ""
    where = _label(lags[0]) if len(results) == 1 else f"one fit over {len(results)} ramp runs"
    ci = ci95_text(*fit.ci95_ms)
    return [f"**Lag: L = {fit.lag_ms:.2f} ms** ({ci}), {how} ({where})." if how else
            f"**Lag: L = {fit.lag_ms:.2f} ms** ({ci}, {where})."]  # fmt: skip


def _shaped_outcome(shaped: Sequence[FileAnalysis]) -> str:
    """The shaped runs' answer: the a_max ceiling where an a_max faulted, else how high they stayed clean."""
    clean, _v_max, faulted = clean_a_max(shaped)
    tried = sorted({float(fa.meta.config.get("a_max", DEFAULT_SHAPER.a_max)) for fa in shaped})
    sizes = sorted(
        {abs(m.size_deg) for fa in shaped if isinstance(fa.result, StepResult) for m in fa.result.steps}
    )
    at = f"a_max {tried[0]:g} deg/s²" if len(tried) == 1 else f"a_max {tried[0]:g} to {tried[-1]:g} deg/s²"
    span = f"{len(shaped)} shaped run(s) at {at}"
    if sizes:
        lo, hi = sizes[0], sizes[-1]
        span += f", {lo:g} deg steps" if lo == hi else f", steps {lo:g} to {hi:g} deg"
    if math.isfinite(clean) and math.isfinite(faulted):
        return (
            f"**a_max ceiling: {clean:g} deg/s²**: the highest a_max with no fault and no reject; the first "
            f"fault came at {faulted:g} deg/s² ({span})."
        )
    if math.isfinite(clean):
        return f"**Shaped steps: clean up to a_max {clean:g} deg/s²**, no fault and no reject ({span})."
    return f"**Shaped steps: every run faulted or was rejected** ({span})."


def _step_outcome(steps: Sequence[FileAnalysis]) -> list[str]:
    """The shaped steps' a_max ceiling (the highest clean a_max, the lowest that faulted) and the raw
    steps' runaways, faults and travel."""
    shaped = [fa for fa in steps if isinstance(fa.result, StepResult) and fa.result.shaped]
    rs = [fa.result for fa in steps if isinstance(fa.result, StepResult) and not fa.result.shaped]
    lines = [_shaped_outcome(shaped)] if shaped else []
    if rs:
        runaways, faults = sum(r.runaways for r in rs), sum(r.total_faults for r in rs)
        ratios = [m.travel_deg / abs(m.size_deg) for r in rs for m in r.steps
                  if m.verdict == "runaway" and m.size_deg and math.isfinite(m.travel_deg)]  # fmt: skip
        travel = [m.travel_deg for r in rs for m in r.steps if math.isfinite(m.travel_deg)]
        worst = f", up to {max(ratios):.0f}x the step" if ratios else ""
        moved = f", travel at most {max(travel):.1f} deg" if travel and not ratios else ""
        tally = f"{faults} fault latch(es) ({len(rs)} raw run(s))"
        lines.append(f"**Raw steps: {runaways} runaway(s)**{worst}{moved}, {tally}.")
    return lines


def _cold_outcome(cold: Sequence[FileAnalysis]) -> list[str]:
    """Ramps started from a disabled robot: how many ran away (a latched fault as execution began)."""
    if not cold:
        return []
    ran = sum(1 for fa in cold if len(fa.recording.fault_t))
    return [f"**Ramps from a disabled robot: {ran} of {len(cold)} ran away** (see the cold-start table)."]


def _sweep_outcome(sweeps: Sequence[SweepRow]) -> list[str]:
    """The mapped limits per servo, and which sweeps stopped at a stall rather than the stored limit."""
    if not sweeps:
        return []
    found: dict[int, list[int | None]] = {}
    for r in sweeps:
        pair = found.setdefault(r.joint, [None, None])
        if r.limit is not None:
            pair[0 if r.direction == "down" else 1] = r.limit
    limits = ", ".join(
        f"{j} [{'-' if lo is None else lo}, {'-' if hi is None else hi}]"
        for j, (lo, hi) in sorted(found.items())
    )
    stalls = [f"servo {r.joint} {r.direction} at {r.stop:.0f}" for r in sweeps if r.stalled]
    where = f"stalls: {', '.join(stalls)}" if stalls else "no stall: every sweep stopped at its stored limit"
    return [f"**Limits mapped** (servo [low, high] pulses): {limits}; {where}."]


def outcome_lines(
    lags: Sequence[FileAnalysis],
    steps: Sequence[FileAnalysis],
    sweeps: Sequence[SweepRow],
    simulated: str,
    cold: Sequence[FileAnalysis] = (),
) -> list[str]:
    """What the campaign measured, first: SIMULATED when a simulator produced it, then the lag, the cold
    starts, the step and the sweep outcomes, and the runs that ended early; a folder with nothing measured
    says so."""
    lines = [
        f"**SIMULATED**: every figure here comes from a simulator ({simulated}), not from a real device."
    ]
    lines = lines if simulated else []
    found = _lag_outcome(lags) + _cold_outcome(cold) + _step_outcome(steps) + _sweep_outcome(sweeps)
    ended = [f"{_label(f)} ({f.meta.end_reason})" for f in [*lags, *steps] if not f.meta.complete]
    ended += [f"{s.run} (interrupted)" for s in sweeps if not s.complete]
    if ended:
        more = f" and {len(ended) - 3} more" if len(ended) > 3 else ""
        found.append(f"**{len(ended)} run(s) ended early**: {', '.join(ended[:3])}{more}.")
    return lines + (found or ["**Nothing measured**: the folder holds no run the report can read."])


def _traces(steps: Sequence[FileAnalysis], limit: int = 16) -> list[StepTrace]:
    from servotool.plots.campaign import StepTrace

    traces = []
    for fa in steps:
        r = fa.result
        assert isinstance(r, StepResult)
        ts, qs = fa.recording.measured(r.joint)
        for m in r.steps[:2]:
            sel = (ts >= m.t_step_s - 0.05) & (ts <= m.t_step_s + m.window_s)
            if sel.sum() < 3 or m.size_deg == 0:
                continue
            kind = f"shaped a_max {fa.meta.config.get('a_max', 0):g}" if r.shaped else "raw"
            traces.append(
                StepTrace(
                    f"{_label(fa)} {kind} {m.size_deg:+g}",
                    (ts[sel] - m.t_step_s) * 1e3,
                    (qs[sel] - m.pre_deg) / (m.target_deg - m.pre_deg),
                )
            )
    return traces[:limit]


def _amax_runs(steps: Sequence[FileAnalysis]) -> list[AmaxRun]:
    from servotool.plots.campaign import AmaxRun

    runs = []
    for fa in steps:
        r = fa.result
        if not isinstance(r, StepResult) or not r.shaped:
            continue
        a = float(fa.meta.config.get("a_max", DEFAULT_SHAPER.a_max))
        clean = not (r.total_faults or r.total_rejects or not fa.meta.complete)
        runs.append(AmaxRun(a, [m.arrive_ms for m in r.steps], clean))
    return runs


def build_figures(
    lags: Sequence[FileAnalysis], steps: Sequence[FileAnalysis], simulated: bool = False
) -> list[ReportFigure]:
    """The report's PNG figures, each only when its runs are in the folder; titled SIMULATED when a
    simulator made the data."""
    from servotool.plots.campaign import (
        LagSeries,
        SizePoint,
        amax_ceiling_figure,
        lag_fit_figure,
        png_bytes,
        runaway_travel_figure,
        shaped_arrival_figure,
        step_response_figure,
    )

    mark = "SIMULATED" if simulated else ""
    series = []
    for fa in lags:
        r = fa.result
        assert isinstance(r, LagResult)
        series.append(
            LagSeries(
                f"{_label(fa)} J{r.joint + 1}",
                [p.speed_deg_s for p in r.passes],
                [p.delta_mean_deg for p in r.passes],
                r.fit.lag_ms if r.fit else math.nan,
                r.fit.ci95_ms if r.fit else (math.nan, math.nan),
            )
        )
    travel, arrival = [], []
    for fa in steps:
        r = fa.result
        assert isinstance(r, StepResult)
        cfg = fa.meta.config
        for m in r.steps:
            if r.shaped and math.isfinite(m.arrive_ms):
                arrival.append(SizePoint(abs(m.size_deg), m.arrive_ms, f"a_max {cfg.get('a_max', 0):g}"))
            elif not r.shaped and math.isfinite(m.travel_deg) and m.verdict != "cut short":
                travel.append(SizePoint(abs(m.size_deg), m.travel_deg, _transport(cfg)))
    built = [
        ("lag-fit", "lag fit", lag_fit_figure(series, mark)),
        ("amax-ceiling", "a_max ceiling of shaped steps", amax_ceiling_figure(_amax_runs(steps), mark)),
        ("step-responses", "step responses", step_response_figure(_traces(steps), mark)),
        ("runaway-travel", "runaway travel against step size", runaway_travel_figure(travel, mark)),
        ("shaped-arrival", "shaped arrival against step size", shaped_arrival_figure(arrival, mark)),
    ]
    return [ReportFigure(name, title, png_bytes(fig)) for name, title, fig in built if fig is not None]


def _intro(
    folder: Path, campaign: Campaign | None, files: Sequence[FileAnalysis], sweeps: Sequence[SweepRow]
) -> list[str]:
    lines = []
    if campaign is not None:
        lines.append(f"**{campaign.name}**: {campaign.purpose}")
        if campaign.header:
            lines.append(campaign.header.replace("\n", " "))
    devices = sorted(
        {f"{fa.meta.device}{' (SIMULATED)' if fa.meta.simulated else ''}" for fa in files}
        | {f"{s.device}{' (SIMULATED)' if s.simulated else ''}" for s in sweeps}
    )
    lines.append(f"Device: {', '.join(devices) if devices else '-'}. Folder: `{folder}`.")
    if campaign is not None:
        rules = ", ".join(f"{k}: {v}" for k, v in campaign.safety.to_dict().items() if v not in (None, False))
        lines.append(f"Safety rules: {rules or 'none given'}.")
    return lines


# header config keys the report reads, and what each must hold
_NUMBER_KEYS = ("sweep_deg", "a_max", "v_max", "size_deg", "cmd_period_s")
_NUMBER_LIST_KEYS = ("speeds_deg_s", "start_pose")


def _is_number(v: Any) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool)


def config_problem(config: dict[str, Any]) -> str | None:
    """Why a recording's header config cannot go into the report (a key the report reads holds the wrong
    kind of value), or None when it can."""
    for key in _NUMBER_KEYS:
        if key in config and not _is_number(config[key]):
            return f"config {key} is {config[key]!r}, not a number"
    for key in _NUMBER_LIST_KEYS:
        v = config.get(key, [])
        if not (isinstance(v, list) and all(_is_number(x) for x in v)):
            return f"config {key} is {v!r}, not a list of numbers"
    joint = config.get("joint", 0)
    if not (isinstance(joint, int) and not isinstance(joint, bool) and joint >= 0):
        return f"config joint is {joint!r}, not a joint index"
    return None


def build_report(folder: str | Path) -> Report:
    """Recompute the report of a campaign folder from its CSVs (and campaign.yaml when present). A file
    whose header config the report cannot read is left out and named among the problems."""
    folder = Path(folder)
    campaign = _load_campaign(folder)
    analysed = analyze_paths([folder])
    unusable = {id(fa): config_problem(fa.meta.config) for fa in analysed.files}
    files = sorted((fa for fa in analysed.files if unusable[id(fa)] is None), key=lambda fa: fa.meta.created)
    lags = [fa for fa in files if isinstance(fa.result, LagResult) and not fa.meta.config.get("cold_start")]
    cold = [fa for fa in files if isinstance(fa.result, LagResult) and fa.meta.config.get("cold_start")]
    steps = [fa for fa in files if isinstance(fa.result, StepResult)]
    title = f"Campaign report: {campaign.name if campaign else folder.name}"
    sweeps, sweep_problems = read_sweeps(folder)
    report = Report(title, _intro(folder, campaign, files, sweeps))
    report.tables += [lag_table(lags)] if lags else []
    report.tables += [cold_table(cold)] if cold else []
    report.tables += [step_table(steps)] if steps else []
    if steps:
        rows = ending_rows(steps, _label)
        report.tables.append(ReportTable("how each step run ended", ENDING_HEADERS, rows, ENDING_NOTE))
    if sweeps:
        report.tables.append(sweep_table(sweeps))
        report.limits = limits_block(sweeps)
    device = files[0].meta.device if files else (campaign.device if campaign else "")
    if files or not sweeps:
        report.tuning, report.tuning_note = tuning_block(lags, steps, device)
    report.simulated = ", ".join(
        sorted(
            {fa.meta.device for fa in files if fa.meta.simulated} | {s.device for s in sweeps if s.simulated}
        )
    )
    report.outcome = outcome_lines(lags, steps, sweeps, report.simulated, cold)
    report.figures = build_figures(lags, steps, simulated=bool(report.simulated))
    report.problems = [
        f"{p.path}: {p.reason}" for p in analysed.problems if not Path(p.path).name.startswith("sweep-")
    ]
    report.problems += [
        f"{fa.path}: left out of the report: {unusable[id(fa)]}"
        for fa in analysed.files
        if unusable[id(fa)] is not None
    ]
    report.problems += sweep_problems
    return report


def render_markdown(
    report: Report, figure_dir: str = "plots", figure_src: Callable[[ReportFigure], str] | None = None
) -> str:
    """The report as Markdown, its measured outcome first; figures are referenced as
    `<figure_dir>/<name>.png`, or by `figure_src(figure)` (the HTML page's inline images)."""
    out = [f"# {report.title}", ""]
    if report.outcome:
        out += ["## Outcome", ""] + [f"* {line}" for line in report.outcome] + [""]
    for line in report.intro:
        out += [line, ""]
    for t in report.tables:
        out += [f"## {t.title}", "", "| " + " | ".join(t.headers) + " |", "|" + "---|" * len(t.headers)]
        out += ["| " + " | ".join(c.replace("|", "/") for c in row) + " |" for row in t.rows]
        out += ["", t.note, ""] if t.note else [""]
    if report.figures:
        out += ["## Plots", ""]
        for f in report.figures:
            src = figure_src(f) if figure_src is not None else f"{figure_dir}/{f.name}.png"
            out += [f"![{f.title}]({src})", ""]
    if report.limits:
        out += [
            "## Mapped limits",
            "",
            "For the arm's parameter file (`servotool sweep --limits FILE` merges them into it):",
            "",
            "```yaml",
            report.limits,
            "```",
            "",
        ]
    if report.tuning or report.tuning_note:
        out += ["## Guard tuning", ""]
    if report.tuning:
        out += ["Paste into your controller's guard configuration:", "", "```yaml", report.tuning, "```", ""]
    out += [report.tuning_note, ""] if report.tuning_note else []
    if report.problems:
        out += ["## Files not analysed", ""] + [f"* {p}" for p in report.problems] + [""]
    return "\n".join(out)


_STYLE = (
    "body{font-family:sans-serif;max-width:1100px;margin:2em auto;padding:0 1em}"
    "table{border-collapse:collapse;font-size:13px}td,th{border:1px solid #ccc;padding:2px 6px;"
    "text-align:right}th{background:#f3f3f3}pre{background:#f6f6f6;padding:1em}code{background:#f6f6f6}"
    "img{max-width:100%}"
)


def _inline_png(figure: ReportFigure) -> str:
    return "data:image/png;base64," + base64.b64encode(figure.png).decode("ascii")


def render_html(report: Report) -> str:
    """The report as one self-contained HTML page: the Markdown of render_markdown rendered by
    Python-Markdown (tables and code blocks as such, no raw Markdown left), figures inline as base64 PNG,
    no external resource. Text that looks like HTML is shown as text, never passed through."""
    import markdown

    md = markdown.Markdown(extensions=["tables", "fenced_code"], output_format="html")
    md.preprocessors.deregister("html_block")  # a `<name>` in a campaign's text is text, not a tag
    md.inlinePatterns.deregister("html")
    body = md.convert(render_markdown(report, figure_src=_inline_png))
    return "\n".join(
        [
            "<!DOCTYPE html>",
            "<html><head><meta charset='utf-8'>",
            f"<title>{html.escape(report.title)}</title>",
            f"<style>{_STYLE}</style></head><body>",
            body,
            "</body></html>",
        ]
    )


REPORT_FILES = ("report.md", "report.html")
_OWN_REPORT_START = {"report.md": "# Campaign report: ", "report.html": "<!DOCTYPE html>"}


def report_problem(folder: str | Path) -> str | None:
    """Why a report cannot be written into `folder` without losing something, or None: a report.md or
    report.html there that servotool did not write (a report it wrote is derived data, rewritten freely),
    or a folder, or a file where plots/ would go."""
    folder = Path(folder)
    for name in REPORT_FILES:
        path = folder / name
        if path.is_dir():
            return f"{path}: a folder, where the report would go"
        if path.exists():
            try:
                with path.open(encoding="utf-8", errors="replace") as fh:
                    head = fh.read(4096)
            except OSError as exc:
                return f"{path}: cannot read ({exc.strerror or exc})"
            if not head.startswith(_OWN_REPORT_START[name]) or "Campaign report: " not in head:
                return f"{path}: not a servotool report; the report never writes over it (move it away)"
    if (folder / "plots").exists() and not (folder / "plots").is_dir():
        return f"{folder / 'plots'}: a file, where the report's plots would go"
    return None


def write_report(folder: str | Path, report: Report | None = None) -> list[Path]:
    """Write `report.md`, `report.html` and `plots/*.png` in the folder (recomputed from its CSVs unless
    `report` is given); returns the two report paths. Overwrites an earlier report (it is derived data)."""
    folder = Path(folder)
    report = report or build_report(folder)
    plots = folder / "plots"
    if report.figures:
        plots.mkdir(exist_ok=True)
    for f in report.figures:  # each file whole or not at all: an interrupted report is written again
        write_atomic(plots / f"{f.name}.png", f.png)
    md, page = folder / "report.md", folder / "report.html"
    write_atomic(md, render_markdown(report))
    write_atomic(page, render_html(report))
    return [md, page]
