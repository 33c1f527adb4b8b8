"""No family is named outside its own folder: runs, commands and files learn of devices from the registry.

Walks every module of the package (ast) and collects each family name outside `servotool/devices/<family>/`
and `devices/registry.py`: an import of a family's modules, a string constant (docstrings included) or an
identifier holding a family's name, URL scheme, simulator profile name or one of its class-name stems. A
match is case-insensitive and on word boundaries (CamelCase humps,
underscores and punctuation end a word), so a short scheme inside a longer word is no match.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from servotool.devices.registry import FAMILIES, FAMILY_MODULES, sim_names

PACKAGE = Path(__file__).resolve().parents[1] / "servotool"
ALLOWED_FILES = {PACKAGE / "devices" / "registry.py"}
# a family's folder is the package of its family module (two families may share one: the fake arm and bus)
ALLOWED_DIRS = {PACKAGE.parent / Path(*module.split(".")[:-1]) for module in FAMILY_MODULES}
# and so is every folder that holds a family not yet registered (two families may share a model's name)
ALLOWED_DIRS |= {path.parent for path in (PACKAGE / "devices").glob("*/family.py")}
# words a profile name shares with other things: not a family's name ("fake" is every test double's word,
# FakeClock's included)
GENERIC = {"arm", "board", "bus", "cobot", "controller", "protocol", "robot", "servo", "style", "fake"}
# the stems of the family's class names and the FAIRINO command name that the titles do not spell
STEMS = ("Fairino", "Hiwonder", "Dynamixel", "Dxl", "ServoJ")


def _words(text: str) -> set[str]:
    return {w.lower() for w in re.split(r"[^A-Za-z0-9]+", text) if w and not w.isdigit()} - GENERIC


def forbidden_words() -> set[str]:
    """Every family's name, schemes, simulator profile names (whole and by their own parts) and the
    class-name stems; lower case. (A title's words are its family's name and words every family shares.)"""
    words: set[str] = {s.lower() for s in STEMS}
    for fam in FAMILIES:
        words |= {fam.name.lower(), *(s.lower() for s in fam.schemes)}
        for name in sim_names(fam):
            words |= {name.lower(), *(w for w in _words(name) if len(w) > 2)}
    return words


def _starts_word(text: str, i: int) -> bool:
    if i == 0 or not text[i - 1].isalnum():
        return True
    return text[i - 1].islower() and text[i].isupper()  # a CamelCase hump


def _ends_word(text: str, j: int) -> bool:
    if j == len(text) or not text[j].isalnum():
        return True
    return text[j].isupper() and text[j - 1].islower()


def matches(text: str, words: set[str]) -> list[str]:
    """The forbidden words `text` holds as words of its own (case-insensitive)."""
    low = text.lower()
    found = []
    for word in sorted(words):
        start = low.find(word)
        while start >= 0:
            end = start + len(word)
            if _starts_word(text, start) and _ends_word(text, end):
                found.append(word)
                break
            start = low.find(word, start + 1)
    return found


def _texts(tree: ast.AST) -> Iterator[tuple[int, str]]:
    """(line, text) of every string constant, identifier and imported module name of a module."""
    for node in ast.walk(tree):
        line = getattr(node, "lineno", 0)
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            yield line, node.value
        elif isinstance(node, ast.Name):
            yield line, node.id
        elif isinstance(node, ast.Attribute):
            yield line, node.attr
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            yield line, node.name
        elif isinstance(node, (ast.arg, ast.keyword)) and node.arg:
            yield line, node.arg
        elif isinstance(node, ast.ImportFrom) and node.module:
            yield line, node.module
        elif isinstance(node, ast.alias):
            yield line, node.name
            if node.asname:
                yield line, node.asname
        elif isinstance(node, (ast.Global, ast.Nonlocal)):
            for name in node.names:
                yield line, name


def _checked_files() -> Iterator[Path]:
    for path in sorted(PACKAGE.rglob("*.py")):
        if path in ALLOWED_FILES or any(d in path.parents for d in ALLOWED_DIRS):
            continue
        yield path


def offences() -> list[str]:
    """`file:line: word` for every family name outside the family folders and the registry."""
    words = forbidden_words()
    out = []
    for path in _checked_files():
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        seen: set[tuple[int, str]] = set()
        for line, text in _texts(tree):
            for word in matches(text, words):
                if (line, word) not in seen:
                    seen.add((line, word))
                    out.append(f"{path.relative_to(PACKAGE.parent)}:{line}: {word}")
    return sorted(out, key=lambda s: (s.split(":")[0], int(s.split(":")[1])))


def test_the_forbidden_words_come_from_the_registry():
    words = forbidden_words()
    for fam in FAMILIES:
        assert fam.name in words and set(fam.schemes) <= words
        assert {n.lower() for n in sim_names(fam)} <= words
    assert not words & GENERIC


@pytest.mark.parametrize(
    ("text", "hit"),
    [
        ("FairinoSim", True),
        ("open_dxl_bus", True),
        ("sim:fr3?clock=sim", True),
        ("ServoJ", True),
        ("a hiwonder:///dev/ttyAMA0 board", True),
        ("rosorin-arm-limits.yaml", True),
        ("main_code", False),
        ("fr30", False),
        ("duration", False),
        ("servo_j", False),
        ("the bus", False),
    ],
)
def test_a_word_matches_on_its_boundaries_only(text, hit):
    assert bool(matches(text, forbidden_words())) is hit


def test_no_family_is_named_outside_its_folder():
    found = offences()
    assert not found, f"{len(found)} family name(s) outside devices/<family>/:\n" + "\n".join(found)
