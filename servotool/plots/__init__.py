"""matplotlib figure builders (Agg backend), one module per kind of run, fed by analysis results."""

import sys
from pathlib import Path

import matplotlib
from matplotlib.figure import Figure

matplotlib.use("Agg")

PNG_DPI = 110


def save_png(fig: Figure, path: str | Path) -> Path:
    """Write `fig` as a PNG at `path` (PNG_DPI), its folder made if missing, and release the figure (a
    pyplot one is closed even when the write fails); returns the path. OSError when it cannot be written."""
    path = Path(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fig.savefig(path, dpi=PNG_DPI)
    finally:
        if "matplotlib.pyplot" in sys.modules:  # pyplot keeps its figures alive until closed
            import matplotlib.pyplot as plt

            plt.close(fig)
    return path
