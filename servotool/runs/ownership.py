"""One owner per arm: a run starts only when no other servotool process on this host holds the device and
the controller itself says nobody else is streaming to it or moving it.

Two checks, at two moments:

* `claim(url)`, before the device is opened: the host-wide advisory lock of the device address
  (io.devlock). Embedded simulators (`sim:...`) are each their own device, so they are never locked.
* `busy_problem(arm)`, after connecting and before enabling: what the controller's state stream says
  (another client in servo mode, the arm moving, a program running), through the Arm's `busy_reason()`.
"""

from __future__ import annotations

import contextlib
import ipaddress
import os
import socket
import stat
from collections.abc import Iterator
from typing import Any

from servotool.devices.registry import DeviceURLError, parse_url
from servotool.errors import Refused
from servotool.io.devlock import DeviceBusy, DeviceLock, LockUnavailable

# the ports a run sends commands to, per family, with their defaults: the first names the device; a run is
# refused when any of them is held (two controllers served on one host share the address, not the ports)
COMMAND_PORTS = {"fairino": (("rpc_port", "20003"), ("udp_port", "20007"))}
SERIAL_SCHEMES = ("hiwonder", "dxl")


def _host_address(target: str) -> str:
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


def device_keys(url: str) -> list[str]:
    """Every key a run on this URL must hold, [] for an embedded simulator (its own device). Every URL
    reaching the same controller (another transport, parameters, a spelling of its address) shares the first
    key, and so does every URL of one serial port, whichever family opens it. A network controller adds one
    key per further port it is sent commands on: a URL naming another controller's XML-RPC port but a held
    one's UDP port would stream to the held arm."""
    try:
        parsed = parse_url(url)
    except DeviceURLError:
        return []  # the opener will refuse it with its reason
    if parsed.simulated:
        return []
    if parsed.scheme in COMMAND_PORTS:
        host = _host_address(parsed.target)
        keys = []
        for n, (param, default) in enumerate(COMMAND_PORTS[parsed.scheme]):
            port = parsed.params.get(param, default)
            with contextlib.suppress(ValueError):
                port = str(int(port))
            # the first key keeps its old spelling: a process of an older version holding it still conflicts
            where = port if n == 0 else f"{param}-{port}"
            keys.append(f"{parsed.scheme}-{host}-{where}")
        return keys
    # a serial device: the same port reached through a symlink, or by another family, is the same bus; and
    # so is another node of one character device (a bind-mounted /dev, a node made with mknod): its device
    # number is a second key (the path stays the first, which an older version's process holds)
    kind = "serial" if parsed.scheme in SERIAL_SCHEMES else parsed.scheme
    keys = [f"{kind}-{os.path.realpath(parsed.target)}"]
    with contextlib.suppress(OSError, ValueError):
        info = os.stat(parsed.target)
        if stat.S_ISCHR(info.st_mode):
            keys.append(f"{kind}-char-{os.major(info.st_rdev)}-{os.minor(info.st_rdev)}")
    return keys


def device_key(url: str) -> str | None:
    """The key that names the device a URL opens (the first of `device_keys`), or None for an embedded
    simulator."""
    keys = device_keys(url)
    return keys[0] if keys else None


@contextlib.contextmanager
def claim(url: str) -> Iterator[DeviceLock | None]:
    """Hold the device's host-wide locks (`device_keys`) for the context; DeviceBusy (a Refused, exit 2)
    when another process holds any of them. Yields the first lock, None for an embedded simulator."""
    keys = device_keys(url)
    if not keys:
        yield None
        return
    with contextlib.ExitStack() as stack:
        locks = [stack.enter_context(DeviceLock(key)) for key in keys]
        yield locks[0]


def busy_problem(arm: Any) -> str | None:
    """What the controller's state says about another owner, or None when the arm is free (or the backend
    cannot tell). Call after connecting, before enabling."""
    reason = getattr(arm, "busy_reason", None)
    if reason is None:
        return None
    text = reason()
    return f"{arm.url} is busy: {text}; one run per arm" if text else None


def require_free(arm: Any) -> None:
    """Refused when `busy_problem(arm)` finds another owner."""
    problem = busy_problem(arm)
    if problem:
        raise Refused(problem)


__all__ = [
    "DeviceBusy", "LockUnavailable", "busy_problem", "claim", "device_key", "device_keys", "require_free",
]
