"""Malformed lines between good rows: every good row is read, every malformed line is counted with its line
number, through the Arrow reader and the plain one alike (hypothesis, derandomized)."""

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import servotool.io.csvbody as csvbody
import servotool.io.csvlog as csvlog
from servotool.io.csvlog import CsvLogWriter, arrow_reader, read_columns, read_csv

COLUMNS = ["t", "event", "seq", "pass", "phase", "q1", "q2", "errcode", "info"]
N = len(COLUMNS)


def _writer(path):
    return CsvLogWriter(
        path,
        device="sim:fr3",
        simulated=True,
        config={"mode": "ramp", "joint": 0},
        units={"t": "s"},
        columns=COLUMNS,
        command="servotool lag --ramp",
    )


def _good_lines(tmp_path, rows):
    """The body lines our writer makes for these rows (one line each), and the header lines."""
    path = tmp_path / "good.csv"
    path.unlink(missing_ok=True)
    with _writer(path) as w:
        for row in rows:
            w.write(row)
    lines = path.read_bytes().split(b"\n")
    first = next(i for i, ln in enumerate(lines) if ln.startswith(b"t,"))
    body = lines[first + 1 : first + 1 + len(rows)]
    assert len(body) == len(rows) and lines[first + 1 + len(rows)] == b"# end: complete"
    assert all(len(line) < _MAX_ROW for line in body)
    return lines[: first + 1], body


_TEXT = st.text(st.characters(codec="utf-8", exclude_characters="\n\r\x00"), max_size=12)
_ROW = st.fixed_dictionaries(
    {
        "event": st.sampled_from(["cmd", "state", "reply", "guard"]),
        "seq": st.integers(0, 10**6),
        "pass": st.none() | st.integers(0, 40),
        "phase": st.sampled_from(["", "ramp-up", "cruise", "a,b", 'say "x"']),
        "q1": st.floats(-400, 400, allow_nan=False),
        "q2": st.none() | st.floats(-1e6, 1e6, allow_nan=False),
        "errcode": st.none() | st.integers(0, 200),
        "info": st.none() | _TEXT,
    }
)


_MAX_ROW = 300  # the longest row the fuzzed reader accepts (every good row drawn here is shorter)


def _plain_fields(t: float) -> list[bytes]:
    return [repr(t).encode(), b"cmd", b"7", b"1", b"cruise", b"1.5", b"-2", b"0", b"MoveJ"]


@st.composite
def malformed(draw, t: float) -> bytes:
    """One line that is no row of ours: each kind stays on its own line and is certainly malformed."""
    f = _plain_fields(t)
    kinds = ["quote", "short", "long", "cr", "utf8", "nul", "garbage", "stray", "overlong"]
    kind = draw(st.sampled_from(kinds))
    k = draw(st.integers(0, N - 1))
    if kind == "quote":  # a quote that opens a field and never closes
        f[k] = b'"' + f[k]
        return b",".join(f)
    if kind == "short":
        return b",".join(f[: max(1, k)])
    if kind == "long":
        return b",".join(f + [b"9"] * draw(st.integers(1, 3)))
    if kind == "overlong":  # the right fields, but longer than any row of ours (MAX_ROW_BYTES is cut here)
        return b",".join(f[:-1] + [b"y" * draw(st.integers(_MAX_ROW, 3 * _MAX_ROW))])
    if kind == "stray":  # a quoted field with more after its closing quote
        f[k] = b'"' + f[k] + b'"x'
        return b",".join(f)
    line = b",".join(f)
    at = draw(st.integers(1, len(line) - 1))
    if kind == "garbage":
        alphabet = st.sampled_from(list(b"ab 0.5-e#\"'\t;") + [0xFF, 0xC3])
        return b"x" + bytes(draw(st.lists(alphabet, max_size=30)))
    insert = {"cr": b"\r", "utf8": b"\xff\xfe", "nul": b"\x00"}[kind]
    return line[:at] + insert + line[at:]


@st.composite
def bodies(draw):
    n_good = draw(st.integers(0, 25))
    rows = [dict(draw(_ROW), t=(i + 1) / 100) for i in range(n_good)]
    n_bad = draw(st.integers(0, 25))
    bad = [draw(malformed(0.005 + 0.01 * i)) for i in range(n_bad)]
    # where each malformed line goes: before good row number `slot` (n_good = after the last)
    slots = sorted(draw(st.lists(st.integers(0, n_good), min_size=n_bad, max_size=n_bad)))
    comments = draw(st.booleans())
    torn = draw(st.booleans())
    return rows, bad, slots, comments, torn


def _same(value, expected) -> bool:
    missing = value is None or (isinstance(value, float) and math.isnan(value))
    if expected is None or expected == "":
        return missing
    if missing:
        return False
    if isinstance(expected, int | float):
        return float(value) == float(expected)
    return str(value) == str(expected)


READERS = ["arrow", "arrow-threads", "plain"]


def _use(mp, reader: str) -> None:
    """Choose the reader: Arrow on one thread (a short file), Arrow on every core, or the plain one."""
    mp.setattr(arrow_reader, "HAVE_ARROW", reader != "plain" and arrow_reader.HAVE_ARROW)
    mp.setattr(arrow_reader, "THREADED_BYTES", -1 if reader == "arrow-threads" else 1 << 40)
    mp.setattr(csvbody, "MAX_ROW_BYTES", _MAX_ROW)


@pytest.mark.parametrize("reader", READERS)
@settings(max_examples=50, deadline=None, derandomize=True)
@given(case=bodies(), small_chunks=st.booleans())
def test_every_good_row_is_read_whatever_sits_between(tmp_path_factory, reader, case, small_chunks):
    rows, bad, slots, comments, torn = case
    tmp = tmp_path_factory.mktemp("fuzz")
    head, good = _good_lines(tmp, rows)
    body: list[bytes] = []
    bad_lines: list[int] = []  # 1-based file line numbers of the malformed lines
    b = 0
    for i in range(len(good) + 1):
        while b < len(bad) and slots[b] == i:
            body.append(bad[b])
            bad_lines.append(len(head) + len(body))
            b += 1
            if comments:
                body.append(b'# a note, with a comma and a "quote')
        if i < len(good):
            body.append(good[i])
    end = [b"0.99,cm"] if torn else [b"# end: complete", b""]  # a cut-off file ends in a torn row
    path = tmp / "mixed.csv"
    path.write_bytes(b"\n".join(head + body + end))
    with pytest.MonkeyPatch.context() as mp:
        _use(mp, reader)
        if small_chunks:  # chunk edges inside lines, lines taken out at chunk edges
            mp.setattr(csvbody, "CHUNK_BYTES", 61)
        meta, df = read_csv(path)
    assert meta.complete is not torn
    assert meta.n_bad_rows == len(bad)
    assert [r.line for r in meta.bad_rows] == bad_lines[: csvlog.MAX_BAD_ROWS_LISTED]
    assert df["t"].tolist() == [r["t"] for r in rows]
    assert df["event"].astype(str).tolist() == [r["event"] for r in rows]
    for col in ("phase", "info", "errcode", "pass"):
        got = df[col].tolist() if len(df) else []
        assert all(_same(v, r[col]) for v, r in zip(got, rows, strict=True)), col


@pytest.mark.parametrize("reader", READERS)
def test_an_unclosed_quote_swallows_nothing(tmp_path, monkeypatch, reader):
    """The failure this guards against: a parser reads on from an unclosed quote to the next quote."""
    _use(monkeypatch, reader)
    path = tmp_path / "q.csv"
    rows = [
        {"t": i / 100, "event": "cmd", "q1": float(i), "info": "a, b" if i % 7 == 0 else None}
        for i in range(200)
    ]
    head, good = _good_lines(tmp_path, rows)
    broken = b'0.555,cmd,"1,,,1.0,,,'
    path.write_bytes(b"\n".join(head + good[:50] + [broken] + good[50:] + [b"# end: complete", b""]))
    meta, table = read_columns(path)
    assert meta.n_bad_rows == 1 and meta.bad_rows[0].line == len(head) + 51
    assert "quote" in meta.bad_rows[0].reason
    assert list(table["t"]) == [r["t"] for r in rows]


_ONE_OF_EACH = {
    "quote": b'0.015,cmd,"7,1,cruise,1.5,-2,0,MoveJ',
    "short": b"0.015,cmd,7",
    "long": b"0.015,cmd,7,1,cruise,1.5,-2,0,MoveJ,9",
    "cr": b"0.015,cmd,7,1\r,cruise,1.5,-2,0,MoveJ",
    "utf8": b"0.015,cmd,7,1,cruise,1.5,-2,0,Move\xffJ",
    "nul": b"0.015,cmd,7,1,cruise,1.5,-2,0,Mo\x00veJ",
    "stray": b'0.015,cmd,7,1,"cruise"x,1.5,-2,0,MoveJ',
    "overlong": b"0.015,cmd,7,1,cruise,1.5,-2,0," + b"y" * (2 * _MAX_ROW),
}


@pytest.mark.parametrize("reader", READERS)
@pytest.mark.parametrize("chunk", [61, 1 << 20])
@pytest.mark.parametrize("kind", sorted(_ONE_OF_EACH))
def test_one_malformed_line_of_each_kind(tmp_path, monkeypatch, reader, chunk, kind):
    """The malformed line alone (on every core, only a row the parser refuses makes a second pass)."""
    _use(monkeypatch, reader)
    monkeypatch.setattr(csvbody, "CHUNK_BYTES", chunk)
    rows = [{"t": i / 100, "event": "cmd", "q1": float(i), "info": 'a "b", c'} for i in range(1, 6)]
    head, good = _good_lines(tmp_path, rows)
    path = tmp_path / "one.csv"
    body = good[:1] + [_ONE_OF_EACH[kind]] + good[1:]
    path.write_bytes(b"\n".join(head + body + [b"# end: complete", b""]))
    meta, df = read_csv(path)
    assert [r.line for r in meta.bad_rows] == [len(head) + 2] and meta.n_bad_rows == 1
    assert df["t"].tolist() == [r["t"] for r in rows] and set(df["info"]) == {'a "b", c'}


@pytest.mark.parametrize("reader", READERS)
def test_texts_that_look_missing_or_numeric_come_back_as_written(tmp_path, monkeypatch, reader):
    _use(monkeypatch, reader)
    texts = ["NA", "1.50", "null", "None", "nan", "N/A", "007"]
    rows = [
        {"t": (i + 1) / 100, "event": "cmd", "q1": 1.0, "info": x, "phase": x} for i, x in enumerate(texts)
    ]
    head, good = _good_lines(tmp_path, rows)
    path = tmp_path / "texts.csv"
    path.write_bytes(b"\n".join(head + good + [b"# end: complete", b""]))
    meta, df = read_csv(path)
    assert df["info"].tolist() == texts and df["phase"].astype(str).tolist() == texts
    assert df["q1"].dtype == "float64" and meta.n_bad_rows == 0
    path.write_bytes(b"\n".join(head + good[-1:] + [b"# end: complete", b""]))  # every text a number
    assert read_csv(path)[1]["info"].tolist() == ["007"]
