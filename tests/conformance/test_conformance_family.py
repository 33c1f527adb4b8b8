"""Every registered family, through its registry hooks alone: its simulators' facts, lock keys, parameters
and time base. A family registered in devices/registry.py gets these tests (and the arm or bus suite) with
no line written for it here."""

from __future__ import annotations

import subprocess
import sys

import pytest

from servotool.clock import FakeClock, MonotonicClock
from servotool.devices.arm import clock_of
from servotool.devices.bus import bus_clock
from servotool.devices.family import ARM, BUS, SimParam
from servotool.devices.registry import (
    FAMILIES,
    FAMILY_MODULES,
    DeviceURLError,
    family_of,
    known_urls,
    lock_keys,
    open_arm,
    open_bus,
    parse_url,
    sim_names,
    url_facts,
)
from tests.conformance.families import ALL_URLS, SIM_CLOCK, with_params


def _open(url: str, **kwargs):
    kind = family_of(parse_url(url)).kind
    return (open_arm if kind == ARM else open_bus)(url, **kwargs)


@pytest.mark.parametrize("family", FAMILIES, ids=lambda f: f.name)
def test_every_family_ships_a_simulator_the_suite_runs_on(family):
    names = sim_names(family)
    assert names, f"{family.name}: no sim: name, so no conformance test runs on it"
    assert family.kind in (ARM, BUS)
    assert {f"sim:{n}" for n in names} <= set(known_urls(family.kind))
    keys = [p.key for p in family.sim_params()]
    assert all(isinstance(p, SimParam) for p in family.sim_params()) and len(keys) == len(set(keys))


@pytest.mark.parametrize("url", ALL_URLS)
def test_facts_of_a_simulator_name_its_family_and_kind(url):
    family = family_of(parse_url(url))
    facts = url_facts(url)
    assert (facts.family, facts.kind, facts.simulated, facts.url) == (family.name, family.kind, True, url)
    assert facts.n_joints > 0 and len(facts.joint_names) == facts.n_joints
    if family.kind == BUS:
        assert len(facts.joint_ids) == facts.n_joints and facts.position_range is not None
    else:
        assert facts.motion is not None and facts.motion.cmd_period_s > 0
    assert lock_keys(url) == []  # an embedded simulator is its own device
    assert url_facts(with_params(url, SIM_CLOCK)).n_joints == facts.n_joints


@pytest.mark.parametrize("url", ALL_URLS)
def test_an_unknown_parameter_is_refused_before_anything_opens(url):
    with pytest.raises(DeviceURLError, match="no_such_key"):
        _open(with_params(url, "no_such_key=1"))


@pytest.mark.parametrize("url", ALL_URLS)
def test_one_clock_rule_for_every_simulator(url):
    with pytest.raises(DeviceURLError, match="want clock=host"):
        _open(with_params(url, "clock=fast"))
    with pytest.raises(DeviceURLError, match="clock=sim asks for simulated time"):
        _open(with_params(url, SIM_CLOCK), clock=MonotonicClock())
    clock = FakeClock()
    device = _open(url, clock=clock)
    try:
        kind = family_of(parse_url(url)).kind
        assert (clock_of(device) if kind == ARM else bus_clock(device)) is clock  # lock-step on the caller's
    finally:
        device.close()


def test_the_fake_devices_are_families_like_any_other():
    from servotool.devices.fake.arm import FakeArm
    from servotool.devices.fake.bus import FakeBus

    assert {"servotool.devices.fake.family", "servotool.devices.fake.bus_family"} <= set(FAMILY_MODULES)
    assert [f.name for f in FAMILIES if f.name.startswith("fake")] == ["fake-arm", "fake-bus"]
    with open_arm("sim:fake-arm") as arm, open_bus("sim:fake-bus") as bus:
        assert isinstance(arm, FakeArm) and isinstance(bus, FakeBus)
        assert arm.simulated and bus.simulated


def test_the_fake_family_modules_import_nothing_heavy():
    code = (
        "import sys; import servotool.devices.fake.family, servotool.devices.fake.bus_family; "
        "print(sorted(m for m in ('numpy', 'servotool.devices.fake.arm', 'servotool.devices.fake.bus') "
        "if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
