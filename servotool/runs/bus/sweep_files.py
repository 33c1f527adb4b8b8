"""A limit-mapping run with its files: one CSV per sweep, the run as JSON, the merged limits YAML and figures.

What gets written (all under the output folder unless said otherwise):

* ``sweep-j<N>-<dir>_<device>_<time>.csv`` per sweep (servotool-csv, closed with its end line however the run
  ends);
* ``sweep_<device>_<time>.json``: every setting, the stored and configured limits, every sweep and the found
  limits;
* ``..._limits.yaml``: the found limits merged into a copy of the --limits file (or a fresh parameter file);
  with `update_limits` the merge replaces the limits file itself instead, after a numbered backup
  (FILE.bak, FILE.bak.1, ...), keeping the file's mode. A simulated bus never updates a limits file unless
  `force_sim` (refused before anything moves);
* with `plot`, a PNG per sweep and one summary figure of every mapped limit.
"""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from servotool.analysis.sweep import FoundLimit, SweepResult
from servotool.clock import Clock
from servotool.devices.bus import Bus, CountingBus
from servotool.devices.registry import DeviceURLError, url_facts
from servotool.errors import ExitCode, Refused
from servotool.io.atomic import write_atomic
from servotool.io.csvlog import CsvLogWriter, run_file_name, unique_path
from servotool.io.limits_yaml import (
    LimitsFile,
    LimitsFileError,
    merge_limits_text,
    update_in_place,
)
from servotool.io.paths import out_dir_problem, out_file_problem
from servotool.readings import HEADER_KEY
from servotool.runs.bus.reads import bus_readable
from servotool.runs.bus.servo import Abort
from servotool.runs.bus.sweep import (
    CSV_COLUMNS,
    CSV_UNITS,
    SweepConfig,
    SweepEvent,
    SweepRun,
    run_sweeps,
    sweep_config_dict,
)


@dataclass(frozen=True)
class SweepFiles:
    """Where a sweep run's files go and what may be overwritten.

    out_dir: folder of the run's files; limits_path / limits: the --limits file and what it said when read;
    update_limits: merge into that file itself; force_sim: allow that on a simulated bus; plot: write PNGs;
    command: the command line for the CSV headers; when: the run's timestamp (UTC, now by default)."""

    out_dir: Path
    limits_path: Path | None = None
    limits: LimitsFile | None = None
    update_limits: bool = False
    force_sim: bool = False
    plot: bool = False
    command: str = ""
    when: datetime | None = None


@dataclass
class SweepRecord:
    """A finished run: the sweeps, the JSON-ready result, the files written ({kind: path or [paths]})."""

    run: SweepRun
    result: dict[str, Any]
    outputs: dict[str, Any]
    found: dict[int, FoundLimit] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)


def limits_node(url: str) -> str | None:
    """The node name a new limits file of this bus takes (its family's fact; None when none applies)."""
    try:
        return url_facts(url).limits_node
    except DeviceURLError:
        return None


def link_stats(bus: Bus) -> dict[str, int]:
    """What the serial link went through (frames sent, replies, retries, timeouts, corrupted frames, bytes of
    noise skipped), where the backend counts it; {} otherwise."""
    stats = bus.stats if isinstance(bus, CountingBus) else None
    if stats is None or not dataclasses.is_dataclass(stats) or isinstance(stats, type):
        return {}
    return {k: int(v) for k, v in dataclasses.asdict(stats).items()}


def file_problems(files: SweepFiles, simulated: bool) -> list[str]:
    """Every problem of the file settings, one sentence each, checked before the bus is opened: an update
    without a limits file, an update of a limits file from a simulated bus without force_sim, a limits file
    that cannot be written, an output folder that is a file or cannot be made or written into."""
    out: list[str] = []
    if files.update_limits and files.limits_path is None:
        out.append("--update-limits needs --limits FILE")
    if files.update_limits and simulated and not files.force_sim:
        out.append(
            "--update-limits with a simulated bus would write simulated limits into "
            f"{files.limits_path or 'the limits file'}; add --force-sim if that is what you want"
        )
    path = files.limits_path
    if files.update_limits and path is not None and path.exists() and not os.access(path, os.W_OK):
        out.append(f"{path}: not writable, so --update-limits cannot update it")
    elif files.update_limits and path is not None:
        # the backup goes beside the name given, the new text beside the file a link names
        problem = out_file_problem(path, "--update-limits") or out_dir_problem(path.parent, "--update-limits")
        if problem:
            out.append(problem)
    out_problem = _out_problem(files.out_dir)
    if out_problem:
        out.append(out_problem)
    return out


def _out_problem(folder: Path) -> str | None:
    """Why the sweep could not record into `folder` (made if missing, probed for writing), or None: found
    before the bus opens, not once the arm has moved."""
    try:
        if folder.exists() and not folder.is_dir():
            return f"--out {folder}: is a file, not a folder"
    except OSError:
        pass  # a name the system refuses (too long): out_dir_problem says why
    return out_dir_problem(folder)


def _yaml_notes(found: dict[int, FoundLimit], stamp: str) -> dict[int, str]:
    notes = {}
    for joint, f in found.items():
        parts = []
        for side, src, det in (("lo", f.lo_source, f.lo_detail), ("hi", f.hi_source, f.hi_detail)):
            parts.append(f"{side} {det}" if src == "sweep" else f"{side} from {src} limit")
        notes[joint] = f"servotool sweep {stamp}: " + "; ".join(parts)
    return notes


def _write_limits(
    bus: Bus, config: SweepConfig, files: SweepFiles, found: dict[int, FoundLimit], stem: str, when: datetime
) -> tuple[dict[str, str], list[str]]:
    """Merge the found limits into a copy of the limits file (or into it, with update_limits)."""
    stamp = when.strftime("%Y-%m-%dT%H:%M:%SZ")
    header = (
        f"arm_limit for servo(s) {', '.join(map(str, sorted(found)))} mapped {stamp} by servotool "
        f"sweep on {bus.url}{' (SIMULATED)' if bus.simulated else ''}: {config.speed:g} pulses/s "
        f"toward the stored limits, each limit {config.inside} pulses inside the stop read back"
    )
    lf, path = files.limits, files.limits_path
    new = {j: (f.lo, f.hi) for j, f in found.items()}
    text = merge_limits_text(
        lf.text if lf else None,
        new,
        _yaml_notes(found, stamp),
        header,
        str(path) if path else "<new>",
        node=limits_node(bus.url),
    )
    copy = unique_path(files.out_dir, f"{stem}_limits.yaml")
    if not (files.update_limits and path is not None and lf is not None):
        return {"yaml": str(write_atomic(copy, text))}, []
    try:
        updated, backup = update_in_place(path, text, lf.text)
    except (LimitsFileError, OSError) as exc:
        return {"yaml": str(write_atomic(copy, text))}, [str(exc)]
    return {"yaml": str(updated), "backup": str(backup)}, []


def _plots(run: SweepRun, csv_paths: dict[int, Path], folder: Path, stem: str) -> dict[str, Any]:
    from servotool.plots.sweep import save_limits_summary, save_sweep_plot

    out: dict[str, Any] = {
        "png": [
            str(save_sweep_plot(r, csv_paths[id(r)].with_suffix(".png")))
            for r in run.results
            if id(r) in csv_paths and r.t
        ]
    }
    if run.results:
        summary = unique_path(folder, f"{stem}_limits.png")
        out["summary_png"] = str(save_limits_summary(run.results, run.found, run.stored, run.limits, summary))
    return out


def _csv_writers(
    bus: Bus, config: SweepConfig, files: SweepFiles, when: datetime, csv_paths: dict[int, Path]
) -> Callable[[SweepResult], CsvLogWriter]:
    """The factory of one CSV writer per sweep, in files.out_dir; each path goes into csv_paths by the
    sweep result's id."""
    folder = files.out_dir
    readable = bus_readable(bus)

    def writer_factory(res: SweepResult) -> CsvLogWriter:
        path = unique_path(folder, run_file_name(f"sweep-j{res.joint}-{res.direction}", bus.url, when))
        csv_paths[id(res)] = path
        cfg = {
            **sweep_config_dict(config),
            "joint": res.joint,
            "direction": res.direction,
            "start": res.start,
            "stored_limit": list(res.stored),
            "bound": res.bound,
        }
        return CsvLogWriter(
            path,
            device=bus.url,
            simulated=bus.simulated,
            config=cfg,
            units=CSV_UNITS,
            columns=CSV_COLUMNS,
            command=files.command,
            created=when,
            # what a read-back can be: analyze leaves out a row beyond it, as the run did
            extra={HEADER_KEY: [list(readable.span())]},
        )

    return writer_factory


def sweep_and_write(
    bus: Bus,
    clock: Clock,
    config: SweepConfig,
    files: SweepFiles,
    *,
    abort_requested: Abort = None,
    on_event: Callable[[SweepEvent], None] | None = None,
    stop_reason: Callable[[], str | None] | None = None,
) -> SweepRecord:
    """Run the sweeps (runs.sweep.run_sweeps) and write every file of the run; see the module doc.

    Refused before anything moves when file_problems finds a problem. A limits file that changed on disk
    while the run went on is not overwritten: the merge goes to the output folder and a note says so."""
    problems = file_problems(files, bus.simulated)
    if problems:
        raise Refused("; ".join(problems))
    when = files.when or datetime.now(timezone.utc)
    folder = files.out_dir
    stem = Path(run_file_name("sweep", bus.url, when)).stem
    csv_paths: dict[int, Path] = {}

    writer_factory = _csv_writers(bus, config, files, when, csv_paths)

    run = run_sweeps(
        bus,
        clock,
        config,
        configured=files.limits.limits if files.limits else None,
        abort_requested=abort_requested,
        writer_factory=writer_factory,
        on_event=on_event,
        stop_reason=stop_reason,
    )
    outputs: dict[str, Any] = {"csv": [str(csv_paths[id(r)]) for r in run.results if id(r) in csv_paths]}
    result = {
        "device": bus.url,
        "simulated": bus.simulated,
        "created": when.isoformat(),
        "command": files.command,
        "config": sweep_config_dict(config),
        **run.as_dict(),
        "link": link_stats(bus),
    }
    found = {j: f for j, f in run.found.items() if "sweep" in (f.lo_source, f.hi_source)}
    notes: list[str] = []
    try:  # the arm is held and back: a file that cannot be written now (a full disk) ends the run as a fault
        folder.mkdir(parents=True, exist_ok=True)
        json_path = unique_path(folder, f"{stem}.json")
        json_path.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
        outputs["json"] = str(json_path)
        if found:
            written, notes = _write_limits(bus, config, files, found, stem, when)
            outputs.update(written)
        if files.plot:
            outputs.update(_plots(run, csv_paths, folder, stem))
    except OSError as exc:
        if run.error is None:
            run.error = f"the run's files could not all be written ({exc.strerror or exc}: {exc.filename})"
            run.exit_code = ExitCode.FAULT
    if run.bad_note:
        notes = [run.bad_note, *notes]
    return SweepRecord(run=run, result=result, outputs=outputs, found=found, notes=notes)
