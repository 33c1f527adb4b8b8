"""The servotool-csv header: format name and version, the metadata it carries, and reading it back."""

from __future__ import annotations

import csv
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

from servotool.errors import FileFormatError
from servotool.io.paths import open_readable

FORMAT_NAME = "servotool-csv"
FORMAT_VERSION = 1
_MAGIC = f"# {FORMAT_NAME}: "
_END = "# end: "


class CsvFormatError(FileFormatError):
    """A file could not be read as servotool-csv; the message names the file and the reason."""


class NotServotoolCsv(CsvFormatError):
    """The file is not a servotool-csv recording at all."""


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
TAIL_BYTES = 1 << 16  # the end line is looked for in this much of the file's tail
_BOM = b"\xef\xbb\xbf"


def is_recording(path: Path) -> bool:
    """Whether `path` is a servotool recording (its first line names the format), whatever its name."""
    try:
        with open_readable(path) as f:
            return f.read(32).startswith(b"# servotool-csv")
    except OSError:
        return False


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


def _set_status(meta: CsvMeta, status: str | None) -> None:
    meta.complete = status == "complete"
    if status is None:
        meta.end_reason = "no end line: the recording was cut off"
    elif not meta.complete:
        meta.end_reason = status.removeprefix("interrupted:").strip() or status


def _open_header(path: Path) -> tuple[CsvMeta, list[str], int, int]:
    """(meta, column names, lines before the first row, byte offset of the first row)."""
    try:
        with open_readable(path) as fh:
            meta, header, header_lines = _read_header(fh, path)
            return meta, header, header_lines, fh.tell()
    except OSError as exc:
        raise CsvFormatError(f"{path}: cannot read ({exc.strerror or exc})") from None
