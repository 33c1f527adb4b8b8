"""`sweep`'s settings as the user gives them: one definition per option (runs/options.py).

The `sweep` command's options and a campaign's sweep keys are derived from `SweepOptions`; its `problems` is
the one check both run before a bus opens (the files' checks are the command's own: a campaign writes none).
"""

from __future__ import annotations

from dataclasses import dataclass

from servotool.devices.family import DeviceFacts
from servotool.errors import ServotoolError
from servotool.runs.bus.servo import MAX_SPEED, MIN_SPEED
from servotool.runs.bus.sweep import SweepConfig, SweepSettingsError, directions_for
from servotool.runs.options import option

RETURN_SPEED = 100.0  # pulses/s: the move back to the start, or the sweep's own speed when faster


@dataclass(frozen=True)
class SweepOptions:
    """A limit sweep's settings: servo ids, direction (up, down, both), speed (pulses/s), inside (pulses)."""

    joints: tuple[int, ...] = option(
        (),
        "--servo",
        "Bus servo id to sweep (repeat for several; default: every joint of the arm, not the claw).",
        "ints",
        old="--joint",
    )
    direction: str = option("both", "--direction", "Which way to sweep each joint; both: down first.", "str")
    speed: float = option(
        25.0,
        "--speed",
        "Command speed, pulses/s (1 to 300). A stall is called about 0.5 s after contact: "
        "the command is then about half a second's travel past the stop.",
        "float",
        unit="pulses/s",
    )
    inside: int = option(
        20, "--inside", "Limit set this many pulses inside each stop (0-200).", "int", unit="pulses"
    )
    given: frozenset[str] = frozenset()  # the fields the user set (the rest are defaults)

    def swept(self, facts: DeviceFacts | None) -> tuple[int, ...]:
        """The servos to sweep: those given, else every joint the device's facts name (not its optional
        servos)."""
        return tuple(self.joints) or (facts.joint_ids if facts else ())

    def config(self, facts: DeviceFacts | None) -> SweepConfig:
        """The sweep run's configuration; SweepSettingsError (every problem) or ServotoolError (the
        direction) when its checks refuse it."""
        # derived, never given: a bad speed is its own line, not a second one about the return speed
        back = max(RETURN_SPEED, self.speed) if MIN_SPEED <= self.speed <= MAX_SPEED else RETURN_SPEED
        return SweepConfig(
            joints=self.swept(facts),
            directions=directions_for(self.direction),
            speed=self.speed,
            inside=self.inside,
            return_speed=back,
        )

    def problems(self, facts: DeviceFacts | None) -> list[str]:
        """Every problem of these settings on this device (its facts when the URL is known), one line each."""
        problems: list[str] = []
        if facts is not None and facts.joint_ids:
            known = facts.joint_ids + facts.optional_ids
            ids = ", ".join(map(str, known))
            problems += [
                f"--servo {j}: servo {j} not on this arm ({facts.model}: {ids})"
                for j in self.swept(facts)
                if j not in known
            ]
        try:
            directions_for(self.direction)
        except ServotoolError as exc:
            problems.append(str(exc))
            return problems + self._without_direction(facts)
        try:
            self.config(facts)
        except SweepSettingsError as exc:
            problems += exc.problems
        return problems

    def _without_direction(self, facts: DeviceFacts | None) -> list[str]:
        """The other problems when the direction is refused (checked as if it were down)."""
        try:
            SweepOptions(tuple(self.joints), "down", self.speed, self.inside).config(facts)
        except SweepSettingsError as exc:
            return exc.problems
        return []
