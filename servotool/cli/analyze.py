"""`servotool analyze`: recompute the results of lag, step and sweep runs from their CSV files alone."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

from servotool.cli.common import OUTPUT, console, err_console, fail, print_json, refuse
from servotool.cli.quiet import stdout_to_stderr
from servotool.cli.render import (
    compact_table,
    ended_early_line,
    lag_verdict,
    render_combined,
    render_lag,
    render_step,
    save_plot,
    step_verdict,
)
from servotool.errors import exit_code_of, signal_label
from servotool.io.jsondoc import with_member
from servotool.io.paths import out_dir_problem
from servotool.runs.signals import StopSignals

if TYPE_CHECKING:  # the analysis (numpy, pandas, scipy) loads when files are analysed, not for `analyze -h`
    from servotool.analysis.sweep_files import SweepFileResult
    from servotool.runs.offline.analyze import AnalyzeReport, FileAnalysis, SweepAnalysis


def _run(paths: list[Path], workers: int, keep: bool, encode: bool) -> AnalyzeReport:
    """Analyse with a progress bar on stderr; numerical noise kept off stdout. The bar (and its refresh
    thread) starts with the first file done: the worker processes are forked before, from one thread.
    With encode, the workers encode each file's JSON (for a compact document)."""
    from servotool.runs.offline.analyze import analyze_paths

    columns = (
        TextColumn("analysing"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeRemainingColumn(),
        TextColumn("{task.description}"),
    )
    bar = Progress(*columns, console=err_console, transient=True, disable=OUTPUT.quiet)
    task = bar.add_task("", total=None)

    def on_progress(done: int, total: int, path: Path) -> None:
        if not bar.live.is_started:
            bar.start()
        bar.update(task, completed=done, total=total, description=escape(path.name))

    with stdout_to_stderr():
        try:
            return analyze_paths(
                paths, workers=workers, keep_recordings=keep, on_progress=on_progress, encode_json=encode
            )
        finally:
            if bar.live.is_started:
                bar.stop()


def _render_sweep(result: SweepFileResult) -> None:
    found = "; ".join(
        f"servo {s.joint} {s.direction} {s.limit}" for s in result.sweeps if s.limit is not None
    )
    console.print(
        f"{len(result.sweeps)} sweep(s), limits in pulses: {found or 'none found'}", highlight=False
    )
    table = compact_table(f"limits found (speed {result.speed:g} pulses/s, {result.inside} pulses inside)")
    for col in ("servo", "direction", "ticks", "stop\npulses", "limit\npulses", "verdict"):
        table.add_column(
            col,
            justify="left" if col in ("direction", "verdict") else "right",
            overflow="fold",
            no_wrap=col != "verdict",
        )
    for s in result.sweeps:
        table.add_row(
            str(s.joint), s.direction, str(s.ticks), str(s.stop if s.stop is not None else "-"),
            str(s.limit if s.limit is not None else "-"), escape(s.verdict),
        )  # fmt: skip
    console.print(table)


def _file_head(fa: FileAnalysis | SweepAnalysis) -> str:
    """The file, its kind of run, its device (SIMULATED when it was) and whether it ended early."""
    m = fa.meta
    flag = "" if m.complete else f" [bold yellow](interrupted: {escape(str(m.end_reason))})[/]"
    sim = " SIMULATED" if m.simulated else ""
    return f"[bold]{escape(str(fa.path))}[/]: {fa.mode} run on {escape(m.device)}{sim}{flag}"


def _file_headline(fa: FileAnalysis | SweepAnalysis) -> str:
    """The file's result in one phrase: its lag verdict, its step verdict or the limits it found."""
    from servotool.analysis.lag import LagResult
    from servotool.analysis.step import StepResult

    if isinstance(fa.result, LagResult):
        return lag_verdict(fa.result)
    if isinstance(fa.result, StepResult):
        return step_verdict(fa.result)
    found = "; ".join(
        f"servo {s.joint} {s.direction} {s.limit}" for s in fa.result.sweeps if s.limit is not None
    )
    return f"{len(fa.result.sweeps)} sweep(s), limits in pulses: {found or 'none found'}"


def _render_file(fa: FileAnalysis | SweepAnalysis, plot: str | None, wide: bool = False) -> None:
    m = fa.meta
    # soft_wrap: a long path or URL is one line the terminal wraps (copy and paste rejoins it)
    console.print(f"\n{_file_head(fa)}, {m.created}", highlight=False, soft_wrap=True)
    from servotool.analysis.lag import LagResult
    from servotool.analysis.step import StepResult

    if isinstance(fa.result, LagResult):
        speeds = m.config.get("speeds_deg_s")
        planned = 2 * len(speeds) if isinstance(speeds, list) else len(fa.result.passes)
        early = None if m.complete else ended_early_line(fa.result, str(m.end_reason), planned)
        render_lag(fa.result, wide=wide, ended_early=early)
    elif isinstance(fa.result, StepResult):
        render_step(fa.result, wide=wide, device=fa.meta.device)
    else:
        _render_sweep(fa.result)
    if plot is not None:
        console.print(f"plot: {escape(plot)}", highlight=False, soft_wrap=True)


def _render_file_line(fa: FileAnalysis | SweepAnalysis, plot: str | None) -> None:
    """One line per file: where it is, what it was and its result; the terminal wraps it, nothing breaks
    inside a path or a number."""
    line = f"{_file_head(fa)}: {_file_headline(fa)}" + (f" (plot: {escape(plot)})" if plot else "")
    console.print(line, highlight=False, soft_wrap=True)


def _note_skipped(fa: FileAnalysis | SweepAnalysis) -> None:
    s = fa.skipped_rows()
    parts = []
    if s["malformed"]:
        lines = ", ".join(str(x["line"]) for x in s["malformed_lines"][:5])
        more = "" if s["malformed"] <= 5 else ", ..."
        first = s["malformed_lines"][0]["reason"] if s["malformed_lines"] else ""
        parts.append(f"{s['malformed']} malformed row(s) at line {lines}{more} ({first})")
    if s["no_time"]:
        parts.append(f"{s['no_time']} row(s) without a time")
    if s["nan_joint"]:
        parts.append(f"{s['nan_joint']} row(s) with a non-finite value of the analysed joint")
    if s.get("absurd_joint"):
        parts.append(f"{s['absurd_joint']} row(s) with a value of the analysed joint no device could report")
    if parts:
        err_console.print(
            f"[yellow]rows left out[/] {escape(f'{fa.path}: ' + '; '.join(parts))}",
            highlight=False,
            soft_wrap=True,
        )


def _render_groups(report: AnalyzeReport) -> None:
    for g in report.groups:
        k = g.key
        kind = "SIMULATED " if k.simulated else ""
        transport = f", {k.transport}" if k.transport else ""
        line = (
            f"\n[bold]combined: {kind}{escape(k.device)}, J{k.joint + 1}{transport}[/] ({len(g.files)} files)"
        )
        console.print(line, highlight=False, soft_wrap=True)
        render_combined(g.combined)


MAX_WORKERS = 64  # each worker is a process: --workers 100000 would start that many
VerboseOpt = Annotated[
    bool,
    typer.Option(
        "--verbose",
        "-v",
        help="Every file's full results (tables, fits, notes); the default for one file. Several files: "
        "the combined fits, then a line per file.",
    ),
]


def analyze(
    paths: Annotated[
        list[Path], typer.Argument(help="CSV files or folders (searched recursively for *.csv).")
    ],
    json_out: bool = typer.Option(False, "--json", help="Print everything as JSON on stdout."),
    plot: bool = typer.Option(
        False, "--plot", help="Write one PNG per analysed lag or step run next to its CSV (or in --plot-dir)."
    ),
    plot_dir: Annotated[
        Path | None, typer.Option("--plot-dir", help="Folder for the PNGs (implies --plot).")
    ] = None,
    table: Annotated[
        Path | None,
        typer.Option("--table", help="Write one row per pass, step and sweep to FILE.parquet or FILE.csv."),
    ] = None,
    strict: bool = typer.Option(
        False,
        "--strict",
        help="Exit 1 when any file holds a controller fault, a runaway or an interrupted run.",
    ),
    workers: Annotated[
        int,
        typer.Option(
            "--workers",
            min=0,
            max=MAX_WORKERS,
            help=f"Processes to analyse on (0: one per core; at most {MAX_WORKERS}).",
        ),
    ] = 0,
    make_report: bool = typer.Option(
        False,
        "--report",
        help="Also write report.md and report.html (plots inline) into each folder given, from its CSVs "
        "(a campaign folder).",
    ),
    wide: bool = typer.Option(False, "--wide", help="Every column of the pass and step tables."),
    verbose: VerboseOpt = False,
) -> None:
    """Recognise each run from its header (ramp, step or sweep) and recompute what the live command reported.

    Folders are analysed on a process per core, with a progress bar.
    Ramp files are combined into one lag fit per device, joint and transport, never real with simulated.
    Sweep files give the limit per servo and direction.
    A foreign or damaged file gets one line saying why; the others are still analysed.
    Malformed rows are left out and reported with their line numbers.
    An interrupted run is analysed up to where it ends, and flagged.
    Exit 0 when a file was analysed, 1 when none was, 2 for bad options, a --table that cannot be written or
    a --report folder holding a report servotool did not write.
    With --strict, exit 1 when any file holds a controller fault, a runaway or an interrupted run.
    """
    from servotool.io.table import TableWriteError, write_table
    from servotool.runs.offline.analyze import TABLE_COLUMNS

    _check_options(paths, table, plot_dir, make_report)
    n_workers = workers or os.cpu_count() or 1
    plot = plot or plot_dir is not None
    # a compact document (stdout not a terminal) takes each file's JSON as its worker encoded it
    # SIGTERM or SIGHUP raise like Ctrl-C, so the worker pool is shut down on the way out (killed outright,
    # the command left its workers waiting for work forever)
    try:
        with StopSignals():
            report = _run(paths, n_workers, keep=plot, encode=json_out and not sys.stdout.isatty())
    except KeyboardInterrupt as exc:
        fail(f"interrupted by {signal_label(exc)}", code=exit_code_of(exc))
    if make_report:
        _write_reports(paths)
    plots: dict[str, str] = {}
    if plot:
        for fa in report.files:
            plots[str(fa.path)] = str(save_plot(fa, plot_dir))
    if table is not None:
        try:
            write_table(report.table(), TABLE_COLUMNS, table)
        except TableWriteError as exc:
            fail(str(exc))
    details = verbose or OUTPUT.verbose or len(report.analysed) == 1
    _print_report(report, plots, table, json_out, wide, details)
    _finish(report, strict)


def _check_options(paths: list[Path], table: Path | None, plot_dir: Path | None, make_report: bool) -> None:
    """Fails before any file is read when --table, --plot-dir or --report could not be written."""
    from servotool.io.table import TableWriteError, check_table_path

    if table is not None:
        try:
            check_table_path(table, paths)
        except TableWriteError as exc:
            fail(str(exc))
    if plot_dir is not None and (problem := out_dir_problem(plot_dir, "--plot-dir")):
        fail(problem)
    if make_report:
        from servotool.runs.campaign.report import report_problem

        problems = [p for p in (report_problem(f) for f in paths if f.is_dir()) if p]
        if problems:
            refuse(problems)


def _write_reports(paths: list[Path]) -> None:
    """report.md and report.html into each folder given, from its CSVs; fails on the first that cannot
    be written."""
    for folder in (p for p in paths if p.is_dir()):
        from servotool.runs.campaign.report import write_report  # matplotlib: loaded only for a report

        try:
            written = write_report(folder)
        except OSError as exc:
            fail(f"{folder}: cannot write the report ({exc.strerror or exc})")
        err_console.print(f"report: {', '.join(map(str, written))}", highlight=False, soft_wrap=True)


def _print_report(
    report: AnalyzeReport,
    plots: dict[str, str],
    table: Path | None,
    json_out: bool,
    wide: bool,
    details: bool = True,
) -> None:
    """Everything analysed as one JSON document, or the verdict line and the combined lag fits first, then
    a section per file (details) or a line per file."""
    if json_out:
        data = report.to_dict(encoded=True)
        data["files"] = [
            with_member(entry, "plot", plots.get(str(item.path)))
            for item, entry in zip(report.analysed, data["files"], strict=True)
        ]
        if table is not None:
            data["table"] = str(table)
        print_json(data)
    else:
        console.print(_analyze_verdict(report), highlight=False)
        _render_groups(report)
        if details:
            for item in report.analysed:
                _render_file(item, plots.get(str(item.path)), wide)
        else:
            console.print(
                f"\n[bold]{len(report.analysed)} files[/] (every figure: -v or --json)", highlight=False
            )
            for item in report.analysed:
                _render_file_line(item, plots.get(str(item.path)))
        if table is not None:
            line = f"\ntable: {escape(str(table))} ({len(report.table())} rows)"
            console.print(line, highlight=False, soft_wrap=True)


def _analyze_verdict(report: AnalyzeReport) -> str:
    """One line: how many files were analysed, of which kind, and how many were skipped."""
    kinds: dict[str, int] = {}
    for item in report.analysed:
        kinds[item.mode] = kinds.get(item.mode, 0) + 1
    what = ", ".join(f"{n} {mode}" for mode, n in sorted(kinds.items())) or "none"
    skipped = f", [yellow]{len(report.problems)} skipped[/]" if report.problems else ""
    groups = f", {len(report.groups)} combined lag fit(s)" if report.groups else ""
    return f"[bold]{len(report.analysed)} file(s) analysed[/] ({what}){groups}{skipped}"


def _finish(report: AnalyzeReport, strict: bool) -> None:
    for item in report.analysed:
        _note_skipped(item)
    for problem in report.problems:
        err_console.print(
            f"[bold red]skipped[/] {escape(f'{problem.path}: {problem.reason}')}",
            highlight=False,
            soft_wrap=True,
        )
    if not report.analysed:
        err_console.print("[bold red]error:[/] no file could be analysed", highlight=False)
        raise typer.Exit(1)
    failures = report.strict_failures() if strict else []
    for path, what in failures:
        # one line whatever the terminal's width: a long path is never broken inside its name
        line = f"[bold red]strict:[/] {escape(path)} holds {', '.join(what)}"
        err_console.print(line, highlight=False, soft_wrap=True)
    if failures:
        raise typer.Exit(1)
