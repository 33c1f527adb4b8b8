"""Write the tidy results table of a campaign: Parquet (through pyarrow, an optional extra) or CSV."""

from __future__ import annotations

import importlib.util
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from servotool.errors import ServotoolError
from servotool.io.csvlog import is_recording
from servotool.io.paths import link_problem

SUFFIXES = (".parquet", ".csv")


class TableWriteError(ServotoolError):
    """The table cannot be written: unknown format, missing pyarrow, or an unwritable path (exit 2)."""


def check_table_path(path: Path, inputs: Sequence[Path] = ()) -> None:
    """Refuse, before any work, a path whose format cannot be written here, and one that would overwrite a
    recording: an input file itself, or any file that is a servotool recording, and a folder (the table is
    one file), and a path through a dangling link or a link loop (see paths.link_problem)."""
    if (problem := link_problem(path, "--table", "file")) and not path.is_dir():
        raise TableWriteError(problem)
    if path.is_dir():
        raise TableWriteError(f"{path}: a folder; give the table's file name (e.g. {path / 'passes.csv'})")
    target = path.resolve()
    if any(target == p.resolve() for p in inputs) or (path.is_file() and is_recording(path)):
        raise TableWriteError(f"{path}: is a recording; the table never overwrites one (name a new file)")
    suffix = path.suffix.lower()
    if suffix not in SUFFIXES:
        raise TableWriteError(
            f"{path}: the table is written as .parquet or .csv, not {suffix or 'no suffix'!r}"
        )
    if suffix == ".parquet" and importlib.util.find_spec("pyarrow") is None:
        raise TableWriteError(
            f"{path}: writing Parquet needs pyarrow (pip install 'servotool[parquet]'); or write a .csv table"
        )


def write_table(rows: Sequence[Mapping[str, Any]], columns: Sequence[str], path: Path) -> Path:
    """Write rows (one dict each; missing keys empty) with exactly `columns`, in that order. NaN stays a
    missing value in both formats. Returns the path; raises TableWriteError as check_table_path does, or
    when the file cannot be written."""
    import pandas as pd  # only here: analysing without --table never needs it

    check_table_path(path)
    df = pd.DataFrame(list(rows), columns=list(columns))
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        if path.suffix.lower() == ".parquet":
            df.to_parquet(path, engine="pyarrow", index=False)
        else:
            df.to_csv(path, index=False)
    except OSError as exc:
        raise TableWriteError(f"{path}: cannot write the table ({exc.strerror or exc})") from None
    return path
