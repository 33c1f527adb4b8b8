"""Lock keys: the names under which one process owns one device host-wide (io.devlock holds them).

Two kinds, one per way a device is reached, so a family's `lock_keys` hook is one call:

* `host_keys(scheme, host, ports)`: a network device. The host is written one way whatever its spelling (a
  name, 127.1, an IPv4-mapped IPv6 address; every loopback address is one host), and the keys never depend
  on the working folder. One key per command port: a URL naming another controller's first port but a
  held one's second would stream to the held arm.
* `serial_keys(path)`: a serial device, by its resolved path and, for a character device, its device
  number, under one prefix for every family: two families on one port are one bus.

Pure apart from name resolution (`getaddrinfo`) and `stat` of the device path; nothing is opened.
"""

from __future__ import annotations

import contextlib
import ipaddress
import os
import socket
import stat
from collections.abc import Sequence


def host_address(target: str) -> str:
    """One spelling per host: the address a name or numeric form resolves to (127.1, 0x7f000001, a
    trailing dot, an IPv4-mapped IPv6 address); every loopback or unspecified address is one host. A name
    that does not resolve stays as written (the opener will say it cannot be reached)."""
    host = target.strip("[]").lower().rstrip(".")
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        try:
            address = ipaddress.ip_address(socket.getaddrinfo(host, None, proto=socket.IPPROTO_TCP)[0][4][0])
        except (OSError, UnicodeError, ValueError):
            return host
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    if address.is_loopback or address.is_unspecified:
        return "127.0.0.1"
    return str(address)


def host_keys(scheme: str, host: str, ports: Sequence[tuple[str, str]]) -> list[str]:
    """The keys of a network device: `scheme-ADDRESS-PORT` for the first (name, port) pair, then
    `scheme-ADDRESS-name-PORT` for each further one. A port written with leading zeros or a sign is the
    same port. At least one key is returned (ports may be empty: the host alone)."""
    address = host_address(host)
    if not ports:
        return [f"{scheme}-{address}"]
    keys = []
    for n, (name, port) in enumerate(ports):
        with contextlib.suppress(ValueError):
            port = str(int(port))
        keys.append(f"{scheme}-{address}-{port}" if n == 0 else f"{scheme}-{address}-{name}-{port}")
    return keys


def serial_keys(path: str) -> list[str]:
    """The keys of a serial device: its resolved path (through symbolic links, made absolute) and, for a
    character device, its device number (another node of the same device is the same bus)."""
    keys = [f"serial-{os.path.realpath(path)}"]
    with contextlib.suppress(OSError, ValueError):
        info = os.stat(path)
        if stat.S_ISCHR(info.st_mode):
            keys.append(f"serial-char-{os.major(info.st_rdev)}-{os.minor(info.st_rdev)}")
    return keys


__all__ = ["host_address", "host_keys", "serial_keys"]
