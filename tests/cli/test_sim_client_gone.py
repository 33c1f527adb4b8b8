"""The standalone simulators print no traceback for a client that goes away: an XML-RPC or CNDE client that
connects, sends half a request and resets the connection (SO_LINGER 0), one that resets before reading its
answer, and a serial client that closes its pty mid-frame or with replies unread. The simulator keeps
serving the next client and stops cleanly (before: socketserver's 'Exception occurred during processing of
request' with a ConnectionResetError or BrokenPipeError traceback on stderr for each)."""

from __future__ import annotations

import os
import select
import socket
import struct
import subprocess
import xmlrpc.client

import pytest

from tests.sim_process import start_sim_process, stop_sim_process

HALF_REQUESTS = [
    b"POST /RPC2 HTTP/1.1\r\nContent-Le",  # cut in the headers: the read is reset
    b"POST /RPC2 HTTP/1.1\r\nContent-Length: 500\r\n\r\n<?xml ver",  # cut in the body: the answer is reset
]


def _start(family: str, *args: str) -> tuple[subprocess.Popen, dict]:
    return start_sim_process(family, *args)


def _stop(proc: subprocess.Popen) -> str:
    return stop_sim_process(proc)


def _reset(host: str, port: int, data: bytes, wait_for_answer: bool) -> None:
    s = socket.create_connection((host, port), timeout=5)
    try:
        s.sendall(data)
        if wait_for_answer:  # the server has read all it will read and is answering (or waiting on more)
            select.select([s], [], [], 0.3)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    finally:
        s.close()  # with SO_LINGER 0: an RST, not a FIN


def test_an_rpc_client_that_resets_mid_request_prints_no_traceback():
    proc, info = _start("fairino", "--rpc-port", "0", "--cnde-port", "0", "--udp-port", "0")
    try:
        host = info["host"]
        for port in (info["rpc_port"], info["cnde_port"]):
            for data in HALF_REQUESTS:
                for wait in (False, True):
                    _reset(host, port, data, wait)
        full = xmlrpc.client.dumps(((1,)), "RobotEnable").encode()
        request = b"POST /RPC2 HTTP/1.1\r\nContent-Length: %d\r\n\r\n" % len(full) + full
        _reset(host, info["rpc_port"], request, False)  # the whole request, gone before the answer
        # the next client is served as ever
        assert xmlrpc.client.ServerProxy(f"http://{host}:{info['rpc_port']}").RobotEnable(1) == 0
    finally:
        err = _stop(proc)
    assert "Traceback" not in err and "Exception occurred" not in err, err
    assert "simulator stopped" in err


def _frames(family: str) -> bytes:
    if family == "dynamixel":
        from servotool.devices.dynamixel.protocol import encode_packet

        return b"".join(encode_packet(10 + i % 5, 1) for i in range(50))  # PINGs
    from servotool.devices.hiwonder.protocol import SubCommand, request_frame

    return b"".join(request_frame(SubCommand.READ_POSITION, 1) for _ in range(50))


@pytest.mark.parametrize("family", ["hiwonder", "dynamixel"])
def test_a_serial_client_that_closes_mid_frame_prints_no_traceback(family):
    proc, info = _start(family)
    try:
        frames = _frames(family)
        for data in (frames[:3], frames[: len(frames) // 2 + 1], frames):
            fd = os.open(info["path"], os.O_RDWR | os.O_NOCTTY)
            os.write(fd, data)
            os.close(fd)  # mid-frame, or with the replies unread
        fd = os.open(info["path"], os.O_RDWR | os.O_NOCTTY)
        try:
            os.write(fd, frames[: len(frames) // 50])  # one whole request: answered
            ready, _, _ = select.select([fd], [], [], 5)
            assert ready and os.read(fd, 1000)
        finally:
            os.close(fd)
    finally:
        err = _stop(proc)
    assert "Traceback" not in err, err
    assert "simulator stopped" in err
