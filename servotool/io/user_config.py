"""The user's config file: default device URLs, output folder and limits file.

A YAML mapping in platformdirs' user config dir (`servotool/config.yaml`), or the file named by
$SERVOTOOL_CONFIG. Each key has an environment variable; a value is looked up as: the option on the command
line, else the environment variable, else the config file, else the command's built-in default.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import platformdirs
import yaml

from servotool.errors import FileFormatError, SettingsError
from servotool.io.atomic import write_atomic
from servotool.io.strict_yaml import TextTooLarge, brief, load_unique, read_text_limited, yaml_problem

CONFIG_ENV = "SERVOTOOL_CONFIG"


@dataclass(frozen=True)
class ConfigKey:
    """One key of the config file: the environment variable that overrides it, the built-in default (None:
    each command has its own, or none) and what it means."""

    name: str
    envvar: str
    builtin: str | None
    meaning: str


KEYS: dict[str, ConfigKey] = {
    key.name: key
    for key in (
        ConfigKey("robot", "SERVOTOOL_ROBOT", "sim:fr3", "arm URL for lag and step (--robot)"),
        ConfigKey("bus", "SERVOTOOL_BUS", "sim:rosorin-arm", "servo bus URL for sweep and servo (--bus)"),
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


def load_config(path: Path) -> dict[str, str]:
    """The file's values by key; {} when the file does not exist. Refuses unknown keys, a key written twice
    (which one is meant cannot be told), values that are not strings, and text that is not a YAML mapping
    of UTF-8 text."""
    try:
        text = read_text_limited(path)
    except FileNotFoundError:
        return {}
    except OSError as exc:
        raise UserConfigError(f"{path}: cannot read ({exc.strerror or exc})") from exc
    except UnicodeDecodeError as exc:
        raise UserConfigError(f"{path}: not UTF-8 text (byte {exc.start})") from None
    except TextTooLarge as exc:
        raise UserConfigError(str(exc)) from None
    try:
        data = load_unique(text)
    except yaml.YAMLError as exc:
        line, problem = yaml_problem(exc)
        raise UserConfigError(f"{path}{f':{line}' if line else ''}: not YAML ({problem})") from exc
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


def set_value(path: Path, key: str, value: str | None) -> dict[str, str]:
    """Write `key: value` into the file (creating it and its folder), or remove the key when value is None;
    the other keys are kept. Returns the values now in the file. The file is replaced whole (see
    servotool.io.atomic): an interrupted write leaves the old one as it was. Refuses an unknown key, and an
    empty value or one with control characters (a newline, a NUL)."""
    if key not in KEYS:
        raise SettingsError(f"unknown key {key!r} (known: {', '.join(KEYS)})")
    if value is not None and not value.strip():
        raise SettingsError(f"{key}: the value must not be empty")
    if value is not None and not value.isprintable():
        raise SettingsError(f"{key}: the value must be one line of printable text, not {value!r}")
    values = load_config(path)
    if value is None:
        values.pop(key, None)
    else:
        values[key] = value
    try:
        # whole or not at all: a file cut short would stop every later command
        write_atomic(path, yaml.safe_dump(values, sort_keys=True))
    except OSError as exc:
        raise UserConfigError(f"{path}: cannot write ({exc.strerror or exc})") from exc
    return values


def effective(values: Mapping[str, str], environ: Mapping[str, str] | None = None) -> list[Effective]:
    """Every key's value when no option is given: the environment variable, else the file's value, else the
    built-in default. A variable set but empty is shown as such: the commands refuse it."""
    env = os.environ if environ is None else environ
    rows = []
    for key in KEYS.values():
        if key.envvar in env and not env[key.envvar].strip():
            rows.append(Effective(key.name, None, f"env {key.envvar} empty: refused"))
        elif env.get(key.envvar):
            rows.append(Effective(key.name, env[key.envvar], "env " + key.envvar))
        elif key.name in values:
            rows.append(Effective(key.name, values[key.name], "config"))
        elif key.builtin is not None:
            rows.append(Effective(key.name, key.builtin, "built-in"))
        else:
            rows.append(Effective(key.name, None, "unset"))
    return rows
