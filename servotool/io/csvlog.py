"""servotool-csv v1: the timestamped recording every run writes, and its reader.

Layout (README, "The CSV format"): comment header lines `# key: value` (servotool-csv, created, tool,
command, device, any extra keys such as realtime, then config and units as one-line JSON), one column header
line, one row per event in time order, and a closing `# end: complete` or `# end: interrupted: <reason>`.

Guarantees: every row is flushed to the OS as it is written, so a crash loses at most the row being written;
a file without its end line reads back as interrupted; a file that is not servotool-csv is refused with one
error that names it.
"""

from __future__ import annotations

import contextlib
import csv
import dataclasses
import functools
import io
import json
import math
import os
import re
import shlex
import sys
import time
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any, BinaryIO

import numpy as np
import numpy.typing as npt

from servotool import __version__
from servotool.errors import FileFormatError
from servotool.io.csvbody import (
    CHUNK_BYTES,
    BodyReport,
    BodyStream,
    file_line,
    line_numbers,
)
from servotool.io.paths import open_readable

if TYPE_CHECKING:  # pandas is imported where a DataFrame is made: analysing with pyarrow never needs it
    import pandas as pd

try:  # the fast reader; without pyarrow a plain line-by-line reader keeps the same guarantees
    import pyarrow as pa
    import pyarrow.csv as pacsv

    HAVE_ARROW = True
except ImportError:  # pragma: no cover - exercised by forcing HAVE_ARROW off in the tests
    HAVE_ARROW = False

FORMAT_NAME = "servotool-csv"
FORMAT_VERSION = 1
_MAGIC = f"# {FORMAT_NAME}: "
_END = "# end: "


class CsvFormatError(FileFormatError):
    """A file could not be read as servotool-csv; the message names the file and the reason."""


class NotServotoolCsv(CsvFormatError):
    """The file is not a servotool-csv recording at all."""


def _fmt(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        return format(value, ".10g")
    if hasattr(value, "item"):  # numpy scalar
        return _fmt(value.item())
    # one row is one line: a line break or NUL in a text (a device's message) would split or spoil it
    return str(value).translate(_ONE_LINE)


_ONE_LINE = str.maketrans({"\n": " ", "\r": " ", "\x00": " "})


def _json_default(obj: Any) -> Any:
    if hasattr(obj, "item"):
        return obj.item()
    if hasattr(obj, "tolist"):
        return obj.tolist()
    if isinstance(obj, Path):
        return str(obj)
    if hasattr(obj, "__dict__"):
        return vars(obj)
    return str(obj)


def command_line(argv: Sequence[str] | None = None) -> str:
    """The command as typed, shell-quoted, with the program shown as `servotool`."""
    args = list(sys.argv if argv is None else argv)
    if args:
        args[0] = "servotool"
    return " ".join(shlex.quote(a) for a in args)


_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
_ESCAPES = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _one_line(text: str) -> str:
    """A header value kept on its line: control characters (a newline in an argument, a NUL) written as
    escapes, so no value can end the header early or forge a header or end line."""
    return _CONTROL.sub(lambda m: _ESCAPES.get(m.group(), f"\\x{ord(m.group()):02x}"), text)


def device_slug(device: str) -> str:
    """A file-name-safe form of a device URL: sim:arm-x -> sim-arm-x, arm://10.0.0.2 -> arm-10.0.0.2."""
    base = device.split("?", 1)[0]
    slug = re.sub(r"[^A-Za-z0-9.]+", "-", base).strip("-")
    return slug or "device"


def run_file_name(mode: str, device: str, when: datetime | None = None) -> str:
    """`<mode>_<device>_<UTC stamp>.csv`, the stamp to the millisecond (e.g. 20261129T223105.123Z)."""
    when = (when or datetime.now(timezone.utc)).astimezone(timezone.utc)
    stamp = when.strftime("%Y%m%dT%H%M%S.") + f"{when.microsecond // 1000:03d}Z"
    return f"{mode}_{device_slug(device)}_{stamp}.csv"


def is_recording(path: Path) -> bool:
    """Whether `path` is a servotool recording (its first line names the format), whatever its name."""
    try:
        with open_readable(path) as f:
            return f.read(32).startswith(b"# servotool-csv")
    except OSError:
        return False


def unique_path(folder: Path, name: str) -> Path:
    """folder/name, with -2, -3 ... appended when a file of that name already exists (never overwrite)."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    stem, suffix = path.stem, path.suffix
    k = 2
    while path.exists():
        path = folder / f"{stem}-{k}{suffix}"
        k += 1
    return path


class CsvLogWriter:
    """Write one run as servotool-csv v1. Use as a context manager.

    The header is written at construction. Leaving the `with` block normally writes `# end: complete`;
    an exception writes `# end: interrupted: <reason>` (KeyboardInterrupt reads "Ctrl-C") and propagates.
    `interrupt(reason)` marks the run interrupted explicitly (a controller fault that ended the run early).
    """

    def __init__(
        self,
        path: str | Path,
        *,
        device: str,
        simulated: bool,
        config: Mapping[str, Any],
        units: Mapping[str, str],
        columns: Sequence[str],
        command: str | None = None,
        extra: Mapping[str, Any] | None = None,
        created: datetime | None = None,
    ) -> None:
        self.path = Path(path)
        self.columns = list(columns)
        if len(set(self.columns)) != len(self.columns):
            raise ValueError(f"duplicate CSV columns in {self.columns}")
        self._interrupted: str | None = None
        self._closed = False
        self.rows_written = 0
        self.path.parent.mkdir(parents=True, exist_ok=True)
        # line buffering: every row reaches the OS when its newline is written
        self._fh = open(self.path, "x", newline="", encoding="utf-8", buffering=1)  # noqa: SIM115
        created = (created or datetime.now(timezone.utc)).astimezone(timezone.utc)
        lines = [
            f"{_MAGIC}{FORMAT_VERSION}",
            f"# created: {created.isoformat()}",
            f"# tool: servotool {__version__}",
            f"# command: {_one_line(command if command is not None else command_line())}",
            f"# device: {_one_line(device)}{' (SIMULATED)' if simulated else ''}",
        ]
        for key, value in (extra or {}).items():
            if key in {"config", "units", "end", "created", "tool", "command", "device", FORMAT_NAME}:
                raise ValueError(f"extra header key {key!r} is reserved")
            text = value if isinstance(value, str) else json.dumps(value, default=_json_default)
            lines.append(f"# {key}: {_one_line(text)}")
        lines.append("# config: " + json.dumps(dict(config), default=_json_default, sort_keys=False))
        lines.append("# units: " + json.dumps(dict(units)))
        self._fh.write("\n".join(lines) + "\n")
        self._csv = csv.writer(self._fh, lineterminator="\n")
        self._csv.writerow(self.columns)

    def write(self, row: Mapping[str, Any] | None = None, /, **fields: Any) -> None:
        """Append one row; unknown keys are refused, missing ones are left empty."""
        if self._closed:
            raise ValueError(f"{self.path}: write after close")
        data = dict(row or {}, **fields)
        unknown = set(data) - set(self.columns)
        if unknown:
            raise ValueError(f"{self.path}: unknown CSV columns {sorted(unknown)}")
        self._csv.writerow([_fmt(data.get(c)) for c in self.columns])
        self.rows_written += 1

    def write_many(self, rows: Iterable[Mapping[str, Any]]) -> None:
        for row in rows:
            self.write(row)

    def interrupt(self, reason: str) -> None:
        """Mark the run interrupted; the end line will say so with this reason."""
        self._interrupted = _one_line(" ".join(str(reason).split())) or "unknown"

    @property
    def interrupted(self) -> str | None:
        return self._interrupted

    def close(self) -> None:
        """Write the end line and close the file. The file is closed even when the end line cannot be
        written (OSError, raised after): such a file reads back as interrupted."""
        if self._closed:
            return
        self._closed = True
        end = "complete" if self._interrupted is None else f"interrupted: {self._interrupted}"
        try:
            self._fh.write(f"{_END}{end}\n")
            self._fh.flush()
        finally:
            with contextlib.suppress(OSError):  # the buffer could not be flushed: the write's error is raised
                self._fh.close()

    def __enter__(self) -> CsvLogWriter:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if exc_type is not None and self._interrupted is None:
            if issubclass(exc_type, KeyboardInterrupt):
                self.interrupt("Ctrl-C")
            else:
                self.interrupt(f"{exc_type.__name__}: {exc}")
        self.close()


@dataclass
class BadRow:
    """A body line that was skipped: its 1-based line number in the file and why."""

    line: int
    reason: str


@dataclass
class CsvMeta:
    """What a servotool-csv header says. `complete` is False for an interrupted or cut-off file.

    bad_rows lists the first MAX_BAD_ROWS_LISTED body lines that were skipped (malformed, too long);
    n_bad_rows counts them all.
    """

    path: Path
    version: int
    created: str = ""
    tool: str = ""
    command: str = ""
    device: str = ""
    simulated: bool = False
    config: dict[str, Any] = field(default_factory=dict)
    units: dict[str, str] = field(default_factory=dict)
    extra: dict[str, str] = field(default_factory=dict)
    complete: bool = False
    end_reason: str | None = None  # None when complete
    bad_rows: list[BadRow] = field(default_factory=list)
    n_bad_rows: int = 0

    @property
    def mode(self) -> str:
        return str(self.config.get("mode", ""))

    def skip(self, line: int, reason: str) -> None:
        """Record one skipped body line."""
        self.n_bad_rows += 1
        if len(self.bad_rows) < MAX_BAD_ROWS_LISTED:
            self.bad_rows.append(BadRow(line, reason))


MAX_BAD_ROWS_LISTED = 20
MAX_HEADER_LINE_BYTES = 1 << 20  # a header line (the config JSON) longer than this is refused
THREADED_BYTES = 4 << 20  # a body larger than this is parsed on every core
TAIL_BYTES = 1 << 16  # the end line is looked for in this much of the file's tail
_BOM = b"\xef\xbb\xbf"
_NUMERIC = re.compile(r"^(t|seq|pass|[qr]\d+|errcode|main_code|sub_code|dev_t)$")
_INTEGER = re.compile(r"^(seq|pass|errcode|main_code|sub_code)$")  # int64 where every cell is one
_LABELS = ("event", "phase")
_NUMBER_MISSING = ["", "nan", "NaN", "NAN", "-nan", "NA", "N/A", "null", "NULL", "None"]


def _header_value(meta: CsvMeta, key: str, value: str, path: Path) -> None:
    if key in ("config", "units"):
        try:
            decoded = json.loads(value)
        except json.JSONDecodeError as exc:
            raise CsvFormatError(f"{path}: header '{key}' is not valid JSON ({exc.msg})") from None
        if not isinstance(decoded, dict):
            raise CsvFormatError(f"{path}: header '{key}' must be a JSON object")
        setattr(meta, key, decoded)
    elif key == "device":
        meta.simulated = value.endswith(" (SIMULATED)")
        meta.device = value.removesuffix(" (SIMULATED)")
    elif key in ("created", "tool", "command"):
        setattr(meta, key, value)
    else:
        meta.extra[key] = value


def _header_line(fh: BinaryIO, path: Path, number: int) -> str:
    raw = fh.readline(MAX_HEADER_LINE_BYTES + 1)
    if len(raw) > MAX_HEADER_LINE_BYTES:
        raise CsvFormatError(f"{path}: line {number} is longer than {MAX_HEADER_LINE_BYTES} bytes")
    if number == 1:
        raw = raw.removeprefix(_BOM)
    try:
        return raw.decode("utf-8").rstrip("\r\n")
    except UnicodeDecodeError:
        if number == 1:
            raise NotServotoolCsv(f"{path}: not a servotool-csv file (binary content)") from None
        raise CsvFormatError(f"{path}: line {number} is not UTF-8 text") from None


def _read_header(fh: BinaryIO, path: Path) -> tuple[CsvMeta, list[str], int]:
    """(meta from the comment header, column names, number of lines before the first row)."""
    first = _header_line(fh, path, 1)
    if not first.startswith(_MAGIC):
        raise NotServotoolCsv(f"{path}: not a servotool-csv file (first line is not '{_MAGIC.strip()} N')")
    try:
        version = int(first[len(_MAGIC) :].strip())
    except ValueError:
        raise CsvFormatError(f"{path}: unreadable format version {first!r}") from None
    if version != FORMAT_VERSION:
        raise CsvFormatError(f"{path}: servotool-csv version {version} is not supported (this reads 1)")
    meta = CsvMeta(path=path, version=version)
    number = 2
    line = _header_line(fh, path, number)
    while line.startswith("#") and not line.startswith(_END):
        key, sep, value = line[1:].strip().partition(":")
        if not sep:
            raise CsvFormatError(f"{path}: header line {number} is not '# key: value'")
        _header_value(meta, key.strip(), value.strip(), path)
        number += 1
        line = _header_line(fh, path, number)
    if not line.strip() or line.startswith("#"):
        raise CsvFormatError(f"{path}: no column header line")
    header = next(csv.reader([line]))
    if len(set(header)) != len(header):
        raise CsvFormatError(f"{path}: line {number}: repeated column names")
    return meta, header, number


def _tail_status(path: Path) -> tuple[str | None, bool]:
    """(status of the end line, if the file's last line that is neither blank nor another comment is one;
    whether the file ends with a newline)."""
    with open_readable(path) as fh:
        fh.seek(max(0, path.stat().st_size - TAIL_BYTES))
        tail = fh.read()
    for raw in reversed(tail.split(b"\n")):
        text = raw.decode("utf-8", "replace").strip()
        if text.startswith(_END.strip()):
            return text[len(_END) - 1 :].strip(), tail.endswith(b"\n")
        if text and not text.startswith("#"):
            return None, tail.endswith(b"\n")
    return None, tail.endswith(b"\n")


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


class _RowSink:
    """Takes the rows the parser refuses (a wrong number of fields: BodyStream took out everything else).
    Keeps the parser's row numbers of the first MAX_BAD_ROWS_LISTED, counts them all."""

    def __init__(self) -> None:
        self.rows: list[tuple[int, str]] = []  # (0-based parser row, reason)
        self.count = 0

    def reset(self) -> None:
        """Forget what a failed parse attempt collected."""
        self.rows.clear()
        self.count = 0

    def __call__(self, row: Any) -> str:
        self.count += 1
        if len(self.rows) < MAX_BAD_ROWS_LISTED and row.number is not None:
            self.rows.append(
                (int(row.number) - 1, f"{row.actual_columns} fields, expected {row.expected_columns}")
            )
        return "skip"


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


def _set_status(meta: CsvMeta, status: str | None) -> None:
    meta.complete = status == "complete"
    if status is None:
        meta.end_reason = "no end line: the recording was cut off"
    elif not meta.complete:
        meta.end_reason = status.removeprefix("interrupted:").strip() or status


def _finish(
    fh: BinaryIO, meta: CsvMeta, report: BodyReport, sink: _RowSink, first_line: int, offset: int
) -> None:
    """Set meta's end status and skipped rows (in line order) from what the stream took out and what the
    parser refused. Raises CsvFormatError naming the line of an end line that rows follow (it would hide
    them)."""
    end, second = report.end, report.second_header
    # the end line's number is needed only to name it in the refusal below (counting costs a pass)
    cuts = list(report.bad) + ([end] if end is not None and report.rows_after_end is not None else [])
    cuts += [second] if second is not None else []
    unnumbered = sorted({c.pos for c in cuts if c.index < 0})
    if unnumbered:
        index = dict(zip(unnumbered, line_numbers(fh, offset, unnumbered), strict=True))
        for c in cuts:
            if c.index < 0:
                c.index = index[c.pos]
    if second is not None:
        raise CsvFormatError(
            f"{meta.path}: line {first_line + second.index}: a second recording starts here "
            f"('{second.verdict.text}'): files joined into one? Split them there"
        )
    if end is not None and report.rows_after_end is not None:
        what = "a second recording" if report.rows_after_end.verdict.kind == "header" else "more rows"
        raise CsvFormatError(
            f"{meta.path}: line {first_line + end.index}: '{_END}{end.verdict.text}' is followed by {what}"
        )
    _set_status(meta, end.verdict.text if end is not None else None)
    listed = [(first_line + c.index, c.verdict.text) for c in report.bad]
    listed += [(first_line + file_line(report.removed, row), why) for row, why in sink.rows]
    meta.bad_rows = [BadRow(line, why) for line, why in sorted(listed)[:MAX_BAD_ROWS_LISTED]]
    meta.n_bad_rows = report.n_bad + sink.count


def _plain_body(
    path: Path, meta: CsvMeta, header: Sequence[str], first_line: int, offset: int
) -> pd.DataFrame:
    """The rows without pyarrow: the same BodyStream, each row's fields counted here, the good rows parsed
    by pandas. Same skipping rules and line numbers as the Arrow reader."""
    import pandas as pd

    sink = _RowSink()
    good: list[bytes] = []
    with open_readable(path) as fh:
        stream = BodyStream(fh, offset, len(header), count_lines=True)
        for row, line in enumerate(io.BufferedReader(stream, CHUNK_BYTES)):
            text = line.rstrip(b"\r\n")
            if not text:
                continue
            # a line with a quote was judged whole by the stream; the others are counted by commas
            n = len(header) if b'"' in text else text.count(b",") + 1
            if n == len(header):
                good.append(text)
            else:
                sink(_PlainRow(row + 1, n, len(header)))
        _finish(fh, meta, stream.report, sink, first_line, offset)
    if not good:
        return pd.DataFrame(columns=list(header))
    numbers = {c: "float64" for c in header if _NUMERIC.match(c)}
    # labels coded, other texts as written ("7" stays text)
    texts = {c: "category" if c in _LABELS else "object" for c in header if c not in numbers}
    # as the Arrow reader: a text is missing only when empty ("NA" or "None" in a label is a label)
    missing = {c: _NUMBER_MISSING if c in numbers else [""] for c in header}
    body = b"\n".join(good)
    for types in ({**texts, **numbers}, texts):  # a number column with text in it is read as it comes
        try:
            return pd.read_csv(
                io.BytesIO(body), names=list(header), header=None, dtype=types, keep_default_na=False,
                na_values=missing,
            )  # fmt: skip
        except ValueError as exc:
            error = exc
    raise CsvFormatError(f"{path}: rows do not parse ({str(error).splitlines()[0]})") from None


@dataclass
class _PlainRow:
    number: int  # 1-based, as the Arrow parser numbers rows
    actual_columns: int
    expected_columns: int


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
    if not HAVE_ARROW:
        return read_csv(path)
    path = Path(path)
    try:
        with open_readable(path) as f:
            # a short file (up to THREADED_BYTES) is read in one go, its header and body from the same bytes
            small = os.fstat(f.fileno()).st_size <= THREADED_BYTES
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


def _late_column(fh: BinaryIO, shape: _Shape, offset: int, name: str) -> Any:
    """Column `name` of the body in fh (a short one, held in memory), parsed again for it alone: the same
    checks, so the same rows."""
    late = dataclasses.replace(shape, include=(name,))
    return _arrow_read(fh, offset, late, _RowSink(), False, count=False, short=True)[0].column(name)


def _open_header(path: Path) -> tuple[CsvMeta, list[str], int, int]:
    """(meta, column names, lines before the first row, byte offset of the first row)."""
    try:
        with open_readable(path) as fh:
            meta, header, header_lines = _read_header(fh, path)
            return meta, header, header_lines, fh.tell()
    except OSError as exc:
        raise CsvFormatError(f"{path}: cannot read ({exc.strerror or exc})") from None


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
    if not HAVE_ARROW:
        return meta, _plain_body(path, meta, header, header_lines + 1, offset)
    table = _body_table(path, meta, _Shape(tuple(header)), header_lines + 1, offset)
    if table.num_rows == 0:
        return meta, empty
    return meta, table.to_pandas(self_destruct=True, split_blocks=True, memory_pool=_pool())
