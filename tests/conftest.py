"""Settings every test shares: no user config, and each test's state and lock dirs its own.

Private state and lock dirs let the tests run in parallel processes (pytest-xdist) and never touch the user's
real ones. A test that sets these variables itself overrides them.
"""

import signal

import pytest
from hypothesis import settings

# every hypothesis draw seeded (derandomize: the examples follow from the test), no per-example deadline
# (a loaded machine is slow, not wrong), no example database written into the work tree
settings.register_profile("servotool", derandomize=True, deadline=None, database=None)
settings.load_profile("servotool")


@pytest.fixture(autouse=True)
def _no_user_config(tmp_path_factory, monkeypatch):
    """Keep the user's own config file (default device, output folder) out of every test."""
    monkeypatch.setenv("SERVOTOOL_CONFIG", str(tmp_path_factory.getbasetemp() / "no-user-config.yaml"))


@pytest.fixture(autouse=True)
def _private_dirs(tmp_path_factory, monkeypatch):
    base = tmp_path_factory.mktemp("servotool-env")
    monkeypatch.setenv("SERVOTOOL_STATE_DIR", str(base / "state"))
    monkeypatch.setenv("SERVOTOOL_LOCK_DIR", str(base / "locks"))


@pytest.fixture(autouse=True)
def _signal_handlers_restored():
    """A test that runs the command line in this process (`servotool.cli.app.main`, which keeps its signal
    handlers until the process exits) leaves the next test the handlers it found."""
    kept = {signum: signal.getsignal(signum) for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)}
    yield
    for signum, handler in kept.items():
        if handler is not None:
            signal.signal(signum, handler)


def pytest_collection_modifyitems(config, items):
    """The slow tests first (otherwise in collection order): with two workers (pytest-xdist) the long
    real-time tests overlap the many short ones instead of ending the run alone."""
    items.sort(key=lambda item: item.get_closest_marker("slow") is None)


def load_slack_ms(strict_ms: float, nominal_ms: float, late_ticks: int) -> float:
    """How far a figure measured in real time may stray: `strict_ms` when the run kept its schedule (no tick
    went out more than half a period late), else a load margin (5 ms + 25 % of the nominal figure). A starved
    host delays the stamps of the frames it receives as well as the ticks it sends, so a run that shows late
    ticks measured the host's scheduling as well as the device; the strict claim holds on an idle machine."""
    return strict_ms if late_ticks == 0 else max(strict_ms, 5.0 + 0.25 * nominal_ms)


@pytest.fixture
def slack():
    """`load_slack_ms` for the tests that measure a lag in real time."""
    return load_slack_ms
