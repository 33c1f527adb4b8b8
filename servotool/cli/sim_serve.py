"""What the `servotool sim` commands share: for `hiwonder` and `dynamixel`, their common options, the
key=value parameter parsing and starting a bus simulator with one error line on a bad setting; for all
three, serving until Ctrl-C, SIGTERM or --duration."""

from __future__ import annotations

import signal
import threading
import time
from collections.abc import Callable, Sequence
from typing import Annotated, Protocol, TypeVar

import typer

from servotool.cli.common import err_console, fail
from servotool.devices.registry import DeviceURLError

# the options both bus simulators take, spelled once (each command keeps its own --profile and --param help)
ParamsArgument = Annotated[list[str] | None, typer.Argument(
    help="Parameters as key=value, the same as --param.", show_default=False)]
SeedOption = Annotated[int | None, typer.Option("--seed", help="Random seed: same seed, same behaviour.")]
JsonOption = Annotated[bool, typer.Option("--json", help="Print the pty path and parameters as JSON.")]
DurationOption = Annotated[float | None, typer.Option("--duration", min=0.0, help="Stop after this many "
                                                      "seconds (default: run until Ctrl-C).")]


def sim_params(items: Sequence[str], seed: int | None, example: str, keys: Sequence[str]) -> dict[str, str]:
    """The simulator parameters given as positional arguments and --param (each `key=value`, or several
    joined by `&` as in a URL), the later winning, plus `seed` when given. A part that is not key=value
    ends the command with one error line naming it, `example` and the known `keys` (exit 2)."""
    out: dict[str, str] = {}
    for item in items:
        for part in item.split("&"):
            key, sep, value = part.partition("=")
            if not sep or not key.strip():
                fail(f"--param {part!r}: want key=value (e.g. {example}; keys: {', '.join(keys)})")
            out[key.strip()] = value.strip()
    if seed is not None:
        out["seed"] = str(seed)
    return out


class Closable(Protocol):
    def close(self) -> None: ...


ServerT = TypeVar("ServerT", bound=Closable)


def start_or_fail(start: Callable[[str, dict[str, str]], ServerT], profile: str,
                  params: dict[str, str]) -> ServerT:
    """`start(profile, params)`, or one error line and exit 2 when it refuses the profile (KeyError) or a
    parameter."""
    try:
        return start(profile, params)
    except KeyError as exc:
        fail(str(exc.args[0]))
    except DeviceURLError as exc:
        fail(str(exc))


def serve(close: Callable[[], None], duration: float | None, announce: Callable[[], None],
          poll: Callable[[], None] | None = None) -> None:
    """Announce the simulator, then serve until Ctrl-C, SIGTERM or `duration` seconds, calling `poll` about
    every 0.1 s (to log what the simulator latched); `close` stops the simulator and the previous SIGTERM
    handler is put back however it ends."""
    stop = threading.Event()
    previous = signal.getsignal(signal.SIGTERM)
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    try:
        announce()
        err_console.print("serving; Ctrl-C to stop", style="dim")
        end = None if duration is None else time.monotonic() + duration
        while not stop.is_set() and (end is None or time.monotonic() < end):
            if poll is not None:
                poll()
            stop.wait(0.1 if end is None else max(0.0, min(0.1, end - time.monotonic())))
    except KeyboardInterrupt:
        pass
    finally:
        close()
        signal.signal(signal.SIGTERM, previous)
    err_console.print("simulator stopped", style="dim")
