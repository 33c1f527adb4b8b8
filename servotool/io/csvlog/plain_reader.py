"""The body reader without pyarrow: the same checks and line numbers, the good rows parsed by pandas."""

from __future__ import annotations

import io
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from servotool.io.csvbody import (
    CHUNK_BYTES,
    BodyStream,
)
from servotool.io.csvlog.header import (
    CsvFormatError,
    CsvMeta,
)
from servotool.io.csvlog.rows import _LABELS, _NUMBER_MISSING, _NUMERIC, _finish, _RowSink
from servotool.io.paths import open_readable

if TYPE_CHECKING:  # pandas is imported where a DataFrame is made: analysing with pyarrow never needs it
    import pandas as pd


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
