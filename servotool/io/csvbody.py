"""The body of a servotool-csv file as a CSV parser may safely see it: one row per line, nothing else.

Every row our writer makes is one line of printable UTF-8 whose quotes close within the line. A CSV parser
does not know that: an unclosed `"` makes pyarrow and pandas read on across the following lines as one
field, so one damaged row would swallow the rows after it. BodyStream reads the body in chunks, finds the
few lines that could mislead a parser (a quote, a NUL or a lone carriage return, non-ASCII bytes, a `#` at
the start, more than MAX_ROW_BYTES) with fast byte searches, judges each of them alone (`judge_line`), and
hands on every other line unchanged. Comment lines and the end line are taken out; a malformed line is
taken out and counted. What comes out is pure rows, each on its own line, so the parser that reads it can
lose nothing but the rows it reports.
"""

from __future__ import annotations

import bisect
import csv
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from io import RawIOBase
from typing import BinaryIO

MAX_ROW_BYTES = 1 << 16  # a body line longer than this is no row of ours: skipped, with its line number
CHUNK_BYTES = 512 << 10  # the body is read and judged this much at a time (the searches run in cache)
MAX_LISTED = 20  # skipped lines listed with their line numbers (all are counted)
END = "# end: "
MAGIC = "# servotool-csv:"  # a recording's first line: inside a body, a second recording starts there
_LONE_CR = re.compile(rb"\r(?!\n)")
_HIGH = re.compile(rb"[\x80-\xff]")


@dataclass(frozen=True)
class Verdict:
    """What a line is when it is not a plain row: "end" (text = its status), "header" (a recording's first
    line), "comment", "blank", or "bad" (text = why)."""

    kind: str
    text: str = ""


def judge_line(raw: bytes, n_fields: int) -> Verdict | None:
    """None when `raw` (one line, without its newline) is a row of n_fields fields that stays on its line;
    else what it is. A quote that does not close within its field (csv strict rules) makes the line bad:
    a parser would read on into the next lines."""
    if len(raw) > MAX_ROW_BYTES:
        return Verdict("bad", f"longer than {MAX_ROW_BYTES} bytes")
    body = raw[:-1] if raw.endswith(b"\r") else raw
    if body.startswith(b"#"):
        text = body.decode("utf-8", "replace")
        if text.startswith(END):
            return Verdict("end", text[len(END) :].strip())
        return Verdict("header", text.strip()) if text.startswith(MAGIC) else Verdict("comment")
    if not body:
        return Verdict("blank")
    if b"\r" in body:
        return Verdict("bad", "a carriage return inside the row")
    if b"\x00" in body:
        return Verdict("bad", "a NUL byte")
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError:
        return Verdict("bad", "not UTF-8 text")
    if '"' in text:
        try:
            n = len(next(csv.reader([text], strict=True)))
        except csv.Error:
            return Verdict("bad", "a quote that does not close its field")
    else:
        n = text.count(",") + 1
    if n != n_fields:
        return Verdict("bad", f"{n} fields, expected {n_fields}")
    return None


@dataclass
class Cut:
    """A body line taken out: its byte offset in the file, and what it was."""

    pos: int
    verdict: Verdict
    index: int = -1  # 0-based body line index; known when the stream counts lines


@dataclass
class BodyReport:
    """What a BodyStream took out. `bad` lists the first MAX_LISTED malformed lines, n_bad counts them all;
    `removed` holds the line index of every line taken out (only when the stream counted lines)."""

    bad: list[Cut] = field(default_factory=list)
    n_bad: int = 0
    end: Cut | None = None
    rows_after_end: Cut | None = None  # the first line after the end line that is not blank or a comment
    second_header: Cut | None = None  # a recording's first line inside the body (two files joined)
    torn_tail: bool = False  # the file ends in a partial line that is no row (dropped, not counted)
    removed: list[int] = field(default_factory=list)


def _starts_of(buf: bytes, end: int, needle: bytes, starts: set[int]) -> None:
    i = buf.find(needle, 0, end)
    while i >= 0:
        s = buf.rfind(b"\n", 0, i) + 1
        starts.add(s)
        i = buf.find(needle, buf.find(b"\n", i, end) + 1, end)


def suspect_starts(buf: bytes, end: int) -> list[int]:
    """Offsets of the lines in buf[:end] (whole lines: it starts a line and ends with a newline) that
    judge_line must see; every other line is a row a parser reads on its own line, or a blank line, or a
    line whose field count the parser itself checks."""
    starts: set[int] = set()
    for needle in (b'"', b"\x00"):
        _starts_of(buf, end, needle, starts)
    i = buf.find(b"#", 0, end)
    while i >= 0:
        if i == 0 or buf[i - 1] == 10:
            starts.add(i)
        i = buf.find(b"#", i + 1, end)
    for pattern, present in ((_LONE_CR, b"\r" in buf), (_HIGH, not buf.isascii())):
        if present:
            for m in pattern.finditer(buf, 0, end):
                starts.add(buf.rfind(b"\n", 0, m.start()) + 1)
    # a line longer than MAX_ROW_BYTES holds a whole aligned window half as wide, without a newline
    window = MAX_ROW_BYTES // 2
    for w in range(0, end, window):
        if buf.find(b"\n", w, min(w + window, end)) < 0:
            starts.add(buf.rfind(b"\n", 0, w) + 1)
    return sorted(starts)


class BodyStream(RawIOBase):
    """The rows of a servotool-csv body (from byte `offset` of the file), with every line that is not a
    plain row taken out and reported in `report`. Memory stays at about two chunks whatever the lines.

    count_lines=True also numbers the lines taken out (Cut.index, report.removed), at the cost of counting
    every newline; without it only their byte offsets are known (see line_numbers)."""

    def __init__(self, fh: BinaryIO, offset: int, n_fields: int, *, count_lines: bool = False) -> None:
        super().__init__()
        self._fh = fh
        self._fh.seek(offset)
        self._n_fields = n_fields
        self._count = count_lines
        self._pos = offset  # file offset of self._rest[0]
        self._line = 0  # body line index of self._rest[0] (when counting)
        self._rest = b""  # the partial line carried into the next chunk
        self._skipping: Cut | None = None  # a line too long to keep, read on to its newline
        self._out = b""  # rows ready to hand over, from self._at on
        self._at = 0
        self._eof = False
        self.report = BodyReport()

    def readable(self) -> bool:
        return True

    def read(self, size: int | None = -1) -> bytes:
        """Up to `size` bytes of rows (all that is left when size is None or negative); b"" at the end.
        A whole chunk is handed over as it is, without a copy, when it fits."""
        while self._at >= len(self._out) and not self._eof:
            self._out, self._at = self._next(), 0
        start = self._at
        if size is None or size < 0 or len(self._out) - start <= size:
            self._at = len(self._out)
            return self._out if start == 0 else self._out[start:]
        self._at += size
        return self._out[start : self._at]

    def readinto(self, b: bytearray | memoryview) -> int:  # type: ignore[override]
        data = self.read(len(b))
        b[: len(data)] = data
        return len(data)

    def _next(self) -> bytes:
        data = self._fh.read(CHUNK_BYTES)
        if not data:
            self._eof = True
            return self._tail()
        if self._skipping is not None:
            nl = data.find(b"\n")
            if nl < 0:
                self._pos += len(data)
                return b""
            self._skipping, self._line = None, self._line + 1
            self._pos += nl + 1
            data = data[nl + 1 :]
        buf = self._rest + data
        k = buf.rfind(b"\n") + 1
        out = self._whole(buf, k) if k else b""
        self._pos, self._rest = self._pos + k, buf[k:]
        if len(self._rest) > MAX_ROW_BYTES:  # no newline for that long: a line no row of ours could be
            cut = Cut(self._pos, Verdict("bad", f"longer than {MAX_ROW_BYTES} bytes"), self._index())
            if self.report.end is not None:
                self.report.rows_after_end, self._eof = cut, True
            self._skipping = self._take(cut)
            self._pos, self._rest = self._pos + len(self._rest), b""
        return out

    def _whole(self, buf: bytes, end: int) -> bytes:
        """buf[:end] (whole lines) without the lines taken out."""
        if self.report.end is not None:
            self._after_end(buf, 0, end)
            return b""
        parts: list[bytes] = []
        kept = counted = 0
        line = self._line
        for s in suspect_starts(buf, end):
            e = buf.find(b"\n", s, end)
            if self._count:
                line += buf.count(b"\n", counted, s)
                counted = s
            verdict = judge_line(buf[s:e], self._n_fields)
            if verdict is None or verdict.kind == "blank":
                continue
            parts.append(buf[kept:s])
            kept = e + 1
            self._take(Cut(self._pos + s, verdict, line if self._count else -1))
            if verdict.kind == "end":
                self._after_end(buf, kept, end)
                return b"".join(parts)
            if verdict.kind == "header":  # what follows is another recording's: the stream ends here
                self._eof = True
                return b"".join(parts)
        if self._count:
            self._line = line + buf.count(b"\n", counted, end)
        if not parts:
            return buf[:end]
        parts.append(buf[kept:end])
        return b"".join(parts)

    def _after_end(self, buf: bytes, start: int, end: int) -> None:
        """Past the end line only blank and comment lines may follow: the first other line is noted (the
        reader refuses the file) and the stream ends there."""
        for raw in buf[start:end].split(b"\n")[:-1]:
            verdict = judge_line(raw, self._n_fields)
            if verdict is None or verdict.kind not in ("blank", "comment"):
                self.report.rows_after_end = Cut(self._pos + start, verdict or Verdict("row"))
                self._eof = True
                return
            start += len(raw) + 1

    def _index(self) -> int:
        """The line index of self._rest[0] when counting lines, else -1 (numbered later)."""
        return self._line if self._count else -1

    def _take(self, cut: Cut) -> Cut:
        r = self.report
        if self._count:
            r.removed.append(cut.index)
        if cut.verdict.kind == "end":
            r.end = cut
        elif cut.verdict.kind == "header" and r.second_header is None:
            r.second_header = cut
        elif cut.verdict.kind == "bad":
            r.n_bad += 1
            if len(r.bad) < MAX_LISTED:
                r.bad.append(cut)
        return cut

    def _tail(self) -> bytes:
        """The file's last line when it has no newline: a row, the end line, or a torn row (a crash
        mid-write) that is dropped without a mention."""
        raw, self._rest = self._rest, b""
        if not raw:
            return b""
        if self.report.end is not None:
            self._after_end(raw + b"\n", 0, len(raw) + 1)
            return b""
        verdict = judge_line(raw, self._n_fields)
        if verdict is None or verdict.kind == "blank":
            return raw + b"\n"
        if verdict.kind == "bad":
            self.report.torn_tail = True
            if self._count:
                self.report.removed.append(self._line)
        else:
            self._take(Cut(self._pos, verdict, self._index()))
        return b""


def line_numbers(fh: BinaryIO, offset: int, positions: Sequence[int]) -> list[int]:
    """The 0-based body line index of each byte position (sorted ascending), counted from `offset`."""
    out: list[int] = []
    fh.seek(offset)
    pos, line = offset, 0
    for target in positions:
        while pos < target:
            chunk = fh.read(min(CHUNK_BYTES, target - pos))
            if not chunk:
                break
            line += chunk.count(b"\n")
            pos += len(chunk)
        out.append(line)
    return out


def file_line(removed: Sequence[int], row: int) -> int:
    """The 0-based body line index of the parser's 0-based row `row`, given the sorted indices of the
    lines taken out before the parser saw the body."""
    index = row
    while True:
        nxt = row + bisect.bisect_right(removed, index)
        if nxt == index:
            return index
        index = nxt
