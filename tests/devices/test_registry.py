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
