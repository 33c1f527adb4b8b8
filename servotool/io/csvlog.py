"""servotool-csv v1: the timestamped recording every run writes, and its reader.

Layout (design.md): comment header lines `# key: value` (servotool-csv, created, tool, command, device, any
extra keys such as realtime, then config and units as one-line JSON), one column header line, one row per
event in time order, and a closing `# end: complete` or `# end: interrupted: <reason>`.

Guarantees: every row is flushed to the OS as it is written, so a crash loses at most the row being written;
a file without its end line reads back as interrupted; a file that is not servotool-csv is refused with one
error that names it.
"""

from __future__ import annotations

import csv
import io
import json
import math
import re
import shlex
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from types import TracebackType
from typing import Any

import pandas as pd

from servotool import __version__

FORMAT_NAME = "servotool-csv"
FORMAT_VERSION = 1
_MAGIC = f"# {FORMAT_NAME}: "
_END = "# end: "


class CsvFormatError(ValueError):
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
    return str(value)


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


def device_slug(device: str) -> str:
    """A file-name-safe form of a device URL: sim:fr3 -> sim-fr3, fairino://10.0.0.2 -> fairino-10.0.0.2."""
    base = device.split("?", 1)[0]
    slug = re.sub(r"[^A-Za-z0-9.]+", "-", base).strip("-")
    return slug or "device"


def run_file_name(mode: str, device: str, when: datetime | None = None) -> str:
    """`<mode>_<device>_<UTC stamp>.csv`, the stamp to the millisecond (e.g. 20261129T223105.123Z)."""
    when = (when or datetime.now(timezone.utc)).astimezone(timezone.utc)
    stamp = when.strftime("%Y%m%dT%H%M%S.") + f"{when.microsecond // 1000:03d}Z"
    return f"{mode}_{device_slug(device)}_{stamp}.csv"


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
            f"# command: {command if command is not None else command_line()}",
            f"# device: {device}{' (SIMULATED)' if simulated else ''}",
        ]
        for key, value in (extra or {}).items():
            if key in {"config", "units", "end", "created", "tool", "command", "device", FORMAT_NAME}:
                raise ValueError(f"extra header key {key!r} is reserved")
            text = value if isinstance(value, str) else json.dumps(value, default=_json_default)
            lines.append(f"# {key}: {text}".replace("\n", " "))
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
        self._interrupted = " ".join(str(reason).split()) or "unknown"

    @property
    def interrupted(self) -> str | None:
        return self._interrupted

    def close(self) -> None:
        if self._closed:
            return
        end = "complete" if self._interrupted is None else f"interrupted: {self._interrupted}"
        self._fh.write(f"{_END}{end}\n")
        self._fh.flush()
        self._fh.close()
        self._closed = True

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
class CsvMeta:
    """What a servotool-csv header says. `complete` is False for an interrupted or cut-off file."""

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

    @property
    def mode(self) -> str:
        return str(self.config.get("mode", ""))


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


def read_meta(path: str | Path) -> CsvMeta:
    """Read only the header (fast: for recognising a run). Same errors as read_csv."""
    return read_csv(path, header_only=True)[0]


def read_csv(path: str | Path, *, header_only: bool = False) -> tuple[CsvMeta, pd.DataFrame]:
    """Read a servotool-csv file into (metadata, DataFrame of its rows, in file order).

    A file without an end line is returned with meta.complete False and end_reason saying it was cut off;
    a torn last row (a crash mid-write) is dropped. Raises NotServotoolCsv for a foreign file and
    CsvFormatError for a damaged header, each naming the file.
    """
    path = Path(path)
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise CsvFormatError(f"{path}: cannot read ({exc.strerror or exc})") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise NotServotoolCsv(f"{path}: not a servotool-csv file (binary content)") from None
    lines = text.split("\n")
    if not lines or not lines[0].startswith(_MAGIC):
        raise NotServotoolCsv(f"{path}: not a servotool-csv file (first line is not '{_MAGIC.strip()} N')")
    try:
        version = int(lines[0][len(_MAGIC):].strip())
    except ValueError:
        raise CsvFormatError(f"{path}: unreadable format version {lines[0]!r}") from None
    if version != FORMAT_VERSION:
        raise CsvFormatError(f"{path}: servotool-csv version {version} is not supported (this reads 1)")
    meta = CsvMeta(path=path, version=version)
    i = 1
    while i < len(lines) and lines[i].startswith("#"):
        key, sep, value = lines[i][1:].strip().partition(":")
        if not sep:
            raise CsvFormatError(f"{path}: header line {i + 1} is not '# key: value'")
        _header_value(meta, key.strip(), value.strip(), path)
        i += 1
    if i >= len(lines) or not lines[i].strip():
        raise CsvFormatError(f"{path}: no column header line")
    header = next(csv.reader([lines[i]]))
    body: list[str] = []
    end_reason: str | None = "no end line: the recording was cut off"
    complete = False
    n_cols = len(header)
    for j in range(i + 1, len(lines)):
        line = lines[j]
        if line.startswith(_END):
            status = line[len(_END):].strip()
            complete = status == "complete"
            end_reason = None if complete else status.removeprefix("interrupted:").strip() or status
            break
        if not line or line.startswith("#"):
            continue
        body.append(line)
    if not complete and body:
        # drop a torn last row written by a process that died mid-line
        last = next(csv.reader([body[-1]]))
        if len(last) != n_cols:
            body.pop()
    meta.complete, meta.end_reason = complete, end_reason
    if header_only:
        return meta, pd.DataFrame(columns=header)
    if not body:
        return meta, pd.DataFrame(columns=header)
    try:
        df = pd.read_csv(io.StringIO("\n".join([lines[i], *body])), low_memory=False)
    except (pd.errors.ParserError, ValueError) as exc:
        raise CsvFormatError(f"{path}: rows do not parse ({str(exc).splitlines()[0]})") from None
    return meta, df
