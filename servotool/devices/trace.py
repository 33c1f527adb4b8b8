"""Wire traces: what a client sends and receives, through `logging` at debug level.

Each family logs under `servotool.devices.<family>` (`logger(name)`); nothing is formatted unless a handler
asks for debug records, so a call site guards with `log.isEnabledFor(DEBUG)` and the cost is nil otherwise.
Frames are shown as hex, cut to `HEX_LIMIT` bytes with the full length said.
"""

from __future__ import annotations

import logging
from logging import DEBUG
from typing import Any

ROOT = "servotool.devices"
HEX_LIMIT = 48  # bytes of a frame shown; the rest is counted


def logger(family: str) -> logging.Logger:
    """The trace logger of one family: `servotool.devices.<family>`."""
    return logging.getLogger(f"{ROOT}.{family}")


def short_hex(data: bytes | bytearray | list[int]) -> str:
    """`data` as spaced hex, at most HEX_LIMIT bytes, with the length when it was cut."""
    raw = bytes(data)
    text = raw[:HEX_LIMIT].hex(" ")
    return f"{text} ... ({len(raw)} bytes)" if len(raw) > HEX_LIMIT else text


def frame(log: logging.Logger, direction: str, data: bytes | bytearray | list[int], what: str = "") -> None:
    """One debug record of a frame: `direction` is "tx" or "rx"; `what` names the link (udp, state...)."""
    log.debug("%s%s %s", direction, f" {what}" if what else "", short_hex(data))


def call(log: logging.Logger, method: str, args: tuple[Any, ...]) -> None:
    """One debug record of a remote call with its arguments, before it is sent (a call that fails has no
    `answer` record after it)."""
    log.debug("call %s%r", method, tuple(args))


def answer(log: logging.Logger, method: str, value: Any) -> None:
    """One debug record of what a remote call answered."""
    log.debug("answer %s -> %r", method, value)


__all__ = ["DEBUG", "HEX_LIMIT", "ROOT", "answer", "call", "frame", "logger", "short_hex"]
