"""The Hiwonder client is a `devices.bus.Bus`, and its errors belong to the one error family."""

from __future__ import annotations

import pytest

from servotool.devices.bus import Bus, read_records
from servotool.devices.hiwonder import protocol as p
from servotool.devices.registry import open_bus
from servotool.errors import ExitCode, ProtocolError, Refused, RunFault, ServotoolError
from servotool.runs.bus.sweep import SweepAborted


def test_hiwonder_client_is_a_bus() -> None:
    bus = open_bus("sim:rosorin-arm")
    try:
        assert isinstance(bus, Bus)
        assert bus.position_range == (0, 1000)
        assert bus.optional_ids == (10,)
        records = read_records(bus, (1, 2))
        assert set(records) == {1, 2}
        assert records[2].position == 776 and not records[2].silent
        assert bus.last_position[2] == 776
    finally:
        bus.close()


def test_errors_derive_from_the_family() -> None:
    assert issubclass(p.BoardFrameError, ProtocolError)
    assert issubclass(p.EepromWriteRefused, Refused)
    assert issubclass(SweepAborted, RunFault)
    assert RunFault.exit_code == ExitCode.FAULT
    with pytest.raises(ServotoolError):
        p.encode_frame(p.Function.BUS_SERVO, bytes([0x10, 1, 2]))
    with pytest.raises(ProtocolError):
        p.decode_frame(b"\xaa\x55\x05\x00\x00")
