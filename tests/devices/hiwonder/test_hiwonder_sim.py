import pytest

from servotool.clock import FakeClock
from servotool.devices.hiwonder import protocol as p
from servotool.devices.hiwonder.profiles import ROSORIN_ARM
from servotool.devices.hiwonder.sim import BoardSim
from servotool.devices.hiwonder.sim_params import parse_sim_params
from servotool.devices.registry import DeviceURLError


def board(**params):
    clock = FakeClock()
    sim = BoardSim(ROSORIN_ARM, parse_sim_params(ROSORIN_ARM, {k: str(v) for k, v in params.items()}), clock)
    return sim, clock


def send(sim, frame: bytes):
    return sim.handle(p.decode_frame(frame))


def read(sim, sub, sid):
    raw = send(sim, p.request_frame(sub, sid))
    return p.decode_reply(p.decode_frame(raw)).value if raw else None


def test_starts_at_rest_with_the_stored_limits_and_plausible_supply():
    sim, _ = board()
    rest = ROSORIN_ARM.poses["rest"]
    for sid in ROSORIN_ARM.ids:
        assert read(sim, p.SubCommand.READ_POSITION, sid) == rest[sid]
        assert read(sim, p.SubCommand.READ_LIMIT, sid) == ROSORIN_ARM.stored_limits[sid]
        assert 12500 <= read(sim, p.SubCommand.READ_VOLTAGE, sid) <= 12700
        assert 30 <= read(sim, p.SubCommand.READ_TEMPERATURE, sid) <= 42
        assert read(sim, p.SubCommand.READ_TORQUE, sid) == 1
    assert sorted(ROSORIN_ARM.stored_limits.items()) == [
        (1, (10, 990)),
        (2, (80, 960)),
        (3, (10, 990)),
        (4, (0, 1000)),
        (5, (10, 990)),
        (10, (110, 670)),
    ]


def test_a_move_arrives_in_its_duration():
    sim, clock = board(lag_ms=0)
    send(sim, p.move_frame({1: 700}, 1000))
    clock.sleep(0.5)
    assert read(sim, p.SubCommand.READ_POSITION, 1) == 600  # linear by default
    clock.sleep(0.5)
    assert read(sim, p.SubCommand.READ_POSITION, 1) == 700


def test_smooth_shape_and_servo_lag():
    sim, clock = board(shape="smooth", lag_ms=30)
    send(sim, p.move_frame({1: 700}, 1000))
    clock.sleep(0.1)
    early = read(sim, p.SubCommand.READ_POSITION, 1)
    assert 500 <= early < 505  # a smooth start
    clock.sleep(1.0)
    assert read(sim, p.SubCommand.READ_POSITION, 1) == 700


def test_stored_limit_silently_caps_motion():
    sim, clock = board()
    send(sim, p.move_frame({2: 1000}, 200))
    clock.sleep(2.0)
    assert read(sim, p.SubCommand.READ_POSITION, 2) == 960


def test_obstacle_stalls_the_joint_while_the_command_moves_on():
    sim, clock = board(obstacle_2="562,900")
    send(sim, p.move_frame({2: 300}, 500))
    clock.sleep(1.0)
    assert read(sim, p.SubCommand.READ_POSITION, 2) == 562
    send(sim, p.move_frame({2: 950}, 500))  # away from the obstacle: free, until the next one
    clock.sleep(1.0)
    assert read(sim, p.SubCommand.READ_POSITION, 2) == 900


def test_hold_stops_where_the_servo_is():
    sim, clock = board(lag_ms=0)
    send(sim, p.move_frame({1: 900}, 1000))
    clock.sleep(0.25)
    send(sim, p.stop_frame([1]))
    clock.sleep(1.0)
    assert read(sim, p.SubCommand.READ_POSITION, 1) == 600


def test_torque_off_sags_joints_2_to_4_but_not_in_the_tuck():
    sim, clock = board()
    for sid in ROSORIN_ARM.ids:
        send(sim, p.request_frame(p.SubCommand.TORQUE_OFF, sid))
    clock.sleep(30.0)
    pos = {sid: read(sim, p.SubCommand.READ_POSITION, sid) for sid in ROSORIN_ARM.ids}
    assert pos[2] == 658 and pos[3] == -35 and pos[4] == 223  # after a power cut: negative reads happen
    assert pos[1] == 500 and pos[5] == 500
    assert read(sim, p.SubCommand.READ_TORQUE, 3) == 0
    send(sim, p.move_frame({3: 40}, 3000))  # a move switches torque back on
    assert read(sim, p.SubCommand.READ_TORQUE, 3) == 1

    tucked, clock = board(pose="pretuck")
    for sid in ROSORIN_ARM.ids:
        send(tucked, p.request_frame(p.SubCommand.TORQUE_OFF, sid))
    clock.sleep(30.0)
    assert read(tucked, p.SubCommand.READ_POSITION, 2) == 960
    assert read(tucked, p.SubCommand.READ_POSITION, 3) == 48


def test_silent_servo_neither_answers_nor_moves():
    sim, clock = board(silent_10=1, silent_after_3=1.0)
    assert send(sim, p.request_frame(p.SubCommand.READ_POSITION, 10)) == b""
    assert read(sim, p.SubCommand.READ_POSITION, 3) == 211
    clock.sleep(2.0)
    assert send(sim, p.request_frame(p.SubCommand.READ_POSITION, 3)) == b""
    assert read(sim, p.SubCommand.READ_POSITION, 1) == 500
    sim.set_silent(10, False)
    assert read(sim, p.SubCommand.READ_POSITION, 10) == 499


def test_crc_errors_every_nth_reply():
    sim, _ = board(crc_error_every=3)
    raws = [send(sim, p.request_frame(p.SubCommand.READ_POSITION, 1)) for _ in range(6)]
    bad = []
    for raw in raws:
        try:
            p.decode_frame(raw)
            bad.append(False)
        except p.BoardFrameError:
            bad.append(True)
    assert bad == [False, False, True, False, False, True]
    assert sim.corrupted == 2


def test_same_seed_same_noise():
    def reads(seed):
        sim, _ = board(noise=2, seed=seed, crc_error_rate=0.2)
        return [send(sim, p.request_frame(p.SubCommand.READ_POSITION, 1)) for _ in range(30)]

    assert reads(7) == reads(7)
    assert reads(7) != reads(8)


def test_records_commands_and_rejects_eeprom_writes():
    sim, _ = board()
    send(sim, p.move_frame({1: 520}, 40))
    body = bytes([5, 3, 0x30, 1, 0])  # set angle limit: the board must not take it
    sim.handle(p.decode_frame(b"\xaa\x55" + body + bytes([p.crc8_maxim(body)])))
    assert [type(r.command) for r in sim.received] == [p.Move]
    assert len(sim.rejected) == 1


@pytest.mark.parametrize(
    ("params", "match"),
    [
        ({"obstacle_7": "3"}, "no servo 7"),
        ({"wobble": "1"}, "unknown simulator parameter"),
        ({"limit_2": "900-100"}, "lo < hi"),
        ({"noise": "lots"}, "noise"),
        ({"pose": "dance"}, "pose"),
        ({"shape": "square"}, "shape"),
    ],
)
def test_bad_parameters_are_refused_by_name(params, match):
    with pytest.raises(DeviceURLError, match=match):
        parse_sim_params(ROSORIN_ARM, params)


def test_per_servo_value_wins_over_all_servo_value():
    sp = parse_sim_params(ROSORIN_ARM, {"noise_3": "4", "noise": "1", "limit_2": "100-900", "start_1": "300"})
    assert sp.servos[3].noise == 4 and sp.servos[1].noise == 1
    assert (sp.servos[2].lo, sp.servos[2].hi) == (100, 900)
    assert sp.servos[1].start == 300


def test_the_default_arm_has_one_obstacle_so_a_sweep_shows_a_stall():
    sp = parse_sim_params(ROSORIN_ARM, {})
    assert {sid: s.obstacles for sid, s in sp.servos.items() if s.obstacles} == {1: (880,)}
    assert parse_sim_params(ROSORIN_ARM, {"obstacle_1": ""}).servos[1].obstacles == ()  # removed
    assert parse_sim_params(ROSORIN_ARM, {"obstacle_1": "700"}).servos[1].obstacles == (700,)
    sim, clock = board()
    send(sim, p.move_frame({1: 950}, 500))
    clock.sleep(1.0)
    assert read(sim, p.SubCommand.READ_POSITION, 1) == 880  # stalled at the obstacle, short of the command
