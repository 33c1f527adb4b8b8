"""Device families, one package each (protocol.py: bytes <-> dataclasses; client.py: the real transport;
sim.py: a simulator speaking the same wire protocol).

* arm.py, bus.py: the typed interfaces runs/ and cli/ program against (`Arm`, `Bus`).
* url.py: device URLs (`parse_url`, `DeviceURL`, `DeviceURLError`).
* registry.py: `open_arm` / `open_bus`; one `Family` entry per family maps its schemes and its simulator
  profile names (`sim:<name>`) to its opener, imported only when a URL needs it.
"""
