"""Device families, one package each (protocol.py: bytes <-> dataclasses; client.py: the real transport;
sim.py: a simulator speaking the same wire protocol), opened by URL through registry.py."""
