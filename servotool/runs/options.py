"""One definition per option: a command's settings dataclass whose fields say what they are to the user.

A settings field made with `option(...)` carries its command-line flag, its campaign key, the campaign
value's kind, its unit, its lower bound and its help. The command's typer options (cli/options.py) and the
campaign file's keys (runs/campaign/plan.py) are derived from these fields; the dataclass's own `problems`
method is the one validator both call. Every such dataclass has a `given` field: the names of the fields the
user set (the rest are defaults), so that an option which would have no effect can be refused.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from typing import Any, TypeVar

_T = TypeVar("_T")


@dataclass(frozen=True)
class Option:
    """What a settings field is to the user. flag: its command-line spelling ("--hold-ms", "--shaped/--raw";
    "" when it is a campaign key only); key: its campaign key ("" when it is a command-line option only);
    invert: the campaign key is the flag's negation (`raw: true` for --raw); kind: the campaign value's type
    ("int", "float", "bool", "str", "floats", "ints", or "joint": an arm joint named J1..Jn, held as its
    0-based index); unit, min and help as the command's --help shows them; old: the flag's former spelling,
    still taken (hidden from --help) with a note, for one release."""

    flag: str
    help: str
    kind: str
    unit: str = ""
    min: float | None = None
    key: str = ""
    invert: bool = False
    old: str = ""


def option(
    default: Any,
    flag: str,
    help: str,
    kind: str,
    *,
    unit: str = "",
    min: float | None = None,
    key: str | None = None,
    invert: bool = False,
    old: str = "",
) -> Any:
    """A dataclass field carrying its Option; its campaign key is the field's name unless `key` says."""
    return field(
        default=default,
        metadata={
            "option": Option(flag, help, kind, unit, min, key or "", invert, old),
            "named": key is None,
        },
    )


def joint_name(index: int) -> str:
    """An arm joint's name as every command and report writes it: J1 for index 0 (the base)."""
    return f"J{index + 1}"


def joint_index(value: object) -> tuple[int, bool]:
    """An arm joint's 0-based index from its name, J1 (or j1) being 0, and whether it was given in the
    former spelling: a plain whole number, read as the 0-based index it used to be (`0` is J1). ValueError
    saying how to name a joint otherwise."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value, True
    text = str(value).strip()
    if text.isascii() and text.isdigit():
        return int(text), True
    if text[:1] in ("J", "j") and text[1:].isascii() and text[1:].isdigit() and int(text[1:]) >= 1:
        return int(text[1:]) - 1, False
    raise ValueError(f"{value!r} names no joint: name arm joints J1 (the base), J2, ...")


def options_of(cls: type) -> dict[str, Option]:
    """Field name -> Option of a settings dataclass, in field order (fields that are no option left out)."""
    return {
        f.name: replace(f.metadata["option"], key=f.name) if f.metadata["named"] else f.metadata["option"]
        for f in fields(cls)
        if "option" in f.metadata
    }


def campaign_keys(cls: type) -> dict[str, str]:
    """Campaign key -> its value kind, derived from the dataclass's Options."""
    return {o.key: o.kind for o in options_of(cls).values() if o.key}


def from_campaign(cls: type[_T], values: Mapping[str, Any]) -> _T:
    """The settings a campaign run's typed options give (keys as campaign_keys); what is left out keeps its
    default, and `given` names the fields the file set."""
    kwargs: dict[str, Any] = {}
    for name, opt in options_of(cls).items():
        if opt.key and opt.key in values:
            value = values[opt.key]
            kwargs[name] = (not value) if opt.invert else value
    return cls(**kwargs, given=frozenset(kwargs))  # type: ignore[call-arg]


__all__ = ["Option", "campaign_keys", "from_campaign", "joint_index", "joint_name", "option", "options_of"]
