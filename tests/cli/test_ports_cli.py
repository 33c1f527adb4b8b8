"""`servotool ports`: serial ports, and which answer as a servo board (harmless reads only)."""

import contextlib
import dataclasses
import json
import os
import types

import pytest
from serial.tools import list_ports
from typer.testing import CliRunner

from servotool.cli.app import app
from servotool.devices.hiwonder import protocol as p
from servotool.devices.hiwonder.sim import start_sim

runner = CliRunner()


def with_probe(monkeypatch, name, probe):
    """The registry's family `name` with `probe(port, baud)` as its probe hook: ports probes through it."""
    from servotool.devices import registry

    def hook(port, baud, timeout_ms):
        return probe(port, baud)

    families = tuple(dataclasses.replace(f, probe=hook) if f.name == name else f for f in registry.FAMILIES)
    monkeypatch.setattr(registry, "FAMILIES", families)


@pytest.fixture(autouse=True)
def own_lock_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("SERVOTOOL_LOCK_DIR", str(tmp_path / "locks"))


@pytest.fixture(autouse=True)
def no_host_ports(monkeypatch):
    """Only the ports a test names are probed: never this computer's own serial ports (a robot may be on
    one, and each costs a Dynamixel broadcast ping of about a second per baud)."""
    monkeypatch.setattr(list_ports, "comports", lambda: [])


# the simulated board answers from a thread of this process: a loaded host must not pass for a silent servo
PATIENT = ("--timeout-ms", "1000")


@pytest.fixture
def board():
    """A board whose every servo answers (only a silent one costs the probe's timeout)."""
    server = start_sim("rosorin-arm")
    yield server
    server.close()


def test_a_simulated_board_answers_with_its_servos():
    with start_sim("rosorin-arm", {"silent_10": "1"}) as board:
        result = runner.invoke(app, ["ports", "--port", board.path, "--timeout-ms", "300", "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    entry = next(e for e in data["ports"] if e["device"] == board.path)
    assert entry["answers"]["hiwonder"] == [1, 2, 3, 4, 5]  # the silent claw is not listed
    assert data["dynamixel_probe"] is True  # the dynamixel backend provides its probe
    # only reads went out
    sent = [r.command for r in board.sim.received]
    assert sent and all(isinstance(c, p.ServoRequest) and c.sub in p.READ_SUBS for c in sent)


def test_table_and_no_probe(board):
    result = runner.invoke(app, ["ports", "--port", board.path, *PATIENT])
    assert result.exit_code == 0
    assert "hiwonder board (servos 1, 2, 3, 4, 5, 10)" in " ".join(result.stdout.split())
    before = len(board.sim.received)
    result = runner.invoke(app, ["ports", "--port", board.path, "--no-probe", "--json"])
    assert result.exit_code == 0
    entry = next(e for e in json.loads(result.stdout)["ports"] if e["device"] == board.path)
    assert entry["answers"] is None and len(board.sim.received) == before


@contextlib.contextmanager
def quiet_pty():
    """The path of a pseudo-terminal nothing answers on."""
    main, follower = os.openpty()
    try:
        yield os.ttyname(follower)
    finally:
        os.close(follower)
        os.close(main)


def test_a_port_that_cannot_be_opened_says_so(monkeypatch):
    pinged = []
    with_probe(monkeypatch, "dynamixel", lambda port, baud: pinged.append(port) or [])
    missing = "/dev/servotool-no-such-port"
    result = runner.invoke(app, ["ports", "--port", missing, "--json"], env={"COLUMNS": "80"})
    assert result.exit_code == 0, result.output
    (entry,) = json.loads(result.stdout)["ports"]
    assert entry["answers"]["error"] == "No such file or directory" and entry["answers"]["hiwonder"] == []
    assert pinged == []  # a port that does not open is not pinged either
    table = runner.invoke(app, ["ports", "--port", missing], env={"COLUMNS": "80"})
    assert "cannot open" in table.stdout and "nothing answered" not in table.stdout


def test_the_dynamixel_probe_is_called_when_present(board, monkeypatch):
    calls = []

    def probe(port, baud):
        calls.append((port, baud))
        return [1, 2] if baud == 1_000_000 else []

    with_probe(monkeypatch, "dynamixel", probe)
    with quiet_pty() as quiet:  # a port that opens, where no Hiwonder board answers
        result = runner.invoke(app, ["ports", "--port", quiet, "--timeout-ms", "1", "--json"])
    data = json.loads(result.stdout)
    (entry,) = data["ports"]
    assert data["dynamixel_probe"] is True and entry["answers"]["dynamixel"] == {"1000000": [1, 2]}
    assert (quiet, 57600) in calls
    # the board answered as a Hiwonder board: it is not pinged as a Dynamixel bus
    result = runner.invoke(app, ["ports", "--port", board.path, *PATIENT, "--json"])
    board_entry = next(e for e in json.loads(result.stdout)["ports"] if e["device"] == board.path)
    assert board_entry["answers"]["hiwonder"] == [1, 2, 3, 4, 5, 10]
    assert board_entry["answers"]["dynamixel"] is None
    assert all(port != board.path for port, _ in calls)


def test_the_host_serial_ports_are_listed_and_probed(board, monkeypatch):
    host_port = types.SimpleNamespace(
        device=board.path, description="USB serial", hwid="USB VID:PID=1A86:7523"
    )
    monkeypatch.setattr(list_ports, "comports", lambda: [host_port])
    result = runner.invoke(app, ["ports", *PATIENT, "--json"])
    assert result.exit_code == 0, result.output
    (entry,) = json.loads(result.stdout)["ports"]
    assert entry["device"] == board.path and entry["description"] == "USB serial"
    assert entry["answers"]["hiwonder"] == [1, 2, 3, 4, 5, 10]


def test_a_port_held_by_another_servotool_process_is_not_probed(board):
    from servotool.io.devlock import DeviceLock
    from servotool.runs.ownership import device_key

    with DeviceLock(device_key(f"hiwonder://{board.path}")):
        before = len(board.sim.received)
        result = runner.invoke(app, ["ports", "--port", board.path, *PATIENT, "--json"])
    entry = next(e for e in json.loads(result.stdout)["ports"] if e["device"] == board.path)
    assert "in use" in entry["answers"]["busy"] and len(board.sim.received) == before


@pytest.mark.parametrize("value", ["0", "2001", "soon"])
def test_a_bad_probe_timeout_is_one_line(value):
    result = runner.invoke(app, ["ports", "--timeout-ms", value])
    assert result.exit_code == 2 and "--timeout-ms" in result.output and "Traceback" not in result.output


def test_a_probe_timeout_without_probing_is_refused_not_ignored():
    result = runner.invoke(app, ["ports", "--no-probe", "--timeout-ms", "300"])
    assert result.exit_code == 2 and "Traceback" not in result.output
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "--timeout-ms" in lines[0] and "--no-probe" in lines[0]


@pytest.mark.parametrize("value", ["", " "])
def test_an_empty_port_is_refused_not_probed(value, monkeypatch):
    # --port "$PORT" with PORT unset was 'probed' and reported as nothing answering, with no error
    monkeypatch.setattr("servotool.cli.ports.probe_port", lambda *a, **k: pytest.fail("nothing is probed"))
    result = runner.invoke(app, ["ports", "--port", value, "--json"])
    assert result.exit_code == 2, result.output
    assert result.stderr.count("error:") == 1 and "--port" in result.stderr and result.stdout == ""


def test_a_port_given_twice_is_probed_once(monkeypatch):
    seen = []
    monkeypatch.setattr("servotool.cli.ports.list_ports.comports", lambda: [])
    monkeypatch.setattr(
        "servotool.cli.ports.probe_port",
        lambda dev, *a: seen.append(dev) or {"hiwonder": [], "dynamixel": None, "busy": None, "error": None},
    )
    result = runner.invoke(app, ["ports", "--port", "/dev/x", "--port", "/dev/x", "--json"])
    assert result.exit_code == 0, result.output
    assert seen == ["/dev/x"] and [p["device"] for p in json.loads(result.stdout)["ports"]] == ["/dev/x"]


def test_ports_probes_every_bus_family_of_the_registry_through_its_hook(monkeypatch):
    """A family added to the registry with a probe hook is probed at each of its bauds, its name the key."""
    from servotool.devices import registry

    calls = []

    def probe(port, baud, timeout_ms):
        calls.append((port, baud, timeout_ms))
        return [7] if baud == 500_000 else []

    board = next(f for f in registry.FAMILIES if f.name == "hiwonder")
    extra = dataclasses.replace(
        board,
        name="newbus",
        schemes=("newbus",),
        sim_names=lambda: (),
        probe=probe,
        probe_bauds=(115_200, 500_000),
    )
    quiet_board = dataclasses.replace(board, probe=lambda port, baud, timeout_ms: [])
    families = tuple(quiet_board if f is board else f for f in registry.FAMILIES) + (extra,)
    monkeypatch.setattr(registry, "FAMILIES", families)
    with_probe(monkeypatch, "dynamixel", lambda port, baud: [])
    with quiet_pty() as quiet:
        result = runner.invoke(app, ["ports", "--port", quiet, "--timeout-ms", "5", "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    (entry,) = data["ports"]
    assert entry["answers"]["newbus"] == {"500000": [7]} and data["newbus_probe"] is True
    assert calls == [(quiet, 115_200, 5), (quiet, 500_000, 5)]
    assert entry["answers"]["hiwonder"] == [] and entry["answers"]["dynamixel"] == {}
