"""FAIRINO command error codes, latched fault codes and motion states, as tables.

Error codes are what a command returns (XML-RPC return value, or an integer in a UDP reply). Faults are
what the controller latches in its state (main_code, sub_code) until ResetAllError. Fault numbering differs
between firmware versions, so every use goes through FAULTS and the functions below, never through scattered
literals. An entry with `confirmed=False` was read from documentation but not seen on a controller: treat it
as an assumption.

`decode_fault` and `motion_state` turn the state stream's raw values into the neutral vocabulary of
devices.arm (Fault, MotionState): nothing outside this folder reads the raw codes.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum

from servotool.devices.arm import Fault, MotionState


class ErrCode(IntEnum):
    OK = 0
    PARAM_COUNT = 3
    OUT_OF_RANGE = 4
    FAILED = 14  # command failed to execute; every command gets it while a fault blocks the controller
    JOINT_OVERRUN = 29
    ESTOP = 31
    SAFETY_STOP = 99
    NOT_ENABLED = 101
    NOT_CONNECTED = -4


ERR_TEXT: dict[int, str] = {
    ErrCode.OK: "ok",
    ErrCode.PARAM_COUNT: "wrong number of parameters",
    ErrCode.OUT_OF_RANGE: "parameter value out of range",
    ErrCode.FAILED: "command failed to execute (a fault is latched or the controller is rejecting commands)",
    ErrCode.JOINT_OVERRUN: "ServoJ joint overrun",
    ErrCode.ESTOP: "emergency stop (may need a control-box power cycle; unconfirmed meaning)",
    ErrCode.SAFETY_STOP: "safety stop",
    ErrCode.NOT_ENABLED: "robot not enabled (also returned during the window after RobotEnable)",
    ErrCode.NOT_CONNECTED: "not connected",
}


def describe_errcode(code: int) -> str:
    return f"errcode {code}: {ERR_TEXT.get(code, 'unknown error code')}"


@dataclass(frozen=True)
class FaultEntry:
    """One row of the fault table: its codes, what it means, and whether a controller was seen latching it."""

    main: int
    sub: int
    text: str
    confirmed: bool


MAIN_MOTION = 1  # main code of the motion/speed supervision faults below

# (main, sub) -> FaultEntry. Sub 32 under main 1 is the fault the runaway campaign latched on real FR3/FR20
# arms; the per-axis command-speed entries come from the CNDE documentation and their main code is an
# assumption.
FAULTS: dict[tuple[int, int], FaultEntry] = {
    (MAIN_MOTION, 23 + axis): FaultEntry(
        MAIN_MOTION, 23 + axis, f"axis {axis + 1} command speed over the limit", confirmed=False
    )
    for axis in range(6)
}
FAULTS[(MAIN_MOTION, 32)] = FaultEntry(
    MAIN_MOTION, 32, "TCP speed over the limit (latched by the runaway)", True
)

RUNAWAY_FAULT: tuple[int, int] = (MAIN_MOTION, 32)


def speed_limit_fault(axis: int) -> tuple[int, int]:
    """(main, sub) of the command-speed fault of 0-based axis 0..5; raises ValueError outside that range."""
    key = (MAIN_MOTION, 23 + axis)
    if axis < 0 or key not in FAULTS:
        raise ValueError(f"no command-speed fault for axis index {axis}")
    return key


def fault_name(main: int, sub: int) -> str:
    """How the controller's documentation names a latch: by its two codes."""
    return f"main {main} sub {sub}"


def fault_text(main: int, sub: int) -> str:
    """What a latch means, from FAULTS ("not in the table" when it is not; unconfirmed numbering said)."""
    entry = FAULTS.get((main, sub))
    if entry is None:
        return "not in the table"
    return entry.text + ("" if entry.confirmed else " [numbering unconfirmed]")


def decode_fault(main: int, sub: int) -> Fault | None:
    """The latch (main_code, sub_code) of a state frame as a Fault; None for (0, 0), a healthy controller."""
    main, sub = int(main), int(sub)
    if main == 0 and sub == 0:
        return None
    return Fault((main, sub), fault_name(main, sub), fault_text(main, sub))


def fault_label(codes: tuple[int, ...]) -> str:
    """What a recorded fault (main, sub) means, from FAULTS; "" when the table does not know it."""
    main, sub = (tuple(codes) + (0, 0))[:2]
    return fault_text(main, sub) if (main, sub) in FAULTS else ""


def status_label(bits: int) -> str:
    """What the recorder's status word of a controller (the fault word: main high, sub low) means."""
    return fault_label((bits >> 16, bits & 0xFFFF)) if bits else ""


def describe_fault(main: int, sub: int) -> str:
    """One line naming a latched fault; (0, 0) is 'no fault'."""
    if main == 0 and sub == 0:
        return "no fault"
    fault = FAULTS.get((main, sub))
    if fault is None:
        return f"fault {fault_name(main, sub)} (not in the table)"
    return f"fault {fault_name(main, sub)}: {fault_text(main, sub)}"


# the controller's robot_state -> the neutral motion state (its documentation: 1 stopped, 2 moving,
# 3 paused, 4 drag teaching, that is hand-guided)
MOTION_STATES: dict[int, MotionState] = {
    1: MotionState.STOPPED,
    2: MotionState.MOVING,
    3: MotionState.PAUSED,
    4: MotionState.HAND_GUIDED,
}


def motion_state(robot_state: int) -> MotionState:
    """The neutral motion state of a streamed robot_state; UNKNOWN for a value not in MOTION_STATES."""
    return MOTION_STATES.get(int(robot_state), MotionState.UNKNOWN)
