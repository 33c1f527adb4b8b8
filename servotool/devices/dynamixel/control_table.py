"""The DYNAMIXEL X-series control table as data (addresses, sizes, access, area, units), XL330 figures.

Addresses and sizes follow the ROBOTIS e-Manual control table of the XL330-M288-T (they are shared by the
X series: XL430, XC330, XM430 ... keep the same RAM layout). The EEPROM area is addresses 0-63, the RAM area
starts at 64 (Torque Enable); servotool never writes the EEPROM area: `RAM_START` is the lowest address its
client will write.

Units: `scale` converts a raw register value to `unit` (raw * scale). Signed registers are two's complement
on the wire (little-endian, like every multi-byte field of Protocol 2.0).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

RAM_START = 64  # the first RAM address; everything below is EEPROM (kept across power cycles)
TABLE_SIZE = 228  # through Indirect Data 20 (227)

PULSES_PER_REV = 4096
POSITION_RANGE = (0, PULSES_PER_REV - 1)  # a goal in position control mode, pulses (one turn)
MAX_ID = 252  # the highest id one servo can have (253 is reserved, 254 the broadcast id)
RPM_PER_UNIT = 0.229  # Present/Goal Velocity, Velocity Trajectory, Profile Velocity, Velocity Limit
PULSES_PER_S_PER_UNIT = RPM_PER_UNIT * PULSES_PER_REV / 60.0  # one velocity unit in pulses per second

MODEL_XL330_M288 = 1200  # Model Number (0) of the XL330-M288-T, as its ping answers
MODEL_XL330_M077 = 1190
MODEL_NAMES = {MODEL_XL330_M288: "XL330-M288", MODEL_XL330_M077: "XL330-M077"}

# Operating Mode (11, EEPROM) values -> names (ROBOTIS e-Manual, X series). servotool drives position control
# mode only: in velocity and PWM mode a servo turns at its Goal Velocity (104) / Goal PWM (100) as soon as
# torque is on, and in the multi-turn modes (4, 5) positions span about +-256 turns, not 0-4095.
OPERATING_MODES = {
    0: "current",
    1: "velocity",
    3: "position",
    4: "extended position",
    5: "current-based position",
    16: "PWM",
}
POSITION_MODE = 3  # the default, and the only mode servotool powers or moves a servo in
MULTI_TURN_MODES = (4, 5)
MULTI_TURN_RANGE = (-1_048_575, 1_048_575)  # Goal Position in modes 4 and 5, pulses (+-256 turns)

# Baud Rate (8) register values of the XL330 -> bits per second
BAUD_RATES = {0: 9_600, 1: 57_600, 2: 115_200, 3: 1_000_000, 4: 2_000_000, 5: 3_000_000, 6: 4_000_000}


class Access(enum.Enum):
    R = "R"
    RW = "RW"


@dataclass(frozen=True)
class Register:
    """One field of the control table. `eeprom` is true below RAM_START (persistent, never written here)."""

    address: int
    size: int
    name: str
    access: Access
    unit: str = ""
    scale: float = 1.0
    signed: bool = False
    initial: int | None = None

    @property
    def eeprom(self) -> bool:
        return self.address < RAM_START

    @property
    def writable(self) -> bool:
        return self.access is Access.RW

    @property
    def end(self) -> int:
        """One past the last byte of the field."""
        return self.address + self.size


_R, _RW = Access.R, Access.RW

# (address, size, name, access, unit, scale, signed, initial value on the XL330-M288)
_ROWS: tuple[tuple[int, int, str, Access, str, float, bool, int | None], ...] = (
    # EEPROM area
    (0, 2, "Model Number", _R, "", 1.0, False, MODEL_XL330_M288),
    (2, 4, "Model Information", _R, "", 1.0, False, 0),
    (6, 1, "Firmware Version", _R, "", 1.0, False, 46),
    (7, 1, "ID", _RW, "", 1.0, False, 1),
    (8, 1, "Baud Rate", _RW, "", 1.0, False, 1),
    (9, 1, "Return Delay Time", _RW, "us", 2.0, False, 250),
    (10, 1, "Drive Mode", _RW, "", 1.0, False, 0),
    (11, 1, "Operating Mode", _RW, "", 1.0, False, 3),
    (12, 1, "Secondary ID", _RW, "", 1.0, False, 255),
    (13, 1, "Protocol Type", _RW, "", 1.0, False, 2),
    (20, 4, "Homing Offset", _RW, "pulse", 1.0, True, 0),
    (24, 4, "Moving Threshold", _RW, "rpm", RPM_PER_UNIT, False, 10),
    (31, 1, "Temperature Limit", _RW, "degC", 1.0, False, 70),
    (32, 2, "Max Voltage Limit", _RW, "V", 0.1, False, 70),
    (34, 2, "Min Voltage Limit", _RW, "V", 0.1, False, 35),
    (36, 2, "PWM Limit", _RW, "%", 0.113, False, 885),
    (38, 2, "Current Limit", _RW, "mA", 1.0, False, 1750),
    (44, 4, "Velocity Limit", _RW, "rpm", RPM_PER_UNIT, False, 445),
    (48, 4, "Max Position Limit", _RW, "pulse", 1.0, False, 4095),
    (52, 4, "Min Position Limit", _RW, "pulse", 1.0, False, 0),
    (60, 1, "Startup Configuration", _RW, "", 1.0, False, 0),
    (62, 1, "PWM Slope", _RW, "mV/ms", 1.977, False, 140),
    (63, 1, "Shutdown", _RW, "", 1.0, False, 0x35),
    # RAM area
    (64, 1, "Torque Enable", _RW, "", 1.0, False, 0),
    (65, 1, "LED", _RW, "", 1.0, False, 0),
    (68, 1, "Status Return Level", _RW, "", 1.0, False, 2),
    (69, 1, "Registered Instruction", _R, "", 1.0, False, 0),
    (70, 1, "Hardware Error Status", _R, "", 1.0, False, 0),
    (76, 2, "Velocity I Gain", _RW, "", 1.0, False, 1600),
    (78, 2, "Velocity P Gain", _RW, "", 1.0, False, 180),
    (80, 2, "Position D Gain", _RW, "", 1.0, False, 0),
    (82, 2, "Position I Gain", _RW, "", 1.0, False, 0),
    (84, 2, "Position P Gain", _RW, "", 1.0, False, 400),
    (88, 2, "Feedforward 2nd Gain", _RW, "", 1.0, False, 0),
    (90, 2, "Feedforward 1st Gain", _RW, "", 1.0, False, 0),
    (98, 1, "Bus Watchdog", _RW, "ms", 20.0, False, 0),
    (100, 2, "Goal PWM", _RW, "%", 0.113, True, None),
    (102, 2, "Goal Current", _RW, "mA", 1.0, True, None),
    (104, 4, "Goal Velocity", _RW, "rpm", RPM_PER_UNIT, True, None),
    (108, 4, "Profile Acceleration", _RW, "rev/min^2", 214.577, False, 0),
    (112, 4, "Profile Velocity", _RW, "rpm", RPM_PER_UNIT, False, 0),
    (116, 4, "Goal Position", _RW, "pulse", 1.0, True, None),
    (120, 2, "Realtime Tick", _R, "ms", 1.0, False, None),
    (122, 1, "Moving", _R, "", 1.0, False, 0),
    (123, 1, "Moving Status", _R, "", 1.0, False, 0),
    (124, 2, "Present PWM", _R, "%", 0.113, True, None),
    (126, 2, "Present Current", _R, "mA", 1.0, True, None),
    (128, 4, "Present Velocity", _R, "rpm", RPM_PER_UNIT, True, None),
    (132, 4, "Present Position", _R, "pulse", 1.0, True, None),
    (136, 4, "Velocity Trajectory", _R, "rpm", RPM_PER_UNIT, True, None),
    (140, 4, "Position Trajectory", _R, "pulse", 1.0, True, None),
    (144, 2, "Present Input Voltage", _R, "V", 0.1, False, None),
    (146, 1, "Present Temperature", _R, "degC", 1.0, False, None),
    (147, 1, "Backup Ready", _R, "", 1.0, False, 0),
)

XL330: dict[str, Register] = {row[2]: Register(*row) for row in _ROWS}
BY_ADDRESS: dict[int, Register] = {r.address: r for r in XL330.values()}

MODEL_NUMBER = XL330["Model Number"]
ID = XL330["ID"]
BAUD_RATE = XL330["Baud Rate"]
OPERATING_MODE = XL330["Operating Mode"]
VELOCITY_LIMIT = XL330["Velocity Limit"]
PWM_LIMIT = XL330["PWM Limit"]
CURRENT_LIMIT = XL330["Current Limit"]
TEMPERATURE_LIMIT = XL330["Temperature Limit"]
MIN_POSITION_LIMIT = XL330["Min Position Limit"]
MAX_POSITION_LIMIT = XL330["Max Position Limit"]
TORQUE_ENABLE = XL330["Torque Enable"]
STATUS_RETURN_LEVEL = XL330["Status Return Level"]
HARDWARE_ERROR_STATUS = XL330["Hardware Error Status"]
GOAL_PWM = XL330["Goal PWM"]
GOAL_CURRENT = XL330["Goal Current"]
GOAL_VELOCITY = XL330["Goal Velocity"]
PROFILE_VELOCITY = XL330["Profile Velocity"]
GOAL_POSITION = XL330["Goal Position"]
GOALS = (GOAL_PWM, GOAL_CURRENT, GOAL_VELOCITY, GOAL_POSITION)  # the writes that set a servo going
PRESENT_CURRENT = XL330["Present Current"]
PRESENT_VELOCITY = XL330["Present Velocity"]
PRESENT_POSITION = XL330["Present Position"]
VELOCITY_TRAJECTORY = XL330["Velocity Trajectory"]
POSITION_TRAJECTORY = XL330["Position Trajectory"]
PRESENT_INPUT_VOLTAGE = XL330["Present Input Voltage"]
PRESENT_TEMPERATURE = XL330["Present Temperature"]

# The telemetry span: Present Current (126) through Present Temperature (146), one sync read per sweep.
TELEMETRY_START = PRESENT_CURRENT.address
TELEMETRY_LENGTH = PRESENT_TEMPERATURE.end - TELEMETRY_START  # 21 bytes
TELEMETRY_FIELDS = (
    PRESENT_CURRENT,
    PRESENT_VELOCITY,
    PRESENT_POSITION,
    VELOCITY_TRAJECTORY,
    POSITION_TRAJECTORY,
    PRESENT_INPUT_VOLTAGE,
    PRESENT_TEMPERATURE,
)


class HardwareError(enum.IntFlag):
    """Bits of Hardware Error Status (70); bits 1, 6 and 7 are unused on the X series."""

    INPUT_VOLTAGE = 0x01
    OVERHEATING = 0x04
    MOTOR_ENCODER = 0x08
    ELECTRICAL_SHOCK = 0x10
    OVERLOAD = 0x20


def describe_hardware_error(bits: int) -> str:
    """Names of the set bits, e.g. "OVERLOAD|OVERHEATING"; "none" for 0; unknown bits as hex."""
    if not bits:
        return "none"
    names = [flag.name or "" for flag in HardwareError if bits & flag]
    rest = bits & ~sum(HardwareError)
    if rest:
        names.append(f"0x{rest:02x}")
    return "|".join(names)


def describe_operating_mode(mode: int) -> str:
    """The mode's name with its number, e.g. "velocity (1)"; "unknown (7)" for a value no X series has."""
    return f"{OPERATING_MODES.get(mode, 'unknown')} ({mode})"


def decode_value(register: Register, raw: bytes) -> int:
    """The integer a field holds, from its little-endian bytes (two's complement when signed)."""
    return int.from_bytes(raw[: register.size], "little", signed=register.signed)


def encode_value(register: Register, value: int) -> bytes:
    """The field's little-endian bytes. ValueError when value does not fit the field."""
    try:
        return int(value).to_bytes(register.size, "little", signed=register.signed)
    except OverflowError:
        raise ValueError(
            f"{register.name} ({register.address}): {value} does not fit {register.size} byte(s)"
        ) from None


def register(name_or_address: str | int) -> Register:
    """Look a field up by name or address. KeyError names the known ones."""
    if isinstance(name_or_address, int):
        found = BY_ADDRESS.get(name_or_address)
    else:
        found = XL330.get(name_or_address)
    if found is None:
        raise KeyError(f"no control-table field {name_or_address!r} (known: {', '.join(XL330)})")
    return found
