"""The simulator as a server: raw wire exchanges, ports, lifecycle, resources."""

from __future__ import annotations

import os
import socket
import statistics
import threading
import time
import xmlrpc.client

import pytest

from servotool.clock import FakeClock
from servotool.devices.fairino import protocol as p
from servotool.devices.fairino.fields import SDK_DEFAULT_FIELDS
from servotool.devices.fairino.profiles import ProfileError
from servotool.devices.fairino.sim import FairinoSim, SimError


@pytest.fixture
def sim():
    s = FairinoSim("fr3", rpc_port=0, cnde_port=0, udp_port=0, overrides={"enable_ms": 50}).start()
    yield s
    s.stop()


def cnde_connect(sim: FairinoSim) -> socket.socket:
    sock = socket.create_connection((sim.host, sim.ports.cnde), timeout=2)
    sock.settimeout(2)
    return sock


def read_frames(sock: socket.socket, splitter: p.FrameSplitter, n: int, timeout: float = 2.0):
    frames, stamps = [], []
    end = time.monotonic() + timeout
    while len(frames) < n and time.monotonic() < end:
        chunk = sock.recv(65536)
        if not chunk:
            break
        t = time.perf_counter()
        for f in splitter.feed(chunk):
            frames.append(f)
            stamps.append(t)
    return frames, stamps


def exchange(sock, splitter, ftype, data=b""):
    sock.sendall(p.encode_frame(ftype, data))
    return read_frames(sock, splitter, 1)[0][0]


def test_ports_are_picked_and_reported(sim):
    ports = sim.ports
    assert 0 not in (ports.rpc, ports.cnde, ports.udp)
    assert len({ports.rpc, ports.cnde, ports.udp}) == 3
    info = sim.address()
    assert info["rpc_port"] == ports.rpc and info["profile"] == "fr3" and info["lag_ms"] == 78.0
    assert f"rpc_port={ports.rpc}" in info["url"]


@pytest.mark.parametrize("timed", [pytest.param(True, marks=pytest.mark.slow), False])
def test_config_reply_lists_types_then_streams_at_the_period(timed):
    """On its own timer (real time: a loaded host delays frames, hence slow) and in lock-step on a FakeClock
    (the frames due as the clock moves, every one at its instant)."""
    clock = None if timed else FakeClock()
    sim = FairinoSim("fr3", rpc_port=0, cnde_port=0, udp_port=0, lockstep=clock).start()
    sock, splitter = cnde_connect(sim), p.FrameSplitter()
    names = ["actual_joint_pos", "main_code", "sub_code", "robot_state", "servoJ_cmd_num", "timestamp_us"]
    reply = exchange(sock, splitter, p.FrameType.OUTPUT_CONFIG, p.encode_output_config(8, names))
    assert reply.type == p.FrameType.MESSAGE
    assert p.decode_message(reply.data) == (0, "DOUBLE_6,INT32,INT32,UINT8,INT32,UINT64")
    start = exchange(sock, splitter, p.FrameType.START)
    assert p.decode_message(start.data)[0] == 0
    if clock is not None:
        clock.sleep(40 * 0.008 + 0.004)  # the 40th frame is due at 0.32 s
    frames, stamps = read_frames(sock, splitter, 40)
    assert [f.type for f in frames] == [p.FrameType.OUTPUT_DATA] * 40
    layout = p.StateLayout.from_names(names)
    values = [layout.unpack(f.data) for f in frames]
    assert values[0]["actual_joint_pos"] == pytest.approx((0, -90, 90, -90, -90, 0), abs=0.02)
    device = [v["timestamp_us"] for v in values]
    assert all(b > a for a, b in zip(device, device[1:], strict=False))
    if clock is not None:
        assert all(b - a == 8000 for a, b in zip(device, device[1:], strict=False))
    else:
        # the median: one late wake-up on a loaded host (then a frame sent at once) moves the mean, not it
        period = statistics.median(b - a for a, b in zip(stamps, stamps[1:], strict=False))
        assert period == pytest.approx(0.008, abs=0.001)
    # counts run modulo 256 in send order
    assert all((b.count - a.count) % 256 == 1 for a, b in zip(frames, frames[1:], strict=False))
    sock.sendall(p.encode_frame(p.FrameType.STOP))
    end = time.monotonic() + 1
    while time.monotonic() < end:
        f = read_frames(sock, splitter, 1)[0][0]
        if f.type == p.FrameType.MESSAGE:
            break
    if clock is not None:
        clock.sleep(0.1)
    sock.settimeout(0.1)
    with pytest.raises(TimeoutError):
        sock.recv(65536)  # nothing after the stop
    sock.close()
    sim.stop()


def test_unknown_field_is_not_found_and_the_sdk_default_list_is_served(sim):
    sock, splitter = cnde_connect(sim), p.FrameSplitter()
    reply = exchange(
        sock, splitter, p.FrameType.OUTPUT_CONFIG, p.encode_output_config(8, ["main_code", "no_such_field"])
    )
    status, text = p.decode_message(reply.data)
    assert status != 0 and text == "INT32,NOT_FOUND"
    refused = exchange(sock, splitter, p.FrameType.START)
    assert p.decode_message(refused.data)[0] != 0  # nothing configured yet
    reply = exchange(sock, splitter, p.FrameType.OUTPUT_CONFIG, p.encode_output_config(8, SDK_DEFAULT_FIELDS))
    status, text = p.decode_message(reply.data)
    assert status == 0 and len(text.split(",")) == len(SDK_DEFAULT_FIELDS)
    exchange(sock, splitter, p.FrameType.START)
    frames, _ = read_frames(sock, splitter, 3)
    assert all(len(f.data) == 1318 for f in frames)
    version = exchange(sock, splitter, p.FrameType.GET_VERSION)
    while version.type != p.FrameType.GET_VERSION:
        version = read_frames(sock, splitter, 1)[0][0]
    assert b"V3.9" in version.data
    sock.close()


def test_garbage_on_the_state_port_is_skipped(sim):
    sock, splitter = cnde_connect(sim), p.FrameSplitter()
    sock.sendall(
        b"\x00\x5a\xa5junk"
        + p.encode_frame(p.FrameType.OUTPUT_CONFIG, p.encode_output_config(20, ["main_code"]))
    )
    reply = read_frames(sock, splitter, 1)[0][0]
    assert p.decode_message(reply.data) == (0, "INT32")
    for bad in (p.encode_output_config(1001, ["main_code"]), b"\x08"):
        reply = exchange(sock, splitter, p.FrameType.OUTPUT_CONFIG, bad)
        assert p.decode_message(reply.data)[0] != 0
    sock.close()


def test_xmlrpc_methods(sim, fx):
    rpc = xmlrpc.client.ServerProxy(f"http://{sim.host}:{sim.ports.rpc}")
    assert rpc.GetControllerIP() == [0, "127.0.0.1"]
    err, *q = rpc.GetActualJointPosDegree(1)
    assert err == 0 and q == pytest.approx([0, -90, 90, -90, -90, 0], abs=0.02)
    assert rpc.GetRobotErrorCode() == [0, 0, 0]
    assert rpc.ServoJ(q, [0] * 4, 0, 0, 0.008, 0, 0, 0) == 101  # not enabled
    assert rpc.RobotEnable(1) == 0 and rpc.Mode(0) == 0
    assert fx.wait_until(lambda: rpc.ServoJ(q, [0] * 4, 0, 0, 0.008, 0, 0, 0) == 0, 1.0)
    assert rpc.ServoJ(q, [0] * 4, 0) == 3  # wrong parameter count
    assert rpc.ServoMoveStart() == 0 and rpc.ServoMoveEnd() == 0 and rpc.StopMotion() == 0
    assert rpc.ResetAllError() == 0
    with pytest.raises(xmlrpc.client.Fault):
        rpc.NoSuchMethod()


def udp_exchange(sim, sock, count, cmd, content):
    sock.sendto(p.encode_udp(count, cmd, content), (sim.host, sim.ports.udp))
    return p.decode_udp(sock.recvfrom(65535)[0])


def test_udp_commands_in_both_servoj_forms_are_answered(sim, fx):
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.settimeout(1)
    q = tuple(sim.snapshot().q)
    flat = p.encode_servoj(p.ServoJCommand(q, cmd_t=0.01))
    assert udp_exchange(sim, sock, 5, 376, flat) == p.UdpFrame(5, 376, "101")
    xmlrpc.client.ServerProxy(f"http://{sim.host}:{sim.ports.rpc}").RobotEnable(1)
    assert udp_exchange(sim, sock, 6, 689, "ServoMoveStart()").content == "0"
    rpc = xmlrpc.client.ServerProxy(f"http://{sim.host}:{sim.ports.rpc}")
    assert fx.wait_until(lambda: rpc.ServoJ(list(q), [0] * 4, 0, 0, 0.01, 0, 0, 0) == 0, 10.0)  # window over
    braced = p.encode_servoj(p.ServoJCommand(q, cmd_t=0.01), braces=True)
    before = sim.snapshot().cmd_num
    assert udp_exchange(sim, sock, 7, 376, braced) == p.UdpFrame(7, 376, "0")
    assert sim.snapshot().cmd_num == before + 1
    assert udp_exchange(sim, sock, 8, 376, "ServoJ(1,2)").content == "3"
    sock.sendto(b"garbage", (sim.host, sim.ports.udp))
    assert udp_exchange(sim, sock, 9, 690, "ServoMoveEnd()").content == "0"
    assert sim.stats["udp_bad"] == 2
    sock.close()


def test_faults_are_queued_and_passed_to_the_listener():
    seen = []
    with FairinoSim(
        "fr3",
        rpc_port=0,
        cnde_port=0,
        udp_port=0,
        on_fault=seen.append,
        overrides={"enable_ms": 0, "noise_deg": 0},
    ) as s:
        rpc = xmlrpc.client.ServerProxy(f"http://{s.host}:{s.ports.rpc}")
        rpc.RobotEnable(1)
        q = list(s.snapshot().q)
        assert rpc.ServoJ(q, [0] * 4, 0, 0, 0.01, 0, 0, 0) == 0
        q[2] += 30
        assert rpc.ServoJ(q, [0] * 4, 0, 0, 0.01, 0, 0, 0) == 14
        ev = s.faults.get(timeout=1)
        assert (ev.kind, ev.main, ev.sub, ev.joint) == ("refused", 1, 25, 2)
        assert seen == [ev] and "axis 3" in ev.text
        assert rpc.GetRobotErrorCode() == [0, 1, 25]


def test_bad_profile_and_taken_port_are_refused():
    with pytest.raises(ProfileError):
        FairinoSim("fr3", overrides={"nope": 1})
    with FairinoSim("fr3", rpc_port=0, cnde_port=0, udp_port=0) as first:
        clash = FairinoSim("fr3", rpc_port=0, cnde_port=first.ports.cnde, udp_port=0)
        with pytest.raises(SimError, match="CNDE port"):
            clash.start()
        clash.stop()
    with pytest.raises(SimError):
        FairinoSim("fr3").ports  # noqa: B018 - not started


def _fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def test_stop_closes_everything_and_frees_the_ports(fx):
    threads_before = {t.ident for t in threading.enumerate()}
    fds_before = _fds()
    s = FairinoSim("fr3", rpc_port=0, cnde_port=0, udp_port=0).start()
    ports = s.ports
    state = cnde_connect(s)
    state.sendall(p.encode_frame(p.FrameType.OUTPUT_CONFIG, p.encode_output_config(8, ["main_code"])))
    state.sendall(p.encode_frame(p.FrameType.START))
    xmlrpc.client.ServerProxy(f"http://{s.host}:{ports.rpc}").GetControllerIP()
    state.settimeout(10)
    data = state.recv(65536)  # the stream is up: its threads run when stop() comes
    s.stop()
    s.stop()  # idempotent
    assert not s.running
    while chunk := state.recv(65536):  # the client sees the end of the stream
        data += chunk
    state.close()
    assert fx.wait_until(lambda: {t.ident for t in threading.enumerate()} <= threads_before, 2.0)
    assert fx.wait_until(lambda: _fds() <= fds_before, 2.0)
    again = FairinoSim("fr3", rpc_port=ports.rpc, cnde_port=ports.cnde, udp_port=ports.udp).start()
    again.stop()
