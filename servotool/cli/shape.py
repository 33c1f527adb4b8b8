"""`servotool shape`: replay a recorded run's raw targets through a shaper: what would the wire carry?"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.markup import escape
from rich.table import Table

from servotool.cli.common import console, err_console, fail, given, print_json, refuse
from servotool.cli.quiet import stdout_to_stderr
from servotool.cli.render import compact_table, write_plot
from servotool.io.paths import out_dir_problem
from servotool.motion.defaults import A_MAX_DEG_S2, J_MAX_DEG_S3, V_MAX_DEG_S
from servotool.runs.arm.settings import ShaperKind, validate_shaper

if TYPE_CHECKING:
    from servotool.runs.offline.shape import FileReplay


def _replay(file: Path, shaper: str, v_max: float, a_max: float, j_max: float, cmd_ms: float | None) -> Any:
    from servotool.errors import ServotoolError
    from servotool.motion.stream_shapers import ShaperSpec
    from servotool.runs.offline.shape import replay_file

    problems = validate_shaper(shaper, v_max, a_max, j_max, None if cmd_ms is None else cmd_ms / 1000.0)
    if problems:
        refuse(problems)
    try:
        limits: dict[str, Any] = {"v_max": v_max, "a_max": a_max, "j_max": j_max}
        spec = ShaperSpec(dt=cmd_ms / 1000.0, kind=shaper, **limits) if cmd_ms is not None else None
        with stdout_to_stderr():
            return replay_file(file, spec, **({} if spec else dict(limits, kind=shaper)))
    except (ServotoolError, ValueError, ArithmeticError, LookupError, TypeError, OSError) as exc:
        fail(str(exc) or type(exc).__name__)


def _shape_verdict(fr: FileReplay, shaper: str) -> str:
    """One line: the largest step per tick on the wire, raw and shaped, against the runaway band."""
    lo, _hi = fr.result.runaway_band_deg
    raw, shaped = max(fr.result.raw_figures.max_dv_per_tick), max(fr.result.shaped_figures.max_dv_per_tick)
    mark = "[green]below[/]" if shaped < lo else "[red]inside/above[/]"
    return f"{shaper}: {shaped:.3f} deg per tick at most, {mark} the runaway band ({lo:g} deg); raw {raw:.3f}"


def _figures_table(fr: FileReplay, shaper: str) -> Table:
    r = fr.result
    table = compact_table("what the wire carries (largest over joints)")
    table.add_column("stream")
    for col in (
        "peak v\ndeg/s",
        "peak a\ndeg/s^2",
        "peak jerk\ndeg/s^3",
        "max dv/tick\ndeg",
        "runaway band\ndeg",
    ):
        table.add_column(col, justify="right", no_wrap=True)
    lo, hi = r.runaway_band_deg
    for name, figs in (("raw", r.raw_figures), (shaper, r.shaped_figures)):
        dv = max(figs.max_dv_per_tick)
        verdict = "[red]inside/above[/]" if dv >= lo else "[green]below[/]"
        table.add_row(
            name,
            f"{max(figs.peak_velocity):.1f}",
            f"{max(figs.peak_acceleration):.0f}",
            f"{max(figs.peak_jerk):.0f}",
            f"{dv:.3f}",
            f"{verdict} ({lo:g}-{hi:g})",
        )
    return table


def _arrivals_table(fr: FileReplay) -> Table | None:
    steps = [a for a in fr.result.arrivals if abs(a.size) > 0.05]
    if not steps or len(steps) > 40:
        return None
    t2 = compact_table("arrivals (1 % of each step)")
    for col in ("t\ns", "joint", "step\ndeg", "arrive\nms"):
        t2.add_column(col, justify="right")
    for a in steps:
        arrive = "-" if a.arrive_s is None else f"{a.arrive_s * 1e3:.0f}"
        t2.add_row(f"{a.t:.3f}", f"J{a.joint + 1}", f"{a.size:+.2f}", arrive)
    return t2


def _render(fr: FileReplay, file: Path, shaper: str, limits: tuple[float, float, float]) -> None:
    v_max, a_max, j_max = limits
    r = fr.result
    what = f"{fr.meta.mode} run on {escape(fr.meta.device)}, replaying the {fr.source}"
    console.print(_shape_verdict(fr, shaper), highlight=False)
    console.print(f"[bold]{escape(str(file))}[/]: {what}", highlight=False, soft_wrap=True)
    console.print(
        f"shaper {shaper}: v_max {v_max:g} deg/s, a_max {a_max:g} deg/s^2"
        + (f", j_max {j_max:g} deg/s^3" if shaper == "otg" else "")
        + f", tick {r.spec.dt * 1e3:g} ms"
    )
    console.print(_figures_table(fr, shaper))
    arrivals = _arrivals_table(fr)
    if arrivals is not None:
        console.print(arrivals)
    console.print(f"largest trail behind a moving target: {max(r.max_trail):.3f} deg")
    if fr.skipped.get("malformed"):
        lines = ", ".join(str(x["line"]) for x in fr.skipped["malformed_lines"][:5])
        err_console.print(
            f"[yellow]rows left out[/] {fr.skipped['malformed']} malformed row(s) at line {lines}",
            highlight=False,
        )


def shape(
    ctx: typer.Context,
    file: Annotated[Path, typer.Argument(help="A servotool-csv recording (a step or ramp run).")],
    shaper_kind: Annotated[
        ShaperKind,
        typer.Option(
            "--shaper", case_sensitive=False, help="accel (acceleration-bounded) or otg (jerk-limited)."
        ),
    ] = ShaperKind.ACCEL,
    v_max: Annotated[float, typer.Option("--v-max", help="Velocity limit, deg/s.")] = V_MAX_DEG_S,
    a_max: Annotated[float, typer.Option("--a-max", help="Acceleration limit, deg/s^2.")] = A_MAX_DEG_S2,
    j_max: Annotated[float, typer.Option("--j-max", help="Jerk limit, deg/s^3 (otg only).")] = J_MAX_DEG_S3,
    cmd_ms: Annotated[
        float | None, typer.Option("--cmd-ms", help="Tick period, ms (default: the run's own).")
    ] = None,
    plot: Annotated[
        bool, typer.Option("--plot", help="Write a PNG of raw against shaped by the CSV (or in --plot-dir).")
    ] = False,
    plot_dir: Annotated[
        Path | None, typer.Option("--plot-dir", help="Folder for the PNG (implies --plot).")
    ] = None,
    json_out: bool = typer.Option(False, "--json", help="Print the figures as JSON."),
) -> None:
    """Replay a recorded run's raw targets through a shaper, offline: what would the wire have carried?

    Reports peak velocity, acceleration and jerk, arrival times, and the trail behind a moving target.
    The largest per-tick velocity change is set against the runaway band. Nothing is sent to any device.
    Malformed rows are left out and reported with their line numbers.
    Exit 0 replayed; 2 for bad options, or a file it cannot read or use (one error line).
    """
    shaper = shaper_kind.value
    if plot_dir is not None and (problem := out_dir_problem(plot_dir, "--plot-dir")):
        refuse([problem])
    fr = _replay(file, shaper, v_max, a_max, j_max, cmd_ms)
    if shaper != "otg" and given(ctx, "j_max"):  # offline, nothing moves: said, not refused
        err_console.print(
            "note: --j-max bounds the otg shaper only; the accel replay does not use it", highlight=False
        )
    data = fr.to_dict()
    if plot or plot_dir is not None:
        from servotool.plots.shape import save_replay_plot

        target = (plot_dir or file.parent) / f"{file.stem}_{shaper}-replay.png"
        title = f"{file.name}: {shaper} replay"
        data["plot"] = str(write_plot(lambda path: save_replay_plot(fr.result, path, title=title), target))
    if json_out:
        print_json(data)
        return
    _render(fr, file, shaper, (v_max, a_max, j_max))
    if "plot" in data:
        console.print(f"plot: {escape(data['plot'])}", highlight=False)
