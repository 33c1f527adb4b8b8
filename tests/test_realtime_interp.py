"""The interpreter's hold: overlapping holders restore what was there before the first."""

import gc
import sys

from servotool import realtime_interp


def test_overlapping_holds_restore_the_settings_from_before_the_first():
    switch = sys.getswitchinterval()
    assert gc.isenabled()
    realtime_interp.hold(0.0005)  # a device's answering thread
    with realtime_interp.held(0.001):  # the stream loop, which takes over from it ...
        realtime_interp.release()  # ... and ends the device's hold inside its own
        assert not gc.isenabled() and sys.getswitchinterval() == 0.0005
    assert gc.isenabled() and sys.getswitchinterval() == switch
    realtime_interp.release()  # one too many changes nothing
    assert gc.isenabled() and sys.getswitchinterval() == switch
