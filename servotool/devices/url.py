"""Device URLs, read the one way every family and every command reads them.

A device URL is `scheme://target?key=value&...` for a real device (a host for a network controller, a
device path for a serial bus) or `sim:profile?key=value` for an embedded simulator. Parsing only
splits: which schemes and profiles exist, and what each parameter means, is the family's business
(devices.registry maps a URL to its family).
"""

from __future__ import annotations

import difflib
import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qsl, urlsplit

from servotool.clock import Clock, FakeClock
from servotool.errors import SettingsError

SIM_SCHEME = "sim"
# what a URL looks like, for a text that has no scheme (`servotool --help` lists every family's URLs)
_FORMS = "a device URL is scheme://HOST-OR-PATH or sim:PROFILE; `servotool --help` lists them"


class DeviceURLError(SettingsError):
    """The URL cannot be read, names no known device, or its parameters are malformed (exit 2, before any
    device is opened)."""


class NoSchemeError(DeviceURLError):
    """The text has no scheme (`/dev/ttyUSB0`, `192.168.58.2`): `text` is what was given, so that a command
    can say which URLs of its own kind were meant."""

    def __init__(self, message: str, text: str) -> None:
        super().__init__(message)
        self.text = text


def did_you_mean(key: str, valid: Iterable[str]) -> str:
    """ " (did you mean lag_ms?)" for an unknown URL parameter with a close valid name, else ""."""
    close = difflib.get_close_matches(key, list(valid), n=1, cutoff=0.6)
    return f" (did you mean {close[0]}?)" if close else ""


def guessed(keys: Iterable[str], valid: Iterable[str]) -> str:
    """Unknown URL parameter names for an error line, each followed by the closest valid name where one is
    close (`lag_m` -> "lag_m (did you mean lag_ms?)"), comma-separated."""
    choices = list(valid)
    return ", ".join(key + did_you_mean(key, choices) for key in keys)


@dataclass(frozen=True)
class DeviceURL:
    """A parsed device URL: scheme ("sim" or a family's scheme), target (host, path or profile),
    and the query parameters as strings (each family converts and checks its own)."""

    raw: str
    scheme: str
    target: str
    params: dict[str, str] = field(default_factory=dict)

    @property
    def simulated(self) -> bool:
        return self.scheme == SIM_SCHEME


def _target(scheme: str, netloc: str, path: str) -> str:
    if scheme == SIM_SCHEME:
        return (path or netloc).strip("/")
    if netloc and not path:
        return netloc
    if netloc:
        return netloc + path
    return path


def parse_url(url: str) -> DeviceURL:
    """Split a device URL. Raises DeviceURLError with the reason when it has no scheme, no target, malformed
    parameters, a parameter given twice, or a port written after a host (ports go in the query, one
    parameter per port)."""
    if not url or ":" not in url:
        raise NoSchemeError(f"device URL {url!r} has no scheme ({_FORMS})", url)
    try:
        parts = urlsplit(url)
    except ValueError as exc:
        raise DeviceURLError(f"device URL {url!r} cannot be read ({exc})") from None
    scheme = parts.scheme.lower()
    if not scheme:
        raise NoSchemeError(f"device URL {url!r} has no scheme ({_FORMS})", url)
    target = _target(scheme, parts.netloc, parts.path)
    try:
        pairs = parse_qsl(parts.query, keep_blank_values=True, strict_parsing=bool(parts.query))
    except ValueError as exc:
        raise DeviceURLError(f"device URL {url!r}: malformed parameters ({exc})") from None
    params = dict(pairs)
    if len(params) < len(pairs):  # a key given twice: refused, not "the last one wins"
        twice = sorted({k for k, _ in pairs if sum(1 for j, _ in pairs if j == k) > 1})
        raise DeviceURLError(f"device URL {url!r}: {', '.join(twice)} given more than once")
    if not target:
        raise DeviceURLError(f"device URL {url!r} names no host, port or profile")
    if scheme != SIM_SCHEME and parts.netloc and ":" in parts.netloc.rsplit("]", 1)[-1]:
        raise DeviceURLError(
            f"device URL {url!r}: put ports in the query "
            "(e.g. ?rpc_port=20003&cnde_port=20005&udp_port=20007), not after the host"
        )
    return DeviceURL(raw=url, scheme=scheme, target=target, params=params)


def url_flag(text: str, *, blank: bool | None = None) -> bool:
    """A simulator URL parameter read as a boolean, the same words for every family: 1/true/yes/on or
    0/false/no/off (any case, spaces trimmed). An empty value (`key=`) is `blank` where the family gives it a
    meaning; ValueError otherwise, and for any other word."""
    low = text.strip().lower()
    if low in ("1", "true", "yes", "on") or (low == "" and blank is True):
        return True
    if low in ("0", "false", "no", "off") or (low == "" and blank is False):
        return False
    raise ValueError(f"not a boolean: {text!r} (want 1/0, true/false, yes/no or on/off)")


def _url_clock(params: dict[str, str], url: str) -> FakeClock | None:
    """Takes a simulator URL's `clock` key out of `params`: `clock=sim` gives a new FakeClock, `clock=host`
    (the default) None. DeviceURLError for any other value."""
    value = params.pop("clock", "host")
    if value not in ("host", "sim"):
        raise DeviceURLError(
            f"device URL {url!r}: clock={value!r}: want clock=host (real time) or clock=sim (simulated time)"
        )
    return FakeClock() if value == "sim" else None


def asks_simulated_time(url: str) -> bool:
    """Whether the URL asks for a simulator on simulated time (`clock=sim`); False for a URL that cannot be
    read (opening it reports why)."""
    try:
        return parse_url(url).params.get("clock") == "sim"
    except DeviceURLError:
        return False


def sim_clock(params: dict[str, str], url: str, given: Clock | None) -> Clock | None:
    """The time base of a simulator opened from a `sim:` URL, the same rule for every family. Consumes
    `clock` from params.

    * The caller's FakeClock (`given`): the simulator and the client go in lock-step on it, whatever the
      URL's `clock` says.
    * `clock=sim` and no caller clock: a new FakeClock (lock-step, taking no wall-clock time for waits).
    * `clock=sim` and a caller clock that is not a FakeClock: DeviceURLError, as the two would disagree
      silently.
    * Otherwise the caller's clock (real time, stamped by it), or None (real time, the host's clock).

    DeviceURLError for a `clock` value other than host or sim."""
    own = _url_clock(params, url)
    if given is None:
        return own
    if own is not None and not isinstance(given, FakeClock):
        raise DeviceURLError(
            f"device URL {url!r}: clock=sim asks for simulated time, but this command keeps the host's clock"
        )
    return given


__all__ = [
    "SIM_SCHEME",
    "DeviceURL",
    "DeviceURLError",
    "NoSchemeError",
    "asks_simulated_time",
    "parse_url",
    "plain",
    "sim_clock",
    "did_you_mean",
    "guessed",
    "url_flag",
]


def plain(raw: str) -> str:
    """`raw` when it is written in plain ASCII (ValueError otherwise): int() and float() also read `1_0` as
    10 and the digits of other scripts, which the command line refuses."""
    if not raw.isascii() or "_" in raw:
        raise ValueError(f"not a plain ASCII number: {raw!r}")
    return raw


def bounded(
    lo: float, hi: float, unit: str = "", scale: float = 1.0, integer: bool = False
) -> Callable[[str], Any]:
    """A URL parameter converter that refuses (ValueError "want ... within lo..hi") a value that is not a
    finite number within lo..hi written in plain ASCII decimal, or not a whole number when `integer`; the
    value is returned times `scale` (ms to s), or as an int when `integer`. A NaN or infinite bound on a
    wait would make it wait forever."""

    def convert(raw: str) -> Any:
        try:
            value = float(int(plain(raw))) if integer else float(plain(raw))
        except ValueError:
            value = math.nan
        if not (math.isfinite(value) and lo <= value <= hi):
            raise ValueError(f"want {'an integer' if integer else 'a number'} within {lo:g}..{hi:g}{unit}")
        return int(value) if integer else value * scale

    return convert
