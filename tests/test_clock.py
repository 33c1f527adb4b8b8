from servotool.clock import FakeClock, MonotonicClock


def test_fake_clock_advances_only_when_waiting():
    clock = FakeClock(start=10.0)
    seen = []
    clock.on_advance(seen.append)
    assert clock.now() == 10.0
    assert clock.sleep_until(10.5) == 10.5
    assert clock.sleep_until(10.2) == 10.5  # a past deadline does not go back
    assert clock.sleep(0.25) == 10.75
    assert clock.sleep(-1) == 10.75
    assert seen == [10.5, 10.75]


def test_monotonic_clock_waits_to_absolute_deadlines():
    clock = MonotonicClock()
    start = clock.now()
    reached = [clock.sleep_until(start + k * 0.002) for k in range(1, 6)]
    # never early, and each deadline is anchored to start (no accumulation)
    for k, t in enumerate(reached, start=1):
        assert t >= start + k * 0.002
    assert clock.sleep_until(start) >= start  # past deadline returns at once
