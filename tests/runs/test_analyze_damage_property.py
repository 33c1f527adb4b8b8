"""A property of `servotool analyze`: whatever damage a recording suffered after it was written (drawn from
what engineers do to files: rows shuffled or cut, time reversed, repeated or jumping by hours, files joined,
the header config edited, columns renamed, reordered or dropped, CRLF, a BOM, numbers huge, tiny or NaN),
the command answers within a time bound: exit 0 with the file analysed or 1 with one line saying why (no
numpy warning on stderr), valid JSON on stdout, never a traceback; and where the damage took the evidence
away, no verdict claims it."""

from __future__ import annotations

import contextlib
import json
import math
import random
import tempfile
import warnings
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from servotool.cli.app import app
from tests.runs.test_analyze_hostile import (
    _with_config,
    recorded,  # noqa: F401  (the module's recordings, as a fixture)
)

runner = CliRunner()

Lines = tuple[list[str], str, list[str], list[str]]  # (comment header, column line, rows, end lines)


def _split(text: str) -> Lines:
    lines = text.splitlines(keepends=True)
    i = next(k for k, line in enumerate(lines) if not line.startswith("#"))
    body = lines[i + 1 :]
    rows = [x for x in body if not x.startswith("#")]
    return lines[:i], lines[i], rows, [x for x in body if x.startswith("#")]


def _join(parts: Lines) -> str:
    head, cols, rows, end = parts
    return "".join([*head, cols, *rows, *end])


def _cells(row: str) -> list[str]:
    return row.rstrip("\r\n").split(",")


def _times(fn: Callable[[float], float]) -> Callable[[Lines, random.Random], Lines]:
    def damage(p: Lines, rng: random.Random) -> Lines:
        rows = []
        for row in p[2]:
            c = _cells(row)
            with contextlib.suppress(ValueError):  # a cell damaged already (empty, text) stays as it is
                c[0] = repr(fn(float(c[0])))
            rows.append(",".join(c) + "\n")
        return p[0], p[1], rows, p[3]

    return damage


def _shuffle(p: Lines, rng: random.Random) -> Lines:
    rows = p[2][:]
    rng.shuffle(rows)
    return p[0], p[1], rows, p[3]


def _cut(p: Lines, rng: random.Random) -> Lines:
    return p[0], p[1], p[2][: rng.randrange(len(p[2]) + 1)], []


def _events(keep: bool, names: set[str]) -> Callable[[Lines, random.Random], Lines]:
    def damage(p: Lines, rng: random.Random) -> Lines:
        at = _cells(p[1]).index("event")
        return p[0], p[1], [r for r in p[2] if (_cells(r)[at] in names) == keep], p[3]

    return damage


def _config(p: Lines, rng: random.Random) -> Lines:
    values = [0, -1, 1e300, 1e-300, float("nan"), None, "x", True, [1, 2], 99, 2.5]
    key = rng.choice(
        [
            "mode",
            "joint",
            "cmd_period_s",
            "speeds_deg_s",
            "a_max",
            "v_max",
            "hold_s",
            "size_deg",
            "shaped",
            "inside",
            "speed",
            "stored_limit",
            "start",
            "period_s",
        ]
    )
    head = _with_config("".join(p[0]), **{key: rng.choice(values)}).splitlines(keepends=True)
    return head, p[1], p[2], p[3]


def _columns(p: Lines, rng: random.Random) -> Lines:
    names = _cells(p[1])
    k = rng.randrange(len(names))
    how = rng.choice(["drop", "rename", "swap"])
    if how == "rename":
        names[k] = names[k].upper() + "_"
        return p[0], ",".join(names) + "\n", p[2], p[3]
    if how == "swap":  # the names swapped, the cells not: a hand-edited header
        j = rng.randrange(len(names))
        names[k], names[j] = names[j], names[k]
        return p[0], ",".join(names) + "\n", p[2], p[3]
    keep = [i for i in range(len(names)) if i != k]
    rows = [",".join(_cells(r)[i] for i in keep) + "\n" for r in p[2]]
    return p[0], ",".join(names[i] for i in keep) + "\n", rows, p[3]


def _numbers(p: Lines, rng: random.Random) -> Lines:
    value = rng.choice(["nan", "inf", "-inf", "1e308", "5e-324", "-0", "1e20", ""])
    share = rng.random()
    rows = []
    for row in p[2]:
        c = _cells(row)
        if rng.random() < share:
            k = rng.randrange(len(c))
            if k != 1:
                c[k] = value
        rows.append(",".join(c) + "\n")
    return p[0], p[1], rows, p[3]


DAMAGES: dict[str, Callable[[Lines, random.Random], Lines]] = {
    "shuffle": _shuffle,
    "reverse": lambda p, rng: (p[0], p[1], p[2][::-1], p[3]),
    "time backwards": _times(lambda t: -t),
    "time repeated": _times(lambda t: 1.0),
    "clock jump of hours": _times(lambda t: t + 7200.0 if t > 1.0 else t),
    "clock jump back": _times(lambda t: t - 7200.0 if t > 1.0 else t),
    "nanoseconds": _times(lambda t: t * 1e9),
    "duplicated rows": lambda p, rng: (p[0], p[1], [x for r in p[2] for x in (r, r)], p[3]),
    "body twice": lambda p, rng: (p[0], p[1], p[2] + p[2], p[3]),
    "cut": _cut,
    "every other row": lambda p, rng: (p[0], p[1], p[2][::2], p[3]),
    "no state rows": _events(False, {"state"}),
    "no cmd rows": _events(False, {"cmd"}),
    "no stop row": _events(False, {"stop"}),
    "state rows only": _events(True, {"state"}),
    "config edited": _config,
    "columns edited": _columns,
    "numbers damaged": _numbers,
}
# the damages that take away what a mode's verdicts rest on: measured frames and commands (a lag, a step's
# arrival), the stop row (a sweep's limit), times that advance
EVIDENCE = {
    "no state rows": ("ramp", "step"),
    "state rows only": ("ramp", "step", "sweep"),
    "no cmd rows": ("ramp", "step"),
    "no stop row": ("sweep",),
    "time repeated": ("ramp", "step"),
}
TEXT_DAMAGES: dict[str, Callable[[str], str]] = {
    "crlf": lambda s: s.replace("\n", "\r\n"),
    "bom": lambda s: "\ufeff" + s,
    "joined": lambda s: s + s,
    "joined, first cut off": lambda s: (
        "".join(x for x in s.splitlines(True) if not x.startswith("# end")) + s
    ),
}


def _no_nan(text: str) -> None:
    def refuse(name: str) -> None:
        raise ValueError(f"{name} in the JSON")

    json.loads(text, parse_constant=refuse)


def _claims(entry: dict) -> list[str]:
    """What a file's analysis claims: 'ok' verdicts, finite lag figures, limits."""
    r = entry["result"]
    out = []
    if entry["mode"] == "ramp":
        fit = r.get("fit") or {}
        if isinstance(fit.get("lag_ms"), (int, float)) and math.isfinite(fit["lag_ms"]):
            out.append("lag")
    elif entry["mode"] == "step":
        out += ["ok"] * sum(1 for s in r["steps"] if s["verdict"] == "ok")
    else:
        out += ["limit"] * sum(1 for s in r["sweeps"] if s["limit"] is not None)
    return out


@pytest.mark.timeout(120)
@settings(max_examples=150, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(
    mode=st.sampled_from(["ramp", "step", "sweep"]),
    damages=st.lists(st.sampled_from(sorted(DAMAGES)), min_size=1, max_size=3),
    text_damage=st.sampled_from([None, *sorted(TEXT_DAMAGES)]),
    encoding=st.sampled_from(["utf-8", "utf-8", "utf-8", "utf-16", "latin-1"]),
    seed=st.integers(0, 2**16),
)
def test_any_damage_gets_an_answer_and_no_verdict_without_evidence(
    recorded,  # noqa: F811
    mode,
    damages,
    text_damage,
    encoding,
    seed,
):
    rng = random.Random(seed)
    parts = _split(recorded[mode])
    # rows are taken out by event before a column (event itself, say) is renamed or dropped
    for name in sorted(damages, key=lambda name: name not in EVIDENCE):
        parts = DAMAGES[name](parts, rng)
    text = _join(parts)
    if text_damage is not None:
        text = TEXT_DAMAGES[text_damage](text)
    if encoding == "latin-1":  # a label edited on a machine that saves Latin-1
        text = text.replace("state", "\u00e9tat", 3)
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / f"{mode}.csv"
        path.write_bytes(text.encode(encoding, errors="replace"))
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # numpy's warnings would be lines of noise on stderr
            res = runner.invoke(app, ["analyze", str(path), "--json", "--workers", "1"])
    assert res.exception is None or isinstance(res.exception, SystemExit), res.exception
    assert "Traceback" not in res.stderr
    _no_nan(res.stdout)
    out = json.loads(res.stdout)
    event(f"{mode}: exit {res.exit_code}")
    assert res.exit_code in (0, 1) and (res.exit_code == 0) == bool(out["files"]), res.stderr
    assert len(out["files"]) + len(out["problems"]) == 1
    if res.exit_code == 1:
        assert out["problems"][0]["reason"]
        return
    claims = _claims(out["files"][0])
    if any(mode in EVIDENCE.get(name, ()) for name in damages):
        assert not claims, (damages, claims)
