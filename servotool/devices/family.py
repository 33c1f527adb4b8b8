"""What a device family tells the rest of servotool: the contract of one `devices/<family>/` folder.

A family is one `Family` value, exported as `FAMILY` by `devices/<family>/family.py` and listed by the
registry. Everything a run or a command needs to know about a device, before it opens and after, comes
through these hooks; runs/, cli/, motion/ and analysis/ never name a family.

The module `family.py` of a family must import nothing optional and nothing heavy (no numpy, no client
library): it is imported for `servotool --help`. Its hooks are pure functions of the URL (no I/O) unless
their contract says otherwise; `open` and `serve` import the client or the simulator when called.

Units: an arm's joints are in degrees (speeds deg/s, accelerations deg/s^2, jerks deg/s^3); a bus's
positions are whole servo units (`DeviceFacts.units` names them), ids are the servos' own.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from servotool.devices.serving import SimServe
from servotool.devices.url import DeviceURL
from servotool.readings import ARM_MARGIN_DEG, Readable, padded

ARM = "arm"
BUS = "bus"

JointRanges = tuple[tuple[float, float], ...]  # (lo, hi) per joint, in the device's units

# run kinds a campaign file may hold; a family lists those its devices support (`Family.campaigns`)
CAMPAIGN_RUNS = ("lag", "step", "sweep")


@dataclass(frozen=True)
class MotionCaps:
    """The bounds an arm family's safety checks use, at its nominal command period.

    cmd_period_s: the period setpoints are streamed at by default (s). v_max, a_max, j_max: the defaults
    of a stream's speed, acceleration and jerk bounds. a_cap: the highest a_max a run may use (the braked
    stop decelerates at a_max, one command period at a time; past it a stop is a jump); a_probe_cap: the
    highest a shaped probe may reach on a test arm. Both caps hold at cmd_period_s and fall with the square
    of a longer period (the same largest change of the per-command step). shapers: the stream shapers a
    step may use on this family ("accel", "otg"), the first being its default. fixed_period: the controller
    sets the pace (its state cycle, cmd_period_s) and a run may use no other period.

    How the jerk-limited generator runs on this family (its three rules and the backstop): norm_budget, the
    bounds are one vector-norm budget over the joints (each joint then gets 1/sqrt(n) of it); echo_anchor,
    every state echoes the command the controller took (StateFrame.setpoint) and the generator re-anchors
    on it; backstop: the (v, a, j) limits of the controller itself, which a rate-limiting backstop behind
    the generator holds every command to, reporting its largest alteration (None: no backstop; the
    generator's own bounds v_max, a_max, j_max must sit below them, or rounding alone reaches them).
    settle_cycles: the non-moving commands every stream ends
    on (the controller refuses to finish a motion on a moving command; 0: none needed).
    """

    cmd_period_s: float
    v_max: float
    a_max: float
    j_max: float
    a_cap: float
    a_probe_cap: float
    shapers: tuple[str, ...] = ("accel", "otg")
    fixed_period: bool = False
    norm_budget: bool = False
    echo_anchor: bool = False
    backstop: tuple[float, float, float] | None = None
    settle_cycles: int = 0


@dataclass(frozen=True)
class BusArm:
    """The arm a bus's servos make, as its profile knows it (whole servo units, servo ids).

    name: the profile's name; joint_ids: the servos whose position must be known before anything moves;
    optional_ids: servos that may go silent (a claw); poses: named poses, {name: {id: position}};
    reference_poses: names that are not command targets; tuck_pose: the one pose torque may be switched
    off in, checked on tuck_joints within tuck_tolerance ("" when the arm has none).
    """

    name: str
    joint_ids: tuple[int, ...]
    optional_ids: tuple[int, ...] = ()
    poses: Mapping[str, Mapping[int, int]] = field(default_factory=dict)
    reference_poses: tuple[str, ...] = ()
    tuck_pose: str = ""
    tuck_joints: tuple[int, ...] = ()
    tuck_tolerance: int = 0
    joint_names: Mapping[int, str] = field(default_factory=dict)

    @property
    def ids(self) -> tuple[int, ...]:
        return self.joint_ids + self.optional_ids


@dataclass(frozen=True)
class DeviceFacts:
    """What is known of a device from its URL alone (nothing opened): what validation and planning use.

    kind: ARM or BUS; model: the profile or model name ("" when the URL names none); joint_names: one per
    joint, in order; joint_ids: a bus's servo ids of those joints (an arm: empty); joint_ranges and
    joint_speed_limits: per joint, in `units` and units/s (empty when unknown before connecting);
    optional_ids: a bus's servos that may go silent without stopping it (a claw); position_range: the
    range any position command of a bus must lie in; id_range: the ids a bus's servos may have;
    motion: an arm family's bounds (None for a bus); arm: the arm profile a bus URL names (None: its
    servos make no known arm); limits_node: the node name under which a ROS 2 limits parameter file in
    this bus's units holds its limits (None: no limits file applies to the bus, its units are others);
    the registry fills it from `Family.limits_node`, a family's facts hook leaves it out; readable: what a
    position reading of the device can be (a bus: one span for every servo; an arm: a span per joint), past
    which a reading is a bad frame; None: derived by `readable` from the joint ranges.
    """

    url: str
    family: str
    kind: str
    model: str
    simulated: bool
    joint_names: tuple[str, ...]
    units: str
    joint_ranges: JointRanges = ()
    joint_speed_limits: tuple[float, ...] = ()
    joint_ids: tuple[int, ...] = ()
    optional_ids: tuple[int, ...] = ()
    position_range: tuple[int, int] | None = None
    id_range: tuple[int, int] | None = None
    motion: MotionCaps | None = None
    arm: BusArm | None = None
    limits_node: str | None = None
    readable: Readable | None = None

    @property
    def n_joints(self) -> int:
        return len(self.joint_names)

    @property
    def ids(self) -> tuple[int, ...]:
        """A bus's servo ids known from the URL: its joints, then its optional servos."""
        return self.joint_ids + self.optional_ids


def readable(facts: DeviceFacts) -> Readable:
    """What a position reading of the device can be: the family's own fact, else an arm's joint ranges
    widened by ARM_MARGIN_DEG (a joint pushed past its soft limit still reads), else the physical bound."""
    if facts.readable is not None:
        return facts.readable
    if facts.kind == ARM and facts.joint_ranges:
        return Readable(padded(facts.joint_ranges, ARM_MARGIN_DEG), units=facts.units)
    return Readable(units=facts.units)


@dataclass(frozen=True)
class SimParam:
    """One parameter a family's simulator takes in its `sim:` URL (`?key=value`): its key and its help."""

    key: str
    help: str


def _no_params() -> tuple[SimParam, ...]:
    return ()


@dataclass(frozen=True)
class Family:
    """One device family, as every layer above devices/ sees it.

    name: the folder's name; title: how a user knows it (a maker and a device); kind: ARM or BUS;
    schemes: the URL schemes of its real devices; examples: real-device URLs for help texts and hints;
    network: its real devices are network hosts (lock keys by host) rather than serial ports (lock keys by
    the resolved device, shared by every family on one port).

    Hooks (pure unless said otherwise):

    * sim_names() -> the names of its simulator profiles (`sim:<name>`).
    * open(parsed, **kwargs) -> an Arm or a Bus (I/O: connects; a `sim:` URL starts the simulator first).
      DeviceURLError for a URL it cannot read, DeviceError when the device does not answer.
    * facts(parsed) -> DeviceFacts; DeviceURLError when the URL's parameters are not the family's.
    * lock_keys(parsed) -> the host-wide lock keys a run on this URL must hold ([] for an embedded
      simulator, which is its own device). Never empty for a real device.
    * probe(port, baud, timeout_ms) -> ids answering on a serial port, by a harmless read (I/O; [] when
      nothing answers; OSError or ServotoolError when the port cannot be opened; None: the family has no
      probe). probe_bauds: the baud rates `ports` tries it at, in order.
    * telemetry(device) -> the recorder's source of an opened device (recorder.source.TelemetrySource;
      None: not recordable; the recorder refuses its URLs before opening).
    * campaigns: the run kinds (CAMPAIGN_RUNS) its campaigns may hold.
    * sim_params() -> the parameters its `sim:` URLs take, with their help.
    * serve: the standalone simulator behind `servotool sim <name>` (devices.serving; None: none).
    * describe_status(bits) -> the names of the set bits of a status word the recorder reads (a latch),
      e.g. "overload"; "" when it knows none of them (None: the family names no status bits).
    * describe_fault(codes) -> the name of a fault a run's CSV records by its codes; "" when its table does
      not know it (None: the family names no faults).

    default_sim: the `sim:` name a command opens when it is given no device ("": none).
    """

    name: str
    title: str
    kind: str
    schemes: tuple[str, ...]
    examples: tuple[str, ...]
    network: bool
    sim_names: Callable[[], tuple[str, ...]]
    open: Callable[..., Any]
    facts: Callable[[DeviceURL], DeviceFacts]
    lock_keys: Callable[[DeviceURL], list[str]]
    probe: Callable[[str, int, int], list[int]] | None = None
    probe_bauds: tuple[int, ...] = ()
    telemetry: Callable[[Any], Any] | None = None
    campaigns: frozenset[str] = frozenset()
    sim_params: Callable[[], tuple[SimParam, ...]] = _no_params
    serve: SimServe | None = None
    docs: str = ""  # the family's page under docs/, "" when it has none
    default_sim: str = ""
    client_packages: tuple[str, ...] = ()  # the distributions its clients need (`servotool version` lists)
    # the ROS 2 node whose parameter file holds a bus's mapped joint limits (arm_limit_N: [lo, hi]) in its
    # position units; "" when the family's limits go in no such file (`sweep` cannot write them)
    limits_node: str = ""
    describe_status: Callable[[int], str] | None = None
    describe_fault: Callable[[tuple[int, ...]], str] | None = None


__all__ = [
    "ARM",
    "BUS",
    "CAMPAIGN_RUNS",
    "BusArm",
    "DeviceFacts",
    "Family",
    "JointRanges",
    "MotionCaps",
    "SimParam",
    "readable",
]
