"""matplotlib figure builders (Agg backend), one module per kind of run, fed by analysis results."""

import sys
from pathlib import Path

import matplotlib
from matplotlib.figure import Figure

from servotool.io.atomic import replacing

matplotlib.use("Agg")

PNG_DPI = 110


def save_png(fig: Figure, path: str | Path) -> Path:
    """Write `fig` as a PNG at `path` (PNG_DPI), its folder made if missing, and release the figure (a
    pyplot one is closed even when the write fails); returns the path. OSError when it cannot be written.
    Whole or not at all: the PNG is written beside its name and renamed into place, so a signal or a full
    disk meanwhile leaves no truncated file (and a figure already there as it was)."""
    path = Path(path)
    try:
        with replacing(path) as part:
            fig.savefig(part, dpi=PNG_DPI, format="png")
    finally:
        if "matplotlib.pyplot" in sys.modules:  # pyplot keeps its figures alive until closed
            import matplotlib.pyplot as plt

            plt.close(fig)
    return path
