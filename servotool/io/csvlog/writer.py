"""Writing servotool-csv: the header, one flushed row per event, the end line; run file names."""

from __future__ import annotations

import contextlib
import csv
import json
import math
import re
import shlex
import sys
import threading
import time
from collections import deque
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime, timezone
from pathlib import Path
from types import TracebackType
from typing import Any

from servotool import __version__
from servotool.io.csvlog.header import _END, _MAGIC, FORMAT_NAME, FORMAT_VERSION


def _fmt(value: Any) -> str:
    kind = type(value)
    if kind is float:  # the common cell, first
        return format(value, ".10g") if value == value else "nan"
    if kind is int:
        return str(value)
    if kind is str:
        return value.translate(_ONE_LINE)
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
        self._known = frozenset(self.columns)  # checked on every row: made once
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
        data = row if row is not None and not fields else dict(row or {}, **fields)
        if not self._known.issuperset(data):
            unknown = set(data) - self._known
            raise ValueError(f"{self.path}: unknown CSV columns {sorted(unknown)}")
        self._emit(data)

    def _emit(self, data: Mapping[str, Any]) -> None:
        # most cells of a row are empty (a cmd row has no state values) or floats: neither makes a call
        self._csv.writerow(
            [
                "" if v is None else format(v, ".10g") if type(v) is float and v == v else _fmt(v)
                for v in map(data.get, self.columns)
            ]
        )
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


class RecordingBehind(Exception):
    """The rows waiting for a QueuedCsvLogWriter's thread reached its bound: the disk is slower than the
    stream. The row was still taken (write waited for room): nothing is lost, but the run must end."""


# a queued writer's thread writes what waits at least this often (s): a crash loses at most this much
QUEUE_FLUSH_S = 0.05
# rows a queued writer holds before a write counts as falling behind (about 4 s of a 1 kHz stream)
QUEUE_MAX_ROWS = 8192
# past an eighth of that, every NUDGE_EVERY-th write gives the thread this long (s) to take the backlog
NUDGE_S = 0.0001
NUDGE_EVERY = 128


class QueuedCsvLogWriter(CsvLogWriter):
    """A CsvLogWriter whose rows reach the file from a thread of its own, so that a slow disk never holds
    up the caller (a 1 kHz loop): write() checks and formats the row (as CsvLogWriter does) and queues its
    line; the thread writes the lines waiting, in one write and one flush per batch.

    Guarantees: every row written is in the file, in order, once close() returned; the rows reach the OS
    in batches at least every QUEUE_FLUSH_S (a crash loses at most that much). Past max_rows / 8 rows
    waiting, every NUDGE_EVERY-th write wakes the thread and sleeps NUDGE_S (the thread must get the CPU
    from a caller that never blocks). When `max_rows` rows are waiting, write() waits for room (the row
    is kept) and raises RecordingBehind. A write the thread could not do (a full disk) is raised as its
    OSError by the next write() or by close(); rows queued after it are not written. The header is
    written at construction, the end line by close().
    """

    def __init__(self, path: str | Path, *, max_rows: int = QUEUE_MAX_ROWS, **kwargs: Any) -> None:
        super().__init__(path, **kwargs)
        self.max_rows = max_rows
        # append and popleft of a deque are atomic: the caller's thread takes no lock to queue a line
        self._lines: deque[str] = deque()
        self._csv = csv.writer(_LineQueue(self._lines), lineterminator="\n")
        self._room = threading.Condition()
        self._error: OSError | None = None
        self._stop = threading.Event()
        self._wake = threading.Event()
        self._nudge_at = max(1, max_rows // 8)
        self._thread = threading.Thread(target=self._drain, name="csv-writer", daemon=True)
        self._thread.start()

    def _emit(self, data: Mapping[str, Any]) -> None:
        if self._error is not None:
            raise self._error
        super()._emit(data)
        waiting = len(self._lines)
        if waiting >= self._nudge_at and waiting % NUDGE_EVERY == 0:
            # the thread is behind: a caller that never blocks (a lock-step loop on busy cores) would keep
            # it from the CPU and the interpreter; wake it and step aside for a moment
            self._wake.set()
            time.sleep(NUDGE_S)
        if waiting <= self.max_rows:
            return
        with self._room:  # the row is queued; wait until the thread has taken the backlog
            while len(self._lines) > self.max_rows and self._error is None and self._thread.is_alive():
                self._room.wait(QUEUE_FLUSH_S)
        raise RecordingBehind(
            f"the recording fell behind the stream: {self.max_rows} rows were waiting for the disk"
        )

    def _drain(self) -> None:
        """The writer thread: every QUEUE_FLUSH_S (or at once when stopped), the lines waiting in one write
        and one flush (the file's own calls let other threads run while the disk takes them)."""
        lines = self._lines
        while True:
            self._wake.wait(QUEUE_FLUSH_S)
            self._wake.clear()
            stopping = self._stop.is_set()
            batch = [lines.popleft() for _ in range(len(lines))]
            try:
                if batch:
                    self._fh.write("".join(batch))
                    self._fh.flush()
            except OSError as exc:
                self._error = exc
                stopping = True
            with self._room:
                self._room.notify_all()
            if stopping and (self._error is not None or not lines):
                return

    def close(self) -> None:
        """Write every queued row, then the end line, and close the file; the thread's OSError raised (the
        file closed all the same, without its end line when the rows could not be written)."""
        if self._closed:
            return
        self._stop.set()
        self._wake.set()
        self._thread.join()
        if self._error is not None:
            self._closed = True
            with contextlib.suppress(OSError):
                self._fh.close()
            raise self._error
        super().close()


class _LineQueue:
    """The csv module's file: each line it writes goes into a queue."""

    def __init__(self, lines: deque[str]) -> None:
        self.write = lines.append
