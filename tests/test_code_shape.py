"""The package's own shape rule: no function in servotool/ holds more than 80 lines of code (blank lines,
comments and its docstring not counted), so each one reads on a screen."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "servotool"
LIMIT = 80


def _code_lines(src: list[str], fn: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    start = fn.body[0].lineno
    first = fn.body[0]
    if (
        isinstance(first, ast.Expr)
        and isinstance(first.value, ast.Constant)
        and isinstance(first.value.value, str)
    ):
        start = (first.end_lineno or first.lineno) + 1
    lines = src[start - 1 : fn.end_lineno]
    return sum(1 for line in lines if line.strip() and not line.strip().startswith("#"))


def test_no_function_is_longer_than_a_screen() -> None:
    long = []
    for path in sorted(PACKAGE.rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        src = text.splitlines()
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                n = _code_lines(src, node)
                if n > LIMIT:
                    long.append(f"{path.relative_to(PACKAGE.parent)}:{node.lineno} {node.name}: {n} lines")
    assert not long, "\n".join(long)


SPAN_LIMIT = 80


def test_no_function_spans_more_than_a_screen() -> None:
    """def line to last line (end_lineno - lineno + 1), blank lines, comments and docstring included."""
    long = []
    for path in sorted(PACKAGE.rglob("*.py")):
        name = path.relative_to(PACKAGE.parent).as_posix()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                span = (node.end_lineno or node.lineno) - node.lineno + 1
                if span > SPAN_LIMIT:
                    long.append(f"{name}:{node.lineno} {node.name}: {span} lines")
    assert not long, "\n".join(long)
