"""The Franka arm as the flight recorder's source: every cycle a sweep, flags as status words, read only;
and against the simulator, a scheduled reflex gives one capture with its lead-up, its tail and the names."""

from __future__ import annotations

import json
import queue
import threading
from pathlib import Path

import pytest

from servotool.devices.arm import StateFrame
from servotool.devices.franka import codes
from servotool.devices.franka.telemetry import (
    CURRENT_ERRORS,
    LAST_MOTION_ERRORS,
    ROBOT_MODE,
    FrankaSource,
    error_word,
    status_of,
    sweep_of,
    word_names,
)
from servotool.errors import DeviceError


def _frame(t: float, mode: str = "Idle", errors: str = "", motion_errors: str = "") -> StateFrame:
    extra = {f"tau_J{j + 1}": 0.5 * j for j in range(7)}
    extra.update(
        {
            "robot_mode": mode,
            "current_errors": errors,
            "last_motion_errors": motion_errors,
        }
    )
    return StateFrame(
        t,
        tuple(10.0 * j for j in range(7)),
        setpoint=tuple(10.0 * j + 0.1 for j in range(7)),
        device_time_s=t,
        qd=(0.0,) * 7,
        success_rate=0.0,
        extra=extra,
    )


class QueueArm:
    """An arm whose states come from a queue (poll_states waits on it); it records every call it gets."""

    url = "franka://scripted"
    simulated = True
    model = "fr3"
    n_joints = 7

    def __init__(self) -> None:
        self.states: queue.Queue[StateFrame | Exception] = queue.Queue()
        self.calls: list[str] = []
        self.taken = threading.Semaphore(0)

    def poll_states(self) -> list[StateFrame]:
        try:
            item = self.states.get(timeout=0.01)
        except queue.Empty:
            return []
        if isinstance(item, Exception):
            raise item
        self.taken.release()
        return [item]

    def feed(self, *frames: StateFrame) -> None:
        for f in frames:
            self.states.put(f)
        for _ in frames:
            assert self.taken.acquire(timeout=10)

    def __getattr__(self, name: str):  # any other call (a motion, a recovery) is recorded
        def call(*args, **kwargs):
            self.calls.append(name)

        return call


def _until_read(source: FrankaSource, n: int) -> list:
    got: list = []
    for _ in range(1000):
        got += source.read_fast()
        if len(got) >= n:
            return got
        threading.Event().wait(0.005)
    raise AssertionError(f"{len(got)} of {n} sweeps")


def test_words_and_names_are_inverse():
    names = ("joint_reflex", "communication_constraints_violation")
    assert word_names(error_word(names)) == names
    assert error_word(()) == 0
    assert word_names(1 << (codes.N_ERRORS - 1)) == (codes.ERROR_NAMES[-1],)


def test_a_cycle_is_one_sweep_with_its_state_by_name():
    sweep = sweep_of(_frame(1.5, "Reflex", "joint_reflex", "joint_reflex"))
    j3 = sweep.axes["j3"]
    assert j3 is not None and (j3.position, j3.target, j3.current) == (20.0, 20.1, 1.0)
    assert j3.gap == pytest.approx(0.1)
    row = sweep.as_json(0.0)
    assert row["state"]["robot_mode"] == "Reflex"
    assert row["state"]["current_errors"] == ["joint_reflex"]
    assert row["state"]["time_s"] == 1.5
    assert status_of(_frame(0.0, "Reflex", "joint_reflex")) == {
        CURRENT_ERRORS: error_word(["joint_reflex"]),
        LAST_MOTION_ERRORS: 0,
        ROBOT_MODE: 1,
    }


def test_every_cycle_reaches_the_loop_and_a_brief_flag_is_still_reported():
    arm = QueueArm()
    source = FrankaSource(arm)
    try:
        arm.feed(_frame(0.000), _frame(0.001, "Reflex", "joint_reflex"), _frame(0.002))
        sweeps = _until_read(source, 3)
        assert [s.t for s in sweeps] == [0.000, 0.001, 0.002]
        # set and cleared between two frames: the status still answers it once, then the clean word
        assert source.read_status()[CURRENT_ERRORS] == error_word(["joint_reflex"])
        assert source.read_status()[CURRENT_ERRORS] == 0
    finally:
        source.close()
    assert arm.calls == ["close"]  # read only: no motion, no recovery, only the disconnect


def test_a_lost_link_is_a_device_error_of_the_next_read():
    arm = QueueArm()
    source = FrankaSource(arm)
    try:
        arm.states.put(OSError("network unreachable"))
        with pytest.raises(DeviceError, match="network unreachable"):
            for _ in range(1000):
                source.read_fast()
                threading.Event().wait(0.005)
    finally:
        source.close()


def test_the_fast_ring_keeps_the_nominal_seconds_of_cycles():
    from servotool.recorder import RecorderSettings
    from servotool.runs.recorder.loop import cycle_ring

    nominal = RecorderSettings()
    assert cycle_ring(nominal, None) == nominal
    assert cycle_ring(nominal, 1000.0).fast_len == round(nominal.fast_span_s * 1000)


# -- against the simulator ------------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_a_scheduled_reflex_is_one_capture_with_lead_up_tail_and_names(tmp_path: Path):
    pytest.importorskip("pylibfranka", reason="pylibfranka (servotool[franka]) is not installed")
    from servotool.clock import MonotonicClock
    from servotool.devices.franka.client import FrankaArm
    from servotool.devices.franka.sim import spawn, stop
    from servotool.recorder import RecorderSettings
    from servotool.runs.recorder.loop import COMPLETE, RecordSettings, run_record

    proc, host = spawn("franka-fr3", reflex=("joint_reflex", 1.5))
    clock = MonotonicClock(spin_s=0.0)
    arm = FrankaArm("sim:franka-fr3", host, "fr3", True, True, on_close=lambda: stop(proc), now=clock.now)
    source = FrankaSource(arm)
    settings = RecordSettings(
        dest=tmp_path, duration_s=6.0, recorder=RecorderSettings(tail_s=1.0, max_tail_s=1.0)
    )
    out = run_record(source, clock, settings, handle_signals=False)
    assert out.status == COMPLETE and len(out.captures) == 1
    lines = out.captures[0].path.read_text().splitlines()
    header = json.loads(lines[0])
    assert header["trigger_axes"][0] == CURRENT_ERRORS
    assert set(header["trigger_axes"]) <= {CURRENT_ERRORS, LAST_MOTION_ERRORS, ROBOT_MODE}
    assert header["device"]["family"] == "franka"
    assert header["device"]["status_bits"][CURRENT_ERRORS] == list(codes.ERROR_NAMES)
    bits = {t["axis"]: t["bits"] for t in header["trigger"]}
    assert word_names(bits[CURRENT_ERRORS]) == ("joint_reflex",)
    # a loaded host loses some cycles in real time, never seconds of them
    assert header["end"] == "tail-complete"
    assert header["lead_up_s"] > 1.0 and header["tail_observed_s"] > 0.5
    fast = [json.loads(x) for x in lines[1:] if '"ring":"fast"' in x.replace(" ", "")]
    before = [s for s in fast if s["t"] < -0.05]
    after = [s for s in fast if s["t"] > 0.05]
    assert len(before) > 500 and len(after) > 400
    assert all(s["state"]["robot_mode"] == "Idle" and not s["state"]["current_errors"] for s in before)
    assert all(s["state"]["current_errors"] == ["joint_reflex"] for s in after)
    assert all(s["state"]["robot_mode"] == "Reflex" for s in after)


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_record_on_the_simulator_from_the_command_line(tmp_path: Path, monkeypatch):
    pytest.importorskip("pylibfranka", reason="pylibfranka (servotool[franka]) is not installed")
    from typer.testing import CliRunner

    from servotool.cli.app import app

    monkeypatch.setenv("SERVOTOOL_LOCK_DIR", str(tmp_path / "locks"))
    dest = tmp_path / "captures"
    runner = CliRunner()
    url = "sim:franka-fr3?reflex_at=1.5&reflex=joint_motion_generator_velocity_discontinuity"
    res = runner.invoke(app, ["record", "--robot", url, "--duration", "8", "--json", "--out", str(dest)])
    assert res.exit_code == 0, res.output
    out = json.loads(res.output[res.output.index("{") :])
    assert out["status"] == "complete" and len(out["captures"]) == 1
    assert out["captures"][0]["trigger_axes"][0] == CURRENT_ERRORS
    shown = runner.invoke(app, ["incidents", "show", out["captures"][0]["path"]])
    assert shown.exit_code == 0, shown.output
    text = " ".join(shown.output.split())  # the lines wrap at the terminal's width
    assert "current_errors (0x4000 (joint_motion_generator_velocity_discontinuity))" in text
    assert "robot_mode (0x01 (Reflex))" in text
    # the joint torque in the capture's own unit, not a bus servo's mA
    assert " Nm " in text and " mA " not in text


def test_a_capture_of_an_unnamed_model_shows_no_empty_parentheses(monkeypatch):
    from rich.console import Console

    from servotool.cli import incidents

    out = Console(width=200, record=True)
    monkeypatch.setattr(incidents, "console", out)
    header = {"id": "c", "device": {"url": "franka://172.16.0.2", "model": "", "simulated": False}}
    incidents._render_header(Path("c.jsonl"), header)
    assert "device franka://172.16.0.2  wall time" in out.export_text()


def test_the_recorder_refuses_the_simulator_on_a_simulated_clock(tmp_path: Path):
    from typer.testing import CliRunner

    from servotool.cli.app import app

    res = CliRunner().invoke(
        app, ["record", "--robot", "sim:franka-fr3?clock=sim", "--duration", "1", "--out", str(tmp_path)]
    )
    assert res.exit_code == 2 and "real time" in res.output


def test_each_new_reflex_is_one_capture_and_a_latch_at_connection_is_none(tmp_path: Path):
    """The record loop's frames driven by hand on a fake clock: a reflex latched before the recorder came
    is logged only; once cleared, every new one opens its own capture with its flags."""
    from servotool.clock import FakeClock
    from servotool.recorder import RecorderSettings
    from servotool.runs.recorder.loop import RecordSettings, _Loop

    clock = FakeClock()
    arm = QueueArm()
    source = FrankaSource(arm)
    published: list = []
    settings = RecordSettings(dest=tmp_path, recorder=RecorderSettings(tail_s=0.05, max_tail_s=0.05))
    loop = _Loop(source, clock, settings, None, lambda dest, cap: published.append(cap) or dest)
    loop.rec.connect(clock.now(), source.describe())
    script = ["joint_reflex"] * 3 + [""] * 30 + ["cartesian_reflex"] * 5 + [""] * 30 + ["joint_reflex"] * 5
    script += [""] * 30
    try:
        for flags in script:  # one frame of the loop per 5 ms, 5 robot cycles each
            t = clock.now()
            mode = "Reflex" if flags else "Idle"
            arm.feed(*(_frame(t + k * 0.001, mode, flags) for k in range(5)))
            loop.frame()
            clock.advance(0.005)
        published.extend(loop.rec.on_disconnect(clock.now()))
        kinds = [e.kind for e in loop.rec.drain_events()]
    finally:
        source.close()
    assert len(published) == 2
    first, second = (cap.header for cap in published)
    assert [t["axis"] for t in first["trigger"]] == [CURRENT_ERRORS, ROBOT_MODE]
    assert word_names(first["trigger"][0]["bits"]) == ("cartesian_reflex",)
    assert word_names(second["trigger"][0]["bits"]) == ("joint_reflex",)
    assert kinds[:2] == ["baseline-latch", "baseline-latch"] and "recovered" in kinds
    assert all(len(cap.samples) > 5 * 30 for cap in published)  # every cycle of the lead-up and tail
