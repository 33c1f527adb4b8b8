"""Properties of the recorder core over random status scripts (hypothesis, derandomized: the same draws
every run)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from servotool.clock import FakeClock
from servotool.recorder import FlightRecorder, RecorderSettings
from tests.recorder.helpers import AXES, run_frames

AXIS = st.sampled_from(AXES[:6])
# per poll-second: which axes answer what (absent: silent); values 0, a latch, or silence
ANSWER = st.one_of(st.just(0), st.sampled_from([0x20, 0x04, 0x24]), st.none())
SCRIPT = st.lists(st.dictionaries(AXIS, ANSWER, max_size=6), min_size=3, max_size=14)


@settings(max_examples=40, deadline=None, derandomize=True)
@given(script=SCRIPT, max_captures=st.integers(1, 3))
def test_bounded_and_every_capture_follows_a_clean_answer(script, max_captures):
    clock = FakeClock(0.0)
    rec = FlightRecorder(RecorderSettings(max_captures=max_captures), wall_time=lambda: 1.8e9)
    rec.connect(0.0)
    answers_seen: dict[object, list[tuple[float, int | None]]] = {}

    def status(t: float) -> dict[int, int | None]:
        answers = dict(script[min(int(t), len(script) - 1)])
        for axis, bits in answers.items():
            answers_seen.setdefault(axis, []).append((t, bits))
        return answers

    caps = run_frames(rec, clock, float(len(script) + 5), status)
    rec.begin_disconnect(clock.now())
    caps += rec.on_disconnect(clock.now())
    assert rec.fast_count <= 240 and rec.context_count <= 36
    assert len(caps) <= max_captures
    for cap in caps:
        h = cap.header
        for trig in h["trigger"]:
            history = answers_seen[trig["axis"]]
            detected = h["t_ref_monotonic"] + trig["detected_t"]
            before = [bits for t, bits in history if t < detected - 1e-5 and bits is not None]
            # its own zero answer (baseline or recovery) comes last before a trigger (times rounded to 1 us)
            assert before and before[-1] == 0, (trig, history)
            assert trig["last_clean_t"] is not None and trig["last_clean_t"] < trig["detected_t"]
        assert h["counts"]["fast"] + h["counts"]["context"] == len(cap.samples)
    # every axis that last answered non-zero is known latched; silence never clears a latch
    for axis, history in answers_seen.items():
        answered = [bits for _, bits in history if bits is not None]
        if answered and answered[-1]:
            assert axis in rec.latched
        if answered and answered[-1] == 0:
            assert axis not in rec.latched
