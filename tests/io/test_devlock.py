"""The host-wide device lock: a second holder is refused at once, the kernel frees it when a process ends."""

import subprocess
import sys

import pytest

from servotool.errors import ExitCode, Refused
from servotool.io.devlock import DeviceBusy, DeviceLock, lock_name
from servotool.runs.ownership import claim, device_key


def test_second_holder_is_refused_naming_the_first(tmp_path):
    with DeviceLock("fairino-10.0.0.2-20003", tmp_path) as first:
        assert first.held
        with pytest.raises(DeviceBusy) as info:
            DeviceLock("fairino-10.0.0.2-20003", tmp_path).acquire()
        assert isinstance(info.value, Refused) and info.value.exit_code == ExitCode.USAGE
        assert "pid" in str(info.value)
        # another device is free
        with DeviceLock("fairino-10.0.0.3-20003", tmp_path):
            pass
    with DeviceLock("fairino-10.0.0.2-20003", tmp_path):
        pass


def test_lock_held_by_another_process_and_freed_when_it_dies(tmp_path):
    code = (
        "import sys, time; from servotool.io.devlock import DeviceLock;"
        f"l = DeviceLock('k', {str(tmp_path)!r}).acquire(); print('held', flush=True); sys.stdin.readline()"
    )
    child = subprocess.Popen(
        [sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        assert child.stdout.readline().strip() == "held"
        with pytest.raises(DeviceBusy):
            DeviceLock("k", tmp_path).acquire()
    finally:
        child.kill()
        child.wait()
    with DeviceLock("k", tmp_path):
        pass


def test_device_keys():
    assert device_key("sim:fr3") is None
    assert device_key("sim:fr3?lag_ms=70") is None
    a = device_key("fairino://192.168.58.2")
    assert (
        a
        == device_key("fairino://192.168.58.2?transport=rpc")
        == device_key("fairino://192.168.58.2?rpc_port=20003")
    )
    assert device_key("fairino://localhost?rpc_port=4000") == device_key("fairino://127.0.0.1?rpc_port=4000")
    assert device_key("fairino://127.0.0.1?rpc_port=4000") != device_key("fairino://127.0.0.1?rpc_port=4001")
    assert "/" not in lock_name("hiwonder-/dev/ttyUSB0")


@pytest.mark.parametrize(
    "alias",
    [
        "fairino://127.1",
        "fairino://2130706433",
        "fairino://0x7f000001",
        "fairino://127.000.000.001",
        "fairino://LOCALHOST",
        "fairino://localhost.",
        "fairino://[::1]",
        "fairino://[::ffff:127.0.0.1]",
        "fairino://127.0.0.2",
        "fairino://0.0.0.0",
        "fairino://127.0.0.1?rpc_port=020003",
        "FAIRINO://127.0.0.1?transport=rpc&rpc_port=+20003",
    ],
)
def test_every_spelling_of_one_controller_address_shares_one_lock(alias):
    # each of these reaches the controller listening on 127.0.0.1:20003 (or loopback as a whole)
    assert device_key(alias) == device_key("fairino://127.0.0.1")


def test_one_serial_port_is_one_device_whichever_family_opens_it(tmp_path):
    tty = tmp_path / "ttyUSB0"
    tty.touch()
    (tmp_path / "servo-bus").symlink_to(tty)
    keys = {
        device_key(f"hiwonder://{tty}"),
        device_key(f"dxl://{tty}?ids=1-3"),
        device_key(f"dxl://{tmp_path / 'servo-bus'}"),
        device_key(f"hiwonder://{tmp_path}//ttyUSB0"),
    }
    assert len(keys) == 1 and None not in keys


def test_claim_skips_embedded_simulators(tmp_path, monkeypatch):
    monkeypatch.setenv("SERVOTOOL_LOCK_DIR", str(tmp_path))
    with claim("sim:fr3") as a, claim("sim:fr3") as b:
        assert a is None and b is None
    with claim("fairino://10.1.1.1"), pytest.raises(DeviceBusy), claim("fairino://10.1.1.1?transport=rpc"):
        pass


def test_a_second_spelling_of_a_held_controller_is_refused(tmp_path, monkeypatch):
    monkeypatch.setenv("SERVOTOOL_LOCK_DIR", str(tmp_path))
    with claim("fairino://127.0.0.1"), pytest.raises(DeviceBusy), claim("fairino://127.1?transport=rpc"):
        pass
    with claim("hiwonder:///dev/ttyUSB9"), pytest.raises(DeviceBusy), claim("dxl:///dev/ttyUSB9?ids=1"):
        pass


def test_a_run_sharing_a_command_port_with_a_held_controller_is_refused(tmp_path, monkeypatch):
    # servotool sim fairino serves several controllers on one host, one per set of ports: a URL that takes
    # another controller's XML-RPC port but the held one's UDP port would stream ServoJ to the held arm
    monkeypatch.setenv("SERVOTOOL_LOCK_DIR", str(tmp_path))
    held = "fairino://127.0.0.1?rpc_port=4000&cnde_port=4001&udp_port=4002"
    with claim(held):
        with (
            pytest.raises(DeviceBusy),
            claim("fairino://localhost?rpc_port=5000&cnde_port=5001&udp_port=4002"),
        ):
            pass
        with pytest.raises(DeviceBusy), claim("fairino://127.1?rpc_port=4000&udp_port=5002"):
            pass
        with claim("fairino://127.0.0.1?rpc_port=5000&cnde_port=4001&udp_port=5002"):
            pass  # reading its state stream only: another arm's commands go elsewhere
    with claim("fairino://10.1.1.1"), pytest.raises(DeviceBusy), claim("fairino://10.1.1.1?rpc_port=4000"):
        pass  # the default UDP port 20007 of the first


def test_a_lock_folder_that_cannot_be_used_refuses_with_one_line(tmp_path, monkeypatch):
    from servotool.errors import ExitCode, Refused, exit_code_of

    not_a_folder = tmp_path / "file"
    not_a_folder.write_text("x")
    for folder in (not_a_folder, not_a_folder / "sub"):
        monkeypatch.setenv("SERVOTOOL_LOCK_DIR", str(folder))
        with pytest.raises(Refused, match="SERVOTOOL_LOCK_DIR") as err, claim("fairino://10.1.1.1"):
            pass
        assert exit_code_of(err.value) == ExitCode.USAGE
    monkeypatch.setenv("SERVOTOOL_LOCK_DIR", str(tmp_path / "locks"))
    (tmp_path / "locks").mkdir()
    (tmp_path / "locks" / lock_name(device_key("fairino://10.1.1.1") or "")).mkdir()  # the lock file a folder
    with pytest.raises(Refused, match="cannot take the lock"), claim("fairino://10.1.1.1"):
        pass


def test_a_lock_file_that_is_a_link_or_not_a_file_is_refused_and_left_alone(tmp_path, monkeypatch):
    import os

    from servotool.errors import Refused

    locks = tmp_path / "locks"
    locks.mkdir()
    monkeypatch.setenv("SERVOTOOL_LOCK_DIR", str(locks))
    victim = tmp_path / "victim.txt"
    victim.write_text("precious\n")
    path = locks / lock_name(device_key("fairino://10.1.1.1") or "")
    path.symlink_to(victim)  # taking the lock must not truncate what the link points to
    with pytest.raises(Refused, match="cannot take the lock"), claim("fairino://10.1.1.1"):
        pass
    assert victim.read_text() == "precious\n"
    path.unlink()
    os.mkfifo(path)  # not a regular file: refused, never waited on
    with pytest.raises(Refused, match="cannot take the lock"), claim("fairino://10.1.1.1"):
        pass


def test_one_serial_device_under_two_nodes_is_one_lock(tmp_path, monkeypatch):
    # a second node of one device (a container's bind-mounted /dev, a node made with mknod) has its own
    # path: each spelling took its own lock and two commands wrote to one bus
    import os
    import pty
    import stat

    monkeypatch.setenv("SERVOTOOL_LOCK_DIR", str(tmp_path / "locks"))
    leader, follower = pty.openpty()
    try:
        rdev = os.fstat(follower).st_rdev
        node = tmp_path / "ttyACM-copy"
        try:
            os.mknod(node, stat.S_IFCHR | 0o600, rdev)
        except PermissionError:
            pytest.skip("making a device node needs CAP_MKNOD")
        pty_url = f"dxl://{os.ttyname(follower)}?ids=1"
        with claim(f"hiwonder://{node}"), pytest.raises(DeviceBusy), claim(pty_url):
            pass
        with claim(f"dxl://{os.ttyname(follower)}?ids=1"), claim(f"hiwonder://{tmp_path / 'ttyUSB7'}"):
            pass  # another device is free
    finally:
        os.close(leader)
        os.close(follower)
