"""XML-RPC to the controller with a socket timeout and a way to abort a call in flight."""

from __future__ import annotations

import contextlib
import http.client
import socket
import xmlrpc.client


class TimeoutTransport(xmlrpc.client.Transport):
    """An xmlrpc Transport whose connections time out after `timeout_s`, and whose current socket can be
    shut down from another thread (`abort()`), which makes a blocked call fail at once."""

    def __init__(self, timeout_s: float) -> None:
        super().__init__()
        self.timeout_s = timeout_s

    def make_connection(self, host: str) -> http.client.HTTPConnection:  # type: ignore[override]
        conn = super().make_connection(host)
        conn.timeout = self.timeout_s
        return conn

    def set_timeout(self, timeout_s: float) -> None:
        """Timeout for the next calls, the open connection included (callers serialise calls)."""
        self.timeout_s = timeout_s
        conn = self._connection[1] if self._connection else None
        if conn is not None:
            conn.timeout = timeout_s
            if getattr(conn, "sock", None) is not None:
                with contextlib.suppress(OSError):
                    conn.sock.settimeout(timeout_s)

    def abort(self) -> None:
        conn = self._connection[1] if self._connection else None
        sock = getattr(conn, "sock", None)
        if sock is not None:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)


def server_proxy(
    host: str, port: int, timeout_s: float
) -> tuple[xmlrpc.client.ServerProxy, TimeoutTransport]:
    transport = TimeoutTransport(timeout_s)
    proxy = xmlrpc.client.ServerProxy(f"http://{host}:{port}/RPC2", transport=transport, allow_none=True)
    return proxy, transport
