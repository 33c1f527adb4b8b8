"""How a streamed run ended: one status enum, the outcome record and its one JSON form.

The status values are the strings the JSON output and the CSV end lines have always carried ("complete",
"connection-lost", ...); RunStatus is a str enum, so `outcome.status == "complete"` keeps working and
`json.dumps` writes the plain value.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any

from servotool.errors import ExitCode


class RunStatus(str, enum.Enum):
    """How a stream ended. Every status but COMPLETE went through the braked stop."""

    COMPLETE = "complete"
    INTERRUPTED = "interrupted"  # Ctrl-C (or another stop signal)
    FAULT = "fault"  # the controller latched a fault
    GUARD = "guard"  # the divergence guard tripped
    REJECTED = "rejected"  # the controller kept rejecting commands
    CONNECTION_LOST = "connection-lost"  # the link went away: no stop could be sent
    DEVICE_ERROR = "device-error"  # the device failed otherwise
    ERROR = "error"  # an exception in our own code; the stop still ran

    def __str__(self) -> str:
        return self.value

    @property
    def exit_code(self) -> ExitCode:
        """The exit status of a command whose run ended so (servotool.errors.ExitCode, the README's table)."""
        return _EXITS.get(self, ExitCode.FAULT)


_EXITS = {
    RunStatus.COMPLETE: ExitCode.DONE,
    RunStatus.INTERRUPTED: ExitCode.INTERRUPTED,
    RunStatus.CONNECTION_LOST: ExitCode.DEVICE,
    RunStatus.DEVICE_ERROR: ExitCode.DEVICE,
}


@dataclass
class StreamOutcome:
    """How the stream ended; reason: one line (None when complete). Times are seconds since the run start.

    Lateness (how long after its deadline each tick went out) is summarised in bounded memory: late_ticks
    counts ticks sent more than half a period late, max_late_ms is the worst, mean/p50/p99 come from the
    loop's LatenessStats.
    """

    status: RunStatus
    reason: str | None
    ticks_sent: int
    stop_ticks: int = 0
    t_end: float = 0.0
    fault: tuple[int, ...] | None = None  # the first latched fault's codes, as the CSV records them
    fault_t: float | None = None
    guard_reason: str | None = None
    guard_t: float | None = None
    rejects: int = 0
    bad_frames: int = 0  # state frames no device could send (impossible values): recorded, left out
    late_ticks: int = 0
    max_late_ms: float = 0.0
    mean_late_ms: float = 0.0
    p50_late_ms: float = 0.0
    p99_late_ms: float = 0.0
    at_rest: bool | None = None
    notes: list[str] = field(default_factory=list)
    lost_cycles: int | None = None  # on an arm paced by its device: state cycles the host missed
    link_lost: bool = False  # the link went away, in the loop or during the stop (the JSON has the status)
    # a generator's rate-limiting backstop: the largest change it made to a command (deg), and to how many
    backstop_alteration_deg: float | None = None
    backstop_altered: int | None = None

    @property
    def complete(self) -> bool:
        return self.status == RunStatus.COMPLETE

    @property
    def exit_code(self) -> ExitCode:
        return RunStatus(self.status).exit_code

    def to_dict(self) -> dict[str, Any]:
        """The `run` object of the JSON output; its keys are fixed (scripts read them)."""
        return {
            "status": str(self.status),
            "reason": self.reason,
            "ticks_sent": self.ticks_sent,
            "stop_ticks": self.stop_ticks,
            "duration_s": self.t_end,
            "fault": self.fault,
            "fault_t_s": self.fault_t,
            "guard_reason": self.guard_reason,
            "guard_t_s": self.guard_t,
            "rejects": self.rejects,
            "bad_frames_left_out": self.bad_frames,
            "late_ticks": self.late_ticks,
            "max_late_ms": self.max_late_ms,
            "lost_cycles": self.lost_cycles,
            "at_rest": self.at_rest,
            "backstop_alteration_deg": self.backstop_alteration_deg,
            "backstop_altered": self.backstop_altered,
            "notes": self.notes,
        }
