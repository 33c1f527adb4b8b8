"""dynamixel-sdk, unchanged, against the simulator on a pty: every instruction round-trips."""

import time

import pytest
from dynamixel_sdk import (
    COMM_RX_TIMEOUT,
    COMM_SUCCESS,
    GroupBulkRead,
    GroupSyncRead,
    GroupSyncWrite,
    PacketHandler,
    PortHandler,
    port_handler,
)

from servotool.clock import FakeClock
from servotool.devices.dynamixel import control_table as ct
from servotool.devices.dynamixel.sim import start_sim

SLACK_LATENCY_MS = 1000


def wait_for(cond, timeout=30.0):
    end = time.monotonic() + timeout
    while not cond():
        assert time.monotonic() < end, "condition not met"
        time.sleep(0.001)


@pytest.fixture
def line(monkeypatch):
    """(server, port, packet handler, clock) with the simulator on a FakeClock."""
    # the simulator thread shares two loaded cores with the test (at a load of ten, 200 ms were not always
    # enough): its answers get a latency timer of a second, which costs nothing when they come, so that
    # only a silent servo times out (test_silent_servo_times_out shortens it for that servo alone)
    monkeypatch.setattr(port_handler, "LATENCY_TIMER", SLACK_LATENCY_MS)

    def make(**params):
        clock = FakeClock()
        server = start_sim("microduck", {k: str(v) for k, v in params.items()}, clock=clock)
        port = PortHandler(server.path)
        assert port.openPort() and port.setBaudRate(1_000_000)
        opened.append((server, port))
        return server, port, PacketHandler(2.0), clock

    opened = []
    yield make
    for server, port in opened:
        port.closePort()
        server.close()


def test_ping_read_write(line):
    _, port, ph, _ = line(noise=0)
    assert ph.ping(port, 10) == (ct.MODEL_XL330_M288, COMM_SUCCESS, 0)
    assert ph.read1ByteTxRx(port, 13, ct.ID.address) == (13, COMM_SUCCESS, 0)
    assert ph.write4ByteTxRx(port, 13, ct.GOAL_POSITION.address, 3000) == (COMM_SUCCESS, 0)
    assert ph.read4ByteTxRx(port, 13, ct.GOAL_POSITION.address) == (3000, COMM_SUCCESS, 0)
    assert ph.read2ByteTxRx(port, 13, ct.PRESENT_INPUT_VOLTAGE.address)[0] in range(40, 51)


def test_silent_servo_times_out(line, monkeypatch):
    _, port, ph, _ = line(silent=22)
    monkeypatch.setattr(port_handler, "LATENCY_TIMER", 20)  # a timeout is the expected answer: no long wait
    assert ph.ping(port, 22)[1] == COMM_RX_TIMEOUT
    monkeypatch.setattr(port_handler, "LATENCY_TIMER", SLACK_LATENCY_MS)
    assert ph.ping(port, 23)[1] == COMM_SUCCESS


def test_sync_read_of_the_telemetry_span(line):
    _, port, ph, _ = line(noise=0)
    group = GroupSyncRead(port, ph, ct.TELEMETRY_START, ct.TELEMETRY_LENGTH)
    for sid in (10, 11, 30):
        assert group.addParam(sid)
    assert group.txRxPacket() == COMM_SUCCESS
    for sid in (10, 11, 30):
        assert group.isAvailable(sid, ct.PRESENT_TEMPERATURE.address, 1)
        assert group.getData(sid, ct.PRESENT_TEMPERATURE.address, 1) == 30
        assert abs(group.getData(sid, ct.PRESENT_POSITION.address, 4) - 2048) < 30


def test_bulk_read_and_sync_write(line):
    server, port, ph, clock = line(noise=0)
    writer = GroupSyncWrite(port, ph, ct.GOAL_POSITION.address, 4)
    writer.addParam(20, list(ct.encode_value(ct.GOAL_POSITION, 1900)))
    writer.addParam(21, list(ct.encode_value(ct.GOAL_POSITION, 2200)))
    assert writer.txPacket() == COMM_SUCCESS
    wait_for(lambda: server.sim.packets_seen == 1)  # no answer comes: wait until the sim took it
    clock.advance(2.0)
    group = GroupBulkRead(port, ph)
    assert group.addParam(20, ct.GOAL_POSITION.address, 4)
    assert group.addParam(21, ct.POSITION_TRAJECTORY.address, 4)
    assert group.addParam(30, ct.HARDWARE_ERROR_STATUS.address, 1)
    assert group.txRxPacket() == COMM_SUCCESS
    assert group.getData(20, ct.GOAL_POSITION.address, 4) == 1900
    assert group.getData(21, ct.POSITION_TRAJECTORY.address, 4) == 2200
    assert group.getData(30, ct.HARDWARE_ERROR_STATUS.address, 1) == 0


def test_alert_bit_and_reboot_clears_the_latch_with_torque_off_after(line):
    server, port, ph, clock = line(latched="30@0.5:0x20")
    assert ph.read1ByteTxRx(port, 30, ct.HARDWARE_ERROR_STATUS.address) == (0, COMM_SUCCESS, 0)
    clock.advance(0.5)
    value, result, error = ph.read1ByteTxRx(port, 30, ct.HARDWARE_ERROR_STATUS.address)
    assert (value, result) == (0x20, COMM_SUCCESS) and error & 0x80
    assert "Hardware error" in ph.getRxPacketError(error)
    assert ph.read1ByteTxRx(port, 30, ct.TORQUE_ENABLE.address)[0] == 0
    assert ph.reboot(port, 30)[0] == COMM_SUCCESS
    clock.advance(0.01)
    assert ph.read1ByteTxRx(port, 30, ct.HARDWARE_ERROR_STATUS.address) == (0, COMM_SUCCESS, 0)
    assert ph.read1ByteTxRx(port, 30, ct.TORQUE_ENABLE.address) == (0, COMM_SUCCESS, 0)
    assert server.sim.instructions["Reboot"] == 1


@pytest.mark.slow
def test_broadcast_ping_finds_every_answering_servo(line):
    _, port, ph, _ = line(silent="31")
    found, result = ph.broadcastPing(port)
    assert result == COMM_SUCCESS
    assert sorted(found) == [10, 11, 12, 13, 14, 20, 21, 22, 23, 24, 30, 32, 33]
    assert all(info[0] == ct.MODEL_XL330_M288 for info in found.values())
