"""What the servo-bus commands (servo, sweep, ports) share: the --bus option, opening a bus with the right
exit code, settings problems as one line each, and the simulated arm's pose kept between commands."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import NoReturn
from urllib.parse import urlencode

import typer
from rich.markup import escape

from servotool.cli.common import announce_device, err_console, fail
from servotool.devices.bus import Bus, SimSnapshotBus
from servotool.devices.family import BUS, BusArm, DeviceFacts
from servotool.devices.registry import (
    FAMILIES,
    DeviceURLError,
    check_url,
    family_of,
    known_urls,
    open_bus,
    parse_url,
    sim_names,
    url_facts,
)
from servotool.errors import DeviceError, ExitCode, ServotoolError, exit_code_of, signal_label
from servotool.io.devlock import DeviceLock
from servotool.io.limits_yaml import LimitsFile, LimitsFileError, load_limits
from servotool.io.sim_state import load_sim_state, lock_key, lock_name_of, save_sim_state
from servotool.runs.ownership import claim
from servotool.runs.signals import StopSignals


def _default_bus() -> str:
    """The first simulated arm of the registry's bus families: one whose pose a command keeps."""
    for fam in FAMILIES:
        if fam.kind == BUS and sim_names(fam):
            return f"sim:{sim_names(fam)[0]}"
    return ""


DEFAULT_BUS = _default_bus()
_REAL_BUSES = ", ".join(example for fam in FAMILIES if fam.kind == BUS for example in fam.examples)
BUS_HELP = (
    f"Servo bus URL: {DEFAULT_BUS}[?k=v] (a simulator that keeps its pose between servo commands; "
    f"?clock=sim runs it on simulated time) or a real bus ({_REAL_BUSES}); known: "
    f"{', '.join(known_urls(BUS))}. Servos with Operating Modes are read, moved and held in "
    "position mode only."
)
BusOption = typer.Option(DEFAULT_BUS, "--bus", envvar="SERVOTOOL_BUS", help=BUS_HELP)
JsonOption = typer.Option(False, "--json", help="Print JSON instead of a table.")


def fail_all(problems: list[str], code: int = ExitCode.USAGE) -> NoReturn:
    """Print one error line per problem and exit (2 by default: nothing was opened, nothing moved)."""
    for problem in problems[:-1]:
        err_console.print(f"[bold red]error:[/] {escape(problem)}", highlight=False, soft_wrap=True)
    fail(problems[-1], code)


def fail_on(exc: ServotoolError) -> NoReturn:
    """One error line and the exit code the error carries (2 refused, 3 device unreachable, ...)."""
    fail(str(exc), int(exc.exit_code))


def url_bus_facts(url: str) -> DeviceFacts | None:
    """What the bus URL's family knows of it without opening it (position and id ranges, joints, its arm
    profile, its limits file's node); None when the URL names no known bus (opening it then says why)."""
    try:
        return url_facts(url, BUS)
    except DeviceURLError:
        return None


def url_profile(url: str) -> BusArm | None:
    """The arm profile a bus URL will open with, found without opening it (None: not a known arm URL)."""
    facts = url_bus_facts(url)
    return facts.arm if facts else None


def url_family(url: str) -> str | None:
    """The device family a bus URL names, known without opening it; None when the URL does not parse
    (opening it then says why)."""
    try:
        return family_of(parse_url(url)).name
    except DeviceURLError:
        return None


def url_simulated(url: str) -> bool:
    """True when the URL names a simulator (known without opening it)."""
    try:
        return parse_url(url).simulated
    except DeviceURLError:
        return False


def _with_state(url: str) -> str:
    """A sim URL with the saved pose added (parameters typed in the URL win)."""
    saved = load_sim_state(url)
    if not saved:
        return url
    given = parse_url(url).params
    extra = {k: v for k, v in saved.items() if k not in given}
    if not extra:
        return url
    return url + ("&" if "?" in url else "?") + urlencode(extra)


def open_arm_bus(url: str, *, keep_sim_pose: bool = False, announce: bool = True) -> Bus:
    """Open the bus, or exit with one line saying why: a bad URL exits 2, a port that cannot be opened or
    where no board answers exits 3. With keep_sim_pose a simulator starts where the last command left it."""
    target = _with_state(url) if keep_sim_pose and url_simulated(url) else url
    try:
        bus: Bus = open_bus(target)
    except DeviceURLError as exc:
        fail(str(exc))
    except DeviceError as exc:
        fail_on(exc)
    if announce:
        announce_device(url, bus.simulated, bus.model)
    return bus


def save_sim_pose(url: str, bus: Bus) -> None:
    """Remember where a simulated arm is, for the next servo command on the same URL (a real bus: nothing)."""
    if bus.simulated and isinstance(bus, SimSnapshotBus):
        # the last frames written (a hold, a torque change) must be taken before the state is read
        with contextlib.suppress(ServotoolError):
            bus.sync()
        params = bus.sim_snapshot()
        if params:
            save_sim_state(url, params)


NOTHING_SENT = "nothing was sent to the servos"


def read_only() -> str:
    """What a read-only command did to the servos when a signal ended it."""
    return NOTHING_SENT


@contextmanager
def bus_command(url: str, *, on_signal: Callable[[], str], keep_sim_pose: bool = False) -> Iterator[Bus]:
    """One command's bus: the device's host-wide lock first (another servotool process holds it: exit 2;
    a simulated arm that keeps its pose has a lock of its own, keep_sim_pose),
    then the bus opened (see open_arm_bus). Inside, a refusal or device error is one line with its exit
    code, and Ctrl-C, SIGTERM or SIGHUP exit 130, 143 or 129 with one line: `on_signal()` says what the
    command had done to the servos by then (while the bus is still opening: nothing was sent). However it
    ends, a simulated arm's pose is saved (keep_sim_pose) and the bus closed, then the lock released; a
    signal during that ending is counted, not obeyed half way."""
    try:
        check_url(url, BUS)  # a bus URL, or one line naming the bus URLs meant
    except DeviceURLError as exc:
        fail(str(exc))
    with contextlib.ExitStack() as stack:
        # handlers from the start: a signal while the port opens would otherwise kill us without a word
        signals = stack.enter_context(StopSignals())
        try:
            stack.enter_context(claim(url))
            if keep_sim_pose and url_simulated(url):  # its pose lives on: one command drives it at a time
                stack.enter_context(DeviceLock(lock_key(url), name=lock_name_of(url)))
            stack.callback(signals.ending)  # the lock is then released whole, whatever signal comes
            dev = open_arm_bus(url, keep_sim_pose=keep_sim_pose)
        except ServotoolError as exc:
            fail_on(exc)
        except KeyboardInterrupt as exc:
            fail(f"interrupted by {signal_label(exc)} while opening {url}; {NOTHING_SENT}", exit_code_of(exc))
        try:
            yield dev
        except ServotoolError as exc:
            fail_on(exc)
        except KeyboardInterrupt as exc:
            fail(f"interrupted by {signal_label(exc)}; {on_signal()}", exit_code_of(exc))
        finally:
            signals.ending()  # the pose saved, the bus closed and the lock released, whatever comes
            try:
                if keep_sim_pose:
                    save_sim_pose(url, dev)
            finally:
                dev.close()


def stopped_by(signals: StopSignals, what: str) -> NoReturn:
    """Exit with the code of the signal that stopped a run, saying the arm holds."""
    fail(f"stopped by {signals.reason()}: {what}", signals.exit_code() or ExitCode.INTERRUPTED)


def limits_problem(path: Path | None, url: str | None = None) -> tuple[LimitsFile | None, list[str]]:
    """The --limits file and its problems (for collecting every settings problem before failing); with
    the bus `url`, its family's node name is the one read when no node of the file has limits yet."""
    if path is None:
        return None, []
    facts = url_bus_facts(url) if url is not None else None
    try:
        return load_limits(path, facts.limits_node if facts else None), []
    except LimitsFileError as exc:
        return None, [str(exc)]
