"""Bus families through the registry: facts known before opening, the serial-family skeleton both serial
openers share, the recorder's telemetry hook, and the simulator parameters' help."""

import dataclasses

import pytest

from servotool.devices import registry
from servotool.devices.bus import Bus, ClockedBus
from servotool.devices.family import BUS
from servotool.devices.registry import DeviceURLError, open_bus, url_facts
from servotool.devices.serial_family import SerialOpener
from servotool.errors import Refused
from servotool.runs.recorder.sources import open_source, recordable_urls

BUS_FAMILIES = [f for f in registry.FAMILIES if f.kind == BUS]


def test_position_and_id_ranges_are_the_urls_facts_without_opening(monkeypatch):
    def no_open(*args, **kwargs):
        raise AssertionError("nothing is opened for facts")

    monkeypatch.setattr(registry, "open_bus", no_open)
    dxl = url_facts("dxl:///dev/servotool-no-such-port?ids=1-3")
    board = url_facts("hiwonder:///dev/servotool-no-such-port")
    assert dxl.position_range == (0, 4095) and dxl.limits_node is None and dxl.arm is None
    assert board.position_range == (0, 1000) and board.limits_node and board.arm is not None
    assert url_facts("sim:microduck").position_range == (0, 4095)
    assert url_facts("sim:rosorin-arm").position_range == (0, 1000)
    assert board.arm.tuck_pose in board.arm.poses and board.ids == board.arm.ids


@pytest.mark.parametrize("url", ["sim:rosorin-arm", "sim:microduck"])
def test_a_bus_is_a_context_manager_and_declares_its_clock(url):
    with open_bus(url) as bus:
        assert isinstance(bus, Bus) and isinstance(bus, ClockedBus)
        assert bus.read_position(bus.ids[0]) is not None


@pytest.mark.parametrize(
    "url", ["hiwonder:///dev/servotool-no-such-port?bogus=1", "dxl:///dev/servotool-no-such-port?bogus=1"]
)
def test_both_serial_openers_refuse_an_unknown_parameter_the_same_way(url):
    with pytest.raises(DeviceURLError) as caught:
        open_bus(url)
    assert f"device URL {url!r}: unknown parameters ['bogus'] (known: " in str(caught.value)


def test_both_serial_openers_are_the_one_skeleton():
    from servotool.devices.dynamixel import client as dxl
    from servotool.devices.hiwonder import client as board

    assert isinstance(board._OPENER, SerialOpener) and isinstance(dxl._OPENER, SerialOpener)
    assert type(board._OPENER).open is SerialOpener.open and type(dxl._OPENER).open is SerialOpener.open


def test_a_bus_family_without_a_telemetry_hook_is_refused_before_opening(monkeypatch):
    def no_open(*args, **kwargs):
        raise AssertionError("a refused URL is not opened")

    monkeypatch.setattr(registry, "open_bus", no_open)
    unrecordable = [f for f in BUS_FAMILIES if f.telemetry is None]
    assert unrecordable  # the board has no telemetry span
    for fam in unrecordable:
        url = f"sim:{registry.sim_names(fam)[0]}"
        with pytest.raises(Refused) as caught:
            open_source(url, "bus", clock=None)
        line = str(caught.value)
        assert "\n" not in line and all(u in line for u in recordable_urls())


def test_a_bus_family_loses_its_telemetry_hook_and_is_refused(monkeypatch):
    families = tuple(
        dataclasses.replace(f, telemetry=None) if f.name == "dynamixel" else f for f in registry.FAMILIES
    )
    monkeypatch.setattr(registry, "FAMILIES", families)
    with pytest.raises(Refused, match="recorder cannot read"):
        open_source("sim:microduck", "bus", clock=None)


@pytest.mark.parametrize("fam", BUS_FAMILIES, ids=lambda f: f.name)
def test_every_bus_simulator_parameter_has_a_one_line_help(fam):
    params = fam.sim_params()
    assert params
    for param in params:
        assert param.help.strip() and "\n" not in param.help, param.key
