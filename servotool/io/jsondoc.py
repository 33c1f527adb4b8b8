"""JSON documents for machines: values made JSON-safe, parts encoded ahead (in another process), one writer.

A part encoded ahead (JsonText) is spliced into the document as it is when the document is compact; an
indented document re-reads it, so both forms hold the same values under the same keys in the same order.
"""

from __future__ import annotations

import contextlib
import json
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["JsonText", "encode", "json_safe", "with_member"]


@dataclass(frozen=True)
class JsonText:
    """One JSON value already encoded (compact, JSON-safe), to be spliced into a document unchanged."""

    text: str


def json_safe(obj: Any) -> Any:
    """obj with numpy scalars as Python numbers, NaN and infinities as None, keys as strings and anything
    else that JSON has no form for (a path, say) as its str; JsonText parts are left as they are."""
    kind = type(obj)
    if kind is float:
        return obj if math.isfinite(obj) else None
    if kind is str or kind is int or kind is bool or obj is None or kind is JsonText:
        return obj
    if kind is dict:
        return {str(k): json_safe(v) for k, v in obj.items()}
    if kind is list or kind is tuple:
        return [json_safe(v) for v in obj]
    return _other(obj)


def _other(obj: Any) -> Any:
    """json_safe of what is not a plain float, str, int, bool, None, dict, list or tuple."""
    if isinstance(obj, Mapping):
        return {str(k): json_safe(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [json_safe(v) for v in obj]
    if hasattr(obj, "item") and callable(obj.item) and not isinstance(obj, (str, bytes)):
        with contextlib.suppress(ValueError, TypeError):
            obj = obj.item()
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    if isinstance(obj, (str, int, float, bool)) or obj is None:
        return obj
    return str(obj)


def compact(obj: Any) -> JsonText:
    """obj (made JSON-safe) encoded ahead, compact."""
    return JsonText(encode(obj))


def with_member(value: Any, key: str, member: Any) -> Any:
    """An object value (a dict or an encoded JSON object) with one more member at its end."""
    if isinstance(value, JsonText):
        extra = json.dumps({key: json_safe(member)}, separators=(",", ":"), allow_nan=False)
        inner = value.text[1:-1]
        return JsonText("{" + inner + ("," if inner else "") + extra[1:])
    return {**value, key: member}


_SLOT = re.compile(r'"\\u0000json:(\d+)\\u0000"')


def encode(obj: Any, indent: int | None = None) -> str:
    """The JSON document of obj (made JSON-safe): compact with indent None, else indented by that many
    spaces. Never writes NaN or Infinity (they are null)."""
    safe = json_safe(obj)
    if indent is not None:
        return json.dumps(safe, indent=indent, allow_nan=False, default=_reread)
    parts: list[str] = []

    def slot(value: Any) -> str:
        if not isinstance(value, JsonText):
            raise TypeError(f"{type(value).__name__} is not JSON-safe")
        parts.append(value.text)
        return f"\0json:{len(parts) - 1}\0"

    text = json.dumps(safe, separators=(",", ":"), allow_nan=False, default=slot)
    if not parts:
        return text
    spliced, n = _SLOT.subn(lambda m: parts[int(m.group(1))], text)
    # a text of the document that reads like a slot (it would hold NUL characters) is not taken for one
    return spliced if n == len(parts) else json.dumps(safe, separators=(",", ":"), default=_reread)


def _reread(value: Any) -> Any:
    if not isinstance(value, JsonText):
        raise TypeError(f"{type(value).__name__} is not JSON-safe")
    return json.loads(value.text)
