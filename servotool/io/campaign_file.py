"""Read a campaign file: YAML into plain Python data, with the line of every key and list item.

The structure is checked elsewhere (runs/campaign/plan.py); this module only reads the text, so that
every later problem can name the line it comes from. Lines are 1-based, as editors show them.
"""

from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ruamel.yaml import YAML
from ruamel.yaml.comments import CommentedMap, CommentedSeq
from ruamel.yaml.error import MarkedYAMLError, YAMLError

import servotool
from servotool.errors import FileFormatError
from servotool.io.strict_yaml import (
    TextTooLarge,
    YamlBoundsError,
    check_bounds,
    odd_number,
    read_text_limited,
)

Key = tuple[Any, ...]


class CampaignFileError(FileFormatError):
    """A campaign file that is not readable YAML, or not a mapping at the top; the message names file:line."""


@dataclass
class YamlText:
    """A YAML document as plain data (dicts, lists, scalars) and the line of each node, keyed by its path
    from the top (e.g. ("runs", 2, "options", "size")); the top is ()."""

    path: Path
    data: Any
    lines: dict[Key, int] = field(default_factory=dict)
    header: str = ""  # the comment block the file opens with, without the '#' marks
    text: str = ""

    def line(self, key: Key) -> int:
        """The line of the node at `key`, else of its nearest ancestor that has one (1 for the top)."""
        k = tuple(key)
        while k:
            if k in self.lines:
                return self.lines[k]
            k = k[:-1]
        return self.lines.get((), 1)

    def where(self, key: Key) -> str:
        """`file:line` of the node at `key`, for error messages."""
        return f"{self.path}:{self.line(key)}"


def _plain(node: Any, key: Key, lines: dict[Key, int], seen: dict[int, Any] | None = None) -> Any:
    """Copy a ruamel node into plain data, recording the line of each key and item (0-based -> 1-based).
    A node met again through an alias is the same copy, not walked again: nested aliases can stand for
    millions of items (and an alias inside its own anchor for infinitely many)."""
    seen = {} if seen is None else seen
    if id(node) in seen:
        return seen[id(node)]
    if isinstance(node, CommentedMap):
        out: dict[Any, Any] = {}
        seen[id(node)] = out
        for k, v in node.items():
            with contextlib.suppress(KeyError, TypeError, AttributeError):
                lines[key + (k,)] = int(node.lc.key(k)[0]) + 1
            out[k] = _plain(v, key + (k,), lines, seen)
        return out
    if isinstance(node, CommentedSeq):
        items: list[Any] = []
        seen[id(node)] = items
        for i, v in enumerate(node):
            with contextlib.suppress(KeyError, TypeError, AttributeError, IndexError):
                lines[key + (i,)] = int(node.lc.item(i)[0]) + 1
            items.append(_plain(v, key + (i,), lines, seen))
        return items
    return node


def header_comment(text: str) -> str:
    """The comment block at the top of a YAML text, '#' marks stripped, lines joined by newlines."""
    out = []
    for raw in text.splitlines():
        line = raw.strip()
        if not line.startswith("#"):
            break
        out.append(line[1:].strip())
    return "\n".join(out).strip()


def read_campaign_text(text: str, path: Path) -> YamlText:
    """Parse YAML text; raises CampaignFileError naming path:line on a syntax error, a non-mapping top, or a
    number not written in plain decimal (`1_0`, `0x10`, `.inf`: see strict_yaml.odd_number), and, before
    anything is composed, a text nested too deep, with a number too long or aliases that expand too far
    (see strict_yaml.check_bounds)."""
    try:
        check_bounds(text, str(path))
    except YamlBoundsError as exc:
        raise CampaignFileError(str(exc)) from None
    yaml = YAML(typ="rt")
    try:
        odd = odd_number(yaml.compose(text))
        doc = yaml.load(text)
    except MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark is not None else 1
        raise CampaignFileError(f"{path}:{line}: not valid YAML: {exc.problem or exc.context}") from None
    except YAMLError as exc:
        raise CampaignFileError(f"{path}: not valid YAML: {exc}") from None
    except RecursionError:  # a text check_bounds could not read to its depth (not YAML to pyyaml)
        raise CampaignFileError(f"{path}: nested too deep: not a file written by hand") from None
    if odd is not None:  # a bound spelt 1_0 must not be read as 10
        raise CampaignFileError(odd.message(str(path)))
    if not isinstance(doc, CommentedMap):
        raise CampaignFileError(f"{path}:1: a campaign file is a YAML mapping (name:, device:, runs: ...)")
    lines: dict[Key, int] = {(): 1}
    data = _plain(doc, (), lines)
    return YamlText(path=path, data=data, lines=lines, header=header_comment(text), text=text)


def read_campaign_file(path: str | Path) -> YamlText:
    """Read and parse a campaign file; raises CampaignFileError when it cannot be read or parsed."""
    p = Path(path)
    try:
        text = read_text_limited(p)
    except TextTooLarge as exc:
        raise CampaignFileError(str(exc)) from None
    except UnicodeDecodeError:
        raise CampaignFileError(f"{p}: cannot be read: not UTF-8 text") from None
    except OSError as exc:  # its reason alone (Is a directory): the path is already named
        raise CampaignFileError(f"{p}: cannot be read: {exc.strerror or exc}") from None
    return read_campaign_text(text, p)


def shipped_campaign_dirs() -> list[Path]:
    """Where the shipped campaigns are: `campaigns/` next to the package in a source checkout (editable
    installs included), else the data folder a wheel installs them into
    (`<prefix>/share/servotool/campaigns`)."""
    import sys
    import sysconfig

    here = Path(servotool.__file__).resolve().parent
    candidates = [here.parent / "campaigns", Path(sys.prefix) / "share" / "servotool" / "campaigns"]
    for scheme in (None, f"{os.name}_user"):
        try:
            data = sysconfig.get_path("data", scheme) if scheme else sysconfig.get_path("data")
        except KeyError:
            continue
        candidates.append(Path(data) / "share" / "servotool" / "campaigns")
    seen: list[Path] = []
    for c in candidates:
        if c.is_dir() and c not in seen:
            seen.append(c)
    return seen


def shipped_campaign_files() -> list[Path]:
    """Every shipped campaign file (*.yaml), from the first folder that holds any, sorted by name."""
    for folder in shipped_campaign_dirs():
        files = sorted(folder.glob("*.yaml"))
        if files:
            return files
    return []
