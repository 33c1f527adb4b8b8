"""End to end on the FAIRINO simulator: a runaway provoked through the client is captured with its lead-up.

The recorder only reads the state stream; the raw step that provokes the runaway is sent by the test,
directly through the client, as another program streaming to the arm would.
"""

from __future__ import annotations

import threading
import time

import pytest

from servotool.clock import MonotonicClock
from servotool.devices.fairino.telemetry import FairinoSource, fault_word
from servotool.devices.registry import open_arm
from servotool.io.captures import read_capture
from servotool.recorder.summary import value
from servotool.runs.recorder.loop import RecordSettings, run_record


@pytest.mark.slow
def test_runaway_on_fr3_is_captured_with_its_lead_up(tmp_path):
    clock = MonotonicClock()
    arm = open_arm("sim:fr3?enable_ms=100&transport=rpc&seed=7&silence_ms=1000", now=clock.now)
    try:
        arm.enable()
        arm.warm_up(cmd_period_s=0.01, timeout_s=3.0)
        q0 = list(arm.latest_state().q)
    except BaseException:
        arm.close()
        raise
    step = list(q0)
    step[0] += 2.5  # a raw one-tick jump well over the 1.0-1.5 deg band

    def provoke() -> None:
        # the stimulus: hold for 3 s, then the raw step, re-sent for 0.6 s (fixed timing, nothing awaited)
        for k in range(360):
            if arm.sim is None:
                return
            try:
                arm.servo_j(q0 if k < 300 else step, 0.01)
            except Exception:
                return
            time.sleep(0.01)  # paces the stimulus at 100 Hz

    stimulus = threading.Thread(target=provoke, daemon=True)
    stimulus.start()
    out = run_record(
        FairinoSource(arm), clock, RecordSettings(dest=tmp_path, duration_s=8.0), handle_signals=False
    )
    stimulus.join(timeout=5)
    assert out.status == "complete", out.reason
    assert len(out.captures) == 1
    header, samples = read_capture(out.captures[0].path)
    assert header["trigger_axes"] == ["controller"]
    assert header["trigger"][0]["bits"] == fault_word(1, 32)
    assert header["lead_up_s"] >= 2.0
    assert header["tail_complete"]
    assert header["settings"]["status_period_s"] == 0.0  # the fault code comes with every state frame
    fast = [s for s in samples if s["ring"] == "fast"]
    before = [s for s in fast if s["t"] < header["last_clean_t"]]
    after = [s for s in fast if s["t"] > 0]
    assert before and all(s["codes"] == {"main_code": 0, "sub_code": 0} for s in before)
    assert after[-1]["codes"]["main_code"] == 1
    # the joint swept on its own after the latch: far beyond the 2.5 deg step
    travel = value(header, after[-1], "j1", "position") - value(header, before[-1], "j1", "position")
    assert travel > 14 * 2.5 - 1.0
