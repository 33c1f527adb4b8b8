"""Command-line options derived from a settings dataclass (runs/arm/settings.py: one definition per option).

`derive_options(cls)` gives a command one typer option per field of `cls` that has a command-line flag: the
flag, the default, the help (with its unit) and the lower bound all come from the field's Option. The
command takes them as `**options` and turns them back into `cls` with `settings_from`, which also records
which of them the user gave (the validator refuses an option that would have no effect).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from dataclasses import fields
from enum import Enum
from typing import Any, TypeVar

import typer

from servotool.cli.common import fail, given, renamed
from servotool.runs.options import Option, joint_index, joint_name, options_of

F = TypeVar("F", bound=Callable[..., Any])
T = TypeVar("T")

_TYPES: dict[str, Any] = {
    "int": int,
    "float": float,
    "bool": bool,
    "str": str,
    "floats": str,
    "ints": int,
    "joint": str,
}
_OLD = "old_"  # the parameter name of an option's former spelling: old_<field>


def _default(cls: type, name: str) -> Any:
    return next(f.default for f in fields(cls) if f.name == name)


def _parameter(cls: type, name: str, opt: Option, choices: Mapping[str, type[Enum]]) -> inspect.Parameter:
    default = _default(cls, name)
    annotation: Any = _TYPES[opt.kind]
    if name in choices:
        annotation, default = choices[name], choices[name](default)
    elif opt.kind == "floats":
        default = ",".join(f"{v:g}" for v in default)
    elif opt.kind == "joint":
        default = joint_name(default)
    elif opt.kind == "ints":  # a repeated option: none given is the dataclass's default
        annotation, default = list[int] | None, None
    elif default is None:
        annotation = annotation | None
    extra: dict[str, Any] = {"min": opt.min} if opt.min is not None else {}
    if name in choices:
        extra["case_sensitive"] = False
    info = typer.Option(default, opt.flag, help=opt.help, **extra)
    return inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=info, annotation=annotation)


def _old_parameter(name: str, opt: Option) -> inspect.Parameter:
    """The option's former spelling: hidden from --help, None unless given (settings_from says so)."""
    annotation: Any = list[int] | None if opt.kind == "ints" else _TYPES[opt.kind] | None
    info = typer.Option(None, opt.old, hidden=True)
    return inspect.Parameter(_OLD + name, inspect.Parameter.KEYWORD_ONLY, default=info, annotation=annotation)


def _derived(cls: type, choices: Mapping[str, type[Enum]]) -> list[inspect.Parameter]:
    out = []
    for name, opt in options_of(cls).items():
        if opt.flag:
            out.append(_parameter(cls, name, opt, choices))
        if opt.flag and opt.old:
            out.append(_old_parameter(name, opt))
    return out


def derive_options(
    cls: type, *, after: str, choices: Mapping[str, type[Enum]] | None = None
) -> Callable[[F], F]:
    """Give the decorated command (which takes `**options`) every command-line option of `cls`, placed after
    its parameter `after` in --help. choices: fields whose values are an Enum's (typer's choice list)."""

    def decorate(fn: F) -> F:
        own = inspect.signature(fn, eval_str=True).parameters.values()
        derived = _derived(cls, choices or {})
        params: list[inspect.Parameter] = []
        for p in own:
            if p.kind == inspect.Parameter.VAR_KEYWORD:
                continue
            keyword = p.replace(kind=inspect.Parameter.KEYWORD_ONLY)
            params.append(p if p.annotation is typer.Context else keyword)
            if p.name == after:
                params += derived
        fn.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]
        return fn

    return decorate


def _joint(flag: str, text: str) -> int:
    """An arm joint option's 0-based index from its J-name; the former 0-based number is taken with a note,
    anything else is one error line and exit 2."""
    try:
        index, old = joint_index(text)
    except ValueError as exc:
        fail(f"{flag} {exc}")
    if old:
        renamed(f"{flag} {text} (a 0-based index)", f"{flag} {joint_name(index)}")
    return index


def settings_from(cls: type[T], ctx: typer.Context, options: Mapping[str, Any]) -> T:
    """`cls` from a command's derived options (Enum values as their strings, joints by index), with `given`
    naming the options that came from the command line or the environment. An option given in its former
    spelling counts as given, with a note on stderr; given in both spellings, the new one wins."""
    opts = options_of(cls)
    current = {k: v for k, v in options.items() if not k.startswith(_OLD)}
    also_given = set()
    for k, v in options.items():
        name = k[len(_OLD) :]
        if k.startswith(_OLD) and v not in (None, []):
            renamed(opts[name].old, opts[name].flag.split("/")[0])
            also_given.add(name)
            if not given(ctx, name):
                current[name] = v
    values: dict[str, Any] = {
        k: (v.value if isinstance(v, Enum) else tuple(v) if isinstance(v, list) else v)
        for k, v in current.items()
        if not (v is None and isinstance(_default(cls, k), tuple))
    }
    for k, opt in opts.items():
        if opt.kind == "joint" and isinstance(values.get(k), str):
            values[k] = _joint(opt.flag, values[k])
    named = frozenset(k for k in values if given(ctx, k) or k in also_given)
    return cls(**values, given=named)  # type: ignore[call-arg]
