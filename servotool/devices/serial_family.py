"""The opening every serial bus family shares: `SerialOpener`, the skeleton of a family's `open_url`.

A family subclasses it and fills in its hooks; `open` then always does, in order:

1. read the client's own URL parameters (`options`, popping them; DeviceURLError naming the parameter and
   its bounds) and the profile the URL names (`profile`), before anything opens;
2. a `sim:` URL: the caller's clock or the URL's `clock=` (devices.url.sim_clock), the simulator started on
   a pty (`start_sim`, given the parameters left: they are the simulator's), the port opened on it
   (`connect`; the simulator is stopped again if that fails), and a lock-step FakeClock attached to the
   bus's `sync` so simulated time waits for the simulator;
3. a real URL: any parameter left is refused (one message for every family), as is a pyserial URL (it would
   reach the device under a lock of its own: a second writer); the port opened (`connect`, simulated when
   a `servotool sim` serves that pty), then `verify` (the bus is closed again if it raises).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from typing import Any, Generic, Protocol, TypeVar

from servotool.devices.url import DeviceURL, DeviceURLError, did_you_mean, sim_clock


class SimServer(Protocol):
    """A simulator serving a pty: its path, and close() to stop it."""

    @property
    def path(self) -> str: ...

    def close(self) -> None: ...


class Syncable(Protocol):
    def sync(self, timeout_s: float = 2.0) -> None: ...

    def close(self) -> None: ...


B = TypeVar("B", bound=Syncable)


def unknown_parameters(parsed: DeviceURL, params: dict[str, str], known: tuple[str, ...]) -> DeviceURLError:
    """The refusal of a real device URL's parameters the client does not take."""
    return DeviceURLError(
        f"device URL {parsed.raw!r}: unknown parameters {sorted(params)} (known: {', '.join(known)})"
        + "".join(did_you_mean(key, known) for key in sorted(params))
    )


def attach_lock_step(bus: Syncable, clock: Any) -> None:
    """A lock-step FakeClock (one with `attach`) waits for the bus's simulator before time moves on."""
    attach: Callable[[Callable[[], object]], None] | None = getattr(clock, "attach", None)
    if attach is not None:
        attach(bus.sync)


class SerialOpener(ABC, Generic[B]):
    """The skeleton of a serial bus family's opener (see the module docstring). client_keys: the URL
    parameters the client takes; example: a real URL of the family, named when a pyserial URL is refused."""

    client_keys: tuple[str, ...] = ()
    example: str = ""

    @abstractmethod
    def options(self, params: dict[str, str], parsed: DeviceURL, kwargs: dict[str, Any]) -> dict[str, Any]:
        """Pop the client's parameters from `params`, bounded; DeviceURLError for a bad one."""

    @abstractmethod
    def profile(self, parsed: DeviceURL, opts: dict[str, Any]) -> Any:
        """The profile the URL opens with (None when a real URL names none); DeviceURLError if unknown."""

    @abstractmethod
    def start_sim(self, profile: Any, params: dict[str, str], clock: Any) -> SimServer:
        """Start the family's simulator on a pty (DeviceURLError for a parameter it refuses)."""

    @abstractmethod
    def connect(
        self,
        path: str,
        parsed: DeviceURL,
        opts: dict[str, Any],
        profile: Any,
        *,
        simulated: bool,
        server: SimServer | None,
        clock: Any,
    ) -> B:
        """Open the port at `path` and return the bus on it (DeviceError when the port cannot be opened)."""

    def verify(
        self, bus: B, parsed: DeviceURL, opts: dict[str, Any], profile: Any, kwargs: dict[str, Any]
    ) -> None:
        """A real bus just opened: raise when nothing answers on it (the skeleton closes it); default none."""

    def served(self, path: str) -> bool:
        """True when a `servotool sim` of this machine serves the pty at `path` (a simulator all the same)."""
        from servotool.io.sim_ptys import served_by

        return served_by(path) is not None

    def open(self, parsed: DeviceURL, **kwargs: Any) -> B:
        """Open the bus a parsed URL names (see the module docstring)."""
        params = dict(parsed.params)
        opts = self.options(params, parsed, kwargs)
        if parsed.simulated:
            clock = sim_clock(params, parsed.raw, kwargs.get("clock"))
            profile = self.profile(parsed, opts)
            server = self.start_sim(profile, params, clock)
            try:
                bus = self.connect(
                    server.path, parsed, opts, profile, simulated=True, server=server, clock=clock
                )
            except BaseException:
                server.close()
                raise
            attach_lock_step(bus, clock)
            return bus
        if params:
            raise unknown_parameters(parsed, params, self.client_keys)
        if "://" in parsed.target:
            raise DeviceURLError(
                f"device URL {parsed.raw!r}: want a serial device path ({self.example}), not a pyserial URL"
            )
        profile = self.profile(parsed, opts)
        bus = self.connect(
            parsed.target,
            parsed,
            opts,
            profile,
            simulated=self.served(parsed.target),
            server=None,
            clock=kwargs.get("clock"),
        )
        try:
            self.verify(bus, parsed, opts, profile, kwargs)
        except BaseException:  # nothing answered, a signal or a lost link while probing: the port is not kept
            bus.close()
            raise
        return bus


__all__ = ["SerialOpener", "SimServer", "attach_lock_step", "unknown_parameters"]
