"""matplotlib figure builders (Agg backend), one module per kind of run, fed by analysis results."""

import matplotlib

matplotlib.use("Agg")
