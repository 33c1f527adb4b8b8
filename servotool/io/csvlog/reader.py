"""read_csv, read_columns and read_meta: the header, then the body by pyarrow where installed."""

from __future__ import annotations

import functools
import io
import os
from collections.abc import Callable, Collection
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO

from servotool.io.csvlog import arrow_reader
from servotool.io.csvlog.arrow_reader import ArrowColumns, _body_table, _late_column, _pool, _Shape
from servotool.io.csvlog.header import (
    CsvFormatError,
    CsvMeta,
    _open_header,
    _read_header,
    _set_status,
    _tail_status,
)
from servotool.io.csvlog.plain_reader import _plain_body
from servotool.io.paths import open_readable

if TYPE_CHECKING:  # pandas is imported where a DataFrame is made: analysing with pyarrow never needs it
    import pandas as pd


Select = Callable[[CsvMeta, list[str]], Collection[str] | None]


def read_columns(
    path: str | Path, select: Select | None = None, lazy: Collection[str] = ()
) -> tuple[CsvMeta, pd.DataFrame | ArrowColumns]:
    """Like read_csv, but the rows come back as columns converted on demand (ArrowColumns) where pyarrow
    is installed: the fast, lean path for long recordings. Same guarantees and errors as read_csv.

    select(meta, column names), when given, names the columns to convert (None: all of them): the others
    are still counted in every row (a row of the wrong width is left out as before) but not converted, and
    reading one raises KeyError. Of the selected columns, those in `lazy` are converted only when first
    read (a second parse of the body, for them alone), where the body is short (held in memory); a longer
    body converts them with the rest. Without pyarrow every column is read."""
    if not arrow_reader.HAVE_ARROW:
        return read_csv(path)
    path = Path(path)
    try:
        with open_readable(path) as f:
            # a short file (up to THREADED_BYTES) is read in one go, its header and body from the same bytes
            small = os.fstat(f.fileno()).st_size <= arrow_reader.THREADED_BYTES
            fh: BinaryIO = io.BytesIO(f.read()) if small else f
            meta, header, header_lines = _read_header(fh, path)
            offset = fh.tell()
            wanted = select(meta, header) if select is not None else None
            include = None if not wanted else tuple(c for c in header if c in set(wanted))
            later = tuple(c for c in include or () if c in lazy) if small else ()
            if include is not None and later and len(later) < len(include):
                include = tuple(c for c in include if c not in later)
            else:
                later = ()
            shape = _Shape(tuple(header), include or None, ints=True)
            table = _body_table(path, meta, shape, header_lines + 1, offset, fh)
    except OSError as exc:
        raise CsvFormatError(f"{path}: cannot read ({exc.strerror or exc})") from None
    columns = ArrowColumns(table, header)
    if later:
        columns.defer(later, functools.partial(_late_column, fh, shape, offset))
    return meta, columns


def read_meta(path: str | Path) -> CsvMeta:
    """Read only the header (fast: for recognising a run). Same errors as read_csv."""
    return read_csv(path, header_only=True)[0]


def read_csv(path: str | Path, *, header_only: bool = False) -> tuple[CsvMeta, pd.DataFrame]:
    """Read a servotool-csv file into (metadata, DataFrame of its rows, in file order).

    Nothing recorded is lost silently: a line that is not a row of the header's width (wrong number of
    fields, a quote that does not close within its field, a stray carriage return or NUL, bytes that are
    not UTF-8, longer than MAX_ROW_BYTES) is skipped on its own, counted in meta.n_bad_rows and listed in
    meta.bad_rows with its line number, and every row after it is read. Comment lines in the body are
    ignored; a UTF-8 BOM is accepted. A file without an end line is returned with meta.complete False and
    end_reason saying it was cut off; its torn last row (a crash mid-write) is dropped without a mention.
    Raises NotServotoolCsv for a foreign file and CsvFormatError for a damaged header, an end line
    followed by more rows or a second recording's first line in the body (two files joined), each naming
    the file (and the line where known). Label columns (event, phase)
    come back categorical, known numeric columns as float64.
    """
    import pandas as pd

    path = Path(path)
    meta, header, header_lines, offset = _open_header(path)
    empty = pd.DataFrame(columns=header)
    if header_only:
        _set_status(meta, _tail_status(path)[0])
        return meta, empty
    if not arrow_reader.HAVE_ARROW:
        return meta, _plain_body(path, meta, header, header_lines + 1, offset)
    table = _body_table(path, meta, _Shape(tuple(header)), header_lines + 1, offset)
    if table.num_rows == 0:
        return meta, empty
    return meta, table.to_pandas(self_destruct=True, split_blocks=True, memory_pool=_pool())
