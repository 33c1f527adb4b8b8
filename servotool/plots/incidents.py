"""The figure of one flight-recorder capture: current, position gap and temperature of the trigger axes (and
the axes that changed most) around the detection, with the bracket between the last clean answer and the
detection shaded, and the end of the observed tail marked."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from matplotlib.figure import Figure

from servotool.recorder.frames import AXIS_FIELDS
from servotool.recorder.summary import FIELDS, series, split_time, summarize

LABELS = {"current": "current", "gap": "position gap (target - position)", "temperature": "temperature"}


def incident_figure(
    header: Mapping[str, Any], samples: Sequence[Mapping[str, Any]], max_axes: int = 4
) -> Figure:
    """One row per field the capture carries; trigger axes drawn bold, other axes (the ones whose current
    changed most) thin. x: seconds from the detection (0)."""
    summaries = summarize(header, samples)
    fields = header.get("axis_fields") or AXIS_FIELDS
    shown = [s.axis for s in summaries[:max_axes]]
    units = (header.get("device") or {}).get("units") or {}
    rows = [
        f
        for f in FIELDS
        if any(
            series(samples, a, f, fields=fields)[1] or series(samples, a, f, "context", fields)[1]
            for a in shown
        )
    ]
    rows = rows or ["gap"]
    fig = Figure(figsize=(9.0, 2.4 * len(rows) + 0.8), layout="constrained")
    axs = fig.subplots(len(rows), 1, sharex=True, squeeze=False)[:, 0]
    clean = split_time(header)
    tail = header.get("tail_observed_s")
    trig = {str(a) for a in header.get("trigger_axes") or []}
    for ax, name in zip(axs, rows, strict=True):
        for axis in shown:
            ts, vs = series(samples, axis, name, fields=fields)
            ring = "fast"
            if not vs:
                ts, vs, ring = (*series(samples, axis, name, "context", fields), "context")
            bold = axis in trig
            ax.plot(
                ts,
                vs,
                linewidth=1.8 if bold else 0.8,
                alpha=1.0 if bold else 0.6,
                marker="o" if ring == "context" else None,
                markersize=3,
                label=f"axis {axis}" + (" (trigger)" if bold else ""),
            )
        ax.axvspan(
            clean,
            0.0,
            color="tab:red",
            alpha=0.15,
            label="last clean answer .. detection" if name == rows[0] else None,
        )
        ax.axvline(0.0, color="tab:red", linewidth=1.2)
        if isinstance(tail, (int, float)):
            ax.axvline(float(tail), color="grey", linestyle="--", linewidth=0.8)
        unit = units.get(name, "")
        ax.set_ylabel(f"{LABELS[name]}" + (f"\n({unit})" if unit else ""))
        ax.grid(True, alpha=0.3)
    axs[0].legend(loc="upper left", fontsize="small", ncol=2)
    axs[-1].set_xlabel("t from detection (s); shaded: latch happened in here; dashed: end of observed tail")
    fig.suptitle(
        f"{header.get('id', 'capture')}\ntrigger: {', '.join(sorted(trig))}  "
        f"device: {(header.get('device') or {}).get('url', '')}",
        fontsize="medium",
    )
    return fig
