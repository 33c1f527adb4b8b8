"""Run a validated campaign: every run in order, every CSV into one folder, a state file to resume from.

The folder (`<out>/<name>_<UTC stamp>/`) holds a copy of the campaign file (`campaign.yaml`), the state file
(`campaign-state.json`), every run's CSV and, at the end, the report. A run that finished (complete, or ended
by a controller fault) is kept and recorded in the state file before the next one starts. A run stopped by
Ctrl-C is not finished: its partial CSV is renamed `*.csv.interrupted` (kept, but not part of the results) and
`resume` starts again from that run. The campaign stops at the first fault unless its safety rules allow
faults, and at the first run that is refused or cannot reach its device. Never prints: progress goes to the
hooks.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import re
import shutil
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from servotool.clock import Clock, MonotonicClock
from servotool.devices.arm import Arm
from servotool.devices.bus import bus_clock
from servotool.devices.registry import DeviceURLError, open_arm, open_bus
from servotool.errors import DeviceError, Refused, signal_label
from servotool.io.csvlog import CsvLogWriter, run_file_name, unique_path
from servotool.io.devlock import DeviceLock
from servotool.runs.arm.cold_start import run_cold_ramp
from servotool.runs.arm.ramp import ramp_plan, run_ramp
from servotool.runs.arm.settings import needs_test_arm_probe
from servotool.runs.arm.step import run_step, step_plan
from servotool.runs.arm.stream import COMPLETE, INTERRUPTED, RunRefused
from servotool.runs.bus.sweep import CSV_COLUMNS, CSV_UNITS, run_sweeps, sweep_config_dict, sweep_plan
from servotool.runs.campaign.plan import (
    Campaign,
    CampaignInvalid,
    RunSpec,
    device_facts,
    ramp_settings,
    step_settings,
    sweep_config,
    validate,
)
from servotool.runs.outcome import RunStatus
from servotool.runs.ownership import DeviceBusy, LockUnavailable, claim, require_free
from servotool.runs.plan import MotionPlan
from servotool.runs.signals import StopSignals

STATE_FILE = "campaign-state.json"
CAMPAIGN_COPY = "campaign.yaml"
PARTIAL_SUFFIX = ".interrupted"

# run statuses in the state file
DONE = "complete"
FAULTED = "fault"
STOPPED = "interrupted"
REFUSED = "refused"
UNREACHABLE = "device-error"


@dataclass
class RunRecord:
    """How one run ended. files: its CSVs (relative to the folder); faults: controller fault latches and
    guard trips seen; reason: one line when it did not complete."""

    index: int
    command: str
    why: str
    status: str
    files: list[str] = field(default_factory=list)
    reason: str | None = None
    faults: int = 0
    notes: list[str] = field(default_factory=list)


@dataclass
class CampaignState:
    """The state file: what ran, where it stopped, what `resume` starts from (next_index)."""

    name: str
    file: str
    device: str
    created: str
    runs: list[RunRecord] = field(default_factory=list)
    next_index: int = 0
    total: int = 0
    stopped: str | None = None  # why the campaign stopped before its end; None while going or when done
    stop_status: str | None = None

    @property
    def done(self) -> bool:
        return self.next_index >= self.total and self.stopped is None

    def save(self, folder: Path) -> Path:
        path = folder / STATE_FILE
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(asdict(self), indent=1) + "\n", encoding="utf-8")
        tmp.replace(path)
        return path

    @classmethod
    def load(cls, folder: Path) -> CampaignState:
        """Read the state file of a campaign folder; raises Refused when it is missing, unreadable, or holds
        a field of the wrong type or out of range (a file edited by hand: next_index outside 0..total, a
        device that is no text)."""
        try:
            raw = json.loads((folder / STATE_FILE).read_text(encoding="utf-8"))
            problem = _state_problem(raw)
            if problem:
                raise ValueError(problem)
            runs = [RunRecord(**r) for r in raw.pop("runs", [])]
            return cls(**raw, runs=runs)
        except (OSError, ValueError, TypeError) as exc:
            raise Refused(f"{folder}: no readable campaign state ({STATE_FILE}): {exc}") from None


_STATE_TEXT = ("name", "file", "device", "created")


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _state_problem(raw: Any) -> str | None:
    """What is wrong with a state file's JSON, or None: every field of CampaignState with its type, a
    non-empty device, 0 <= next_index <= total, and runs a list of RunRecord mappings."""
    if not isinstance(raw, dict):
        return "not a JSON object"
    known = {f.name for f in dataclasses.fields(CampaignState)}
    if set(raw) - known:
        return f"unknown field(s) {', '.join(sorted(set(raw) - known))}"
    for key in _STATE_TEXT:
        if not isinstance(raw.get(key), str) or not raw[key]:
            return f"{key} is not a text"
    if not (
        _is_int(raw.get("total"))
        and _is_int(raw.get("next_index"))
        and 0 <= raw["next_index"] <= raw["total"]
    ):
        return "next_index and total are not whole numbers with 0 <= next_index <= total"
    if any(raw.get(k) is not None and not isinstance(raw[k], str) for k in ("stopped", "stop_status")):
        return "stopped and stop_status are not texts"
    runs = raw.get("runs", [])
    needed = {
        f.name
        for f in dataclasses.fields(RunRecord)
        if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
    }
    if not isinstance(runs, list) or not all(isinstance(r, dict) and needed <= set(r) for r in runs):
        return "runs is not a list of run records"
    return None


class CampaignBusy(Refused):
    """Another servotool process is running this campaign folder: nothing was written to it (exit 2)."""


def folder_lock(folder: Path) -> DeviceLock:
    """The host-wide lock of one campaign folder: one process writes its runs, CSVs and state at a time."""
    return DeviceLock(f"campaign-{folder.resolve()}")


@contextlib.contextmanager
def hold_folder(folder: Path) -> Iterator[None]:
    """Hold the folder's lock for the context; CampaignBusy when another process holds it (a DeviceBusy
    from inside the context, an arm's lock, passes on as it is)."""
    with contextlib.ExitStack() as stack:
        try:
            stack.enter_context(folder_lock(folder))
        except DeviceBusy as exc:
            raise CampaignBusy(
                f"{folder} is being run by another servotool process ({exc.holder}); wait for "
                "it to end, or stop it, before resuming"
            ) from None
        yield


@dataclass
class CampaignHooks:
    """Callbacks of a campaign run; all optional. confirm(run, url) asks the typed confirmation of a raw
    step on a real arm and returns whether it was given; run_progress(run) gives the per-run callbacks
    (on_tick, on_pass, on_status) for that run."""

    signals: StopSignals | None = None  # the command's: SIGTERM and SIGHUP end a stream like Ctrl-C
    on_run_start: Callable[[RunSpec, int], None] | None = None
    on_run_end: Callable[[RunSpec, RunRecord], None] | None = None
    confirm: Callable[[RunSpec, str], bool] | None = None
    run_progress: Callable[[RunSpec], dict[str, Any]] | None = None


@dataclass
class CampaignRun:
    folder: Path
    state: CampaignState


def campaign_folder(out: Path, name: str, when: datetime | None = None) -> Path:
    stamp = (when or datetime.now(timezone.utc)).strftime("%Y%m%dT%H%M%SZ")
    return unique_path(out, f"{name}_{stamp}")


def find_resumable(out: Path, name: str) -> Path:
    """The newest folder of this campaign under `out` that did not reach its end; Refused when none."""
    own = re.compile(re.escape(name) + r"_\d{8}T\d{6}Z(-\d+)?")  # not campaign <name>_more's folders
    folders = sorted(
        (p for p in out.glob(f"{name}_*") if own.fullmatch(p.name) and (p / STATE_FILE).is_file()),
        reverse=True,
    )
    for folder in folders:
        state = CampaignState.load(folder)
        if not state.done:
            return folder
    newest = _missing_report(folders[0]) if folders else ""
    raise Refused(f"no unfinished run of campaign {name} under {out} to resume{newest}")


def _missing_report(folder: Path) -> str:
    """'; ... rebuild it with ...' when a finished campaign folder lacks its report (the campaign was
    killed while the report was written: it is rebuilt from the CSVs, no run needs running again), else
    ''."""
    if all((folder / name).is_file() for name in ("report.md", "report.html")):
        return ""
    return f"; {folder} has every run but no report: rebuild it with `servotool analyze {folder} --report`"


def start_campaign(campaign: Campaign, out: Path, robot: str | None = None) -> CampaignRun:
    """A new campaign folder with its state file and a copy of the campaign file. The campaign must have been
    validated for `robot` (or its own device); re-checked here, raising CampaignInvalid."""
    problems = validate(campaign, robot)
    if problems:
        raise CampaignInvalid(problems)
    for _ in range(100):  # another campaign started in the same second may make the chosen folder first
        folder = campaign_folder(out, campaign.name)
        try:
            folder.mkdir(parents=True, exist_ok=False)
            break
        except FileExistsError:
            continue
    else:  # only a name that exists without existing (a dangling link in its place) comes back each time
        raise Refused(f"{folder}: cannot be made (something of that name is in the way); move it away")
    (folder / CAMPAIGN_COPY).write_text(campaign.text, encoding="utf-8")
    state = CampaignState(
        name=campaign.name,
        file=str(campaign.path),
        device=robot or campaign.device,
        created=datetime.now(timezone.utc).isoformat(),
        total=len(campaign.runs),
    )
    state.save(folder)
    return CampaignRun(folder, state)


def resume_campaign(campaign: Campaign, folder: Path, robot: str | None = None) -> CampaignRun:
    """Go on in an unfinished campaign folder. Refused when it is done, belongs to another campaign or to an
    older text of this one, stopped on a fault its rules do not allow to pass, or `robot` differs from the
    device it ran on."""
    state = CampaignState.load(folder)
    if state.name != campaign.name or state.total != len(campaign.runs):
        raise Refused(
            f"{folder} holds campaign {state.name} ({state.total} runs), not {campaign.name} "
            f"({len(campaign.runs)} runs)"
        )
    copy = folder / CAMPAIGN_COPY
    try:
        started_with = copy.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:  # removed or damaged: whether the file changed is unknown
        why = getattr(exc, "strerror", None) or exc
        raise Refused(
            f"{folder}: its copy of the campaign ({CAMPAIGN_COPY}) cannot be read ({why}); run it "
            "afresh (without --resume)"
        ) from None
    if started_with != campaign.text:
        raise Refused(f"{campaign.path} changed since {folder} started; run it afresh (without --resume)")
    if state.done:
        raise Refused(f"{folder}: campaign {state.name} already ran to its end{_missing_report(folder)}")
    if state.stop_status == FAULTED and not campaign.safety.faults_allowed:
        raise Refused(
            f"{folder}: the campaign stopped on a fault ({state.stopped}); it does not go past a "
            "fault (safety: faults_allowed: false)"
        )
    if robot and robot != state.device:
        raise Refused(f"{folder} ran on {state.device}; resume it on the same device, not {robot}")
    with hold_folder(folder):  # refused now when another process runs it (run_campaign holds it then)
        pass
    problems = validate(campaign, state.device)
    if problems:
        raise CampaignInvalid(problems)
    state.stopped, state.stop_status = None, None
    return CampaignRun(folder, state)


def run_plans(campaign: Campaign, url: str) -> list[MotionPlan]:
    """Each run's plan (a checked campaign: its settings are valid on this device), known before anything
    opens: what moves, how far and fast, and for how long (the warm-ups and a cold start's wait left out)."""
    facts = device_facts(url)
    plans = []
    for run in campaign.runs:
        if run.command == "step":
            plans.append(step_plan(step_settings(run.options, facts)))
        elif run.command == "sweep":
            plans.append(sweep_plan(sweep_config(run.options, facts), facts.position_range))
        else:
            plans.append(ramp_plan(ramp_settings(run.options, facts)))
    return plans


def _command_line(campaign: Campaign, run: RunSpec) -> str:
    return f"servotool campaign run {campaign.path} # {run.label} of {len(campaign.runs)}: {run.why}"


def _progress(hooks: CampaignHooks, run: RunSpec) -> dict[str, Any]:
    cbs = hooks.run_progress(run) if hooks.run_progress else {}
    return {k: cbs.get(k) for k in ("on_tick", "on_pass", "on_status")}


def _open_arm(url: str, clock: MonotonicClock, rpc: bool) -> Arm:
    kwargs: dict[str, Any] = {"now": clock.now}
    if rpc:
        kwargs["transport"] = "rpc"
    try:
        arm: Arm = open_arm(url, **kwargs)
    except (DeviceURLError, OSError) as exc:
        raise DeviceError(f"cannot open {url}: {exc}") from None
    return arm


def _stream_record(run: RunSpec, result: Any, folder: Path) -> RunRecord:
    """The record of a ramp or step run from what it returned."""
    out = result.outcome
    faults = 1 if out.fault is not None else 0
    faults += 1 if out.guard_reason else 0
    if result.analysis is not None and hasattr(result.analysis.result, "total_faults"):
        faults = max(faults, int(result.analysis.result.total_faults))
    lost = out.status in (RunStatus.CONNECTION_LOST, RunStatus.DEVICE_ERROR)
    status = DONE if out.status == COMPLETE else STOPPED if out.status == INTERRUPTED else FAULTED
    status = UNREACHABLE if lost else status
    if status == DONE and faults:
        status = FAULTED
    rel = str(Path(result.path).relative_to(folder))
    reason = out.reason if status != DONE else None
    if status == FAULTED and reason is None:
        reason = f"{faults} fault latch(es) during the run"
    return RunRecord(run.index, run.command, run.why, status, [rel], reason, faults, list(result.notes))


def _confirmed_step(run: RunSpec, url: str, hooks: CampaignHooks) -> Any:
    """The step settings of a run; a raw step (or an a_max probe above the braked-stop bound) on a device that
    is not a simulator is asked its typed confirmation here, before the device opens (RunRefused when it is
    not given)."""
    facts = device_facts(url)
    step = step_settings(run.options, facts)
    if (not step.shaped or needs_test_arm_probe(step, facts.motion)) and not facts.simulated:
        step.confirmed = bool(step.test_arm and hooks.confirm and hooks.confirm(run, url))
        if not step.confirmed:
            what = "a raw step" if not step.shaped else f"a shaped step at a_max {step.a_max:g}"
            raise RunRefused(f"the typed confirmation of {what} on a real arm was not given")
    return step


def _run_arm(
    campaign: Campaign,
    run: RunSpec,
    url: str,
    folder: Path,
    hooks: CampaignHooks,
    clock_factory: Callable[[], MonotonicClock],
) -> RunRecord:
    o = run.options
    step = _confirmed_step(run, url, hooks) if run.command == "step" else None
    clock = clock_factory()
    arm = _open_arm(url, clock, bool(o.get("rpc", False)))
    with contextlib.closing(arm):
        require_free(arm)
        kwargs = dict(
            clock=clock, out_dir=folder, command=_command_line(campaign, run), **_progress(hooks, run)
        )
        if step is not None or not o.get("cold_start"):
            kwargs["signals"] = hooks.signals
        if step is not None:
            result: Any = run_step(arm, step, **kwargs)
        else:
            runner = run_cold_ramp if o.get("cold_start") else run_ramp
            result = runner(arm, ramp_settings(o, device_facts(url)), **kwargs)
    return _stream_record(run, result, folder)


def _run_sweep(campaign: Campaign, run: RunSpec, url: str, folder: Path) -> RunRecord:
    facts = device_facts(url)
    config = sweep_config(run.options, facts)
    try:
        bus = open_bus(url)
    except (DeviceURLError, OSError) as exc:
        raise DeviceError(f"cannot open {url}: {exc}") from None
    when = datetime.now(timezone.utc)
    files: list[str] = []

    def writer(res: Any) -> CsvLogWriter:
        path = unique_path(folder, run_file_name(f"sweep-j{res.joint}-{res.direction}", url, when))
        files.append(str(path.relative_to(folder)))
        cfg = {
            **sweep_config_dict(config),
            "mode": "sweep",
            "joint": res.joint,
            "direction": res.direction,
            "start": res.start,
            "stored_limit": list(res.stored),
            "bound": res.bound,
        }
        return CsvLogWriter(
            path,
            device=url,
            simulated=bus.simulated,
            config=cfg,
            units=CSV_UNITS,
            columns=CSV_COLUMNS,
            command=_command_line(campaign, run),
            created=when,
        )

    with contextlib.closing(bus):
        result = run_sweeps(bus, bus_clock(bus), config, writer_factory=writer)
    status = FAULTED if result.error else STOPPED if result.aborted else DONE
    reason = result.error or ("aborted" if result.aborted else None)
    return RunRecord(run.index, run.command, run.why, status, files, reason, 1 if result.error else 0)


@contextlib.contextmanager
def _partial_files(folder: Path) -> Iterator[set[Path]]:
    """The CSVs written inside the block (to set aside when the run is not finished)."""
    before = set(folder.glob("*.csv"))
    new: set[Path] = set()
    try:
        yield new
    finally:
        new.update(set(folder.glob("*.csv")) - before)


def _one_run(
    campaign: Campaign,
    run: RunSpec,
    cr: CampaignRun,
    hooks: CampaignHooks,
    clock_factory: Callable[[], MonotonicClock],
) -> RunRecord:
    """Run one campaign run and return its record; a run that did not finish has its CSVs set aside."""
    url = cr.state.device
    with _partial_files(cr.folder) as written:
        try:
            if run.command == "sweep":
                record = _run_sweep(campaign, run, url, cr.folder)
            else:
                record = _run_arm(campaign, run, url, cr.folder, hooks, clock_factory)
        except KeyboardInterrupt as exc:  # Ctrl-C, or SIGTERM / SIGHUP as a StopSignal
            record = RunRecord(run.index, run.command, run.why, STOPPED, reason=signal_label(exc))
        except (RunRefused, Refused, ValueError) as exc:
            record = RunRecord(run.index, run.command, run.why, REFUSED, reason=str(exc))
        except DeviceError as exc:
            record = RunRecord(run.index, run.command, run.why, UNREACHABLE, reason=str(exc))
    if record.status in (STOPPED, UNREACHABLE):  # not finished: resume runs it again
        for path in written:
            if path.exists():
                shutil.move(str(path), str(path) + PARTIAL_SUFFIX)
        record.files = []
    return record


def run_campaign(
    campaign: Campaign,
    cr: CampaignRun,
    hooks: CampaignHooks | None = None,
    clock_factory: Callable[[], Clock] | None = None,
) -> CampaignState:
    """Run the campaign's runs from cr.state.next_index on; returns the final state (also saved).

    Stops after a run that was interrupted, refused or lost its device, and after a faulted run unless the
    campaign's safety rules allow faults. state.stopped says why, state.stop_status with which status.
    The folder is held for the whole run: CampaignBusy (nothing written) when another process runs it.
    """
    hooks = hooks or CampaignHooks()
    make_clock: Callable[[], Any] = clock_factory or MonotonicClock
    state = cr.state
    try:  # one writer per folder and per arm: the whole campaign holds both (CampaignBusy passes on)
        with hold_folder(cr.folder), claim(state.device):
            _run_all(campaign, cr, hooks, make_clock)
    except (DeviceBusy, LockUnavailable) as exc:
        state.stopped, state.stop_status = str(exc), REFUSED
    except KeyboardInterrupt as exc:
        state.stopped, state.stop_status = f"{signal_label(exc)} between runs", STOPPED
    # a signal now is counted only (the run is stopping anyway): the folder and its state are left whole
    with hooks.signals.deferring(raise_after=False) if hooks.signals else contextlib.nullcontext():
        _set_aside_strays(cr.folder, state)
        state.save(cr.folder)
    return state


def _set_aside_strays(folder: Path, state: CampaignState) -> None:
    """Rename every CSV of the folder that no finished run lists to `*.csv.interrupted`: the report is
    rebuilt from the folder's CSVs, and a run cut short while its own partial CSV was being set aside (a
    second Ctrl-C) left that CSV under its name."""
    kept = {name for record in state.runs for name in record.files}
    for path in folder.glob("*.csv"):
        if path.name not in kept:
            shutil.move(str(path), str(path) + PARTIAL_SUFFIX)


def _run_all(
    campaign: Campaign, cr: CampaignRun, hooks: CampaignHooks, make_clock: Callable[[], Any]
) -> None:
    """The runs from state.next_index on, the state saved after each; stops as run_campaign says."""
    state = cr.state
    for run in campaign.runs[state.next_index :]:
        if hooks.on_run_start:
            hooks.on_run_start(run, len(campaign.runs))
        record = _one_run(campaign, run, cr, hooks, make_clock)
        if hooks.on_run_end:
            hooks.on_run_end(run, record)
        if record.status in (DONE, FAULTED):  # finished: kept, and resume starts after it
            state.runs.append(record)
            state.next_index = run.index + 1
        stop = record.status in (STOPPED, REFUSED, UNREACHABLE)
        if stop or (record.status == FAULTED and not campaign.safety.faults_allowed):
            state.stopped = f"{run.label}: {record.reason or record.status}"
            state.stop_status = record.status
            return
        state.save(cr.folder)
