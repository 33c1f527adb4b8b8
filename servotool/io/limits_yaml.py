"""Arm limits as a ROS 2 parameter file: read them, and merge newly found limits into one as text.

Layout read and written (pulses; the node name is whatever the file uses; a new file takes the one its
bus's family names, DeviceFacts.limits_node):

    board_driver:
      ros__parameters:
        arm_limit_2: [95, 941]     # lo, hi
        arm_rest_2: 776            # named pose "rest", servo 2

Merging is a ruamel.yaml round trip, so every other key, every comment, the key order and the indentation
survive; only the `arm_limit_N` entries of the merged joints change (or are added), each with a comment
saying how it was found and the line it replaces kept above it as a `# was:` comment; one comment line at
the top records the run. Updating a file in place keeps its mode and every earlier backup.
The result is parsed back and compared with the original before it is returned: if anything but those limits
changed, the merge is refused (LimitsFileError) rather than written.
"""

from __future__ import annotations

import io
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from ruamel.yaml import YAMLError
from ruamel.yaml.comments import CommentedMap, CommentedSeq
from ruamel.yaml.util import load_yaml_guess_indent

from servotool.errors import FileFormatError
from servotool.io.atomic import copy_new, write_atomic
from servotool.io.strict_yaml import (
    OddNumberError,
    TextTooLarge,
    YamlBoundsError,
    brief,
    check_bounds,
    load_unique,
    read_text_limited,
    yaml_problem,
)
from servotool.io.yaml_edit import round_trip_yaml

PARAMS = "ros__parameters"


# a servo id as the driver writes it: ASCII digits, no leading zero. str.isdigit() also takes "02" and the
# digits of other scripts, which int() reads as 2: a second spelling of one servo, the later entry winning
_SERVO_ID = re.compile(r"0|[1-9][0-9]*")


def _servo_id(tail: str) -> int | None:
    return int(tail) if _SERVO_ID.fullmatch(tail) else None


def _limit_id(key: str) -> int | None:
    """N of an `arm_limit_N` key, else None."""
    tail = key.removeprefix("arm_limit_")
    return _servo_id(tail) if tail != key else None


def _pose_name(key: str) -> tuple[str, str] | None:
    """(pose, the id as written) of an `arm_<pose>_<digits>` key (pose: lower-case words joined by _)."""
    if not key.startswith("arm_") or key.startswith("arm_limit_"):
        return None
    name, sep, tail = key[4:].rpartition("_")
    words = name.split("_")
    ok = (
        sep
        and tail.isdigit()
        and all(w and w[0].isascii() and w[0].islower() and w.isalnum() and w == w.lower() for w in words)
    )
    return (name, tail) if ok else None


def _pose_key(key: str) -> tuple[str, int] | None:
    """(pose, N) of an `arm_<pose>_N` key, else None."""
    named = _pose_name(key)
    sid = _servo_id(named[1]) if named else None
    return (named[0], sid) if named and sid is not None else None


class LimitsFileError(FileFormatError):
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
    # per pose name, its arm_<pose>_N entries that are no whole pulse ("arm_foo_2: 700.5"): a pose is not
    # used with an entry left out (see pose_problem)
    unusable: dict[str, list[str]] = field(default_factory=dict)

    def pose_problem(self, name: str) -> str | None:
        """Why the pose `name` cannot be used as this file writes it (an entry that is no whole pulse, or a
        servo id spelt another way: `arm_rest_02`), or None."""
        bad = self.unusable.get(name)
        if not bad:
            return None
        return (
            f"{self.path or '<limits>'}: pose {name!r}: {'; '.join(bad)} (the pose is not used with a "
            "servo left out)"
        )


def _find_params(doc: Any, where: str, prefer: str | None) -> tuple[str | None, dict[str, Any]]:
    if doc is None:
        return None, {}
    if not isinstance(doc, dict):
        raise LimitsFileError(f"{where}: not a YAML mapping")
    nodes = {k: v[PARAMS] for k, v in doc.items() if isinstance(v, dict) and isinstance(v.get(PARAMS), dict)}
    if not nodes:
        if doc and not any(str(k).startswith("arm_") for k in doc):
            # a campaign or any other YAML: merging limits into it would damage it
            raise LimitsFileError(
                f"{where}: not a limits parameter file (no <node>: ros__parameters: and "
                "no arm_* keys); give the ROS 2 parameter file of the arm's limits "
                "(params/<profile>-limits.yaml)"
            )
        return None, doc  # flat file: the keys at the top level
    with_limits = [k for k, v in nodes.items() if any(_limit_id(str(key)) is not None for key in v)]
    if len(with_limits) > 1:
        raise LimitsFileError(f"{where}: arm limits under more than one node ({', '.join(with_limits)})")
    node = with_limits[0] if with_limits else (prefer if prefer in nodes else next(iter(nodes)))
    return node, nodes[node]


def parse_limits(
    text: str, where: str = "<limits>", path: Path | None = None, node: str | None = None
) -> LimitsFile:
    """Read limits and poses from YAML text: the limits of the one node that has some, else those of
    `node` (the bus's node name) when the file has it, else of its first node. Each limit must be [lo, hi]
    with 0 <= lo < hi <= 1000; a key written twice, one that starts arm_limit but is not arm_limit_N, and
    any number not written in plain decimal (`1_00`, `010`, `0x10`, `1:30`: see strict_yaml.odd_number)
    are refused (LimitsFileError naming the file, and the line and key of the number); so is a text nested
    too deep or with a number too long (see strict_yaml.check_bounds), before anything is composed."""
    try:
        check_bounds(text, where)
    except YamlBoundsError as exc:
        raise LimitsFileError(str(exc)) from None
    try:
        # a limit written twice, or spelt 1_00 (YAML 1.1 reads it as 100): refused, not read as another
        doc = load_unique(text, plain_numbers=True) if text.strip() else None
    except OddNumberError as exc:
        raise LimitsFileError(exc.odd.message(where)) from None
    except yaml.YAMLError as exc:
        line, problem = yaml_problem(exc)
        raise LimitsFileError(f"{where}{f':{line}' if line else ''}: not valid YAML ({problem})") from None
    found, params = _find_params(doc, where, node)
    out = LimitsFile(path=path, text=text, node=found, params=dict(params))
    for key, value in params.items():
        sid = _limit_id(str(key))
        if sid is None and str(key).startswith("arm_limit"):  # misspelt: it would be left out silently
            raise LimitsFileError(
                f"{where}: {key}: a limit is written arm_limit_N (N the servo id in plain "
                "digits, no leading 0)"
            )
        if sid is not None:
            ok = (
                isinstance(value, list)
                and len(value) == 2
                and all(isinstance(v, int) and not isinstance(v, bool) for v in value)
            )
            if not ok or not 0 <= value[0] < value[1] <= 1000:
                raise LimitsFileError(
                    f"{where}: {key} must be [lo, hi] with 0 <= lo < hi <= 1000, got {brief(value)}"
                )
            out.limits[sid] = (value[0], value[1])
            continue
        pose, named = _pose_key(str(key)), _pose_name(str(key))
        if pose and isinstance(value, int) and not isinstance(value, bool):
            out.poses.setdefault(pose[0], {})[pose[1]] = value
        elif pose:
            out.unusable.setdefault(pose[0], []).append(f"{key}: {brief(value)} is no whole number of pulses")
        elif named:  # arm_rest_02: another spelling of a servo id, never read as servo 2
            out.unusable.setdefault(named[0], []).append(
                f"{key}: a servo id is written in plain digits without a leading 0 (arm_{named[0]}_N)"
            )
    return out


def load_limits(path: str | Path, node: str | None = None) -> LimitsFile:
    """Read a limits file (LimitsFileError names the file on any problem); node: see parse_limits."""
    path = Path(path)
    try:
        text = read_text_limited(path)
    except OSError as exc:
        raise LimitsFileError(f"{path}: cannot read ({exc.strerror or exc})") from None
    except UnicodeDecodeError as exc:
        raise LimitsFileError(f"{path}: not UTF-8 text (byte {exc.start})") from None
    except TextTooLarge as exc:
        raise LimitsFileError(str(exc)) from None
    return parse_limits(text, str(path), path, node)


def _flow_pair(lo: int, hi: int) -> CommentedSeq:
    seq = CommentedSeq([lo, hi])
    seq.fa.set_flow_style()
    return seq


def _comment_text(params: CommentedMap, key: str) -> str:
    """The whole comment token after `key`'s value (its end-of-line comment and any comment lines below)."""
    slots: list[Any] = list(params.ca.items.get(key) or [])
    value = params.get(key)
    if isinstance(value, CommentedSeq) and value.ca.comment:
        slots += list(value.ca.comment)
    # a flow sequence's comment sits in both places as one token: take it once
    unique = {id(tok): tok for tok in slots if tok is not None and hasattr(tok, "value")}
    return "".join(tok.value for tok in unique.values())


def _clear_comment(params: CommentedMap, key: str) -> None:
    params.ca.items.pop(key, None)
    value = params.get(key)
    if isinstance(value, CommentedSeq):
        value.ca.comment = None


def _set_comment(params: CommentedMap, key: str, indent: int, note: str, below: str) -> None:
    """`key`'s line ends in `# note` (if any); `below` (comment lines, as the file had them) follows it."""
    _clear_comment(params, key)
    lo, hi = params[key]
    column = indent + len(f"{key}: [{lo}, {hi}]") + 2
    params.yaml_add_eol_comment(note or "-", key, column=column)
    token = params.ca.items[key][2]
    eol = f"# {note}\n" if note else "\n"
    token.value = eol + below


def _split_comment(text: str) -> tuple[str, str]:
    """A comment token's end-of-line part (without '# ') and the comment lines below it."""
    first, _, rest = text.partition("\n")
    return first.strip().removeprefix("#").strip(), rest


def _limit_keys(params: CommentedMap) -> list[str]:
    return [str(k) for k in params if _limit_id(str(k)) is not None]


def _params_map(doc: Any, node: str | None, where: str) -> CommentedMap:
    params = doc if node is None else doc[node][PARAMS]
    if not isinstance(params, CommentedMap) or params.fa.flow_style():
        raise LimitsFileError(f"{where}: the parameters are written inline ({{...}}); edit the file by hand")
    return params


def merge_limits_text(
    text: str | None,
    limits: Mapping[int, tuple[int, int]],
    notes: Mapping[int, str],
    header: str,
    where: str = "<limits>",
    node: str | None = None,
) -> str:
    """`text` with arm_limit_N set to `limits` (notes[N] as the line's comment) and `header` as a first
    comment line; an empty `text` becomes a new file of the node `node` (the bus's node name: LimitsFileError
    without one). Round-trip YAML: every other key, comment and the layout are kept; a replaced line stays
    above its successor as a `# was:` comment; a missing key is added after the last limit (or first under
    the parameters). The result is parsed back and every other key checked unchanged (LimitsFileError)."""
    fresh = not text or not text.strip()
    if fresh:
        if not node:
            raise LimitsFileError(f"{where}: a new limits file needs the node name of its bus")
        text = f"{node}:\n  {PARAMS}: {{}}\n"
    assert text is not None
    before = parse_limits(text, where, node=node)
    rt = round_trip_yaml()
    try:
        _, indent, _ = load_yaml_guess_indent(text)
        rt.indent(mapping=indent or 2, sequence=(indent or 2) + 2, offset=indent or 2)
        doc = rt.load(text)
    except YAMLError as exc:
        raise LimitsFileError(f"{where}: not valid YAML ({str(exc).splitlines()[0]})") from None
    if fresh:
        doc[node][PARAMS] = CommentedMap()
    params = _params_map(doc, before.node, where)
    depth = (indent or 2) * (0 if before.node is None else 2)
    for sid in sorted(limits):
        _merge_one(params, sid, limits[sid], notes.get(sid, ""), depth)
    out = io.StringIO()
    rt.dump(doc, out)
    merged = f"# {header}\n" + out.getvalue()
    _verify(before, parse_limits(merged, where, node=node), limits, where)
    return merged


def _merge_one(params: CommentedMap, sid: int, pair: tuple[int, int], note: str, depth: int) -> None:
    key = f"arm_limit_{sid}"
    if key in params:
        old = params[key]
        old_note, below = _split_comment(_comment_text(params, key))
        was = f"was: {key}: [{old[0]}, {old[1]}]" + (f"  # {old_note}" if old_note else "")
        params[key] = _flow_pair(*pair)
        _set_comment(params, key, depth, note, below)
        params.yaml_set_comment_before_after_key(key, before=was, indent=depth)
        return
    keys = _limit_keys(params)
    if keys:
        last = keys[-1]
        # comment lines below the last limit belong to what follows it: they move below the new line
        last_note, below = _split_comment(_comment_text(params, last))
        params.insert(list(params).index(last) + 1, key, _flow_pair(*pair))
        if below or last_note:
            lo, hi = params[last]
            _clear_comment(params, last)
            if last_note:
                params.yaml_add_eol_comment(last_note, last, column=depth + len(f"{last}: [{lo}, {hi}]") + 2)
        _set_comment(params, key, depth, note, below)
        return
    params.insert(0, key, _flow_pair(*pair))
    if note:
        _set_comment(params, key, depth, note, "")


def _same(a: Any, b: Any, pairs: set[tuple[int, int]]) -> bool:
    """a == b for parsed YAML, each pair of shared nodes compared once: aliases nested a few lines deep stand
    for billions of items, which == would compare one by one."""
    if isinstance(a, (list, dict)) and type(a) is type(b):
        if (id(a), id(b)) in pairs:
            return True
        pairs.add((id(a), id(b)))
        if isinstance(a, dict) and isinstance(b, dict):
            return a.keys() == b.keys() and all(_same(v, b[k], pairs) for k, v in a.items())
        return len(a) == len(b) and all(_same(x, y, pairs) for x, y in zip(a, b, strict=True))
    return a is b or bool(a == b)  # `is` first, as == on containers does: YAML's .nan is one object


def _verify(before: LimitsFile, after: LimitsFile, limits: Mapping[int, tuple[int, int]], where: str) -> None:
    want = dict(before.params)
    for sid, (lo, hi) in limits.items():
        want[f"arm_limit_{sid}"] = [lo, hi]
    if after.node != before.node or not _same(after.params, want, set()):
        differ = {k for k in want if k in after.params and not _same(after.params[k], want[k], set())}
        changed = sorted(set(want) ^ set(after.params) | differ)
        raise LimitsFileError(
            f"{where}: merging the limits would change other keys ({', '.join(changed)}); "
            "edit the file by hand"
        )


def backup_path(path: str | Path) -> Path:
    """The first free backup name of a file: FILE.bak, then FILE.bak.1, FILE.bak.2, ... (never an old one)."""
    path = Path(path)
    candidate = path.with_name(path.name + ".bak")
    n = 0
    while os.path.lexists(candidate):  # a dangling link is taken too: a copy would write where it points
        n += 1
        candidate = path.with_name(f"{path.name}.bak.{n}")
    return candidate


def update_in_place(path: str | Path, text: str, expected: str) -> tuple[Path, Path]:
    """Replace a file's text, first copying it (mode and times kept) to a new backup (see backup_path).

    Refuses (LimitsFileError) when the file no longer holds `expected`, the text it was read with: someone
    edited it meanwhile and their change would be lost. Returns (path, backup)."""
    path = Path(path)
    try:
        current = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise LimitsFileError(f"{path}: cannot read it back ({exc.strerror or exc})") from None
    if current != expected:
        raise LimitsFileError(
            f"{path} changed while the sweep ran; not overwritten (the merged limits are "
            "in the output folder)"
        )
    backup = backup_path(path)
    # whole or absent: a copy cut short would be an empty FILE.bak beside a file never written
    copy_new(path, backup)
    return write_atomic(path, text), backup
