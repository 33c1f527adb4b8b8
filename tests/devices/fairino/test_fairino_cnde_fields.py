"""The state fields a client asks of a controller: a real address only what the vendor's CNDE table lists,
a simulator its own fields too; a refusal mentioning NOT_FOUND in any shape drops the optional fields (one
warning), a refusal of the required fields ends the connection; `servo_state` is read with the vendor's
meaning (an aux drive's state), never as servo mode."""

from __future__ import annotations

import logging

import pytest

from servotool.devices.fairino.busy import busy_evidence
from servotool.devices.fairino.client import REAL_SUBSCRIPTION, FairinoArm
from servotool.devices.fairino.fields import FIELDS, SIM_FIELDS, VENDOR_FIELDS
from servotool.devices.fairino.profiles import CNDE_REFUSALS
from servotool.devices.fairino.sim import FairinoSim
from servotool.devices.fairino.stream import OPTIONAL_FIELDS, REQUIRED_FIELDS, SIM_SUBSCRIPTION, _frame
from servotool.errors import DeviceError

STREAM_LOG = "servotool.devices.fairino.stream"


def _connect(sim: FairinoSim, **kwargs) -> FairinoArm:
    """A client of `sim` by its address, as of a real controller (no simulator fields asked for)."""
    ports = sim.ports
    return FairinoArm(
        sim.host, rpc_port=ports.rpc, cnde_port=ports.cnde, udp_port=ports.udp, silence_s=2.0, **kwargs
    )


def _sim(**overrides) -> FairinoSim:
    return FairinoSim("fr3", rpc_port=0, cnde_port=0, udp_port=0, overrides=overrides)


def test_a_real_address_is_asked_only_for_fields_of_the_vendor_table():
    assert set(REAL_SUBSCRIPTION) <= set(VENDOR_FIELDS)
    assert not {"timestamp_us", "servo_state", *SIM_FIELDS} & set(REAL_SUBSCRIPTION)
    assert set(SIM_FIELDS).isdisjoint(VENDOR_FIELDS)
    with _sim(sim_fields="false") as sim:
        arm = _connect(sim)
        try:
            assert set(arm.fields) <= set(VENDOR_FIELDS) and arm.fields == REAL_SUBSCRIPTION
            assert arm.missing_fields == ()
        finally:
            arm.close()


def test_vendor_fields_have_the_vendor_types():
    assert FIELDS["servo_state"] == "INT32"
    assert FIELDS["servoJ_cmd_num"] == "INT32" and FIELDS["target_joint_pos"] == "DOUBLE_6"


@pytest.mark.parametrize("shape", CNDE_REFUSALS)
def test_a_refusal_of_optional_fields_in_any_shape_drops_them_with_one_warning(shape, caplog):
    with _sim(sim_fields="false", cnde_refusal=shape) as sim:
        caplog.set_level(logging.WARNING, logger=STREAM_LOG)
        arm = _connect(sim, state_fields=SIM_SUBSCRIPTION)
        try:
            assert arm.wait_state(2.0).q
            dropped = set(arm.missing_fields)
            fields = set(arm.fields)
        finally:
            arm.close()
    assert set(REQUIRED_FIELDS) <= fields and not fields & set(SIM_FIELDS)
    # a type list or a message naming them drops just those; a bare NOT_FOUND every optional field
    expected = set(SIM_FIELDS) if shape != "bare" else set(OPTIONAL_FIELDS) | set(SIM_FIELDS)
    assert dropped == expected
    warnings = [r.getMessage() for r in caplog.records if r.name == STREAM_LOG]
    assert len(warnings) == 1 and all(name in warnings[0] for name in expected), warnings


@pytest.mark.parametrize("shape", CNDE_REFUSALS)
def test_a_refusal_of_the_required_fields_ends_the_connection(shape):
    sim = FairinoSim("fr3", rpc_port=0, cnde_port=0, udp_port=0, overrides={"cnde_refusal": shape})
    sim._fields = {k: v for k, v in FIELDS.items() if k != "sub_code"}  # a controller without it
    with sim, pytest.raises(DeviceError, match="every run needs"):
        _connect(sim)


def test_the_vendors_servo_state_is_no_evidence_of_another_client():
    # an aux drive enabled and moving (bits 0 and 1): not servo mode, not someone else's stream
    values = {
        "actual_joint_pos": (0.0,) * 6,
        "main_code": 0,
        "sub_code": 0,
        "servo_state": 3,
        "rbt_enable_state": 1,
    }
    frames = [_frame(values, k * 0.008) for k in range(10)]
    assert all(f.servo_active is None for f in frames)
    assert busy_evidence(frames) is None


def test_the_simulator_streams_servo_state_with_the_vendor_type():
    with _sim() as sim:
        arm = _connect(sim, state_fields=(*SIM_SUBSCRIPTION, "servo_state"))
        try:
            arm.wait_state(2.0)
            assert "servo_state" in arm.fields and arm.latest_state().servo_active is False
        finally:
            arm.close()
