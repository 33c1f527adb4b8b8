"""StopSignals: SIGTERM and SIGHUP become a KeyboardInterrupt-like stop, a request while streaming, and are
held back while the run ends safely; the previous handlers come back after."""

import os
import signal

import pytest

from servotool.errors import ExitCode, StopSignal, exit_code_of
from servotool.runs.signals import StopSignals


def _kill(signum):
    os.kill(os.getpid(), signum)


@pytest.mark.parametrize(
    ("signum", "code"),
    [
        (signal.SIGTERM, ExitCode.SIGTERM),
        (signal.SIGHUP, ExitCode.SIGHUP),
        (signal.SIGINT, ExitCode.INTERRUPTED),
    ],
)
def test_raise_mode_raises_a_keyboard_interrupt(signum, code):
    before = signal.getsignal(signum)
    with pytest.raises(KeyboardInterrupt) as info, StopSignals() as sig:
        _kill(signum)
    assert isinstance(info.value, StopSignal)
    assert exit_code_of(info.value) == code == sig.exit_code()
    assert signal.getsignal(signum) is before


def test_latch_mode_is_a_request_until_the_third():
    with StopSignals() as sig:
        with sig.latching():
            _kill(signal.SIGTERM)
            assert sig.requested == signal.SIGTERM and sig.reason() == "SIGTERM"
            _kill(signal.SIGINT)
            with pytest.raises(StopSignal) as info:
                _kill(signal.SIGHUP)
        assert sig.exit_code() == ExitCode.SIGTERM  # the first one decides
        assert info.value.signum == signal.SIGHUP


def test_defer_holds_the_signal_until_the_safe_ending_is_done():
    done = []
    with pytest.raises(StopSignal), StopSignals() as sig, sig.deferring():
        _kill(signal.SIGHUP)
        done.append("disabled")
    assert done == ["disabled"]


def test_defer_after_a_stop_does_not_raise_again():
    with StopSignals() as sig:
        with sig.latching():
            _kill(signal.SIGTERM)
        with sig.deferring():
            _kill(signal.SIGTERM)
        assert sig.count == 2 and sig.exit_code() == ExitCode.SIGTERM


def test_exit_codes_of_errors():
    from servotool.errors import ConnectionLost, RunFault, SettingsError

    assert exit_code_of(SettingsError("x")) == 2
    assert exit_code_of(ConnectionLost("x")) == 3
    assert exit_code_of(RunFault("x")) == 1
    assert exit_code_of(KeyboardInterrupt()) == 130
    assert exit_code_of(RuntimeError("bug")) == 1


def test_after_ending_signals_are_only_counted_until_the_handlers_go():
    done = []
    with StopSignals() as sig:
        sig.ending()
        _kill(signal.SIGTERM)
        with sig.latching():  # a phase entered after the ending keeps it once left
            pass
        _kill(signal.SIGHUP)
        done.append("released")
    assert done == ["released"] and sig.count == 2 and sig.exit_code() == ExitCode.SIGTERM
