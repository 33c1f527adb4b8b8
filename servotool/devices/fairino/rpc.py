"""XML-RPC to the controller with a socket timeout and a way to abort a call in flight."""

from __future__ import annotations

import contextlib
import http.client
import select
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


def kept_socket(transport: TimeoutTransport) -> socket.socket | None:
    """The socket of the connection the transport keeps open between calls (HTTP/1.1 keep-alive), if any."""
    conn = transport._connection[1] if transport._connection else None
    return getattr(conn, "sock", None)


def closed_by_peer(sock: socket.socket) -> bool:
    """True when the server closed or reset this idle connection (read without waiting or consuming)."""
    try:
        readable, _, _ = select.select([sock], [], [], 0)
        if not readable:
            return False
        return sock.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT) == b""
    except BlockingIOError:
        return False
    except (OSError, ValueError):
        return True


def port_answers(host: str, port: int, timeout_s: float) -> bool:
    """Whether a TCP connection to host:port can be opened within timeout_s (it is closed at once)."""
    try:
        with socket.create_connection((host, port), timeout=timeout_s):
            return True
    except OSError:
        return False
