"""One CNDE client session on the simulator: answers configuration frames and streams state data.

The session runs in one thread: it waits on the socket until the next frame is due, answers what arrived,
and sends each data frame with a single send() (the vendor client reads one frame per recv(), and
TCP_NODELAY is set so frames are not merged). In lock-step (`timed=False`) the thread only answers what
arrives; the data frames are sent by `emit_due(t)`, called by whoever moves simulated time.
"""

from __future__ import annotations

import contextlib
import select
import socket
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any

from servotool.devices.fairino import protocol as p

StateSource = Callable[[], Mapping[str, Any]]


class CndeSession:
    """Serve one connected CNDE client until it disconnects or `close()` is called.

    `state()` returns the current field values by name (called once per data frame, at send time);
    `paused()` tells when to withhold data frames (fault injection: a controller that stops talking);
    `garbled()`, when to send them one byte short (fault injection: frames the client cannot read).
    A configuration asking for period 0 gets `default_period_ms` (a simulator convention); 1..1000 ms is
    served as asked, anything else refused. `table` holds the fields the session has (name -> wire type);
    a configuration naming another is refused in the shape `refusal` says: "types" (one type per name,
    NOT_FOUND where unknown), "named" (`NOT_FOUND name ...`) or "bare" (`NOT_FOUND`), as controllers differ.
    """

    def __init__(
        self,
        sock: socket.socket,
        state: StateSource,
        paused: Callable[[], bool],
        version: str,
        clock: Callable[[], float] = time.monotonic,
        default_period_ms: int = 8,
        timed: bool = True,
        garbled: Callable[[], bool] = lambda: False,
        table: Mapping[str, str] = p.FIELDS,
        refusal: str = "types",
    ) -> None:
        self.sock = sock
        self._table = table
        self._refusal = refusal
        self._state = state
        self._paused = paused
        self._garbled = garbled
        self._version = version
        self._clock = clock
        self._count = 0
        self._layout: p.StateLayout | None = None
        self._default_ms = default_period_ms
        self._period = default_period_ms / 1000.0
        self._streaming = False
        self._next = 0.0
        self._closed = False
        self._timed = timed
        self._send_lock = threading.Lock()  # lock-step: data frames and answers come from two threads
        self.splitter = p.FrameSplitter()
        self.frames_sent = 0
        self.peer: tuple[Any, ...] = ()  # the client's address, as accepted
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        sock.setblocking(True)

    def close(self) -> None:
        """Cut the connection (the client sees EOF); safe from any thread, idempotent."""
        if self._closed:
            return
        self._closed = True
        with contextlib.suppress(OSError):
            self.sock.shutdown(socket.SHUT_RDWR)

    def run(self) -> None:
        try:
            while not self._closed:
                wait = 0.1
                if self._streaming and self._timed:
                    wait = max(0.0, self._next - self._clock())
                readable, _, _ = select.select([self.sock], [], [], wait)
                if readable:
                    chunk = self.sock.recv(65536)
                    if not chunk:
                        break
                    for frame in self.splitter.feed(chunk):
                        self._handle(frame)
                if self._timed and self._streaming and self._clock() >= self._next:
                    self._tick()
        except (OSError, ValueError):
            pass  # peer reset or socket closed under us: the session simply ends
        finally:
            self._closed = True
            with contextlib.suppress(OSError):
                self.sock.close()

    def _send(self, ftype: int, data: bytes) -> None:
        # one call per whole frame: never a frame split over two writes, never a partial one
        with self._send_lock:
            self.sock.sendall(p.encode_frame(ftype, data, self._count))
            self._count = (self._count + 1) & 0xFF

    def next_due(self) -> float | None:
        """When the next data frame is due (clock time), None while not streaming."""
        return self._next if self._streaming and not self._closed else None

    def emit_due(self, t: float) -> None:
        """Lock-step: send the data frame due at or before `t` (the clock stops at each one, so at most
        one per call); a peer gone away ends the session quietly, as in timed mode."""
        if not self._streaming or self._closed or self._next > t:
            return
        self._next += self._period
        if self._next <= t:
            self._next = t + self._period
        if self._layout is None or self._paused():
            return
        try:
            self._send(p.FrameType.OUTPUT_DATA, self._data())
        except (OSError, ValueError):
            self.close()
            return
        self.frames_sent += 1

    def _reply(self, status: int, text: str = "") -> None:
        self._send(p.FrameType.MESSAGE, p.encode_message(status, text))

    def _tick(self) -> None:
        now = self._clock()
        self._next += self._period
        if self._next <= now:
            # fell behind (scheduler hiccup): skip the missed slots instead of bursting them out
            self._next = now + self._period
        if self._layout is None or self._paused():
            return
        self._send(p.FrameType.OUTPUT_DATA, self._data())
        self.frames_sent += 1

    def _data(self) -> bytes:
        assert self._layout is not None
        data = self._layout.pack(self._state())
        return data[:-1] if self._garbled() else data

    def _handle(self, frame: p.CndeFrame) -> None:
        kind = frame.type
        if kind == p.FrameType.OUTPUT_CONFIG:
            self._configure(frame.data)
        elif kind == p.FrameType.START:
            if self._layout is None:
                self._reply(p.MessageStatus.ERROR, "no output configuration")
                return
            if not self._streaming:
                # first data frame one period after the acknowledgement, never in the same segment; set
                # before the answer, so a lock-step clock moved once the client has it knows the frame is due
                self._next = self._clock() + self._period
                self._streaming = True
            self._reply(p.MessageStatus.OK)
        elif kind == p.FrameType.STOP:
            self._streaming = False
            self._reply(p.MessageStatus.OK)
        elif kind == p.FrameType.GET_VERSION:
            self._send(p.FrameType.GET_VERSION, self._version.encode("ascii"))
        elif kind == p.FrameType.SET_VERSION:
            self._reply(p.MessageStatus.OK)
        else:
            self._reply(p.MessageStatus.ERROR, f"frame type {kind} not supported")

    def _configure(self, data: bytes) -> None:
        try:
            period_ms, names = p.decode_output_config(data)
        except p.CndeFrameError as exc:
            self._reply(p.MessageStatus.ERROR, str(exc))
            return
        if not names:
            self._reply(p.MessageStatus.ERROR, "no field names")
            return
        period_ms = period_ms or self._default_ms
        if not 1 <= period_ms <= 1000:
            self._reply(p.MessageStatus.ERROR, f"period {period_ms} ms outside 1..1000")
            return
        types = p.config_reply_types(names, self._table)
        if p.NOT_FOUND in types:
            missing = [n for n, t in zip(names, types, strict=True) if t == p.NOT_FOUND]
            text = {"named": " ".join([p.NOT_FOUND, *missing]), "bare": p.NOT_FOUND}.get(self._refusal)
            self._reply(p.MessageStatus.ERROR, text or ",".join(types))
            return
        layout = p.StateLayout.from_names(names, self._table)
        if layout.size > p.MAX_DATA:
            self._reply(p.MessageStatus.ERROR, f"{layout.size} bytes per frame exceeds {p.MAX_DATA}")
            return
        self._layout = layout
        self._period = period_ms / 1000.0
        self._reply(p.MessageStatus.OK, ",".join(types))
