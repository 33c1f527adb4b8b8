"""The `servotool` command: a thin typer front end over runs/ and analysis/.

The commands are loaded on first use: `servotool --help` lists them from the summaries below without
importing scipy, pandas or matplotlib, which only the commands that compute or plot need. A test checks
that each summary is the first line its command's own help shows.
"""

from __future__ import annotations

import importlib
import inspect
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, NoReturn, get_args

import typer
from typer import _click as click  # the click typer is built on (typer carries its own copy)
from typer.core import TyperCommand, TyperGroup

from servotool import full_version
from servotool.cli.common import OUTPUT
from servotool.devices.registry import ARM, DEFAULT_ARM_URL, DEFAULT_BUS_URL, FAMILIES

HELP_OPTION_NAMES = ["-h", "--help"]
# help texts name devices by the registry's URLs, never by a family
_BUS_PROFILE = DEFAULT_BUS_URL.partition(":")[2]
_ARM_HOST_URL = next(f"{fam.schemes[0]}://HOST" for fam in FAMILIES if fam.kind == ARM and fam.schemes)


@dataclass(frozen=True)
class LazyCommand:
    """One command of the tool: where it lives, and the one line `servotool --help` shows for it."""

    name: str
    module: str
    attr: str
    summary: str
    help: str | None = None  # replaces the sub-app's own help text, when set


COMMANDS: tuple[LazyCommand, ...] = (
    LazyCommand(
        "lag",
        "servotool.cli.lag",
        "lag",
        "Measure the commanded-to-measured lag L with smooth out-and-back passes at several speeds.",
    ),
    LazyCommand(
        "step",
        "servotool.cli.step",
        "step",
        "Step one joint through +X, 0, -X, 0 and report each step's response, rejects, faults and runaway.",
    ),
    LazyCommand(
        "analyze",
        "servotool.cli.analyze",
        "analyze",
        "Recognise each run from its header (ramp, step or sweep) and recompute what the live "
        "command reported.",
    ),
    LazyCommand(
        "shape",
        "servotool.cli.shape",
        "shape",
        "Replay a recorded run's raw targets through a shaper, offline: what would the wire have carried?",
    ),
    LazyCommand(
        "sweep",
        "servotool.cli.sweep",
        "sweep",
        "Map joint limits by slow sweeps toward each servo's stored limit; any key stops and holds the arm.",
    ),
    LazyCommand(
        "record",
        "servotool.cli.record",
        "record",
        "Watch a servo bus (or an arm) at ~30 Hz and keep the lead-up of every hardware-error latch.",
    ),
    LazyCommand(
        "ports",
        "servotool.cli.ports",
        "ports",
        "List serial ports and say which servo bus family answers on each.",
    ),
    LazyCommand(
        "version",
        "servotool.cli.version",
        "version",
        "Print servotool's version, Python's, and the versions of its key dependencies.",
    ),
    LazyCommand(
        "incidents",
        "servotool.cli.incidents",
        "incidents_app",
        "List, show and plot the flight recorder's captures (default folder: the XDG state dir's "
        "servotool/captures).",
    ),
    LazyCommand(
        "servo",
        "servotool.cli.servo",
        "servo_app",
        "Read, move, hold and relax the servos of a bus-servo arm (default: the simulated "
        f"{_BUS_PROFILE}, which keeps its pose from one command to the next).",
    ),
    LazyCommand(
        "campaign",
        "servotool.cli.campaign",
        "campaign_app",
        "Measurement campaigns as files: a device, safety rules and a series of runs, checked "
        "before anything moves, run in one go, reported in one folder.",
    ),
    LazyCommand(
        "sim",
        "servotool.cli.sim",
        "sim_app",
        "Run a device simulator standalone for other programs and SDKs.",
        help="Run a device simulator standalone for other programs and SDKs.",
    ),
    LazyCommand(
        "config",
        "servotool.cli.config",
        "config_app",
        "Show and set the defaults commands use when an option is not given (the user config file).",
    ),
)

EPILOG = (
    "Exit codes: 0 done; 1 fault, guard trip or internal error (or the failure a command's -h names); "
    "2 usage error or refused before anything moved; "
    "3 device unreachable or lost; 129/130/131/143 hangup, Ctrl-C, Ctrl-\\ (SIGQUIT), SIGTERM. "
    "Defaults of --robot, --bus, --out and --limits: `servotool config`."
)


# what a text or path option takes, by its parameter's name: the type alone (`<str>`, `<path>`) does not say
_NAMED_METAVARS = {
    "robot": "URL",
    "bus": "URL",
    "url": "URL",
    "speeds": "LIST",
    "joint": "JOINT",
    "joints": "ID",
    "to": "POSE|LIST",
    "goals": "POSE|LIST",
    "ports": "PATH",
    "file": "FILE",
    "paths": "PATH",
    "ref": "CAPTURE",
    "value": "VALUE",
    "param": "KEY=VALUE",
    "params": "KEY=VALUE",
    "port": "PATH",
    "host": "HOST",
    "out": "FOLDER",
    "dest": "FOLDER",
    "plot_dir": "FOLDER",
    "limits": "FILE",
    "table": "FILE",
    "trace": "FILE",
}
_TYPE_METAVARS = {"int": "INT", "float": "NUMBER", "str": "TEXT", "path": "PATH"}


def tidy_metavars(command: Any, ctx: click.Context) -> None:
    """Give every parameter of `command` and the commands under it a metavar that says what it takes (URL,
    LIST, FILE, FOLDER, INT, NUMBER; a choice keeps its list), drop the type label of flags (`--json
    <bool>`), move a number's range from the type column into its help (the column then leaves room for
    the help at 80 columns) and unwrap the help text."""
    params = list(command.params)
    help_option = command.get_help_option(ctx)
    if help_option is not None:
        params.append(help_option)
    for param in params:
        if getattr(param, "is_flag", False):
            param.metavar = ""
            continue
        _tidy_range(param)
        label = _metavar(param, ctx)
        if label is None:
            continue
        if param.param_type_name == "option":
            param.metavar = label
        else:  # an argument's metavar would rename it: only its type column changes
            param.display_type_rich = _fixed_label(label)
    command.help = unwrap_help(command.help)
    for sub in getattr(command, "commands", {}).values():
        tidy_metavars(sub, ctx)


def _metavar(param: Any, ctx: click.Context) -> str | None:
    """What `param` takes, in capitals; None to keep what it shows (a metavar of its own, a choice)."""
    if param.metavar is not None or getattr(param, "tidied_metavar", False):
        return None
    param.tidied_metavar = True
    display = getattr(param, "display_type", None)
    label = display(ctx) if display is not None else ""
    if label.startswith("<list[") and label.endswith("]>"):
        label = f"<{label[6:-2]}>"  # a repeatable option shows the one value it takes
    if param.name in _NAMED_METAVARS:
        return _NAMED_METAVARS[param.name]
    if label.lower() == "<path>":
        info = param.type_descriptor.parameter_info
        return "FOLDER" if not info.file_okay else "FILE" if not info.dir_okay else "PATH"
    for name, metavar in _TYPE_METAVARS.items():
        if label.startswith(f"<{name}"):
            return metavar
    return label.strip("<>") or None  # a choice: its values, as a|b


def _tidy_range(param: Any) -> None:
    """A number option's range, said in its help (`[range: 0<=x<=200]`) rather than beside its metavar."""
    describe = getattr(param, "_get_number_range_help_str", None)
    if getattr(param, "tidied_range", False) or describe is None:
        return
    param.tidied_range = True
    text = describe()
    if text and isinstance(getattr(param, "help", None), str):
        param.help = f"{param.help} \\[range: {text}]"

    def no_range() -> str | None:
        return None

    param._get_number_range_help_str = no_range


def attach_examples(command: Any, path: str) -> None:
    """Close the help of `command` (at `path`, the words after `servotool`) and of every command under it
    with its Examples and the glossary terms its output uses (servotool/cli/examples.py)."""
    from servotool.cli.examples import epilog_of

    command.epilog = epilog_of(path) or command.epilog
    for name, sub in getattr(command, "commands", {}).items():
        attach_examples(sub, f"{path} {name}")


def unwrap_help(text: str | None) -> str | None:
    """A help text with the docstring's line breaks inside each paragraph taken out, so the terminal
    folds it to its width (typer keeps single line breaks, which leaves ragged lines at 80 columns).
    Paragraphs (blank-line separated) and click's `\\b` verbatim blocks are kept as written."""
    if not text:
        return text
    paragraphs = inspect.cleandoc(text).split("\n\n")
    return "\n\n".join(p if p.startswith("\b") else " ".join(p.split("\n")) for p in paragraphs)


def _fixed_label(label: str) -> Callable[[click.Context], str]:
    def display(ctx: click.Context) -> str:
        return label

    return display


def _interrupted(exc: KeyboardInterrupt) -> NoReturn:
    """One line naming the signal, and its exit code (130, 143, 129)."""
    from servotool.cli.common import fail
    from servotool.errors import exit_code_of, signal_label

    fail(f"interrupted by {signal_label(exc)}", exit_code_of(exc))


class LazyGroup(TyperGroup):
    """The root group: imports a command's module when the command is run or its help is asked for,
    and lists every command from its summary alone."""

    _listing = False
    _tidied: frozenset[str] = frozenset()

    def list_commands(self, ctx: click.Context) -> list[str]:
        names = [entry.name for entry in COMMANDS]
        return names + [name for name in self.commands if name not in names]

    def get_command(self, ctx: click.Context, cmd_name: str) -> Any:
        if cmd_name in self.commands:
            if cmd_name not in self._tidied:
                tidy_metavars(self.commands[cmd_name], ctx)
                attach_examples(self.commands[cmd_name], cmd_name)
                self._tidied = self._tidied | {cmd_name}
            return self.commands[cmd_name]
        entry = next((e for e in COMMANDS if e.name == cmd_name), None)
        if entry is None:
            return None
        if self._listing:
            return TyperCommand(name=entry.name, help=entry.summary)
        self.commands[cmd_name] = load_command(entry)
        return self.get_command(ctx, cmd_name)

    def make_context(
        self, info_name: str | None, args: list[str], parent: click.Context | None = None, **extra: Any
    ) -> click.Context:
        """The root context, the command line parsed; a signal meanwhile is one line and its own exit code
        (typer made it a silent 130 here)."""
        try:
            return super().make_context(info_name, args, parent=parent, **extra)
        except KeyboardInterrupt as exc:
            _interrupted(exc)

    def invoke(self, ctx: click.Context) -> Any:
        """Run the command; Ctrl-C, SIGTERM or SIGHUP that no command handled itself (its plain work: a file
        checked, a listing) ends it with one line and 130, 143 or 129 (typer made every one a silent 130)."""
        try:
            return super().invoke(ctx)
        except KeyboardInterrupt as exc:
            _interrupted(exc)

    def format_help(self, ctx: click.Context, formatter: Any) -> None:
        tidy_metavars(self, ctx)
        if self.epilog == EPILOG:
            from servotool.cli.examples import epilog_of

            self.epilog = f"{epilog_of('')}\n\n{EPILOG}"
        self._listing = True
        try:
            super().format_help(ctx, formatter)
        finally:
            self._listing = False

    def shell_complete(self, ctx: click.Context, incomplete: str) -> list[Any]:
        self._listing = True
        try:
            return super().shell_complete(ctx, incomplete)
        finally:
            self._listing = False


def load_command(entry: LazyCommand) -> Any:
    """Import the command's module and build its click command as `app.command`/`app.add_typer` would."""
    target = getattr(importlib.import_module(entry.module), entry.attr)
    holder = typer.Typer(rich_markup_mode="rich", add_completion=False)
    holder.callback()(_no_op)  # a callback keeps the holder a group whatever it holds
    if isinstance(target, typer.Typer):
        holder.add_typer(target, name=entry.name, help=entry.help or typer.models.Default(None))
    else:
        holder.command(entry.name)(target)
    command = typer.main.get_command(holder).commands[entry.name]  # type: ignore[attr-defined]
    refuse_flag_conflicts(command)
    refuse_empty_paths(command)
    refuse_empty_envvars(command)
    refuse_odd_numbers(command)
    return command


def _names_number(annotation: Any) -> bool:
    """True for int, float, float | None, list[int] and the like (bool is no number here)."""
    return annotation in (int, float) or any(_names_number(arg) for arg in get_args(annotation))


def refuse_odd_numbers(command: Any) -> None:
    """Make a number option of `command` (and the commands under it) written other than in plain ASCII
    decimal a usage error (exit 2), before the command runs: the parser reads `1_0` as 10 (where 1.0 may
    have been meant) and refuses `١٠` in one option while Python's float() takes it in another."""
    for param in _every_param(command):
        desc = getattr(param, "type_descriptor", None)
        if desc is not None and desc.annotation is not bool and _names_number(desc.annotation):
            _refuse_odd_number(param)


def _refuse_odd_number(param: Any) -> None:
    from servotool.cli.common import plain_number

    process = param.process_value

    def checked(ctx: click.Context, value: Any) -> Any:
        values = value if isinstance(value, (list, tuple)) else (value,)
        for v in values:
            if isinstance(v, str) and not plain_number(v):
                raise click.exceptions.BadParameter(
                    f"{v!r}: write numbers in plain decimal (ASCII digits, no '_')", ctx=ctx, param=param
                )
        return process(ctx, value)

    param.process_value = checked


def refuse_empty_envvars(command: Any) -> None:
    """Make an environment variable an option reads (SERVOTOOL_ROBOT, SERVOTOOL_BUS, SERVOTOOL_LIMITS,
    SERVOTOOL_OUT) that is set but empty a usage error (exit 2) when the option is not given, before the
    command runs: click reads an empty variable as unset, so `SERVOTOOL_ROBOT=` fell through to the config
    file's arm, or to the default, and `SERVOTOOL_LIMITS=` meant no limits file without a word."""
    for param in _every_param(command):
        if isinstance(getattr(param, "envvar", None), str):
            _refuse_empty_envvar(param)


def _every_param(command: Any) -> Iterator[Any]:
    """The parameters of `command` and of every command under it."""
    yield from command.params
    for sub in getattr(command, "commands", {}).values():
        yield from _every_param(sub)


def _refuse_empty_envvar(param: Any) -> None:
    process = param.process_value

    def checked(ctx: click.Context, value: Any) -> Any:
        given = ctx.get_parameter_source(param.name) is click.core.ParameterSource.COMMANDLINE
        raw = os.environ.get(param.envvar)
        if not given and raw is not None and not raw.strip():
            raise click.exceptions.BadParameter(
                "set but empty: unset it or give it a value", ctx=ctx, param=param
            )
        return process(ctx, value)

    param.process_value = checked


def _names_path(annotation: Any) -> bool:
    """True for Path, Path | None, list[Path] and the like."""
    return annotation is Path or any(_names_path(arg) for arg in get_args(annotation))


def refuse_empty_paths(command: Any) -> None:
    """Make an empty value ('') of every path option and argument of `command` and the commands under it a
    usage error (exit 2), before the command runs: Path('') is '.', so `--out ''` meant the current folder
    and `analyze ''` analysed it. Found by the parameter's type, so a new path option is covered too."""
    for param in _every_param(command):
        desc = getattr(param, "type_descriptor", None)
        if desc is not None and _names_path(desc.annotation):
            _refuse_empty(param)


def _refuse_empty(param: Any) -> None:
    process = param.process_value

    def checked(ctx: click.Context, value: Any) -> Any:
        values = value if isinstance(value, (list, tuple)) else (value,)
        if any(isinstance(v, str) and not v.strip() for v in values):
            # an argument by its name in the usage line (FILE), not its parameter name (file)
            hint = f"'{param.name.upper()}'" if param.param_type_name == "argument" else None
            raise click.exceptions.BadParameter(
                "an empty path names no file or folder", ctx=ctx, param=param, param_hint=hint
            )
        return process(ctx, value)

    param.process_value = checked
    param.refuses_empty_path = True


def refuse_flag_conflicts(command: Any) -> None:
    """Make every on/off flag pair of `command` and the commands under it (`--shaped/--raw`,
    `--guard/--no-guard`) a usage error when given both ways: click would keep the last one silently, and
    `--shaped --raw` would step raw. Judged by what click's parser takes as each flag while it parses,
    before the command runs (nothing opens): a value spelled like a flag (`--out --raw`) is a value."""
    pairs = {
        id(param) for param in command.params if getattr(param, "is_flag", False) and param.secondary_opts
    }
    if pairs:
        make = command.make_parser

        def checked(ctx: click.Context) -> Any:
            parser = make(ctx)
            seen: dict[int, bool] = {}  # per parse: the flag pair (its param) -> the way it was first given
            options = {*parser._long_opt.values(), *parser._short_opt.values()}
            for option in options:
                if id(option.obj) in pairs:
                    option.process = _watched(option, seen, ctx)
            return parser

        command.make_parser = checked
    for sub in getattr(command, "commands", {}).values():
        refuse_flag_conflicts(sub)


def _watched(option: Any, seen: dict[int, bool], ctx: click.Context) -> Callable[[Any, Any], None]:
    """`option.process` (one spelling of a flag pair, as click's parser takes it), refusing the pair given
    both ways."""
    process = option.process

    def taken(value: Any, state: Any) -> None:
        param, way = option.obj, bool(option.const)
        if seen.setdefault(id(param), way) != way:
            raise click.exceptions.UsageError(
                f"{param.opts[0]} and {param.secondary_opts[0]} exclude each other: give one", ctx=ctx
            )
        process(value, state)

    return taken


def _no_op() -> None:
    """Stands in for a callback."""


app = typer.Typer(
    name="servotool",
    cls=LazyGroup,
    help=(
        "Diagnostics and measurement for robot arms and servo buses.\n\n"
        "Measure the lag between the setpoints you stream and what the controller executes, inject steps "
        "(raw or shaped) and watch for runaways, recompute every figure later from the recorded CSV, and map "
        f"bus-servo joint limits. Devices are URLs: {DEFAULT_ARM_URL} (the default) runs a built-in "
        "simulator that speaks the real wire protocol, so every command works with no hardware "
        f"({DEFAULT_ARM_URL}?clock=sim: in simulated time, as fast as the CPU allows); {_ARM_HOST_URL} talks "
        "to a real arm."
    ),
    epilog=EPILOG,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=True,
    rich_markup_mode="rich",
    context_settings={"help_option_names": HELP_OPTION_NAMES},
)


def _print_version(value: bool) -> None:
    if value:
        typer.echo(f"servotool {full_version()}")
        raise typer.Exit(0)


@app.callback()
def _root(
    ctx: typer.Context,
    version: bool = typer.Option(
        False, "--version", "-V", callback=_print_version, is_eager=True, help="Print the version and exit."
    ),
    verbose: bool = typer.Option(
        False, "--verbose", "-v", help="Show debug details and the devices' wire traces (on stderr)."
    ),
    trace: Annotated[
        Path | None,
        typer.Option(
            "--trace",
            metavar="FILE",
            dir_okay=False,
            help="Write the devices' wire traces (frames sent and received, remote calls) to FILE, "
            "with times.",
        ),
    ] = None,
    quiet: bool = typer.Option(
        False, "--quiet", "-q", help="Leave out tables and progress; keep the verdict and errors."
    ),
) -> None:
    """Diagnostics and measurement for robot arms and servo buses."""
    if verbose and quiet:
        from servotool.cli.common import fail

        fail("--verbose and --quiet exclude each other")
    # set on every invocation: one process may run several commands (tests do)
    OUTPUT.verbose = verbose
    OUTPUT.quiet = quiet
    from servotool.cli.tracing import configure

    try:
        configure(verbose, trace)
    except OSError as exc:
        from servotool.cli.common import fail

        fail(f"--trace {trace}: cannot write ({exc.strerror or exc})")
    ctx.call_on_close(lambda: configure(False, None))  # the file closed, the traces off, when it ends
    if ctx.invoked_subcommand != "config":
        from servotool.cli.config import apply_config_defaults  # YAML is read only when a command runs

        apply_config_defaults(ctx)


def _usage_line(exc: click.ClickException) -> None:
    """One line on stderr for a mistake on the command line, naming the command's help."""
    from rich.markup import escape

    from servotool.cli.common import err_console

    hint = ""
    if isinstance(exc, click.exceptions.UsageError) and exc.ctx is not None:
        hint = f" (see '{exc.ctx.command_path} -h')"
    message = " ".join(exc.format_message().split())  # the parser's messages may span lines
    message = message.replace("Value error, ", "")  # the choice check's wording, without its prefix
    err_console.print(f"[bold red]error:[/] {escape(message)}{escape(hint)}", highlight=False, soft_wrap=True)


def main() -> None:
    """The installed `servotool` entry point. Exit codes are the commands' own; a usage error (an
    unknown option, a value that does not parse) is one `error:` line and exit 2, not a boxed panel."""
    import sys

    from servotool.runs.signals import StopSignals

    # SIGTERM and SIGHUP raise like Ctrl-C wherever a command has no handlers of its own (LazyGroup.invoke
    # turns them into one line and their exit code); without this they ended the process without a word
    with StopSignals() as signals:
        try:
            rv = app(standalone_mode=False)
        except click.exceptions.NoArgsIsHelpError as exc:
            exc.show()  # a bare group: its help, as before
            sys.exit(exc.exit_code)
        except click.ClickException as exc:
            _usage_line(exc)
            sys.exit(exc.exit_code)
        except typer.Abort:
            # end of input at a prompt: as click's own standalone mode does
            print("Aborted!", file=sys.stderr)
            sys.exit(1)
        except KeyboardInterrupt as exc:
            # a signal before any command ran (the command tree being built): no command had a say yet
            try:
                _interrupted(exc)
            except typer.Exit as done:
                sys.exit(done.exit_code)
        finally:
            signals.hold_to_exit()  # the command is over: a signal from here on is only counted
    sys.exit(rv if isinstance(rv, int) else 0)
