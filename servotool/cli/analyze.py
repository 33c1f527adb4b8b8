"""`servotool analyze`: recompute the results of lag and step runs from their CSV files alone."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape

from servotool.analysis.lag import LagResult
from servotool.cli.common import console, err_console, print_json
from servotool.cli.render import render_combined, render_lag, render_step, save_plot
from servotool.runs.analyze import analyze_paths
from servotool.runs.report import write_report


def analyze(
    paths: Annotated[
        list[Path], typer.Argument(help="CSV files or folders (searched recursively for *.csv).")
    ],
    json_out: bool = typer.Option(False, "--json", help="Print everything as JSON on stdout."),
    plot: Annotated[
        Path | None, typer.Option("--plot", help="Write one PNG per analysed run into this folder.")
    ] = None,
    make_report: bool = typer.Option(False, "--report", help="Also write report.md and report.html (plots "
                                     "inline) into each folder given, from its CSVs (a campaign folder)."),
) -> None:
    """Recognise each run from its header (ramp or step) and recompute what the live command reported.

    Several ramp files are also combined into one lag fit (plus their own rows).
    A foreign or damaged file gets one line saying why; the others are still analysed.
    An interrupted run is analysed up to where it ends, and flagged.
    Exit 0 when at least one file was analysed, 1 when none was.
    """
    report = analyze_paths(paths)
    for folder in (p for p in paths if make_report and p.is_dir()):
        err_console.print(f"report: {', '.join(map(str, write_report(folder)))}", highlight=False)
    plots: dict[str, str] = {}
    if plot is not None:
        for fa in report.files:
            plots[str(fa.path)] = str(save_plot(fa, plot))
    if json_out:
        data = report.to_dict()
        for entry in data["files"]:
            entry["plot"] = plots.get(entry["file"])
        print_json(data)
    else:
        for fa in report.files:
            m = fa.meta
            flag = "" if m.complete else f" [bold yellow](interrupted: {m.end_reason})[/]"
            sim = " SIMULATED" if m.simulated else ""
            console.print(
                f"\n[bold]{fa.path}[/]: {fa.mode} run on {m.device}{sim}, {m.created}{flag}", highlight=False
            )
            if isinstance(fa.result, LagResult):
                render_lag(fa.result)
            else:
                render_step(fa.result)
            if str(fa.path) in plots:
                console.print(f"plot: {plots[str(fa.path)]}", highlight=False)
        if report.combined is not None:
            console.print()
            render_combined(report.combined)
    for problem in report.problems:
        err_console.print(
            f"[bold red]skipped[/] {escape(f'{problem.path}: {problem.reason}')}",
            highlight=False,
            soft_wrap=True,
        )
    if not report.files:
        err_console.print("[bold red]error:[/] no file could be analysed", highlight=False)
        raise typer.Exit(1)
