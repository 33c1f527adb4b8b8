"""YAML read the strict way for files a person edits by hand: a key written twice in one mapping is an error.

pyyaml keeps the last of two equal keys without a word; in a limits or config file that can silently widen a
limit or change the device. `load_unique` is `yaml.safe_load` (safe tags only) that refuses the repeat.
"""

from __future__ import annotations

import reprlib
from pathlib import Path
from typing import Any

import yaml


class UniqueKeyLoader(yaml.SafeLoader):
    """yaml's SafeLoader, except that a mapping with a key written twice raises a ConstructorError naming
    the key and its line."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: list[Any] = []
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=deep)
            if key in seen:
                raise yaml.constructor.ConstructorError(
                    None, None, f"key {key!r} is written twice", key_node.start_mark)
            seen.append(key)
        return super().construct_mapping(node, deep=deep)


MAX_TEXT_BYTES = 1 << 20  # a campaign, limits or config file written by hand is a few KiB


class TextTooLarge(ValueError):
    """A file meant to be written by hand is larger than MAX_TEXT_BYTES (or never ends: /dev/zero)."""


def read_text_limited(path: Path, limit: int = MAX_TEXT_BYTES) -> str:
    """The UTF-8 text of a file written by hand, read no further than `limit` bytes: OSError when it cannot
    be read, UnicodeDecodeError when it is not UTF-8, TextTooLarge past the limit (a device that never
    ends, such as /dev/zero, is not read to its end)."""
    with path.open("rb") as fh:
        data = fh.read(limit + 1)
    if len(data) > limit:
        raise TextTooLarge(f"{path}: larger than {limit // 1024} KiB: not a file written by hand")
    return data.decode("utf-8")


def load_unique(text: str) -> Any:
    """The YAML document in `text` (safe tags only); yaml.YAMLError when it is not YAML or a mapping
    repeats a key."""
    return yaml.load(text, Loader=UniqueKeyLoader)  # noqa: S506 - a SafeLoader


_BRIEF = reprlib.Repr()
_BRIEF.maxlevel, _BRIEF.maxlist, _BRIEF.maxtuple, _BRIEF.maxdict = 2, 4, 4, 4
_BRIEF.maxstring, _BRIEF.maxother = 80, 80


def brief(value: Any) -> str:
    """repr(value) cut to a line: nested aliases in a hand-edited file can stand for millions of items, whose
    full repr would never finish (nor fit an error line)."""
    return _BRIEF.repr(value)


def yaml_problem(exc: yaml.YAMLError) -> tuple[int | None, str]:
    """(1-based line or None, the problem in one line) of a YAML error."""
    mark, problem = getattr(exc, "problem_mark", None), getattr(exc, "problem", None)
    return (mark.line + 1 if mark is not None else None), str(problem or str(exc).splitlines()[0])


__all__ = [
    "MAX_TEXT_BYTES", "TextTooLarge", "UniqueKeyLoader", "brief", "load_unique", "read_text_limited",
    "yaml_problem",
]
