"""`servotool shape`: replay a recorded run's raw targets through a shaper: what would the wire carry?"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from servotool.cli.common import console, fail, print_json

SHAPERS = ("accel", "otg")


def shape(
    file: Annotated[Path, typer.Argument(help="A servotool-csv recording (a step or ramp run).")],
    shaper: Annotated[
        str, typer.Option("--shaper", help="accel (acceleration-bounded) or otg (jerk-limited).")
    ] = "accel",
    v_max: Annotated[float, typer.Option("--v-max", help="Velocity limit, deg/s.")] = 130.0,
    a_max: Annotated[float, typer.Option("--a-max", help="Acceleration limit, deg/s^2.")] = 500.0,
    j_max: Annotated[float, typer.Option("--j-max", help="Jerk limit, deg/s^3 (otg only).")] = 10000.0,
    cmd_ms: Annotated[
        float | None, typer.Option("--cmd-ms", help="Tick period, ms (default: the run's own).")
    ] = None,
    plot: Annotated[
        Path | None, typer.Option("--plot", help="Write a PNG of raw against shaped here.")
    ] = None,
    json_out: bool = typer.Option(False, "--json", help="Print the figures as JSON."),
) -> None:
    """Replay a recorded run's raw targets through a shaper, offline: what would the wire have carried?

    Reports peak velocity, acceleration and jerk, arrival times, the largest per-tick velocity change against
    the runaway band, and the trail behind a moving target. Nothing is sent to any device.
    """
    from servotool.analysis.recording import RecordingError
    from servotool.io.csvlog import CsvFormatError
    from servotool.motion.stream_shapers import ShaperSpec
    from servotool.runs.shape import replay_file

    if shaper not in SHAPERS:
        fail(f"--shaper must be accel or otg, not {shaper!r}")
    try:
        overrides = {"kind": shaper, "v_max": v_max, "a_max": a_max, "j_max": j_max}
        spec = ShaperSpec(dt=cmd_ms / 1000.0, **overrides) if cmd_ms is not None else None
        fr = replay_file(file, spec, **({} if spec else overrides))
    except (CsvFormatError, RecordingError, ValueError) as exc:
        fail(str(exc))
    data = fr.to_dict()
    if plot is not None:
        from servotool.plots.shape import save_replay_plot

        data["plot"] = str(save_replay_plot(fr.result, plot, title=f"{file.name}: {shaper} replay"))
    if json_out:
        print_json(data)
        return
    r = fr.result
    console.print(
        f"[bold]{file}[/]: {fr.meta.mode} run on {fr.meta.device}, replaying the {fr.source}", highlight=False
    )
    console.print(
        f"shaper {shaper}: v_max {v_max:g} deg/s, a_max {a_max:g} deg/s^2"
        + (f", j_max {j_max:g} deg/s^3" if shaper == "otg" else "")
        + f", tick {r.spec.dt * 1e3:g} ms"
    )
    table = Table(title="what the wire carries (largest over joints)")
    table.add_column("stream")
    for col in (
        "peak v (deg/s)",
        "peak a (deg/s^2)",
        "peak jerk (deg/s^3)",
        "max dv per tick (deg)",
        "runaway band",
    ):
        table.add_column(col, justify="right")
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
    console.print(table)
    steps = [a for a in r.arrivals if abs(a.size) > 0.05]
    if steps and len(steps) <= 40:
        t2 = Table(title="arrivals (within 1 % of each raw step)")
        for col in ("t (s)", "joint", "step (deg)", "arrive (ms)"):
            t2.add_column(col, justify="right")
        for a in steps:
            t2.add_row(
                f"{a.t:.3f}",
                f"J{a.joint + 1}",
                f"{a.size:+.2f}",
                "-" if a.arrive_s is None else f"{a.arrive_s * 1e3:.0f}",
            )
        console.print(t2)
    console.print(f"largest trail behind a moving target: {max(r.max_trail):.3f} deg")
    if plot is not None:
        console.print(f"plot: {data['plot']}", highlight=False)
