"""Ownership fails closed, for every family the registry holds: a network device's keys name its host
(whatever the spelling, whichever the working folder), a serial device's name the resolved port (the same
for every serial family on it), and a scheme no family registers is refused before anything opens."""

from __future__ import annotations

import os

import pytest
from typer.testing import CliRunner

from servotool.cli.app import app
from servotool.devices import registry
from servotool.devices.registry import FAMILIES, DeviceURLError, lock_keys, url_facts
from servotool.runs.ownership import device_keys

NETWORK = [fam for fam in FAMILIES if fam.network]
SERIAL = [fam for fam in FAMILIES if not fam.network]
UNKNOWN = ["kuka://172.16.0.2", "foo:///dev/ttyUSB0", "kuka://localhost?rpc_port=1"]
LOOPBACK = ["127.0.0.1", "127.1", "localhost", "LOCALHOST.", "0x7f000001", "[::ffff:127.0.0.1]", "[::1]"]


def test_the_registry_holds_both_kinds_of_family():
    assert NETWORK and SERIAL
    # every family of real devices names its schemes and an example; an in-process one (sim: only) has none
    assert all(fam.examples for fam in FAMILIES if fam.schemes)


def _keys_in(folder, url: str) -> list[str]:
    folder.mkdir(exist_ok=True)
    before = os.getcwd()
    os.chdir(folder)
    try:
        return lock_keys(url)
    finally:
        os.chdir(before)


@pytest.mark.parametrize("fam", NETWORK, ids=lambda f: f.name)
def test_a_network_device_is_keyed_by_its_host_from_any_folder(fam, tmp_path):
    for scheme in fam.schemes:
        for url in [f"{scheme}://192.168.58.2", f"{scheme}://ctrl.example", *fam.examples]:
            here, there = _keys_in(tmp_path / "a", url), _keys_in(tmp_path / "b", url)
            assert here and here == there, url
            assert not any(str(tmp_path) in key for key in here), here


@pytest.mark.parametrize("fam", NETWORK, ids=lambda f: f.name)
def test_every_spelling_of_one_host_is_one_key(fam):
    for scheme in fam.schemes:
        keys = {tuple(lock_keys(f"{scheme}://{host}")) for host in LOOPBACK}
        assert len(keys) == 1, keys
        other = lock_keys(f"{scheme}://192.168.58.2")
        assert other[0] != next(iter(keys))[0]  # another host, another device


@pytest.fixture()
def pty_path():
    controller, device = os.openpty()
    try:
        yield os.ttyname(device)
    finally:
        os.close(controller)
        os.close(device)


@pytest.mark.parametrize("fam", SERIAL, ids=lambda f: f.name)
def test_a_serial_device_is_keyed_by_the_resolved_port(fam, pty_path, tmp_path):
    link = tmp_path / "ttyLINK"
    link.symlink_to(pty_path)
    for scheme in fam.schemes:
        keys = lock_keys(f"{scheme}://{pty_path}")
        assert keys and keys[0] == f"serial-{os.path.realpath(pty_path)}"
        assert lock_keys(f"{scheme}://{link}")[0] == keys[0]  # another name of one port is one bus
        assert _keys_in(tmp_path / "a", f"{scheme}://{pty_path}") == keys


def test_every_serial_family_on_one_port_shares_its_first_key(pty_path):
    firsts = {lock_keys(f"{scheme}://{pty_path}")[0] for fam in SERIAL for scheme in fam.schemes}
    assert len(firsts) == 1, firsts
    url = f"{SERIAL[0].schemes[0]}://{pty_path}"
    assert device_keys(url) == lock_keys(url)  # what a run claims


def test_an_embedded_simulator_holds_no_key_and_every_real_url_one():
    for fam in FAMILIES:
        for name in registry.sim_names(fam):
            assert lock_keys(f"sim:{name}") == []
        for url in fam.examples:
            assert lock_keys(url)


@pytest.mark.parametrize("url", UNKNOWN)
def test_an_unknown_scheme_is_refused(url):
    with pytest.raises(DeviceURLError, match="not a known"):
        lock_keys(url)
    with pytest.raises(DeviceURLError):
        device_keys(url)
    with pytest.raises(DeviceURLError):
        url_facts(url)


@pytest.fixture()
def nothing_opens(monkeypatch, tmp_path):
    """Fails a test that opens a device or takes a lock; the lock folder is the test's own."""

    def opened(*args, **kwargs):
        raise AssertionError(f"a device was opened: {args!r}")

    monkeypatch.setattr(registry, "_opener", opened)
    monkeypatch.setenv("SERVOTOOL_LOCK_DIR", str(tmp_path / "locks"))
    monkeypatch.setenv("SERVOTOOL_CONFIG", str(tmp_path / "config.yaml"))
    return tmp_path / "locks"


@pytest.mark.parametrize(
    "args",
    [
        ["lag", "--robot", "kuka://172.16.0.2"],
        ["step", "--robot", "kuka://172.16.0.2"],
        ["servo", "read", "--bus", "foo:///dev/ttyUSB0"],
        ["sweep", "--bus", "foo:///dev/ttyUSB0", "--servo", "1"],
    ],
)
def test_the_commands_refuse_an_unknown_scheme_in_one_line_before_opening(args, nothing_opens, tmp_path):
    result = CliRunner().invoke(app, [*args, "--out", str(tmp_path / "out")] if args[0] != "servo" else args)
    assert result.exit_code == 2, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error:") and "not a known" in lines[0], result.stderr
    assert "Traceback" not in result.output
    assert not list(nothing_opens.glob("*.lock"))  # no lock taken either
