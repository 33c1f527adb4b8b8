"""The body reader with pyarrow: threaded parse, type demotion, columns converted on demand."""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import os
import re
import sys
import time
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np
import numpy.typing as npt

from servotool.io.csvbody import (
    BodyStream,
)
from servotool.io.csvlog.header import (
    CsvFormatError,
    CsvMeta,
)
from servotool.io.csvlog.rows import _INTEGER, _LABELS, _NUMERIC, _finish, _RowSink
from servotool.io.paths import open_readable

try:  # the fast reader; without pyarrow a plain line-by-line reader keeps the same guarantees
    import pyarrow as pa
    import pyarrow.csv as pacsv

    HAVE_ARROW = True
except ImportError:  # pragma: no cover - exercised by forcing HAVE_ARROW off in the tests
    HAVE_ARROW = False

THREADED_BYTES = 4 << 20  # a body larger than this is parsed on every core


def _pool() -> Any:
    # the system allocator hands freed buffers back at once: the Arrow table is released column by column
    # while the arrays are built, so the peak stays near one copy of the data
    return pa.system_memory_pool()


def _column_types(
    header: Sequence[str], as_text: Collection[str], as_float: Collection[str] = (), ints: bool = False
) -> dict[str, Any]:
    """Each column's type: labels coded, numbers float64, with `ints` the counters and codes int64. A
    column whose cells did not all convert goes one step down (int64 to float64, float64 to text)."""
    types: dict[str, Any] = {}
    for name in header:
        if name in as_text:
            types[name] = pa.string()
        elif name in _LABELS or name == "info":  # few distinct texts, mostly empty: codes, not strings
            types[name] = pa.dictionary(pa.int32(), pa.string())
        elif ints and name not in as_float and _INTEGER.match(name):
            types[name] = pa.int64()
        elif _NUMERIC.match(name):
            types[name] = pa.float64()
    return types


@dataclass(frozen=True)
class _Shape:
    """How a body is to be parsed: its column names, the columns to convert (None: all), and the columns
    demoted because a cell did not convert (to float64, to text)."""

    header: tuple[str, ...]
    include: tuple[str, ...] | None = None
    ints: bool = False
    as_float: frozenset[str] = frozenset()
    as_text: frozenset[str] = frozenset()

    def types(self) -> dict[str, Any]:
        return _column_types(self.header, self.as_text, self.as_float, self.ints)

    def demoted(self, name: str) -> _Shape | None:
        """The same shape with `name` one type down, or None when it is text already."""
        kind = self.types().get(name)
        if kind == pa.int64():
            return dataclasses.replace(self, as_float=self.as_float | {name})
        if name in self.as_text:
            return None
        return dataclasses.replace(self, as_text=self.as_text | {name})


@functools.lru_cache(maxsize=16)
def _options(shape: _Shape, threads: bool) -> tuple[Any, Any]:
    """pyarrow's read and convert options for one body shape (built once per process: a folder of files of
    one shape reuses them)."""
    include = [] if shape.include is None else list(shape.include)
    convert = pacsv.ConvertOptions(
        column_types=shape.types(),
        include_columns=include,
        strings_can_be_null=True,
        # BodyStream hands on only lines that decode as UTF-8: a second check of every text cell would
        # find nothing
        check_utf8=False,
        # only an empty cell is missing: a label that reads "nan" is a label (floats still read nan as
        # NaN), and a row of them is a damaged row, not a blank line
        null_values=[""],
    )
    return pacsv.ReadOptions(column_names=list(shape.header), use_threads=threads), convert


def _arrow_read(
    fh: BinaryIO, offset: int, shape: _Shape, sink: _RowSink, threads: bool, count: bool, short: bool = False
) -> Any:
    """Parse the body's rows with pyarrow; a column whose cells do not all convert to its type is read as
    the next type down instead (int64, float64, text: the analyses coerce text and count what is lost).
    Returns (table, the stream's report). A short body is checked whole and handed over as one buffer:
    streaming it through Python reads on the parser's reader thread costs more hand-overs than the checks
    themselves. count: number the lines taken out (needed to number the rows the parser refuses). threads:
    pyarrow's threaded reader (the serial one where the refused rows are to be numbered)."""
    header = shape.header
    while True:
        stream = BodyStream(fh, offset, len(header), count_lines=count)
        # a bytearray is a new object whatever its length (b"" and one-byte bytes are shared): _parse tells
        # from its reference count when pyarrow has let go of it
        given: Any = bytearray().join(iter(stream.read, b"")) if short else stream
        try:
            return _parse(given, shape, sink, threads, short), stream.report
        except pa.ArrowInvalid as exc:
            if str(exc).startswith("Empty CSV file"):  # no rows at all: an empty table of the same columns
                stream.read()
                types = shape.types()
                names = list(header if shape.include is None else shape.include)
                empty = [pa.array([], types.get(name, pa.string())) for name in names]
                return pa.table(empty, names=names), stream.report
            col = _bad_column(str(exc), header)
            lower = None if col is None else shape.demoted(col)
            if lower is None:
                raise
            shape = lower
            sink.reset()


RELEASE_WAIT_S = 5.0  # how long a read waits for pyarrow's threads to let go of its Python objects


def _parse(given: Any, shape: _Shape, sink: _RowSink, threads: bool, short: bool) -> Any:
    """pyarrow's read_csv of `given` (a short body's bytes, else a readable stream), returned only once
    pyarrow has let go of the Python objects it was handed (the input and the row handler), or after
    RELEASE_WAIT_S. Its threaded reader drops its last references to them on a pool thread, at times after
    read_csv has returned (1 read in 10 here); a pool thread still holding one when the interpreter exits
    cannot take the interpreter's lock and aborts the process (exit 134, "terminate called without an
    active exception") after the command had done its work."""
    held = (given, sink)
    before = _refcounts(held)
    try:
        read_options, convert_options = _options(shape, threads)
        return pacsv.read_csv(
            pa.BufferReader(given) if short else pa.PythonFile(given, mode="r"),
            memory_pool=pa.default_memory_pool() if short else _pool(),
            read_options=read_options,
            parse_options=pacsv.ParseOptions(ignore_empty_lines=False, invalid_row_handler=sink),
            convert_options=convert_options,
        )
    finally:
        end = time.monotonic() + RELEASE_WAIT_S
        while any(a > b for a, b in zip(_refcounts(held), before, strict=True)) and time.monotonic() < end:
            time.sleep(0)  # a pool thread that holds one needs this thread's turn to finish with it


def _refcounts(objs: Sequence[object]) -> list[int]:
    return [sys.getrefcount(obj) for obj in objs]


_COLUMN_ERROR = re.compile(r"In CSV column #(\d+): .*conversion error")


def _bad_column(message: str, header: Sequence[str]) -> str | None:
    m = _COLUMN_ERROR.search(message)
    if m is None or int(m.group(1)) >= len(header):
        return None
    return header[int(m.group(1))]


def _body_table(
    path: Path, meta: CsvMeta, shape: _Shape, first_line: int, offset: int, fh: BinaryIO | None = None
) -> Any:
    """The rows as an Arrow table (read from fh when given, else from the file), by pyarrow's threaded
    reader (on every core when the body is long). The lines taken out are numbered only when the parser
    refused rows (the body is then parsed again, on one thread, counting them): a clean body is not
    counted line by line."""
    try:
        with contextlib.ExitStack() as stack:
            if fh is None:
                fh = stack.enter_context(open_readable(path))
            sink = _RowSink()
            short = fh.seek(0, os.SEEK_END) - offset <= THREADED_BYTES
            # pyarrow's threaded reader even for a short body (one block, as a rule): its serial reader
            # starts a thread of its own for every file and waits for it, and where every core is busy (a
            # folder on all of them) that wait for a core cost more than the parse (1,000 files on 2
            # workers: 1.7 -> 1.55 s)
            table, report = _arrow_read(fh, offset, shape, sink, True, count=False, short=short)
            if sink.count:
                sink = _RowSink()
                table, report = _arrow_read(fh, offset, shape, sink, False, count=True, short=short)
            _finish(fh, meta, report, sink, first_line, offset)
            return table
    except pa.ArrowInvalid as exc:
        raise CsvFormatError(f"{path}: rows do not parse ({str(exc).splitlines()[0]})") from None
    except OSError as exc:
        raise CsvFormatError(f"{path}: cannot read ({exc.strerror or exc})") from None


class ArrowColumns(Mapping[str, Any]):
    """The body's columns, each converted to numpy (labels to a pandas Categorical) when asked for: no
    DataFrame is built, so a long recording is held once, as the Arrow table. `columns` names every column
    of the file; one the reader was asked to leave out (read_columns' select) raises KeyError."""

    def __init__(self, table: Any, header: Sequence[str] | None = None) -> None:
        self._table = table
        self._names = list(table.column_names if header is None else header)
        self._rows = int(table.num_rows)
        self._later: dict[str, Callable[[str], Any]] = {}

    def defer(self, names: Iterable[str], convert: Callable[[str], Any]) -> None:
        """Columns not in the table yet: convert(name) makes one (an Arrow column of the same rows) the first
        time it is read."""
        self._later.update(dict.fromkeys(names, convert))

    def _column(self, name: str) -> Any:
        convert = self._later.pop(name, None)
        if convert is not None:
            self._table = self._table.append_column(name, convert(name))
        return self._table.column(name)

    @property
    def columns(self) -> list[str]:
        """Every column of the file, released ones and ones left out included."""
        return list(self._names)

    def __len__(self) -> int:
        return self._rows

    def __iter__(self) -> Iterator[str]:
        return iter(self.columns)

    def release(self, name: str) -> None:
        """Drop a column that has been read: its memory goes back at once (the system allocator); reading
        it again raises KeyError."""
        self._later.pop(name, None)
        if name in self._table.column_names:
            self._table = self._table.drop_columns([name])

    def __getitem__(self, name: str) -> Any:
        col = self._column(name)
        if _is_text(col.type):
            import pandas as pd

            codes, labels = self.codes(name)
            return pd.Categorical.from_codes(codes, categories=pd.Index(labels))
        if col.type == pa.float64():
            return _chunks_to_numpy(col.chunks, np.float64, np.nan)
        if col.type == pa.int64():  # numbers come out as float64 whatever the parser held them as
            values, missing = self.numbers(name)
            out = values.astype(np.float64)
            if missing is not None:
                out[missing] = np.nan
            return out
        return col.to_numpy()

    def numbers(self, name: str) -> tuple[npt.NDArray[Any], npt.NDArray[np.bool_] | None]:
        """A number column as (its values, float64 or int64, read-only and without a copy where the column
        is one block; True where a cell is empty, or None when none is). The value under an empty cell is
        meaningless. Raises TypeError for a column held as text."""
        col = self._column(name)
        dtype = _FIXED.get(col.type.id)
        if dtype is None:
            raise TypeError(f"column {name!r} holds text, not numbers")
        return _one_block(col, dtype)

    def codes(self, name: str) -> tuple[npt.NDArray[np.int32], list[str]]:
        """A text column as (int32 code per row, -1 where empty; the label of each code), straight from
        the parser's dictionary: no Python string per row."""
        col = self._column(name)
        if not _is_text(col.type):
            raise TypeError(f"column {name!r} holds numbers, not labels")
        if pa.types.is_dictionary(col.type) and col.num_chunks == 1:  # one block, so one dictionary
            arr = col.chunk(0)
            labels = [str(x) for x in arr.dictionary.to_pylist()]
            if not labels:  # every cell empty
                return np.full(len(arr), -1, dtype=np.int32), labels
            values, missing = _array_view(arr.indices, np.int32)
            if missing is None:
                return values, labels
            codes = values.copy()
            codes[missing] = -1
            return codes, labels
        if not pa.types.is_dictionary(col.type):
            col = col.dictionary_encode()
        col = col.unify_dictionaries()
        labels = [str(x) for x in col.chunk(0).dictionary.to_pylist()] if col.num_chunks else []
        codes = _chunks_to_numpy([c.indices for c in col.chunks], np.int32, -1)
        return codes.astype(np.int32, copy=False), labels


_FIXED: dict[int, Any] = {pa.float64().id: np.float64, pa.int64().id: np.int64} if HAVE_ARROW else {}


def _one_block(col: Any, dtype: Any) -> tuple[npt.NDArray[Any], npt.NDArray[np.bool_] | None]:
    """A fixed-width Arrow column as (values, empty-cell mask or None): a view of a column of one block,
    else one copy."""
    if col.num_chunks == 0:
        return np.zeros(0, dtype=dtype), None
    arr = col.chunk(0) if col.num_chunks == 1 else pa.concat_arrays(col.chunks)
    return _array_view(arr, dtype)


def _array_view(arr: Any, dtype: Any) -> tuple[npt.NDArray[Any], npt.NDArray[np.bool_] | None]:
    """(arr's values viewed as numpy, True where a cell is empty or None when none is), from the buffers
    with numpy alone (pyarrow's own conversion would load pandas). A dictionary's indices carry its
    empty cells."""
    n, off = len(arr), arr.offset
    validity, data = arr.buffers()[:2]
    if data is None:  # no values at all
        return np.zeros(n, dtype=dtype), (np.ones(n, dtype=bool) if n else None)
    values = np.frombuffer(data, dtype=dtype, count=n, offset=off * np.dtype(dtype).itemsize)
    if validity is None or not arr.null_count:
        return values, None
    bits = np.unpackbits(np.frombuffer(validity, dtype=np.uint8), count=off + n, bitorder="little")
    return values, ~bits[off:].view(bool)


def _chunks_to_numpy(chunks: Sequence[Any], dtype: Any, missing: float) -> Any:
    """Fixed-width Arrow arrays as one numpy array, `missing` where a cell is null. Read from the buffers
    with numpy alone (pyarrow's own conversion would load pandas), each chunk copied once into place."""
    out = np.empty(sum(len(arr) for arr in chunks), dtype=dtype)
    at = 0
    for arr in chunks:
        values, empty = _array_view(arr, dtype)
        part = out[at : at + len(values)]
        part[:] = values
        if empty is not None:
            np.putmask(part, empty, missing)
        at += len(values)
    return out


def _is_text(kind: Any) -> bool:
    return bool(pa.types.is_string(kind) or pa.types.is_large_string(kind) or pa.types.is_dictionary(kind))


def _late_column(fh: BinaryIO, shape: _Shape, offset: int, name: str) -> Any:
    """Column `name` of the body in fh (a short one, held in memory), parsed again for it alone: the same
    checks, so the same rows."""
    late = dataclasses.replace(shape, include=(name,))
    return _arrow_read(fh, offset, late, _RowSink(), False, count=False, short=True)[0].column(name)
