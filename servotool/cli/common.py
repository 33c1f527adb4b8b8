"""Shared rendering helpers for the commands: one console, one-line errors, JSON output."""

from __future__ import annotations

import contextlib
import errno
import os
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated, Any, NoReturn

import typer
from rich.console import Console
from rich.markup import escape
from rich.panel import Panel
from rich.table import Table

from servotool.errors import signal_label as signal_label  # its home is errors; kept importable here too
from servotool.io.jsondoc import encode

if TYPE_CHECKING:
    from servotool.runs.plan import MotionPlan


@dataclass
class Output:
    """How much the commands say, set by the root options: `quiet` (-q) leaves out tables, panels and progress
    bars (verdict lines, JSON and errors stay); `verbose` (-v) adds debug details, such as the cause behind an
    error line and the config file read."""

    quiet: bool = False
    verbose: bool = False


OUTPUT = Output()


def _silence(stream: Any) -> None:
    """Point a stream whose reader went away at /dev/null: what is still buffered, and the final flush, go
    nowhere instead of failing again."""
    with contextlib.suppress(OSError, ValueError, AttributeError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        try:
            os.dup2(devnull, stream.fileno())
        finally:
            os.close(devnull)


class _PipeSafe(Console):
    """A console that a reader going away (`servotool step 2>&1 | head -1`) or a terminal hanging up (its
    window closed, an ssh link dropped: EIO) silences, and nothing more."""

    def _write_buffer(self) -> None:
        try:
            super()._write_buffer()
        except OSError as exc:
            if exc.errno != errno.EIO:
                raise  # EPIPE is rich's own case: it calls on_broken_pipe
            self.on_broken_pipe()

    def on_broken_pipe(self) -> None:
        """Print nothing more on this stream, and go on: a run reaches its own end (braked stop, end line,
        the campaign's record of it) and exit code. Rich's own raises SystemExit(1) from inside whatever
        was printing, a run or a campaign between two runs included."""
        self.quiet = True
        _silence(self.file)


class _Console(_PipeSafe):
    """A console that drops tables and panels under --quiet."""

    def print(self, *objects: Any, **kwargs: Any) -> None:
        if OUTPUT.quiet and any(isinstance(o, (Table, Panel)) for o in objects):
            return
        super().print(*objects, **kwargs)


# user text (paths, URLs like bogus:x:) must print as typed: no emoji codes, markup escaped where echoed
console = _Console(emoji=False)
err_console = _PipeSafe(stderr=True, emoji=False)


def debug(message: str) -> None:
    """A dim line on stderr under --verbose only."""
    if OUTPUT.verbose:
        err_console.print(f"[dim]debug: {escape(message)}[/]", highlight=False, soft_wrap=True)


def fail(message: str, code: int = 2) -> NoReturn:
    """Print one clear error line on stderr and exit non-zero (never a traceback; under --verbose, the
    exception being handled, if any, is shown first)."""
    if OUTPUT.verbose and sys.exc_info()[0] is not None:
        err_console.print_exception()
    err_console.print(f"[bold red]error:[/] {escape(message)}", highlight=False, soft_wrap=True)
    raise typer.Exit(code)


def renamed(old: str, new: str) -> None:
    """Say on stderr, in one line, that an option was given in its old spelling (still taken, for one
    release): the command goes on with the new one's meaning."""
    err_console.print(
        f"[yellow]note:[/] {escape(old)} is deprecated: use {escape(new)} (the old spelling goes in the next "
        "release)",
        highlight=False,
        soft_wrap=True,
    )


def plain_number(text: str) -> bool:
    """Whether a number given as text is written in plain ASCII (float() also takes `1_0` as 10 and the
    digits of other scripts, which a typed option refuses)."""
    return text.isascii() and "_" not in text


def print_json(data: Any) -> None:
    """Write one JSON document to stdout (machine output: nothing else goes to stdout with --json):
    indented on a terminal, compact otherwise (a pipe or a file), the same values either way."""
    pretty = sys.stdout.isatty()
    try:
        sys.stdout.write(encode(data, indent=2 if pretty else None) + "\n")
        sys.stdout.flush()
    except BrokenPipeError:  # the reader went away: the command still ends with its own exit code
        _silence(sys.stdout)


def refuse(problems: Sequence[str], code: int = 2) -> NoReturn:
    """Print every problem (a line of it) as its own `error: refused:` line on stderr and exit (2: refused
    before anything moved)."""
    for problem in problems:
        for line in str(problem).splitlines():
            err_console.print(f"[bold red]error:[/] refused: {escape(line)}", highlight=False, soft_wrap=True)
    raise typer.Exit(code)


@contextmanager
def user_errors(*types: type[BaseException]) -> Iterator[None]:
    """Turn the listed exception types into one error line and exit code 2."""
    try:
        yield
    except types as exc:
        fail(str(exc))


def given(ctx: typer.Context, name: str) -> bool:
    """Whether the command's option `name` (its parameter name) came from the command line or the
    environment rather than its default: an option that would have no effect is refused, not ignored."""
    source = ctx.get_parameter_source(name)
    return source is not None and source.name in ("COMMANDLINE", "ENVIRONMENT")


def announce_device(url: str, simulated: bool, model: str = "") -> None:
    """Say loudly when the device is a simulator, so nobody mistakes a rehearsal for a measurement."""
    if simulated:
        err_console.print(
            f"[bold yellow]SIMULATED {model or url}[/] ({url})", highlight=False, soft_wrap=True
        )
    else:
        err_console.print(f"[bold]device[/] {url}", highlight=False, soft_wrap=True)


DryRunOpt = Annotated[
    bool,
    typer.Option(
        "--dry-run",
        help="Print the plan (joints, motion, speeds, estimated duration) and exit 0: nothing is opened, "
        "nothing moves. The settings are checked as for a run.",
    ),
]


def show_plan(plan: MotionPlan, url: str, *, dry_run: bool, json_out: bool) -> None:
    """Under --dry-run: the plan on stdout (or as JSON) and exit 0, before any device opens; nothing
    otherwise (the run says its estimate once the device is open: say_estimate)."""
    if dry_run:
        if json_out:
            print_json({"dry_run": True, "device": url, "plan": plan.to_dict()})
        else:
            for line in plan.lines():
                console.print(escape(line), highlight=False, soft_wrap=True)
            done = f"dry run: {escape(url)} was not opened; nothing moved"
            console.print(done, highlight=False, soft_wrap=True)
        raise typer.Exit(0)


def say_estimate(plan: MotionPlan) -> None:
    """The run's estimated duration on stderr, one line, before it starts (left out with -q)."""
    if not OUTPUT.quiet:
        err_console.print(f"[dim]{escape(plan.what)}: {plan.estimate()}[/]", highlight=False, soft_wrap=True)
