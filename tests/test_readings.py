"""The one range check every reading passes, and the number format of messages that print readings."""

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from servotool.devices.family import readable
from servotool.devices.registry import url_facts
from servotool.readings import PHYSICAL_BOUND, BadFrames, Readable, fixed, from_header, header_spans, sig

pytestmark = pytest.mark.filterwarnings("error::RuntimeWarning")

finite = st.floats(allow_nan=False, allow_infinity=False)
bounds = st.floats(min_value=-PHYSICAL_BOUND, max_value=PHYSICAL_BOUND)
values = st.one_of(
    st.floats(), st.integers(min_value=-(10**400), max_value=10**400), st.integers(-2000, 2000)
)


@given(bounds, bounds, values, st.integers(min_value=-1, max_value=3))
def test_the_check_accepts_every_value_in_range_and_refuses_every_value_outside(a, b, value, channel):
    lo, hi = min(a, b), max(a, b)
    r = Readable(((lo, hi),) * 3, default=(lo, hi))
    number = isinstance(value, int) or math.isfinite(value)
    inside = number and lo <= value <= hi  # exact for an int beyond any float too
    assert r.admits(value, channel) is inside
    # a frame's first bad channel is the first value outside its span
    assert r.first_bad([lo, hi, value]) == (None if inside else 2)


@given(
    st.floats(min_value=-PHYSICAL_BOUND, max_value=PHYSICAL_BOUND),
    st.floats(min_value=1.0001, max_value=1e300),
)
def test_every_finite_value_within_the_physical_bound_is_a_reading_where_nothing_else_is_known(x, k):
    assert Readable().admits(x) and not Readable().admits(math.copysign(PHYSICAL_BOUND * k, x))


def test_what_is_no_number_is_no_reading():
    r = Readable()
    assert not any(r.admits(v) for v in (None, "12", True, 10**400, math.nan, -math.inf))


def test_a_board_servo_reads_within_its_span_and_a_margin_and_15496_is_none():
    r = readable(url_facts("sim:rosorin-arm"))
    assert r.admits(0) and r.admits(1000) and r.admits(-20) and not r.admits(15496)


def test_an_arm_reads_its_joint_ranges_widened_by_a_margin():
    facts = url_facts("sim:fake-arm")
    r = readable(facts)
    (lo, hi) = facts.joint_ranges[0]
    assert r.admits(hi + 10, 0) and not r.admits(hi + 100, 0) and not r.admits(1e300, 0)
    assert from_header(header_spans(r)) == Readable(r.spans)


@pytest.mark.parametrize("text", ["", "x", "[[0]]", "[1, 2]", '[[0, "nan"]]', "[[3, 1]]", "{}"])
def test_a_header_that_states_no_spans_gives_the_physical_bound(text):
    assert from_header(text) == Readable()


@given(st.one_of(finite, st.integers(min_value=-(10**500), max_value=10**500)))
def test_a_number_in_a_message_is_a_few_digits_whatever_its_size(x):
    assert len(sig(x)) <= 12 and len(fixed(x)) <= 14


def test_messages_keep_their_usual_look_for_ordinary_numbers():
    assert (sig(412), sig(0.123456), sig(1e300), fixed(4.0), fixed(1e300)) == (
        "412",
        "0.1235",
        "1e+300",
        "4.000",
        "1e+300",
    )


def test_bad_frames_are_counted_and_said_once_each():
    bad = BadFrames()
    for _ in range(5):
        bad.add("servo 4 position", 15496)
    bad.add("q1", 1e300)
    assert bad.count == 6
    assert bad.note() == "6 bad frames left out (impossible readings: servo 4 position = 15496, q1 = 1e+300)"
    assert BadFrames().note() is None
