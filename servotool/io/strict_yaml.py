"""YAML read the strict way for files a person edits by hand: a key written twice in one mapping is an error.

pyyaml keeps the last of two equal keys without a word; in a limits or config file that can silently widen a
limit or change the device. `load_unique` is `yaml.safe_load` (safe tags only) that refuses the repeat.

A number is read by YAML 1.1 rules (pyyaml; ruamel too under `%YAML 1.1`): `1_00` is 100, `010` is 8, `0x10`
is 16, `1:30` is 90. `odd_number` finds a number whose source text is not plain decimal, so that a limit spelt
so is refused rather than read as another number.
"""

from __future__ import annotations

import re
import reprlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from servotool.io.paths import open_readable


class UniqueKeyLoader(yaml.SafeLoader):
    """yaml's SafeLoader, except that a mapping with a key written twice raises a ConstructorError naming
    the key and its line."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: list[Any] = []
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=deep)
            if key in seen:
                raise yaml.constructor.ConstructorError(
                    None, None, f"key {key!r} is written twice", key_node.start_mark
                )
            seen.append(key)
        return super().construct_mapping(node, deep=deep)


MAX_TEXT_BYTES = 1 << 20  # a campaign, limits or config file written by hand is a few KiB


class TextTooLarge(ValueError):
    """A file meant to be written by hand is larger than MAX_TEXT_BYTES (or never ends: /dev/zero)."""


def read_text_limited(path: Path, limit: int = MAX_TEXT_BYTES) -> str:
    """The UTF-8 text of a file written by hand, read no further than `limit` bytes: OSError when it cannot
    be read, UnicodeDecodeError when it is not UTF-8, TextTooLarge past the limit (a device that never
    ends, such as /dev/zero, is not read to its end)."""
    with open_readable(path) as fh:
        data = fh.read(limit + 1)
    if len(data) > limit:
        raise TextTooLarge(f"{path}: larger than {limit // 1024} KiB: not a file written by hand")
    return data.decode("utf-8")


# Bounds of a file written by hand, far beyond any campaign, limits or config file (a few levels, numbers of
# a few digits), well within what the readers' recursion and Python's int parsing take: a file past one is
# refused before it is composed.
MAX_DEPTH = 64
MAX_NUMBER_CHARS = 100

# a plain scalar that some YAML reading (1.1 or 1.2) may take as a number: a digit, sign or point first
_NUMBERISH = re.compile(r"[-+]?\.?[0-9][0-9A-Za-z_:.+-]*")


class YamlBoundsError(ValueError):
    """A YAML text nested too deep, holding a number too long, or with a list or mapping as a key; the
    message is one line naming the file and line."""


def check_bounds(text: str, where: str) -> None:
    """Raise YamlBoundsError when `text` nests collections deeper than MAX_DEPTH (an alias counts at the
    depth of what it stands for), holds a plain scalar that looks like a number of more than
    MAX_NUMBER_CHARS characters (Python refuses to read an int past 4300 digits), or has a list or mapping
    as a mapping key (no reader takes one; its repr in a message would expand every alias in it).

    Reads the event stream only: no recursion, no node built, no alias expanded (an alias's depth is
    looked up, not walked), and it stops at the first bound passed, so a hostile text costs no more than
    its first MAX_DEPTH levels. A text that is not YAML passes: its reader says so in its own words.

    Aliases are not counted here: the readers keep an aliased node shared, never copied out, and
    messages quote values through `brief`, so nested aliases that stand for 10^9 items cost what their
    few lines cost, until a consumer expands them (which none may: see `brief`)."""
    # per open collection: [anchor, depth below, is a mapping, children so far, start line]
    stack: list[list[Any]] = []
    depths: dict[str, int] = {}  # anchor -> depth of the collection it names (0: a scalar)

    def close(depth: int, anchor: str | None, line: int) -> None:
        if anchor is not None:
            depths[anchor] = depth
        if not stack:
            return
        parent = stack[-1]
        if parent[2] and parent[3] % 2 == 0 and depth > 0:
            raise YamlBoundsError(f"{where}:{line}: a key is a list or a mapping: write keys as text")
        parent[3] += 1
        parent[1] = max(parent[1], depth)
        if len(stack) + depth > MAX_DEPTH:
            raise YamlBoundsError(
                f"{where}:{line}: nested deeper than {MAX_DEPTH} levels (aliases "
                "expanded): not a file written by hand"
            )

    try:
        for event in yaml.parse(text, Loader=yaml.SafeLoader):
            line = event.start_mark.line + 1 if event.start_mark is not None else 1
            if isinstance(event, (yaml.SequenceStartEvent, yaml.MappingStartEvent)):
                if len(stack) >= MAX_DEPTH:
                    raise YamlBoundsError(
                        f"{where}:{line}: nested deeper than {MAX_DEPTH} levels: not a file written by hand"
                    )
                stack.append([event.anchor, 0, isinstance(event, yaml.MappingStartEvent), 0, line])
            elif isinstance(event, (yaml.SequenceEndEvent, yaml.MappingEndEvent)):
                anchor, below, _, _, opened = stack.pop()
                close(below + 1, anchor, opened)
            elif isinstance(event, yaml.ScalarEvent):
                value = event.value
                if event.style is None and len(value) > MAX_NUMBER_CHARS and _NUMBERISH.fullmatch(value):
                    raise YamlBoundsError(
                        f"{where}:{line}: a number of {len(value)} characters (at most "
                        f"{MAX_NUMBER_CHARS}): not a file written by hand"
                    )
                close(0, event.anchor, line)
            elif isinstance(event, yaml.AliasEvent):
                close(depths.get(str(event.anchor), 0), None, line)
    except yaml.YAMLError:
        return


class OddNumberError(ValueError):
    """A YAML text holds a number not written in plain decimal (see odd_number)."""

    def __init__(self, odd: OddNumber):
        super().__init__(odd.message("<yaml>"))
        self.odd = odd


def load_unique(text: str, plain_numbers: bool = False) -> Any:
    """The YAML document in `text` (safe tags only); yaml.YAMLError when it is not YAML or a mapping
    repeats a key. With plain_numbers, OddNumberError when a number is not written in plain decimal,
    before anything is built from the text."""
    loader = UniqueKeyLoader(text)
    try:
        node = loader.get_single_node()
        if plain_numbers and (odd := odd_number(node)) is not None:
            raise OddNumberError(odd)
        return None if node is None else loader.construct_document(node)
    finally:
        loader.dispose()


# optional sign, digits (no leading 0 before more digits: YAML 1.1 reads 010 as 8), optional fraction and
# exponent; ASCII only, no '_'
PLAIN_DECIMAL = re.compile(r"[+-]?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?")
# .inf and .nan say what they are (no digit string read as another number); the readers refuse them as
# no finite number or no whole pulse, each with its own message
_SPECIAL = re.compile(r"[+-]?\.(?:inf|Inf|INF|nan|NaN|NAN)")
_NUMBER_TAGS = ("tag:yaml.org,2002:int", "tag:yaml.org,2002:float")


@dataclass(frozen=True)
class OddNumber:
    """A number written other than in plain decimal: its 1-based line, the nearest key and its text."""

    line: int
    key: str
    text: str

    def message(self, where: str) -> str:
        """One error line naming the file, line and key."""
        return (
            f"{where}:{self.line}: {self.key}: {self.text!r} is not a plain decimal number (YAML would "
            "read it as another number: write ASCII digits with an optional sign, fraction and "
            "exponent, e.g. 100, -2.5, 1.0e+3; no '_', 0x/0o/0b, leading 0 or ':'; quote it if it is "
            "text)"
        )


def odd_number(node: Any) -> OddNumber | None:
    """The first scalar of a composed YAML node tree (pyyaml's or ruamel's) that the loader reads as a number
    (int or float tag) but whose source text is not PLAIN_DECIMAL (nor .inf or .nan), else None. Each node
    is visited once, aliases included (nested aliases can stand for millions of items)."""
    seen: set[int] = set()
    stack: list[tuple[Any, str]] = [(node, "<top>")]
    while stack:
        item, key = stack.pop()
        if item is None or id(item) in seen:
            continue
        seen.add(id(item))
        value = item.value
        if isinstance(value, str):
            plain = PLAIN_DECIMAL.fullmatch(value) or _SPECIAL.fullmatch(value)
            if str(item.tag) in _NUMBER_TAGS and not plain:
                return OddNumber(item.start_mark.line + 1, key, value)
        elif value and isinstance(value[0], tuple):  # a mapping: (key node, value node) pairs
            for k, v in reversed(value):
                name = k.value if isinstance(k.value, str) else key
                stack += [(v, name), (k, name)]
        else:
            stack += [(v, key) for v in reversed(value)]
    return None


_BRIEF = reprlib.Repr()
_BRIEF.maxlevel, _BRIEF.maxlist, _BRIEF.maxtuple, _BRIEF.maxdict = 2, 4, 4, 4
_BRIEF.maxstring, _BRIEF.maxother = 80, 80


def brief(value: Any) -> str:
    """repr(value) cut to a line: nested aliases in a hand-edited file can stand for millions of items, whose
    full repr would never finish (nor fit an error line)."""
    return _BRIEF.repr(value)


def yaml_problem(exc: Exception) -> tuple[int | None, str]:
    """(1-based line or None, the problem in one line) of a YAML error (pyyaml's or ruamel.yaml's)."""
    mark, problem = getattr(exc, "problem_mark", None), getattr(exc, "problem", None)
    return (mark.line + 1 if mark is not None else None), str(problem or str(exc).splitlines()[0])


__all__ = [
    "MAX_DEPTH",
    "MAX_NUMBER_CHARS",
    "MAX_TEXT_BYTES",
    "PLAIN_DECIMAL",
    "OddNumber",
    "OddNumberError",
    "TextTooLarge",
    "UniqueKeyLoader",
    "YamlBoundsError",
    "brief",
    "check_bounds",
    "load_unique",
    "odd_number",
    "read_text_limited",
    "yaml_problem",
]
