"""What both body readers share: the column types by name, the refused-row sink, the end status."""

from __future__ import annotations

import re
from typing import Any, BinaryIO

from servotool.io.csvbody import (
    BodyReport,
    file_line,
    line_numbers,
)
from servotool.io.csvlog.header import (
    _END,
    MAX_BAD_ROWS_LISTED,
    BadRow,
    CsvFormatError,
    CsvMeta,
    _set_status,
)

_NUMERIC = re.compile(r"^(t|seq|pass|[qr]\d+|errcode|main_code|sub_code|dev_t)$")
_INTEGER = re.compile(r"^(seq|pass|errcode|main_code|sub_code)$")  # int64 where every cell is one
_LABELS = ("event", "phase")
_NUMBER_MISSING = ["", "nan", "NaN", "NAN", "-nan", "NA", "N/A", "null", "NULL", "None"]


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
