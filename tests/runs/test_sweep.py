"""Sweeps on the simulated board, in lock-step simulated time: realistic speeds, no waiting."""

import pytest

from servotool.analysis.sweep import STOP_ABORT, STOP_AT_LIMIT, STOP_STALL, STOP_STORED
from servotool.devices.hiwonder import protocol as p
from servotool.errors import ExitCode, Refused
from servotool.io.csvlog import CsvLogWriter, read_csv
from servotool.runs.bus.sweep import CSV_COLUMNS, CSV_UNITS, SweepConfig, run_sweeps


def assert_every_command_safe(bus):
    """Every move frame the board received stayed in 0-1000 and inside each servo's stored limit."""
    moves = bus.sim.commands(p.Move)
    assert moves
    for rec in moves:
        for sid, pulse in rec.command.targets.items():
            lo, hi = bus.profile.stored_limits[sid]
            assert 0 <= pulse <= 1000 and lo <= pulse <= hi, (sid, pulse)
    assert bus.sim.rejected == []


@pytest.mark.parametrize(
    ("joint", "direction", "obstacle", "seed"),
    [
        (2, "down", 562, 1),
        (2, "up", 930, 2),
        (3, "up", 700, 3),
        (3, "down", 60, 4),
        (4, "up", 400, 5),
        (1, "down", 250, 6),
    ],
)
def test_obstacles_are_recovered_within_3_pulses(arm, joint, direction, obstacle, seed):
    bus, clock = arm(f"obstacle_{joint}={obstacle}&noise=1&seed={seed}")
    start = bus.read_position(joint)
    run = run_sweeps(bus, clock, SweepConfig(joints=(joint,), directions=(direction,), speed=25.0))
    (res,) = run.results
    assert res.reason == STOP_STALL
    assert abs(res.stop - obstacle) <= 3
    sign = 1 if direction == "up" else -1
    assert res.limit == res.stop - sign * 20
    assert abs(res.returned_to - start) <= 3
    assert run.error is None and not run.aborted
    assert_every_command_safe(bus)


@pytest.mark.parametrize("speed", [5.0, 25.0, 100.0, 300.0])
def test_free_joint_runs_to_its_stored_limit_without_false_stall(arm, speed):
    bus, clock = arm("noise=1&seed=9")
    run = run_sweeps(bus, clock, SweepConfig(joints=(2,), directions=("up",), speed=speed))
    (res,) = run.results
    assert res.reason == STOP_STORED
    assert abs(res.stop - 960) <= 3
    assert res.limit == res.stop - 20
    assert max(res.cmd) == 960
    assert_every_command_safe(bus)


def test_both_directions_and_several_joints_return_to_start(arm):
    bus, clock = arm("obstacle_2=562,930&obstacle_4=120")
    run = run_sweeps(bus, clock, SweepConfig(joints=(2, 4), speed=50.0))
    assert [(r.joint, r.direction) for r in run.results] == [(2, "down"), (2, "up"), (4, "down"), (4, "up")]
    stops = {(r.joint, r.direction): r.stop for r in run.results}
    assert stops[(2, "down")] == 562 and stops[(2, "up")] == 930 and stops[(4, "down")] == 120
    assert stops[(4, "up")] == 1000  # servo 4's stored limit is the full range
    assert run.found[2].lo == 582 and run.found[2].hi == 910
    assert run.found[4].lo == 140 and run.found[4].hi == 980
    for r in run.results:
        assert abs(r.returned_to - r.start) <= 2
    assert_every_command_safe(bus)
    # the command never moved faster than the sweep speed: 50 pulses/s is 2 pulses a 40 ms frame
    for r in run.results:
        assert max(abs(b - a) for a, b in zip(r.cmd, r.cmd[1:], strict=False)) <= 2


def test_hold_comes_at_the_stop_and_the_servo_stays(arm):
    bus, clock = arm("obstacle_2=562")
    run = run_sweeps(bus, clock, SweepConfig(joints=(2,), directions=("down",)))
    received = bus.sim.received
    first_hold = next(i for i, r in enumerate(received) if isinstance(r.command, p.Stop))
    assert set(received[first_hold].command.ids) == {1, 2, 3, 4, 5, 10}
    assert received[first_hold].t == pytest.approx(run.results[0].stop_t, abs=1e-6)


def test_abort_mid_sweep_holds_at_once_and_sends_no_further_move(arm):
    bus, clock = arm()
    ticks = []

    def abort():
        return len(ticks) >= 30

    run = run_sweeps(
        bus,
        clock,
        SweepConfig(joints=(2, 3)),
        abort_requested=abort,
        on_event=lambda e: ticks.append(e) if e.kind == "tick" else None,
    )
    assert run.aborted
    assert [r.reason for r in run.results] == [STOP_ABORT]
    assert run.results[0].limit is None
    received = bus.sim.received
    moves = [i for i, r in enumerate(received) if isinstance(r.command, p.Move)]
    holds = [i for i, r in enumerate(received) if isinstance(r.command, p.Stop)]
    assert holds and holds[0] > moves[-1]
    # right after the last move: nothing but reads between them
    between = received[moves[-1] + 1 : holds[0]]
    assert all(isinstance(r.command, p.ServoRequest) for r in between)
    assert len(moves) == 30
    assert all(not isinstance(r.command, p.Move) for r in received[holds[0] :])
    assert 2 not in run.found or run.found[2].lo_source != "sweep"


def test_abort_with_an_event(arm):
    import threading

    bus, clock = arm()
    ev = threading.Event()
    run = run_sweeps(
        bus,
        clock,
        SweepConfig(joints=(1,)),
        abort_requested=ev,
        on_event=lambda e: ev.set() if e.kind == "tick" and e.t > 1.0 else None,
    )
    assert run.aborted and run.results[-1].reason == STOP_ABORT


def test_silent_joint_servo_refuses_with_nothing_sent(arm):
    bus, clock = arm("silent_3=1&timeout_ms=20")
    with pytest.raises(Refused, match="3 not answering"):
        run_sweeps(bus, clock, SweepConfig(joints=(2,)))
    assert bus.sim.commands(p.Move) == [] and bus.sim.commands(p.Stop) == []


def test_silent_claw_does_not_stop_a_joint_sweep(arm):
    bus, clock = arm("silent_10=1&timeout_ms=20&obstacle_1=400")
    run = run_sweeps(bus, clock, SweepConfig(joints=(1,), directions=("down",), speed=50.0))
    assert run.results[0].stop == 400


def test_start_outside_the_current_limits_is_refused(arm):
    bus, clock = arm()
    with pytest.raises(Refused, match="outside the current limits"):
        run_sweeps(bus, clock, SweepConfig(joints=(1,)), configured={2: (95, 700)})  # servo 2 rests at 776
    assert bus.sim.commands(p.Move) == []


def test_sagged_start_below_the_command_range_is_refused(arm):
    bus, clock = arm("start_3=-20")
    with pytest.raises(Refused, match="servo 3"):
        run_sweeps(bus, clock, SweepConfig(joints=(3,)))
    assert bus.sim.commands(p.Move) == []


def test_joint_already_at_its_stored_limit_is_not_moved(arm):
    bus, clock = arm("start_1=990&obstacle_1=500")
    run = run_sweeps(bus, clock, SweepConfig(joints=(1,), directions=("up",)))
    assert run.results[0].reason == STOP_AT_LIMIT
    assert bus.sim.commands(p.Move) == []


def test_joint_going_silent_mid_sweep_holds_and_reports(arm):
    bus, clock = arm("silent_after_2=2.0&timeout_ms=20")
    run = run_sweeps(bus, clock, SweepConfig(joints=(2,), directions=("down",)))
    assert run.error and "stopped answering" in run.error
    assert isinstance(bus.sim.received[-1].command, (p.Stop, p.ServoRequest))
    assert bus.sim.commands(p.Stop)
    assert run.exit_code == ExitCode.DEVICE and run.fault  # a link lost mid-run, not a refusal


def test_joint_going_silent_mid_sweep_ends_its_csv_naming_the_cause(arm, tmp_path):
    bus, clock = arm("silent_after_2=2.0&timeout_ms=20")
    path = tmp_path / "sweep.csv"

    def factory(res):
        return CsvLogWriter(
            path,
            device="sim:rosorin-arm",
            simulated=True,
            config={"mode": "sweep"},
            units=CSV_UNITS,
            columns=CSV_COLUMNS,
            command="test",
        )

    run = run_sweeps(bus, clock, SweepConfig(joints=(2,), directions=("down",)), writer_factory=factory)
    assert run.exit_code == ExitCode.DEVICE
    meta, df = read_csv(path)
    assert not meta.complete and "servo 2 stopped answering" in meta.end_reason
    assert "hold" in set(df.event)  # the braked stop is recorded before the end line
    assert clock.now() < 60  # simulated time: the silent servo cost its timeouts, not a wall-clock wait


def test_each_sweep_writes_a_csv(arm, tmp_path):
    bus, clock = arm("obstacle_2=700")
    paths = []

    def factory(res):
        path = tmp_path / f"sweep_{res.joint}_{res.direction}.csv"
        paths.append(path)
        return CsvLogWriter(
            path,
            device="sim:rosorin-arm",
            simulated=True,
            config={"mode": "sweep"},
            units=CSV_UNITS,
            columns=CSV_COLUMNS,
            command="test",
        )

    run = run_sweeps(bus, clock, SweepConfig(joints=(2,), directions=("down",)), writer_factory=factory)
    meta, df = read_csv(paths[0])
    assert meta.complete and meta.simulated
    cmds = df[df.event == "cmd"]
    states = df[df.event == "state"]
    assert len(cmds) > 10 and len(states) >= len(cmds)
    assert (df.event == "hold").sum() == 1
    assert cmds.cmd.min() >= 80 and cmds.cmd.max() <= 960
    assert df.t.is_monotonic_increasing
    assert run.results[0].stop == 700


def test_configured_limits_are_used_for_the_start_check_only(arm):
    # the sweep goes on to the stored limit: mapping is about finding where the arm really stops
    bus, clock = arm("obstacle_1=900")
    run = run_sweeps(
        bus, clock, SweepConfig(joints=(1,), directions=("up",), speed=100.0), configured={1: (34, 966)}
    )
    assert run.results[0].stop == 900
    assert run.found[1].lo == 34 and run.found[1].lo_source == "file" and run.found[1].hi == 880


def test_same_seed_same_sweep_even_with_crc_errors(arm):
    def once():
        bus, clock = arm("obstacle_3=600&noise=1&seed=11&crc_error_rate=0.05")
        run = run_sweeps(bus, clock, SweepConfig(joints=(3,), directions=("up",), speed=50.0))
        assert bus.sim.corrupted > 0 and bus.stats.retries > 0
        return run.results[0], (bus.stats.frames_sent, bus.stats.retries, bus.stats.timeouts)

    (a, a_link), (b, b_link) = once(), once()
    assert abs(a.stop - 600) <= 3 and abs(b.stop - 600) <= 3
    # Deterministic for a seed, timing aside: a reply that a starved host reads only after its wall-clock
    # timeout costs one more retry and one more draw from the simulator's generator, so runs whose links went
    # through the same frames, retries and timeouts must match sample for sample.
    if a_link == b_link:
        assert (a.t, a.cmd, a.read, a.stop) == (b.t, b.cmd, b.read, b.stop)


def test_a_sweep_rides_through_corrupted_replies_and_line_noise(arm):
    bus, clock = arm("obstacle_2=700&noise=1&seed=11&crc_error_rate=0.05&garbage_rate=0.05")
    run = run_sweeps(bus, clock, SweepConfig(joints=(2,), directions=("down",), speed=25.0))
    (res,) = run.results
    assert run.error is None and not run.aborted
    assert res.reason == STOP_STALL and abs(res.stop - 700) <= 3
    # the damage was there, was counted, and cost only retries
    assert bus.sim.corrupted > 0 and bus.sim.garbage > 0
    assert bus.stats.bad_frames > 0 and bus.stats.skipped_bytes > 0 and bus.stats.retries > 0
    assert_every_command_safe(bus)


def test_progress_events_carry_the_run_fraction(arm):
    bus, clock = arm("obstacle_2=700")
    events = []
    config = SweepConfig(joints=(2, 3), directions=("down",), speed=100.0)
    run_sweeps(bus, clock, config, on_event=events.append)
    ticks = [e for e in events if e.kind == "tick"]
    assert {e.count for e in events} == {2} and {e.index for e in ticks} == {0, 1}
    assert all(0.0 <= e.fraction <= 1.0 for e in ticks)
    first = [e.fraction for e in ticks if e.index == 0]
    assert first == sorted(first) and first[-1] > 0
    assert events[-1].kind == "done"


def test_sweep_settings_list_every_problem():
    from servotool.errors import SettingsError
    from servotool.runs.bus.sweep import SweepSettingsError

    with pytest.raises(SweepSettingsError) as info:
        SweepConfig(joints=(), directions=("sideways",), speed=float("nan"), inside=-1, period_s=0.0)
    assert isinstance(info.value, SettingsError) and len(info.value.problems) == 5


def test_record_sweeps_writes_every_file_in_runs(arm, tmp_path):
    import json
    from pathlib import Path

    from servotool.runs.bus.sweep_files import SweepFiles, sweep_and_write

    bus, clock = arm("obstacle_2=700")
    files = SweepFiles(out_dir=tmp_path, plot=True, command="servotool sweep --joint 2")
    rec = sweep_and_write(bus, clock, SweepConfig(joints=(2,), directions=("down",), speed=100.0), files)
    out = rec.outputs
    assert set(out) == {"csv", "json", "yaml", "png", "summary_png"}
    assert json.loads(Path(out["json"]).read_text())["found"]["2"]["lo"] == rec.found[2].lo
    assert Path(out["summary_png"]).read_bytes()[:4] == b"\x89PNG"
    assert rec.result["simulated"] is True and rec.notes == []


def test_record_sweeps_refuses_to_update_limits_from_a_simulator(arm, tmp_path):
    from servotool.io.limits_yaml import load_limits
    from servotool.runs.bus.sweep_files import SweepFiles, sweep_and_write

    path = tmp_path / "limits.yaml"
    path.write_text("n:\n  ros__parameters:\n    arm_limit_2: [95, 941]\n")
    bus, clock = arm()
    files = SweepFiles(out_dir=tmp_path, limits_path=path, limits=load_limits(path), update_limits=True)
    with pytest.raises(Refused, match="--force-sim"):
        sweep_and_write(bus, clock, SweepConfig(joints=(2,), directions=("down",)), files)
    assert bus.sim.commands(p.Move) == []


def test_a_limits_file_edited_during_the_run_is_not_overwritten(arm, tmp_path):
    from servotool.io.limits_yaml import load_limits
    from servotool.runs.bus.sweep_files import SweepFiles, sweep_and_write

    path = tmp_path / "limits.yaml"
    path.write_text("n:\n  ros__parameters:\n    arm_limit_2: [95, 941]\n")
    bus, clock = arm("obstacle_2=700")
    lf = load_limits(path)
    path.write_text(lf.text + "    arm_max_speed: 100.0\n")  # someone edits it meanwhile
    edited = path.read_text()
    files = SweepFiles(
        out_dir=tmp_path / "out", limits_path=path, limits=lf, update_limits=True, force_sim=True
    )
    rec = sweep_and_write(bus, clock, SweepConfig(joints=(2,), directions=("down",), speed=100.0), files)
    assert path.read_text() == edited and not list(tmp_path.glob("*.bak*"))
    assert "changed while the sweep ran" in rec.notes[0]
    assert load_limits(rec.outputs["yaml"]).limits[2][0] == rec.found[2].lo


def test_a_limp_servo_is_refused_before_anything_moves(arm):
    bus, clock = arm("torque_3=0")
    with pytest.raises(Refused, match="servo\\(s\\) 3 have torque off"):
        run_sweeps(bus, clock, SweepConfig(joints=(2,)))
    assert bus.sim.commands(p.Move) == [] and bus.sim.commands(p.Stop) == []


def test_a_stop_signal_is_named_on_the_csv_end_line(arm, tmp_path):
    from servotool.runs.bus.sweep_files import SweepFiles, sweep_and_write
    from servotool.runs.offline.analyze import analyze_any

    def once(reason):
        bus, clock = arm()
        ticks = []
        return sweep_and_write(
            bus,
            clock,
            SweepConfig(joints=(2,), directions=("down",)),
            SweepFiles(out_dir=tmp_path / reason),
            abort_requested=lambda: len(ticks) >= 20,
            stop_reason=lambda: reason,
            on_event=lambda e: ticks.append(e) if e.kind == "tick" else None,
        )

    for reason in ("Ctrl-C", "SIGTERM", "SIGHUP"):
        rec = once(reason)
        assert rec.run.aborted and rec.run.results[0].limit is None
        (csv,) = rec.outputs["csv"]
        meta, _ = read_csv(csv)
        assert not meta.complete and meta.end_reason == reason
        # read back later, the interrupted sweep gives no limit either
        (s,) = analyze_any(csv).result.sweeps
        assert s.limit is None and s.stop is not None and f"interrupted ({reason})" in s.verdict


@pytest.mark.parametrize("fails", ["mid-sweep", "on open"])
def test_a_recording_that_cannot_be_written_holds_the_arm_and_ends_the_run(arm, tmp_path, fails):
    import errno

    bus, clock = arm("obstacle_2=700")

    class FullDisk(CsvLogWriter):
        def write(self, row=None, /, **fields):
            if self.rows_written >= 20:
                raise OSError(errno.ENOSPC, "No space left on device")
            return super().write(row, **fields)

        def close(self):
            raise OSError(errno.ENOSPC, "No space left on device")

    def factory(res):
        if fails == "on open":
            raise OSError(errno.ENOSPC, "No space left on device")
        return FullDisk(
            tmp_path / "sweep.csv",
            device="sim:rosorin-arm",
            simulated=True,
            config={"mode": "sweep"},
            units=CSV_UNITS,
            columns=CSV_COLUMNS,
            command="test",
        )

    run = run_sweeps(bus, clock, SweepConfig(joints=(2,), directions=("down",)), writer_factory=factory)
    assert run.exit_code == ExitCode.FAULT and "No space left on device" in run.error
    assert "held" in run.error
    if fails == "mid-sweep":
        bus.read_all()  # a round trip: the board has taken every frame sent before it
        assert bus.sim.commands(p.Stop)  # the arm was held


def test_files_that_cannot_be_written_after_the_sweep_end_it_as_a_fault(arm, tmp_path, monkeypatch):
    import errno
    from pathlib import Path

    from servotool.runs.bus.sweep_files import SweepFiles, sweep_and_write

    bus, clock = arm("obstacle_2=700")
    original = Path.write_text

    def full(self, *args, **kwargs):
        if self.suffix == ".json":
            raise OSError(errno.ENOSPC, "No space left on device", str(self))
        return original(self, *args, **kwargs)

    monkeypatch.setattr(Path, "write_text", full)
    rec = sweep_and_write(
        bus,
        clock,
        SweepConfig(joints=(2,), directions=("down",)),
        SweepFiles(out_dir=tmp_path, command="test"),
    )
    assert rec.run.exit_code == ExitCode.FAULT and "No space left on device" in rec.run.error
    assert rec.outputs["csv"] and "json" not in rec.outputs


def test_a_sweep_stopped_by_a_signal_says_so_not_by_key(arm, tmp_path):
    # SIGTERM mid-sweep (stdin no terminal: no key at all) was recorded and shown as 'aborted by key'
    import json
    from pathlib import Path

    from servotool.runs.bus.sweep_files import SweepFiles, sweep_and_write

    cases = (("SIGTERM", "aborted by SIGTERM"), ("Ctrl-C", "aborted by Ctrl-C"), (None, STOP_ABORT))
    for reason, said in cases:
        bus, clock = arm()
        ticks = []
        rec = sweep_and_write(
            bus,
            clock,
            SweepConfig(joints=(2,), directions=("down",)),
            SweepFiles(out_dir=tmp_path / str(reason)),
            abort_requested=lambda: len(ticks) >= 20,  # noqa: B023
            stop_reason=lambda: reason,  # noqa: B023
            on_event=lambda e: ticks.append(e) if e.kind == "tick" else None,  # noqa: B023
        )
        assert [r.reason for r in rec.run.results] == [said]
        assert json.loads(Path(rec.outputs["json"]).read_text())["sweeps"][0]["reason"] == said
