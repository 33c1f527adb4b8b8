import pytest

from servotool.devices.registry import DeviceURLError, open_arm, parse_url


def test_parse_urls():
    u = parse_url("sim:fr3?lag_ms=70&seed=4")
    assert (u.scheme, u.target, u.params, u.simulated) == ("sim", "fr3", {"lag_ms": "70", "seed": "4"}, True)
    u = parse_url("fairino://192.168.58.2?transport=rpc")
    assert (u.scheme, u.target, u.params["transport"], u.simulated) == (
        "fairino",
        "192.168.58.2",
        "rpc",
        False,
    )
    u = parse_url("hiwonder:///dev/ttyAMA0?baud=1000000")
    assert (u.scheme, u.target) == ("hiwonder", "/dev/ttyAMA0")


@pytest.mark.parametrize("bad", ["", "fr3", "sim:", "fairino://"])
def test_bad_urls_refused(bad):
    with pytest.raises(DeviceURLError):
        parse_url(bad)


def test_unknown_device_named_in_error():
    with pytest.raises(DeviceURLError, match="sim:ur5"):
        open_arm("sim:ur5")


def test_a_port_after_the_host_is_refused_with_the_query_form():
    with pytest.raises(DeviceURLError, match="rpc_port"):
        parse_url("fairino://127.0.0.1:1")


def test_sim_names_come_from_each_familys_profiles():
    from servotool.devices.fairino.profiles import PROFILES as FAIRINO
    from servotool.devices.hiwonder.profiles import PROFILES as HIWONDER
    from servotool.devices.registry import ARM, BUS, known_urls

    assert {f"sim:{n}" for n in FAIRINO} <= set(known_urls(ARM))
    assert {f"sim:{n}" for n in HIWONDER} <= set(known_urls(BUS))
    assert "fairino://" in known_urls(ARM) and "hiwonder://" in known_urls(BUS)


def test_every_sim_name_belongs_to_one_family():
    from servotool.devices.registry import FAMILIES, sim_names

    names = [n for fam in FAMILIES for n in sim_names(fam)]
    assert len(names) == len(set(names))


def test_a_url_of_the_other_kind_is_named_as_such():
    from servotool.devices.registry import open_bus

    with pytest.raises(DeviceURLError, match="opens a arm|opens an arm|not a bus"):
        open_bus("sim:fr3")
    with pytest.raises(DeviceURLError, match="not a arm|not an arm"):
        open_arm("hiwonder:///dev/null")


def test_url_errors_are_settings_errors_with_exit_2():
    from servotool.errors import ExitCode, SettingsError

    with pytest.raises(SettingsError) as err:
        parse_url("nonsense")
    assert err.value.exit_code == ExitCode.USAGE


def test_a_real_fairino_client_does_not_import_its_simulator():
    import subprocess
    import sys

    code = (
        "import sys; import servotool.devices.fairino.client; "
        "print('servotool.devices.fairino.sim' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


@pytest.mark.parametrize(
    "url",
    [
        "sim:fr3?clock=host&clock=sim",
        "fairino://10.0.0.2?transport=udp&transport=rpc",
        "sim:rosorin-arm?baud=115200&clock=sim&baud=1000000",
    ],
)
def test_a_parameter_given_twice_is_refused_not_last_one_wins(url):
    with pytest.raises(DeviceURLError, match="given more than once"):
        parse_url(url)


def test_one_clock_rule_for_every_simulator_url():
    from servotool.clock import FakeClock, MonotonicClock
    from servotool.devices.url import sim_clock

    fake, host = FakeClock(), MonotonicClock()
    params = {"clock": "sim", "seed": "1"}
    new = sim_clock(params, "sim:x?clock=sim", None)
    assert isinstance(new, FakeClock) and params == {"seed": "1"}  # the key is consumed
    assert sim_clock({"clock": "sim"}, "sim:x", fake) is fake
    assert sim_clock({"clock": "host"}, "sim:x", fake) is fake  # the caller's FakeClock: lock-step on it
    assert sim_clock({}, "sim:x", host) is host and sim_clock({}, "sim:x", None) is None
    with pytest.raises(DeviceURLError, match="clock=sim asks for simulated time"):
        sim_clock({"clock": "sim"}, "sim:x", host)
    with pytest.raises(DeviceURLError, match="want clock=host"):
        sim_clock({"clock": "fast"}, "sim:x", None)


SIM_OPENERS = [("sim:fr3", "arm"), ("sim:rosorin-arm", "bus"), ("sim:microduck", "bus")]


@pytest.mark.parametrize(("url", "kind"), SIM_OPENERS)
def test_every_family_refuses_simulated_time_against_the_callers_host_clock(url, kind):
    from servotool.clock import MonotonicClock
    from servotool.devices.registry import open_bus

    opener = open_arm if kind == "arm" else open_bus
    with pytest.raises(
        DeviceURLError, match="clock=sim asks for simulated time, but this command keeps the host's clock"
    ):
        opener(f"{url}?clock=sim", clock=MonotonicClock())
    with pytest.raises(DeviceURLError, match="want clock=host"):
        opener(f"{url}?clock=fast")


@pytest.mark.parametrize(("url", "kind"), SIM_OPENERS)
def test_every_family_runs_on_the_callers_fake_clock(url, kind):
    from servotool.clock import FakeClock
    from servotool.devices.bus import bus_clock
    from servotool.devices.registry import open_bus

    clock = FakeClock()
    device = open_arm(url, clock=clock) if kind == "arm" else open_bus(url, clock=clock)
    try:
        assert (device.clock if kind == "arm" else bus_clock(device)) is clock
    finally:
        device.close()


FLAG_URLS = [
    ("sim:fr3?udp_reply=", "arm"),
    ("sim:rosorin-arm?torque_2=", "bus"),
    ("sim:microduck?torque=", "bus"),
]


@pytest.mark.parametrize(("url", "kind"), FLAG_URLS)
def test_every_family_reads_a_boolean_parameter_the_same_way(url, kind):
    from servotool.devices.registry import open_bus
    from servotool.devices.url import url_flag

    assert [url_flag(w) for w in ("1", "True", " yes ", "ON")] == [True] * 4
    assert [url_flag(w) for w in ("0", "false", "No", "off")] == [False] * 4
    assert url_flag("", blank=True) is True and url_flag("", blank=False) is False
    opener = open_arm if kind == "arm" else open_bus
    with pytest.raises(DeviceURLError, match="not a boolean: 'maybe' \\(want 1/0, true/false"):
        opener(url + "maybe")
