"""The in-process fake devices: an arm (`sim:fake-arm`) and a servo bus (`sim:fake-bus`).

No socket, no thread, no serial port: each device is one Python object that computes what it measures from
what it was sent, on the clock it was given (a FakeClock with `?clock=sim`: lock-step, exact and fast). They
check their input as the real devices do, can lose their link on demand, and announce themselves as
simulated. `family.py` (the arm) and `bus_family.py` (the bus) are their two registry entries.

Kept light: `family.py` and `bus_family.py` are imported for `servotool --help`; the devices
(`arm.FakeArm`, `bus.FakeBus`) load when a URL is opened.
"""
