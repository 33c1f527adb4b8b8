"""Arm limits as a ROS 2 parameter file: read them, and merge newly found limits into one as text.

Layout read and written (pulses; the node name is whatever the file uses, `rosorin_board_driver` for a new
one):

    rosorin_board_driver:
      ros__parameters:
        arm_limit_2: [95, 941]     # lo, hi
        arm_rest_2: 776            # named pose "rest", servo 2

Merging edits the text in place, so every other key, every comment and the key order survive; only the
`arm_limit_N` lines of the merged joints change (or are added), each with a comment saying how it was found
and the line it replaces kept above it as a `# was:` comment; one comment line at the top records the run.
The result is parsed back and compared with the original before it is returned: if anything but those limits
changed, the merge is refused (LimitsFileError) rather than written.
"""

from __future__ import annotations

import os
import re
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

DEFAULT_NODE = "rosorin_board_driver"
PARAMS = "ros__parameters"
_LIMIT_KEY = re.compile(r"^arm_limit_(\d+)$")
_POSE_KEY = re.compile(r"^arm_([a-z][a-z0-9]*(?:_[a-z][a-z0-9]*)*)_(\d+)$")


class LimitsFileError(ValueError):
    """A limits file could not be read, or a merge would damage it; the message names the file."""


@dataclass
class LimitsFile:
    """What a limits file says: limits {servo id: (lo, hi)}, poses {name: {servo id: pulse}}."""

    path: Path | None
    text: str
    node: str | None
    limits: dict[int, tuple[int, int]] = field(default_factory=dict)
    poses: dict[str, dict[int, int]] = field(default_factory=dict)
    params: dict[str, Any] = field(default_factory=dict)


def _find_params(doc: Any, where: str) -> tuple[str | None, dict[str, Any]]:
    if doc is None:
        return None, {}
    if not isinstance(doc, dict):
        raise LimitsFileError(f"{where}: not a YAML mapping")
    nodes = {k: v[PARAMS] for k, v in doc.items() if isinstance(v, dict) and isinstance(v.get(PARAMS), dict)}
    if not nodes:
        return None, doc  # flat file: the keys at the top level
    with_limits = [k for k, v in nodes.items() if any(_LIMIT_KEY.match(str(key)) for key in v)]
    if len(with_limits) > 1:
        raise LimitsFileError(f"{where}: arm limits under more than one node ({', '.join(with_limits)})")
    node = with_limits[0] if with_limits else (DEFAULT_NODE if DEFAULT_NODE in nodes else next(iter(nodes)))
    return node, nodes[node]


def parse_limits(text: str, where: str = "<limits>", path: Path | None = None) -> LimitsFile:
    """Read limits and poses from YAML text. Each limit must be [lo, hi] with 0 <= lo < hi <= 1000."""
    try:
        doc = yaml.safe_load(text) if text.strip() else None
    except yaml.YAMLError as exc:
        raise LimitsFileError(f"{where}: not valid YAML ({str(exc).splitlines()[0]})") from None
    node, params = _find_params(doc, where)
    out = LimitsFile(path=path, text=text, node=node, params=dict(params))
    for key, value in params.items():
        m = _LIMIT_KEY.match(str(key))
        if m:
            ok = (isinstance(value, list) and len(value) == 2
                  and all(isinstance(v, int) and not isinstance(v, bool) for v in value))
            if not ok or not 0 <= value[0] < value[1] <= 1000:
                raise LimitsFileError(f"{where}: {key} must be [lo, hi] with 0 <= lo < hi <= 1000, "
                                      f"got {value!r}")
            out.limits[int(m.group(1))] = (value[0], value[1])
            continue
        m = _POSE_KEY.match(str(key))
        if m and isinstance(value, int) and not isinstance(value, bool):
            out.poses.setdefault(m.group(1), {})[int(m.group(2))] = value
    return out


def load_limits(path: str | Path) -> LimitsFile:
    """Read a limits file (LimitsFileError names the file on any problem)."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise LimitsFileError(f"{path}: cannot read ({exc.strerror or exc})") from None
    return parse_limits(text, str(path), path)


def _fresh(limits: Mapping[int, tuple[int, int]], notes: Mapping[int, str], header: str) -> str:
    lines = [f"# {header}", f"{DEFAULT_NODE}:", f"  {PARAMS}:"]
    for sid in sorted(limits):
        lo, hi = limits[sid]
        note = f"  # {notes[sid]}" if notes.get(sid) else ""
        lines.append(f"    arm_limit_{sid}: [{lo}, {hi}]{note}")
    return "\n".join(lines) + "\n"


def merge_limits_text(text: str | None, limits: Mapping[int, tuple[int, int]], notes: Mapping[int, str],
                      header: str, where: str = "<limits>") -> str:
    """`text` with arm_limit_N set to `limits` (notes[N] as the line's comment) and `header` as a first
    comment line. A missing key is added next to the other limits. Every other key is checked to be
    unchanged."""
    if not text or not text.strip():
        return _fresh(limits, notes, header)
    before = parse_limits(text, where)
    lines = text.splitlines()
    for sid in sorted(limits):
        lo, hi = limits[sid]
        pattern = re.compile(rf"^(?P<indent>[ \t]*)arm_limit_{sid}[ \t]*:(?P<rest>.*)$")
        hits = [i for i, line in enumerate(lines) if pattern.match(line)]
        if len(hits) > 1:
            raise LimitsFileError(f"{where}: arm_limit_{sid} appears {len(hits)} times; edit it by hand")
        note = notes.get(sid, "")
        comment = f"  # {note}" if note else ""
        if hits:
            old = lines[hits[0]]
            indent = pattern.match(old).group("indent")
            # the old line, comment and all, stays above the new one as a comment: the history is not lost
            lines[hits[0]:hits[0] + 1] = [f"{indent}# was: {old.strip()}",
                                          f"{indent}arm_limit_{sid}: [{lo}, {hi}]{comment}"]
            continue
        at, indent = _insert_point(lines, before.node, where)
        lines.insert(at, f"{indent}arm_limit_{sid}: [{lo}, {hi}]{comment}")
    merged = "\n".join([f"# {header}", *lines]) + "\n"
    _verify(before, parse_limits(merged, where), limits, where)
    return merged


def _insert_point(lines: list[str], node: str | None, where: str) -> tuple[int, str]:
    """Where a new arm_limit line goes: after the last existing one, else first under ros__parameters."""
    last = [i for i, line in enumerate(lines) if re.match(r"^[ \t]*arm_limit_\d+[ \t]*:", line)]
    if last:
        i = last[-1]
        return i + 1, re.match(r"^[ \t]*", lines[i]).group(0)
    if node is None:
        return len(lines), ""
    for i, line in enumerate(lines):
        if re.match(rf"^[ \t]*{PARAMS}[ \t]*:[ \t]*(#.*)?$", line):
            base = len(line) - len(line.lstrip())
            for nxt in lines[i + 1:]:
                if nxt.strip() and not nxt.lstrip().startswith("#"):
                    width = len(nxt) - len(nxt.lstrip())
                    if width > base:
                        return i + 1, nxt[:width]
                    break
            return i + 1, " " * (base + 2)
    raise LimitsFileError(f"{where}: found no '{PARAMS}:' line to add the limits under; "
                          "edit the file by hand")


def _verify(before: LimitsFile, after: LimitsFile, limits: Mapping[int, tuple[int, int]], where: str) -> None:
    want = dict(before.params)
    for sid, (lo, hi) in limits.items():
        want[f"arm_limit_{sid}"] = [lo, hi]
    if after.node != before.node or after.params != want:
        changed = sorted(set(want) ^ set(after.params) | {k for k in want if after.params.get(k) != want[k]})
        raise LimitsFileError(f"{where}: merging the limits would change other keys ({', '.join(changed)}); "
                              "edit the file by hand")


def write_atomic(path: str | Path, text: str) -> Path:
    """Write text to path through a temporary file and a rename: readers see the old or the new file, never
    half."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path
