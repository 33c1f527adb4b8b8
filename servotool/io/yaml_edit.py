"""Round-trip YAML: the ruamel.yaml setup every hand-edited file shares, and edits of one top-level key made
in the file's own text.

`key_edits` asks ruamel.yaml where each key and value of the top-level mapping lies in the text and changes
only those characters: the value's text (set), the key's line (unset), or one line added (a new key). Every
other character is kept, so comments (the edited key's end-of-line comment too, when its value is set),
blank lines, key order, quoting, indentation, line endings, a `---` document start and a missing last line
break stay as written. A load-and-dump round trip keeps less: it re-spaces `key:   value`, drops `---`, `...`
and trailing blanks, writes LF for CRLF, re-indents an indented mapping, and takes the comment lines below a
removed key away with it. The caller parses each candidate back and keeps the first that reads as it should.
"""

from __future__ import annotations

from collections.abc import Iterator

from ruamel.yaml import YAML
from ruamel.yaml.nodes import MappingNode, Node, ScalarNode
from ruamel.yaml.resolver import VersionedResolver


def round_trip_yaml() -> YAML:
    """ruamel.yaml in round-trip mode (comments, key order, quoting and flow styles kept on load and dump),
    never re-wrapping a long comment or value."""
    rt = YAML()
    rt.width = 4096
    return rt


def spellings(value: str, style: str | None = None) -> list[str]:
    """`value` as a YAML scalar, in the order to try: the quoting `style` a replaced value had (' or "), else
    plain, then single-quoted, then double-quoted (any printable text reads back from the last one). Plain
    is left out when YAML 1.2 reads it as no text (0o10, null, true); YAML 1.1's readings (yes, 010, 1:30)
    are the caller's to check, by reading the edited file back."""
    single = "'" + value.replace("'", "''") + "'"
    double = '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if style == "'":
        return [single, double]
    if style == '"':
        return [double, single]
    tag = VersionedResolver(version=(1, 2)).resolve(ScalarNode, value, (True, False))
    return ([value] if str(tag) == "tag:yaml.org,2002:str" else []) + [single, double]


def key_edits(text: str, key: str, value: str | None) -> Iterator[str]:
    """`text` with the top-level `key` set to `value` (one candidate per spelling, see `spellings`), or
    without it when value is None (one candidate; none when the key is absent). Raises ruamel.yaml's
    YAMLError when ruamel cannot read the text. Each candidate may still read otherwise than meant (an
    alias, a spelling YAML reads as another type): the caller checks it."""
    root = round_trip_yaml().compose(text)
    pairs = root.value if isinstance(root, MappingNode) else []
    found = [(k, v) for k, v in pairs if isinstance(k, ScalarNode) and k.value == key]
    if value is None:
        if found:
            yield _without(text, root, pairs.index(found[0]))
        return
    if found:
        start, end = found[0][1].start_mark.index, _content_end(text, found[0][1])
        for spelt in spellings(value, found[0][1].style):
            yield text[:start] + spelt + text[end:]
        return
    for spelt in spellings(value):
        yield _with_new(text, root, f"{key}: {spelt}")


def _content_end(text: str, node: Node) -> int:
    """Where `node`'s text ends, without the blank lines a block scalar (| or >) takes after its last line."""
    start, end = node.start_mark.index, node.end_mark.index
    return start + len(text[start:end].rstrip(" \t\r\n"))  # YAML's white space only: a no-break space is text


def _line_break(text: str) -> str:
    first = text.find("\n")
    return "\r\n" if first > 0 and text[first - 1] == "\r" else "\n"


def _line_end(text: str, index: int) -> int:
    """Just past the line break that ends the line holding `index`, or the end of the text."""
    newline = text.find("\n", index)
    return len(text) if newline < 0 else newline + 1


def _with_new(text: str, root: Node | None, line: str) -> str:
    """`text` with `line` (key: value) added as the mapping's last entry, after the comment lines that end
    the file (before a `...` document end)."""
    if isinstance(root, MappingNode) and root.flow_style:
        if not root.value:  # {}: the new entry goes inside the braces
            brace = root.end_mark.index - 1
            return text[:brace] + line + text[brace:]
        at = _content_end(text, root.value[-1][1])
        return text[:at] + ", " + line + text[at:]
    if isinstance(root, ScalarNode) and root.value:  # `~` or `null`: no values, replaced by the mapping
        return text[: root.start_mark.index] + line + text[root.end_mark.index :]
    at = len(text)
    if isinstance(root, MappingNode):
        line = " " * root.start_mark.column + line
        tail = text[root.end_mark.index :].splitlines()
        if any(part.strip() and not part.lstrip().startswith("#") for part in tail):
            at = _line_end(text, _content_end(text, root.value[-1][1]))
    if at == len(text) and text and not text.endswith("\n"):
        return text + _line_break(text) + line  # the file ends without a line break: so does the new one
    return text[:at] + line + _line_break(text) + text[at:]


def _without(text: str, root: MappingNode, i: int) -> str:
    """`text` without the i-th entry of the mapping `root`: its lines (with the value's end-of-line comment)
    in a block mapping, the entry and one comma in a flow one."""
    key, value = root.value[i]
    end = max(_content_end(text, value), key.end_mark.index)
    if root.flow_style:
        if i + 1 < len(root.value):
            return text[: key.start_mark.index] + text[root.value[i + 1][0].start_mark.index :]
        start = _content_end(text, root.value[i - 1][1]) if i else key.start_mark.index
        return text[:start] + text[end:]
    start = text.rfind("\n", 0, key.start_mark.index) + 1
    if text[start : key.start_mark.index].strip():  # something before the key on its line: keep that
        return text[: key.start_mark.index] + text[end:]
    end = _line_end(text, end)
    if end == len(text) and not text.endswith("\n") and start > 0:
        start -= 2 if text[start - 2 : start] == "\r\n" else 1  # the last line loses the break before it
    return text[:start] + text[end:]
