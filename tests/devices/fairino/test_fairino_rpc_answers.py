"""A controller's XML-RPC answer the client cannot read is one DeviceError naming the call, never a parser's
traceback: at connect (GetControllerIP) and in a run (an error-code call)."""

from __future__ import annotations

import http.server
import threading
from collections.abc import Iterator

import pytest

from servotool.devices.arm import DeviceError
from servotool.devices.fairino.rpc import server_proxy
from servotool.devices.fairino.sim import FairinoSim
from servotool.devices.registry import open_arm


def _response(value_xml: str) -> bytes:
    return (
        f"<?xml version='1.0'?><methodResponse><params><param><value>{value_xml}</value></param>"
        "</params></methodResponse>"
    ).encode()


BODIES = {
    "not xml": b"\x00\xffgarbage <<",
    "empty response": b"<?xml version='1.0'?><methodResponse></methodResponse>",
    "int that is not one": _response("<int>abc</int>"),
    "a word": _response("<string>ok</string>"),
    "an empty list": _response("<array><data></data></array>"),
    "a struct": _response("<struct></struct>"),
    "a boolean": _response("<boolean>1</boolean>"),
}


class _Garbage(http.server.BaseHTTPRequestHandler):
    body = b""

    def do_POST(self) -> None:  # noqa: N802 (the handler's fixed name)
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        self.send_response(200)
        self.send_header("Content-Type", "text/xml")
        self.send_header("Content-Length", str(len(self.body)))
        self.end_headers()
        self.wfile.write(self.body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def garbage_server() -> Iterator[tuple[int, type[_Garbage]]]:
    handler = type("Handler", (_Garbage,), {})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server.server_address[1], handler
    finally:
        server.shutdown()
        server.server_close()


@pytest.mark.parametrize("kind", ["not xml", "empty response", "int that is not one"])
def test_an_unreadable_answer_at_connect_is_a_device_error(garbage_server, kind: str) -> None:
    port, handler = garbage_server
    handler.body = BODIES[kind]
    with FairinoSim("fr3", rpc_port=0, cnde_port=0, udp_port=0) as sim:
        url = f"fairino://127.0.0.1?cnde_port={sim.ports.cnde}&udp_port={sim.ports.udp}&rpc_port={port}"
        with pytest.raises(DeviceError, match="XML-RPC"):
            open_arm(url, connect_timeout_s=2.0)


@pytest.mark.parametrize("kind", sorted(BODIES))
def test_an_unreadable_answer_in_a_run_is_a_device_error(garbage_server, kind: str) -> None:
    port, handler = garbage_server
    handler.body = BODIES[kind]
    arm = open_arm("sim:fr3?enable_ms=100&clock=sim")
    try:
        # from here on the controller's XML-RPC answers are the garbage server's
        arm._proxy, arm._transport = server_proxy("127.0.0.1", port, 2.0)
        with pytest.raises(DeviceError, match="StopMotion") as info:
            arm.stop_motion()
        assert "Traceback" not in str(info.value)
    finally:
        arm.close()
