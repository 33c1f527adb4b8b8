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


@pytest.mark.parametrize("url", ["sim:fr3?clock=host&clock=sim", "fairino://10.0.0.2?transport=udp&transport=rpc",
                                 "sim:rosorin-arm?baud=115200&clock=sim&baud=1000000"])
def test_a_parameter_given_twice_is_refused_not_last_one_wins(url):
    with pytest.raises(DeviceURLError, match="given more than once"):
        parse_url(url)
