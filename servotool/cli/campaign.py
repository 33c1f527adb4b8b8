"""`servotool campaign check|run|list`: measurement campaigns written as files, validated, run, reported."""

from __future__ import annotations

import difflib
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.markup import escape
from rich.table import Table

from servotool.cli.common import console, err_console, fail, print_json, refuse
from servotool.cli.confirm import confirm_typed
from servotool.cli.live import RunProgress
from servotool.cli.render import compact_table, report_table
from servotool.devices.registry import ARM, known_urls
from servotool.errors import ExitCode, FileFormatError, Refused, exit_code_of, signal_label
from servotool.io.campaign_file import shipped_campaign_files
from servotool.io.paths import out_dir, out_dir_problem
from servotool.runs.options import joint_name
from servotool.runs.signals import StopSignals

if TYPE_CHECKING:  # the campaign's runs and report (numpy, pandas, scipy, matplotlib) load when one runs
    from servotool.runs.campaign.plan import Campaign, RunSpec
    from servotool.runs.campaign.report import Report
    from servotool.runs.campaign.run import CampaignRun, CampaignState, RunRecord
    from servotool.runs.plan import MotionPlan


def _sim_example() -> str:
    """A simulated arm's URL for the help texts, from the registry."""
    sims = [u for u in known_urls(ARM) if u.startswith("sim:")]
    return sims[0] if sims else "sim:<profile>"


campaign_app = typer.Typer(
    help="Measurement campaigns as files: a device, safety rules and a series of runs, checked before "
    "anything moves, run in one go, reported in one folder.",
    no_args_is_help=True,
)

FileArg = typer.Argument(
    ..., help="Campaign file (YAML), or the name of a shipped one as `servotool campaign list` shows it."
)
RobotOption = typer.Option(
    None,
    "--robot",
    help=f"Replace the campaign's device for every run (rehearse on {_sim_example()}, then the arm).",
)
BusOption = typer.Option(
    None, "--bus", help="Replace a bus campaign's device for every run (as --robot does an arm's)."
)


def device_given(robot: str | None, bus: str | None) -> str | None:
    """The device that replaces the campaign's: --robot (an arm) or --bus (a bus), one of them (exit 2 when
    both are given). Either is checked against the campaign's runs like the file's own device."""
    if robot is not None and bus is not None:
        fail("give --robot or --bus, not both: a campaign runs on one device")
    return robot if robot is not None else bus


def campaign_path(given: Path) -> Path:
    """The campaign file a FILE argument names: the file itself when it exists, else the shipped campaign of
    that name (`campaign list`'s names, with or without .yaml). One error line and exit 2 when neither is,
    naming the closest shipped names."""
    if given.exists() or given.parent != Path("."):
        return given  # a path: read as given (a missing one is said when it is read)
    shipped = {p.stem: p for p in shipped_campaign_files()}
    name = given.stem if given.suffix.lower() in (".yaml", ".yml") else given.name
    if name in shipped:
        return shipped[name]
    close = difflib.get_close_matches(name, list(shipped), n=3, cutoff=0.5)
    hint = f"did you mean {' or '.join(close)}? " if close else ""
    fail(
        f"{given}: no such file, and no shipped campaign of that name ({hint}`servotool campaign list` "
        "shows them)"
    )


def _load(path: Path, robot: str | None) -> Campaign:
    """The validated campaign, or every problem on stderr (one line each) and exit 2."""
    from servotool.runs.campaign.plan import CampaignInvalid, load_campaign

    try:
        return load_campaign(path, robot)
    except CampaignInvalid as exc:
        for problem in exc.problems:
            err_console.print(f"[bold red]error:[/] {escape(problem)}", highlight=False, soft_wrap=True)
        fail(f"{path}: {len(exc.problems)} problem(s); nothing was run")
    except FileFormatError as exc:
        fail(str(exc))


def _plan_table(campaign: Campaign, plans: list[MotionPlan] | None = None) -> Table:
    """The campaign's runs, one row each; with their plans, each run's estimated duration too."""
    from servotool.runs.plan import duration_text

    table = compact_table(f"{campaign.name}: {campaign.purpose}")
    cols = ("#", "command", "options", "why") + (("estimated",) if plans else ())
    for col in cols:
        # the options and why fold between words; a number or a duration is never cut
        table.add_column(
            col, justify="right" if col in ("#", "estimated") else "left", no_wrap=col in ("#", "estimated")
        )
    for i, run in enumerate(campaign.runs):
        # an arm joint by its name (J1), as the file and the command line write it
        opts = ", ".join(f"{k}={joint_name(v) if k == 'joint' else v}" for k, v in run.options.items())
        row = [str(run.index + 1), run.command, escape(opts), escape(run.why)]
        if plans:
            row.append(("≤ " if plans[i].at_most else "") + duration_text(plans[i].duration_s))
        table.add_row(*row)
    return table


def _estimate(campaign: Campaign, url: str, first: int) -> str:
    """'; estimated 1 min 10 s of motion' for the runs from `first` on ("" when a plan cannot be made)."""
    from servotool.runs.campaign.run import run_plans
    from servotool.runs.plan import duration_text

    try:
        plans = run_plans(campaign, url)[first:]
    except (ValueError, Refused):
        return ""
    bound = "at most " if any(p.at_most for p in plans) else ""
    return f"; estimated {bound}{duration_text(sum(p.duration_s for p in plans))} of motion"


def _dry_run(campaign: Campaign, url: str, out: Path | None, json_out: bool) -> None:
    """--dry-run: every run's plan and the whole campaign's estimated duration; nothing opened."""
    from servotool.runs.campaign.run import run_plans
    from servotool.runs.plan import duration_text

    plans = run_plans(campaign, url)
    total = sum(p.duration_s for p in plans)
    bound = "at most " if any(p.at_most for p in plans) else ""
    if json_out:
        runs = [{**r.to_dict(), "plan": p.to_dict()} for r, p in zip(campaign.runs, plans, strict=True)]
        print_json({"dry_run": True, "device": url, "estimated_s": round(total, 3), "runs": runs})
        return
    console.print(
        f"dry run: {len(campaign.runs)} run(s) would go to {escape(url)}, into a new folder under "
        f"{escape(str(out_dir(out)))}, estimated {bound}{duration_text(total)} of motion (plus each run's "
        "warm-up); nothing was opened",
        highlight=False,
        soft_wrap=True,
    )
    console.print(_plan_table(campaign, plans))


@campaign_app.command("check")
def check(
    file: Path = FileArg,
    robot: str | None = RobotOption,
    json_out: bool = typer.Option(False, "--json", help="Print the checked campaign as JSON."),
    bus: str | None = BusOption,
) -> None:
    """Validate a campaign file completely: every run against its command's own checks and the campaign's
    safety rules. One error line per problem, with file:line. Exit 0 valid, 2 not. Opens no device."""
    file = campaign_path(file)
    robot = device_given(robot, bus)
    campaign = _load(file, robot)
    if json_out:
        print_json({"valid": True, "device": robot or campaign.device, **campaign.to_dict()})
        return
    device = robot or campaign.device
    console.print(
        f"[green]valid[/]: {len(campaign.runs)} run(s) on {device}", highlight=False, soft_wrap=True
    )
    console.print(_plan_table(campaign))


@campaign_app.command("list")
def list_campaigns(json_out: bool = typer.Option(False, "--json", help="Print the list as JSON.")) -> None:
    """The campaigns shipped with servotool, with their one-line purpose."""
    from servotool.io.campaign_file import read_campaign_file
    from servotool.runs.campaign.plan import parse_campaign

    rows: list[dict[str, Any]] = []
    for path in shipped_campaign_files():
        try:
            campaign, problems = parse_campaign(read_campaign_file(path))
            rows.append(
                {
                    "name": campaign.name,
                    "purpose": campaign.purpose,
                    "device": campaign.device,
                    "runs": len(campaign.runs),
                    "file": str(path),
                    "problems": problems,
                }
            )
        except FileFormatError as exc:
            rows.append(
                {
                    "name": path.stem,
                    "purpose": "",
                    "device": "",
                    "runs": 0,
                    "file": str(path),
                    "problems": [str(exc)],
                }
            )
    if json_out:
        print_json(rows)
        return
    if not rows:
        fail("no shipped campaign found (campaigns/ next to the package, or <prefix>/share/servotool)", 1)
    bad = sum(1 for r in rows if r["problems"])
    console.print(
        f"{len(rows)} shipped campaign(s)"
        + (f", [red]{bad} with problems[/]" if bad else "")
        + f", files in {Path(rows[0]['file']).parent}",
        highlight=False,
    )
    table = compact_table("")
    for col in ("campaign", "device", "runs", "purpose"):
        table.add_column(
            col,
            justify="right" if col == "runs" else "left",
            overflow="fold",
            no_wrap=col in ("campaign", "device"),
        )
    for r in rows:
        table.add_row(r["name"], r["device"], str(r["runs"]), escape(r["purpose"]))
    console.print(table)


class _Hooks:
    """Console progress for a campaign: one line per run (overall), a bar per run."""

    def __init__(self, show: bool) -> None:
        self.show = show
        self.bar: RunProgress | None = None

    def start(self, run: RunSpec, total: int) -> None:
        err_console.print(f"[bold]{run.label} of {total}[/]: {escape(run.why)}", highlight=False)

    def end(self, run: RunSpec, record: RunRecord) -> None:
        from servotool.runs.campaign.run import DONE, FAULTED

        if self.bar is not None:
            self.bar.__exit__(None, None, None)
            self.bar = None
        style = {DONE: "green", FAULTED: "yellow"}.get(record.status, "bold red")
        text = f"  [{style}]{record.status}[/]" + (f": {escape(record.reason)}" if record.reason else "")
        err_console.print(text + "".join(f"  {f}" for f in record.files), highlight=False, soft_wrap=True)

    def progress(self, run: RunSpec) -> dict[str, Any]:
        self.bar = RunProgress(self.show, run.command).__enter__()
        return {"on_tick": self.bar.tick, "on_pass": self.bar.on_pass("pass"), "on_status": self.bar.status}

    def confirm(self, run: RunSpec, url: str) -> bool:
        if self.bar is not None:
            self.bar.__exit__(None, None, None)
            self.bar = None
        o = run.options
        size, joint = float(o.get("size", 10.0)), int(o.get("joint", 0))
        what, phrase = "RAW steps", f"RAW {size:g} J{joint + 1}"
        if not o.get("raw", False):
            a_max = float(o.get("a_max", 0.0))
            what, phrase = f"Shaped steps at a_max {a_max:g} deg/s^2", f"AMAX {a_max:g} J{joint + 1}"
        warning = (
            f"{what} on a real arm ({url}), {run.label}: the controller may run away for 14-35x "
            "the step. E-stop in hand, clear the joint's arc."
        )
        try:
            confirm_typed(warning, phrase)
        except Refused as exc:
            err_console.print(f"[bold red]{escape(str(exc))}[/]", highlight=False)
            return False
        return True


def _render_summary(report: Report, wide: bool = False) -> None:
    """The report's outcome first, then its tables (short at 80 columns, every column with wide) and tuning
    on the terminal (the files hold the same and the plots)."""
    for line in report.outcome:
        console.print(line.replace("**", ""), highlight=False, markup=False, soft_wrap=True)
    for t in report.tables:
        console.print(report_table(t.title, t.headers, t.rows, wide))
    for block in (report.limits, report.tuning):
        if block:
            console.print(block, highlight=False, markup=False)


def _exit_status(state: CampaignState) -> int:
    from servotool.runs.campaign.run import FAULTED, REFUSED, STOPPED, UNREACHABLE

    return {
        None: ExitCode.DONE,
        FAULTED: ExitCode.FAULT,
        STOPPED: ExitCode.INTERRUPTED,
        REFUSED: ExitCode.USAGE,
        UNREACHABLE: ExitCode.DEVICE,
    }.get(state.stop_status, ExitCode.FAULT)


def _open_folder(campaign: Campaign, out: Path | None, robot: str | None, resume: bool) -> CampaignRun:
    from servotool.runs.campaign.plan import CampaignInvalid
    from servotool.runs.campaign.run import find_resumable, resume_campaign, start_campaign

    base = out_dir(out)
    problem = out_dir_problem(base)  # a file, or a folder that cannot be written: one line, before anything
    if problem:
        refuse([problem])
    try:
        if resume:
            return resume_campaign(campaign, find_resumable(base, campaign.name), robot)
        return start_campaign(campaign, base, robot)
    except CampaignInvalid as exc:
        for problem in exc.problems:
            err_console.print(f"[bold red]error:[/] {escape(problem)}", highlight=False, soft_wrap=True)
        fail(f"{len(exc.problems)} problem(s); nothing was run")
    except (Refused, OSError) as exc:
        fail(str(exc))


def _report(folder: Path) -> tuple[Report, list[Path]]:
    """The folder's report, built and written; a signal meanwhile, or a report that cannot be written (a
    full disk: exit 1), ends the command with one line saying the runs are kept and how to write the report
    again (its files are each written whole or not at all)."""
    from servotool.runs.campaign.report import build_report, write_report

    again = f"every run is kept in {folder}; `servotool analyze {folder} --report` writes the report"
    try:
        summary = build_report(folder)
        return summary, write_report(folder, summary)
    except KeyboardInterrupt as exc:
        fail(f"interrupted by {signal_label(exc)} while the report was written: {again}", exit_code_of(exc))
    except OSError as exc:
        fail(f"{folder}: cannot write the report ({exc.strerror or exc}): {again}", ExitCode.FAULT)


def _print_outcome(
    campaign: Campaign,
    state: CampaignState,
    folder: Path,
    file: Path,
    out: Path | None,
    json_out: bool,
    wide: bool,
) -> None:
    """After the runs: the report written, the verdict, the summary tables, how to go on, where the
    report is."""
    from servotool.runs.campaign.run import FAULTED

    summary, report = _report(folder)
    if json_out:
        print_json({"folder": str(folder), "report": [str(p) for p in report], **asdict(state)})
    if state.stopped:
        verdict = (
            f"[bold red]stopped[/] at {escape(state.stopped)}; {len(state.runs)} finished run(s) kept "
            f"in {folder}"
        )
    else:
        verdict = f"[green]done[/]: {len(state.runs)} run(s) of {campaign.name} in {folder}"
    (err_console if json_out else console).print(verdict, highlight=False)
    if not json_out:
        _render_summary(summary, wide)
    if state.stopped and (state.stop_status != FAULTED or campaign.safety.faults_allowed):
        err_console.print(
            f"go on with: servotool campaign run {file} --resume" + (f" --out {out}" if out else ""),
            highlight=False,
        )
    for path in report if not json_out else []:
        console.print(f"report: {path}", highlight=False, soft_wrap=True)


@campaign_app.command("run")
def run(
    file: Path = FileArg,
    robot: str | None = RobotOption,
    bus: str | None = BusOption,
    out: Annotated[
        Path | None,
        typer.Option(
            "--out",
            envvar="SERVOTOOL_OUT",
            help="Parent folder; the campaign gets its own folder "
            "<name>_<stamp> in it (default ./servotool-runs).",
        ),
    ] = None,
    dry_run: bool = typer.Option(False, "--dry-run", help="Check and show the plan; open no device."),
    resume: bool = typer.Option(
        False,
        "--resume",
        help="Go on in the newest unfinished folder of this "
        "campaign under --out, from the run where it stopped.",
    ),
    json_out: bool = typer.Option(False, "--json", help="Print the final state as JSON."),
    wide: bool = typer.Option(False, "--wide", help="Every column of the summary tables (wider than 80)."),
) -> None:
    """Run every run of a campaign in order, each CSV into one folder, then write report.md and report.html.

    The whole file is checked first (as `campaign check`), nothing moves before. Stops at the first fault
    unless the campaign allows faults. Raw steps on a real arm ask their typed confirmation. Ctrl-C keeps
    every finished run and says where it stopped; --resume goes on from there.
    Exit 0 done, 1 stopped on a fault, 2 invalid or refused, 3 device unreachable or lost, 130 Ctrl-C
    (143 SIGTERM, 129 SIGHUP, 131 SIGQUIT).
    """
    from servotool.runs.campaign.run import STOPPED, CampaignHooks, run_campaign

    file = campaign_path(file)
    robot = device_given(robot, bus)
    campaign = _load(file, robot)
    if dry_run:
        _dry_run(campaign, robot or campaign.device, out, json_out)
        return
    cr = _open_folder(campaign, out, robot, resume)
    estimate = _estimate(campaign, cr.state.device, cr.state.next_index)
    err_console.print(
        f"campaign {campaign.name} on {cr.state.device}: {len(campaign.runs)} run(s), from run "
        f"{cr.state.next_index + 1}, into {cr.folder}{estimate}",
        highlight=False,
        soft_wrap=True,
    )
    ui = _Hooks(not json_out)
    with StopSignals() as signals:  # SIGTERM and SIGHUP stop a run the way Ctrl-C does
        hooks = CampaignHooks(
            signals=signals,
            on_run_start=ui.start,
            on_run_end=ui.end,
            confirm=ui.confirm,
            run_progress=ui.progress,
        )
        try:
            state = run_campaign(campaign, cr, hooks)
        except Refused as exc:  # the folder taken by another process since it was checked: nothing written
            fail(str(exc))
    _print_outcome(campaign, state, cr.folder, file, out, json_out, wide)
    code = _exit_status(state)
    if state.stop_status == STOPPED:
        code = signals.exit_code() or code
    raise typer.Exit(int(code))
