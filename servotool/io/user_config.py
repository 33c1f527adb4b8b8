"""The user's config file: default device URLs, output folder and limits file.

A YAML mapping in platformdirs' user config dir (`servotool/config.yaml`), or the file named by
$SERVOTOOL_CONFIG. Each key has an environment variable; a value is looked up as: the option on the command
line, else the environment variable, else the config file, else the command's built-in default.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import platformdirs
import yaml

from servotool.errors import FileFormatError, SettingsError
from servotool.io.atomic import write_atomic
from servotool.io.strict_yaml import (
    TextTooLarge,
    YamlBoundsError,
    brief,
    check_bounds,
    load_unique,
    read_text_limited,
    yaml_problem,
)

CONFIG_ENV = "SERVOTOOL_CONFIG"


@dataclass(frozen=True)
class ConfigKey:
    """One key of the config file: the environment variable that overrides it, the built-in default (None:
    each command has its own, or none, or the caller of `effective` gives it: the device URLs come from the
    device registry, which this layer does not import) and what it means."""

    name: str
    envvar: str
    builtin: str | None
    meaning: str


KEYS: dict[str, ConfigKey] = {
    key.name: key
    for key in (
        ConfigKey("robot", "SERVOTOOL_ROBOT", None, "arm URL for lag and step (--robot)"),
        ConfigKey("bus", "SERVOTOOL_BUS", None, "servo bus URL for sweep, servo and record (--bus)"),
        ConfigKey("out", "SERVOTOOL_OUT", "servotool-runs", "folder for run CSVs (--out)"),
        ConfigKey("limits", "SERVOTOOL_LIMITS", None, "ROS 2 limits YAML for sweep and servo (--limits)"),
    )
}


class UserConfigError(FileFormatError):
    """The config file is not a mapping of known keys to strings, or a key or value given to set is bad."""


@dataclass(frozen=True)
class Effective:
    """The value a key takes and where it comes from: "env", "config", "built-in", "unset", or an env
    variable set but empty (value None: the commands refuse it)."""

    key: str
    value: str | None
    source: str


def config_path(environ: Mapping[str, str] | None = None) -> Path:
    """The config file: $SERVOTOOL_CONFIG when set, else config.yaml in the user config dir (which may not
    exist yet)."""
    env = os.environ if environ is None else environ
    if env.get(CONFIG_ENV):
        return Path(env[CONFIG_ENV])
    return Path(platformdirs.user_config_dir("servotool")) / "config.yaml"


def _read_text(path: Path) -> str | None:
    """The file's text; None when it does not exist."""
    try:
        return read_text_limited(path)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise UserConfigError(f"{path}: cannot read ({exc.strerror or exc})") from exc
    except UnicodeDecodeError as exc:
        raise UserConfigError(f"{path}: not UTF-8 text (byte {exc.start})") from None
    except TextTooLarge as exc:
        raise UserConfigError(str(exc)) from None


def _not_yaml(path: Path, exc: Exception) -> UserConfigError:
    line, problem = yaml_problem(exc)
    return UserConfigError(f"{path}{f':{line}' if line else ''}: not YAML ({problem})")


def _values_of(text: str, path: Path) -> dict[str, str]:
    """The values a config text holds (see load_config for what is refused)."""
    try:
        check_bounds(text, str(path))
    except YamlBoundsError as exc:
        raise UserConfigError(str(exc)) from None
    try:
        data = load_unique(text)
    except yaml.YAMLError as exc:
        raise _not_yaml(path, exc) from exc
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise UserConfigError(f"{path}: expected a mapping of keys ({', '.join(KEYS)}) to values")
    values: dict[str, str] = {}
    for key, value in data.items():
        if key not in KEYS:
            raise UserConfigError(f"{path}: unknown key {key!r} (known: {', '.join(KEYS)})")
        if not isinstance(value, str) or not value:
            raise UserConfigError(f"{path}: {key} must be a non-empty string, not {brief(value)}")
        values[key] = value
    return values


def load_config(path: Path) -> dict[str, str]:
    """The file's values by key; {} when the file does not exist. Refuses unknown keys, a key written twice
    (which one is meant cannot be told), values that are not strings, text that is not a YAML mapping
    of UTF-8 text, and a text nested too deep, with a number too long or aliases that expand too far
    (strict_yaml.check_bounds)."""
    text = _read_text(path)
    return {} if text is None else _values_of(text, path)


def set_value(path: Path, key: str, value: str | None) -> dict[str, str]:
    """Write `key: value` into the file (creating it and its folder), or remove the key when value is None.
    Returns the values now in the file. Only the key's value (or, for unset, its line) changes; a new key is
    a line added at the end: every other character of the file is kept (see io.yaml_edit). The edited text
    is read back before it is written: when it would not hold exactly the other values and this one (an
    alias shared with another key), it is refused and the file left alone. The file is replaced whole (see
    servotool.io.atomic): an interrupted write leaves the old one as it was. Refuses an unknown key, an empty
    value or one with control characters (a newline, a NUL), and a file load_config refuses (untouched)."""
    if key not in KEYS:
        raise SettingsError(f"unknown key {key!r} (known: {', '.join(KEYS)})")
    if value is not None and not value.strip():
        raise SettingsError(f"{key}: the value must not be empty")
    if value is not None and not value.isprintable():
        raise SettingsError(f"{key}: the value must be one line of printable text, not {value!r}")
    text = _read_text(path)
    values = {} if text is None else _values_of(text, path)
    want = dict(values)  # in the file's order: a new key comes last
    if value is None:
        want.pop(key, None)
    else:
        want[key] = value
    if want == values:
        return values  # nothing to change: the file is left as it is (or not created)
    edited = _edited(text or "", key, value, want, path)
    try:
        # whole or not at all: a file cut short would stop every later command
        write_atomic(path, edited)
    except OSError as exc:
        raise UserConfigError(f"{path}: cannot write ({exc.strerror or exc})") from exc
    return want


def _edited(text: str, key: str, value: str | None, want: dict[str, str], path: Path) -> str:
    """The first of yaml_edit.key_edits' candidates that this module reads back as `want`."""
    # ruamel.yaml only here: every command reads this file at start, only set and unset edit it
    from ruamel.yaml import YAMLError as RuamelError

    from servotool.io.yaml_edit import key_edits

    try:
        for candidate in key_edits(text, key, value):
            with contextlib.suppress(UserConfigError):
                if _values_of(candidate, path) == want:
                    return candidate
    except RuamelError as exc:
        raise _not_yaml(path, exc) from exc
    doing = "removed" if value is None else "set"
    raise UserConfigError(
        f"{path}: {key} cannot be {doing} without changing another key (an alias?); edit the file by hand"
    )


def effective(
    values: Mapping[str, str],
    environ: Mapping[str, str] | None = None,
    builtins: Mapping[str, str] | None = None,
) -> list[Effective]:
    """Every key's value when no option is given: the environment variable, else the file's value, else the
    built-in default (`builtins` by key, else the key's own). A variable set but empty is shown as such: the
    commands refuse it."""
    env = os.environ if environ is None else environ
    rows = []
    for key in KEYS.values():
        builtin = (builtins or {}).get(key.name, key.builtin)
        if key.envvar in env and not env[key.envvar].strip():
            rows.append(Effective(key.name, None, f"env {key.envvar} empty: refused"))
        elif env.get(key.envvar):
            rows.append(Effective(key.name, env[key.envvar], "env " + key.envvar))
        elif key.name in values:
            rows.append(Effective(key.name, values[key.name], "config"))
        elif builtin is not None:
            rows.append(Effective(key.name, builtin, "built-in"))
        else:
            rows.append(Effective(key.name, None, "unset"))
    return rows
