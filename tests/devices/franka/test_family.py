"""The Franka family's facts, lock keys and its refusal without pylibfranka."""

from __future__ import annotations

import subprocess
import sys

import pytest

from servotool.devices.franka.family import FAMILY, INSTALL_HINT, MissingClient, facts, lock_keys
from servotool.devices.url import DeviceURLError, parse_url
from servotool.errors import ExitCode


def test_real_url_facts_per_model_and_the_narrowest_without_one():
    fr3 = facts(parse_url("franka://172.16.0.2?model=fr3"))
    fer = facts(parse_url("franka://172.16.0.2?model=fer"))
    both = facts(parse_url("franka://172.16.0.2"))
    assert fr3.n_joints == 7 and fr3.joint_names[0] == "J1" and fr3.model == "fr3"
    assert fr3.motion is not None and fr3.motion.cmd_period_s == 0.001 and fr3.motion.shapers[0] == "otg"
    for j in range(7):
        assert both.joint_ranges[j][0] >= max(fr3.joint_ranges[j][0], fer.joint_ranges[j][0])
        assert both.joint_speed_limits[j] == min(fr3.joint_speed_limits[j], fer.joint_speed_limits[j])


def test_unknown_parameters_and_models_are_refused():
    for url in (
        "franka://172.16.0.2?model=panda2",
        "franka://172.16.0.2?no_such_key=1",
        "franka://172.16.0.2?realtime=maybe",
        "sim:franka-fr3?no_such_key=1",
        "sim:franka-fr3?drop=1.5",
    ):
        with pytest.raises(DeviceURLError):
            FAMILY.open(parse_url(url))


def test_a_simulators_refusal_lists_every_parameter_it_takes():
    # clock and the collision thresholds are taken too: the list a user is shown holds them
    with pytest.raises(DeviceURLError) as refused:
        FAMILY.open(parse_url("sim:franka-fr3?collision_torqe=1"))
    message = str(refused.value)
    assert "did you mean collision_torque?" in message
    known = message.split("(known: ", 1)[1]
    assert all(key in known for key in ("clock", "collision_torque", "collision_force", "drop", "seed"))


def test_lock_keys_by_host_and_none_for_a_simulator():
    assert lock_keys(parse_url("franka://172.16.0.2")) == ["franka-172.16.0.2-1337"]
    assert lock_keys(parse_url("sim:franka-fr3")) == []


def test_without_pylibfranka_one_line_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "pylibfranka", None)  # an import of it fails
    with pytest.raises(MissingClient) as info:
        FAMILY.open(parse_url("franka://172.16.0.2?realtime=ignore"))
    assert str(info.value) == INSTALL_HINT and "\n" not in INSTALL_HINT
    assert "pip install 'servotool[franka]'" in INSTALL_HINT
    assert info.value.exit_code == ExitCode.USAGE == 2


def test_the_family_module_imports_nothing_optional():
    code = (
        "import sys; import servotool.devices.franka.family; "
        "print(sorted(m for m in ('numpy', 'pylibfranka', 'servotool.devices.franka.client', "
        "'servotool.devices.franka.sim') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


@pytest.mark.parametrize(
    "args",
    [
        ["record", "--robot", "sim:franka-fr3", "--duration", "1"],
        ["lag", "--ramp", "--robot", "franka://172.16.0.2?realtime=ignore"],
        ["step", "--robot", "sim:franka-fr3"],
    ],
)
def test_the_commands_name_the_extra_in_one_line_and_exit_2(args, monkeypatch, tmp_path):
    from typer.testing import CliRunner

    from servotool.cli.app import app

    monkeypatch.setitem(sys.modules, "pylibfranka", None)  # as where the wheel is not installed
    monkeypatch.setenv("SERVOTOOL_LOCK_DIR", str(tmp_path / "locks"))
    monkeypatch.chdir(tmp_path)
    dest = ["--out", str(tmp_path)]
    res = CliRunner().invoke(app, [*args, *dest])
    assert res.exit_code == 2, res.output
    lines = [line for line in res.output.splitlines() if line.strip()]
    assert len(lines) == 1 and "pip install 'servotool[franka]'" in lines[0], res.output


def test_recorded_faults_and_latched_words_are_named_by_flag():
    from servotool.devices.franka import codes
    from servotool.devices.registry import fault_names, status_names

    i = codes.ERROR_INDEX["joint_motion_generator_velocity_discontinuity"]
    assert fault_names((i + 1, 0), family="franka") == "joint_motion_generator_velocity_discontinuity"
    assert fault_names((0, 0), family="franka") == ""
    assert fault_names((len(codes.ERROR_NAMES) + 1, 0), family="franka") == ""
    word = 1 << codes.ERROR_INDEX["joint_reflex"] | 1 << codes.ERROR_INDEX["cartesian_reflex"]
    assert set(status_names(word, family="franka").split()) == {"joint_reflex", "cartesian_reflex"}
