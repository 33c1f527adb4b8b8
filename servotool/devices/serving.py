"""A family's standalone simulator, as `servotool sim <family>` runs it: the contract of `Family.serve`.

A family whose simulator can serve other programs (a vendor SDK, another servotool process) gives a
`SimServe`: the command's help and own options as plain data, and `start`, which starts the simulator and
returns a `Served` (where it serves, what to show, how to stop it). Pure data but for `start`, which
imports the simulator when called.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class SimOption:
    """An option of the family's own: `--<name, dashes for underscores>`, of `type` (int, float, str), with
    its default, help and bounds. param: a simulator parameter (given with the others, as text, winning
    over --param); else a keyword argument of `start` (an address, a port)."""

    name: str
    type: type
    default: Any
    help: str
    min: float | None = None
    max: float | None = None
    param: bool = False


@dataclass(frozen=True)
class SimEvent:
    """Something the simulator latched while serving: its kind ("fault"), simulator time (s) and text."""

    label: str
    t: float
    text: str


def _no_events() -> list[SimEvent]:
    return []


@dataclass
class Served:
    """A simulator serving. url: how servotool opens it; info: the --json document; profile: the profile it
    simulates; what: what it is ("board"), or the title of `rows` when there are rows (a table of what it
    serves); where: the path or address it is reached at; detail: said after it in parentheses; stop():
    stops it (idempotent); events(): what it latched since the last call."""

    url: str
    info: dict[str, Any]
    profile: str
    what: str
    stop: Callable[[], None]
    where: str = ""
    detail: str = ""
    rows: tuple[tuple[str, str], ...] = ()
    events: Callable[[], list[SimEvent]] = _no_events


@dataclass(frozen=True)
class SimServe:
    """What `servotool sim <family>` is made of.

    start(profile, params, **options) -> Served: the simulator started (I/O), `params` its parameters as
    text, `options` the values of the non-param `options`. Raises ServotoolError (or KeyError for an
    unknown profile) for a setting it refuses, before it serves anything.
    help: the command's help (first line: its summary); default_profile: the --profile default;
    profile_help, param_help (the key list is appended from `Family.sim_params`), json_help: option help;
    example: a key=value example for error lines; options: the family's own options; positional: the
    parameters may also be given as arguments."""

    start: Callable[..., Served]
    help: str
    default_profile: str
    profile_help: str
    param_help: str
    json_help: str
    example: str
    options: tuple[SimOption, ...] = ()
    positional: bool = True


__all__ = ["Served", "SimEvent", "SimOption", "SimServe"]
