"""Whether someone else drives a FAIRINO arm, read from the state stream alone (no I/O here).

A controller executes every ServoJ it receives, from any sender: two streams interleaved make setpoint jumps
(each sender's pose against the other's) that latch the runaway fault main 1 / sub 32 and sweep the joint.
So a client looks before it enables. Evidence, over a short window of state frames:

* the controller's ServoJ count (`servoJ_cmd_num`) rose by more than the commands this client sent;
* the controller reports servo mode (`sim_servo_mode`, streamed by the simulator alone: a controller's
  `servo_state` is an auxiliary drive's state, no evidence of anyone) that this client did not start;
* the arm moves: a joint speed (`actual_joint_vel`) above MOVING_DEG_S, the controller's motion state
  (`robot_state` 2: MotionState.MOVING), or a joint that travelled more than MOVING_DEG over the window.

A drive left enabled with nothing moving or streaming is not evidence: a previous run kept it enabled on
purpose (--keep), and enabling again is harmless.
"""

from __future__ import annotations

from collections.abc import Sequence

from servotool.devices.arm import MotionState, StateFrame

MOVING_DEG_S = 0.5  # joint speed that counts as motion (encoder noise stays far below it)
MOVING_DEG = 0.05  # travel over the window that counts as motion (25x the simulator's noise)


def _moving(frames: Sequence[StateFrame]) -> str | None:
    last = frames[-1]
    for f in frames:
        if f.qd is not None:
            j, v = max(enumerate(f.qd), key=lambda jv: abs(jv[1]))
            if abs(v) > MOVING_DEG_S:
                return f"the arm is moving (J{j + 1} at {v:+.1f} deg/s)"
    travel = [abs(b - a) for a, b in zip(frames[0].q, last.q, strict=False)]
    if travel and max(travel) > MOVING_DEG:
        j = travel.index(max(travel))
        return f"the arm is moving (J{j + 1} travelled {travel[j]:.2f} deg while watched)"
    if any(f.motion is MotionState.MOVING for f in frames):
        return "the controller reports the arm in motion"
    return None


def busy_evidence(frames: Sequence[StateFrame], own_commands: int = 0, own_servo: bool = False) -> str | None:
    """Why another owner holds the arm, from state frames watched over a window (oldest first), or None.

    own_commands: the ServoJ commands this client sent during the window (not counted as someone else's);
    own_servo: this client itself started servo mode. Returns the reasons joined by "; ".
    """
    if not frames:
        return None
    reasons: list[str] = []
    first, last = frames[0], frames[-1]
    if first.cmd_num is not None and last.cmd_num is not None:
        others = (last.cmd_num - first.cmd_num) - own_commands
        if others > 0:
            ms = (last.t - first.t) * 1000.0
            reasons.append(f"another client is streaming ServoJ ({others} commands taken in {ms:.0f} ms)")
    if last.servo_active and not own_servo:
        reasons.append("the controller is in servo mode, started by another client")
    # while this client streams, the motion is its own
    moving = _moving(frames) if not (own_commands or own_servo) else None
    if moving:
        reasons.append(moving)
    if reasons and last.enabled:
        reasons.append("the drives are enabled")
    return "; ".join(reasons) or None
