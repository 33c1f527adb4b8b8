"""`servotool incidents list|show|plot`: the flight recorder's captures, one capture's header and per-axis
summary around its trigger, and its figure.

Exit codes: 0 done; 2 no such capture, or a file that is not a complete capture.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer
from rich.markup import escape

from servotool.cli.common import console, err_console, fail, print_json, renamed
from servotool.cli.render import compact_table, relative_s, write_plot
from servotool.devices.registry import status_names
from servotool.errors import ServotoolError
from servotool.io.captures import default_dest, find_capture, list_captures, read_capture, recover_leftovers
from servotool.io.paths import link_problem, out_file_problem
from servotool.recorder.capture import capture_stamp
from servotool.recorder.summary import AxisSummary, summarize

incidents_app = typer.Typer(
    help="List, show and plot the flight recorder's captures (default folder: the XDG state dir's "
    "servotool/captures).",
    no_args_is_help=True,
)

OutOption = Annotated[
    Path | None,
    typer.Option(
        "--out",
        help="Capture folder, the one `servotool record --out` wrote into (default: "
        "$SERVOTOOL_STATE_DIR/captures, else the XDG state dir's "
        "servotool/captures).",
    ),
]
OldDestOption = Annotated[Path | None, typer.Option("--dest", hidden=True)]  # the former spelling of --out


def captures_folder(out: Path | None, dest: Path | None) -> Path | None:
    """The capture folder the user named: --out, else the former --dest (with a note on stderr)."""
    if dest is not None:
        renamed("--dest", "--out")
    return out if out is not None else dest


JsonOption = Annotated[bool, typer.Option("--json", help="Print as JSON on stdout.")]
RefArg = Annotated[
    str,
    typer.Argument(
        help="A capture: its path, id, unique id prefix, its time as "
        "`incidents list` shows it, its number there, or last (the newest)."
    ),
]


def _num(x: Any, fmt: str = ".1f") -> str:
    return "-" if x is None else format(x, fmt)


def _bits(b: Any, names: Any = None) -> str:
    """A status word as the capture's device names its bits (device.status_bits of that axis: `0x40
    (joint_reflex)`), else in hex, a word above 16 bits as its high/low halves (a code pair)."""
    if b is None:
        return "-"
    if isinstance(names, list) and isinstance(b, int):
        named = [str(n) for i, n in enumerate(names) if b >> i & 1]
        return f"0x{b:02x} ({' '.join(named)})" if named else f"0x{b:02x}"
    return f"0x{b:02x}" if b < 0x10000 else f"{b >> 16}/{b & 0xFFFF}"


def _axis_bits(h: dict[str, Any], t: dict[str, Any]) -> str:
    """A trigger axis's bits, named where the capture's device names that axis's bits, else by the device's
    family (`0x20 (overload)`, `1/32 (TCP speed over the limit ...)`)."""
    table = (h.get("device") or {}).get("status_bits")
    names = table.get(str(t.get("axis"))) if isinstance(table, dict) else None
    shown = _bits(t.get("bits"), names)
    if names is None and isinstance(t.get("bits"), int):
        named = status_names(t["bits"], family=str((h.get("device") or {}).get("family") or "") or None)
        return f"{shown} ({named})" if named else shown
    return shown


@incidents_app.command("list")
def list_cmd(out: OutOption = None, json_out: JsonOption = False, dest: OldDestOption = None) -> None:
    """Every capture in the folder, oldest first: trigger axes, bits, lead-up, tail, how it ended. A complete
    capture left as a temporary file (its publication cut off) is checked and published under its name
    first; an incomplete one is left where it is and named."""
    folder = default_dest(captures_folder(out, dest))
    for r in recover_leftovers(folder):
        what = f"recovered {r.published.name}" if r.published else f"left {r.leftover.name}: {r.reason}"
        err_console.print(f"note: {escape(what)}", highlight=False, soft_wrap=True)
    entries = list_captures(folder)
    if json_out:
        print_json([{"n": i, "path": str(p), "header": h} for i, (p, h) in enumerate(entries, start=1)])
        return
    if not entries:
        console.print(f"no captures in {folder}", highlight=False, soft_wrap=True)
        return
    devices = {str((h.get("device") or {}).get("url", "")) for _, h in entries if h is not None}
    one_device = len(devices) == 1  # an unreadable file names no device: it does not call for the column
    console.print(f"{len(entries)} capture(s) in {escape(str(folder))}", highlight=False, soft_wrap=True)
    table = compact_table(f"device {escape(devices.pop())}" if one_device else "")
    cols = ["#", "captured (UTC)"] + ([] if one_device else ["device"])
    cols += ["axes", "bits", "lead-up\ns", "tail\ns", "end"]
    for col in cols:
        right = col in ("#", "lead-up\ns", "tail\ns")
        table.add_column(
            col,
            justify="right" if right else "left",
            overflow="fold",
            no_wrap=right or col in ("captured (UTC)", "device"),
        )
    for i, (path, h) in enumerate(entries, start=1):
        if h is None:  # the name goes where it may fold: a long one must not widen the time column
            stamp = capture_stamp(path.stem) if path.name.startswith("capture_") else "-"
            cells = [""] * (len(cols) - 3)
            named = "" if stamp != "-" else f": {escape(path.name)}"  # a capture's name is its time, shown
            table.add_row(str(i), escape(stamp), *cells, f"[yellow]unreadable[/]{named}")
            continue
        device = [] if one_device else [escape(str((h.get("device") or {}).get("url", "")))]
        table.add_row(
            str(i),
            capture_stamp(str(h.get("id"))),
            *device,
            ", ".join(str(a) for a in h.get("trigger_axes") or []),
            escape(", ".join(_axis_bits(h, t) for t in h.get("trigger") or [])),
            _num(h.get("lead_up_s")),
            _num(h.get("tail_observed_s")),
            str(h.get("end")),
        )
    console.print(table)


def _load(ref: str, dest: Path | None) -> tuple[Path, dict[str, Any], list[dict[str, Any]]]:
    try:
        path = find_capture(default_dest(dest), ref)
        header, samples = read_capture(path)
    except ServotoolError as exc:
        fail(str(exc), int(exc.exit_code))
    return path, header, samples


def _summary_json(s: AxisSummary) -> dict[str, Any]:
    return {
        "axis": s.axis,
        "trigger": s.trigger,
        "bits": s.bits,
        "silent_samples": s.silent_samples,
        **{
            name: {"before": f.before, "extreme": f.extreme, "change": f.change}
            for name, f in s.fields.items()
        },
    }


def _render_header(path: Path, h: dict[str, Any]) -> None:
    dev = h.get("device") or {}
    counts = h.get("counts") or {}
    sim = ", SIMULATED" if dev.get("simulated") else ""
    axes = ", ".join(f"{t['axis']} ({_axis_bits(h, t)})" for t in h.get("trigger") or []) or "no axis"
    console.print(
        f"[bold]fault latch on {escape(axes)}[/], lead-up {_num(h.get('lead_up_s'), '.2f')} s, tail "
        f"{_num(h.get('tail_observed_s'), '.2f')} s, {h.get('end')}",
        highlight=False,
    )
    console.print(f"[bold]{h.get('id')}[/]  {path}", highlight=False, soft_wrap=True)
    said = ", ".join(part for part in (dev.get("model"), sim.removeprefix(", ")) if part)
    console.print(
        f"device {dev.get('url')}{f' ({said})' if said else ''}  wall time {h.get('wall_time')}",
        highlight=False,
    )
    modes = dev.get("operating_modes") or {}
    other = [f"{axis} {mode}" for axis, mode in modes.items() if mode and not mode.startswith("position ")]
    if other:  # a wheel turns by design: its current and motion are no position servo's
        console.print(f"[yellow]not in position mode: servo {', '.join(other)}[/]", highlight=False)
    silent = h.get("silent_axes") or {}
    if silent:  # a servo that did not answer: its rows hold no values, the others are as read
        quiet = [f"{axis} ({s.get('sweeps')} of {s.get('of')} sweeps)" for axis, s in silent.items()]
        console.print(f"[yellow]silent: servo {', '.join(quiet)}[/]", highlight=False)
    for t in h.get("trigger") or []:
        clean, seen = (
            relative_s(t.get("last_clean_t"), "detection"),
            relative_s(t.get("detected_t"), "detection"),
        )
        console.print(
            escape(f"axis {t['axis']}: bits {_axis_bits(h, t)}, last clean answer {clean}, detected {seen}"),
            highlight=False,
        )
    console.print(
        f"the latch happened between {relative_s(h.get('last_clean_t'), 'detection')} and detection; "
        f"lead-up {_num(h.get('lead_up_s'), '.2f')} s, "
        f"tail observed {_num(h.get('tail_observed_s'), '.2f')} s "
        f"of {_num(h.get('tail_planned_s'), '.2f')} s planned ({h.get('end')}); "
        f"{counts.get('fast')} fast, {counts.get('context')} context samples",
        highlight=False,
    )
    for e in h.get("events") or []:
        console.print(f"  {e['t']:+8.3f} s  {e['kind']}: {e['text']}", highlight=False)


_FIELD_HEAD = {"current": "I", "gap": "gap", "temperature": "temp"}
_FIELD_UNIT = {"current": "mA", "temperature": "C"}


def _field_unit(header: dict[str, Any], name: str) -> str:
    """A field's unit as the capture's device gives it (the gap: pulse on a bus, deg on an arm; the current:
    mA on a bus, Nm where an arm records its joint torque); else the bus default, blank when there is none."""
    units = (header.get("device") or {}).get("units") or {}
    text = units.get(name) if isinstance(units, dict) else None
    return str(text).split()[0] if isinstance(text, str) and text.strip() else _FIELD_UNIT.get(name, "")


@incidents_app.command("show")
def show(
    ref: RefArg,
    out: OutOption = None,
    json_out: JsonOption = False,
    wide: bool = typer.Option(False, "--wide", help="Also the lead-up median of each field."),
    dest: OldDestOption = None,
) -> None:
    """One capture's header, and per axis the lead-up median and the extreme around the trigger of
    current, position gap and temperature (trigger axes first, then the largest current change)."""
    path, header, samples = _load(ref, captures_folder(out, dest))
    summaries = summarize(header, samples)
    if json_out:
        print_json({"path": str(path), "header": header, "axes": [_summary_json(s) for s in summaries]})
        return
    _render_header(path, header)
    names = [
        n
        for n in ("current", "gap", "temperature")
        if any(s.fields[n].before is not None or s.fields[n].extreme is not None for s in summaries)
    ]
    table = compact_table()
    table.add_column("axis", no_wrap=True)  # never the column that gives way at 80 columns
    parts = ("before", "peak", "change") if wide else ("peak", "change")
    unit = {name: _field_unit(header, name) for name in names}
    for name in names:
        for part in parts:
            head = f"{_FIELD_HEAD[name]} {'Δ' if part == 'change' else part}\n{unit[name]}"
            table.add_column(head, justify="right", no_wrap=True)
    table.add_column("silent\nsamples", justify="right", no_wrap=True)
    for s in summaries:
        cells = []
        for name in names:
            f = s.fields[name]
            cells += ([_num(f.before)] if wide else []) + [_num(f.extreme), _num(f.change, "+.1f")]
        name = f"[bold red]{s.axis}[/]" if s.trigger else s.axis
        table.add_row(name, *cells, str(s.silent_samples))
    console.print(table)


@incidents_app.command("plot")
def plot(
    ref: RefArg,
    out: OutOption = None,
    plot_file: Annotated[
        Path | None, typer.Option("--plot", help="PNG path (default: next to the capture).")
    ] = None,
    json_out: JsonOption = False,
    dest: OldDestOption = None,
) -> None:
    """A PNG of one capture: current, gap and temperature around the detection (bracket shaded)."""
    from servotool.plots.incidents import incident_figure

    if out is not None and out.suffix.lower() == ".png" and plot_file is None:
        # the former spelling: --out named the PNG; a capture folder is never named *.png
        renamed(f"--out {out} (the PNG)", f"--plot {out}")
        plot_file, out = out, None
    if plot_file is not None:
        # resolved before anything is read: a dangling link, a link loop, a link to a folder
        if problem := link_problem(plot_file, "--plot", "file"):
            fail(problem)
        if plot_file.is_dir():
            fail(f"--plot {plot_file}: a folder; give the PNG's path (e.g. {plot_file / 'capture.png'})")
        if plot_file.suffix.lower() != ".png":  # never a capture or another format
            fail(f"--plot {plot_file}: the plot is written as .png, not {plot_file.suffix or 'no suffix'!r}")
    path, header, samples = _load(ref, captures_folder(out, dest))
    target = plot_file or path.with_suffix(".png")
    if problem := out_file_problem(
        target, "--plot" if plot_file is not None else "the plot next to the capture"
    ):
        fail(problem)  # its folder probed too, before the figure is drawn

    def save(png: Path) -> Path:
        incident_figure(header, samples).savefig(png, dpi=110, format="png")
        return png

    write_plot(save, target)
    if json_out:
        print_json({"capture": str(path), "plot": str(target)})
    else:
        console.print(f"wrote {target}", highlight=False)
