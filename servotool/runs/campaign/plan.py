"""Campaign files: a device, the arm's safety rules and a series of runs, validated completely before anything
moves.

A campaign is structured data, never shell strings:

    name: gap-udp
    purpose: one line shown by `servotool campaign list`
    device: sim:<profile>
    safety: {joints: [0], max_step_deg: 2.5, raw_steps: true, faults_allowed: true, simulators_only: true}
    runs:
      - why: the coin-flip band
        command: step
        options: {joint: 0, size: 1.5, steps: 1, raw: true}

Validation collects every problem, each naming the file and line: an unknown key, a value of the wrong type,
a run whose settings its own command refuses (the same check the command runs before it opens a device),
and a run that breaks the campaign's safety rules. Nothing here opens a device or moves anything.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

from servotool.devices.arm import Arm
from servotool.devices.family import DeviceFacts
from servotool.devices.registry import DeviceURLError, check_url, family_of, parse_url, url_facts
from servotool.errors import Refused
from servotool.io.campaign_file import Key, YamlText, read_campaign_file
from servotool.io.strict_yaml import brief
from servotool.runs.arm.preflight import profile_ranges
from servotool.runs.arm.ramp import check_settings as check_ramp
from servotool.runs.arm.settings import LagOptions, StepOptions
from servotool.runs.arm.step import check_settings as check_step
from servotool.runs.arm.stream import RunRefused
from servotool.runs.bus.sweep import SweepConfig
from servotool.runs.bus.sweep_options import SweepOptions
from servotool.runs.options import campaign_keys, from_campaign, joint_index, joint_name

COMMANDS = ("lag", "step", "sweep")
ARM_COMMANDS = ("lag", "step")


class CampaignInvalid(Refused):
    """A campaign file with problems; `problems` holds one line per problem (file:line: what)."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__(f"{len(problems)} problem(s):\n" + "\n".join(problems))
        self.problems = problems


# option name -> its type: "int", "float", "bool", "str", "floats" (list or comma string) or "ints"; every
# command's keys are its settings dataclass's (one definition with the command-line options)
LAG_OPTIONS = campaign_keys(LagOptions)
STEP_OPTIONS = campaign_keys(StepOptions)
SWEEP_OPTIONS = campaign_keys(SweepOptions)
OPTIONS = {"lag": LAG_OPTIONS, "step": STEP_OPTIONS, "sweep": SWEEP_OPTIONS}

SAFETY_KEYS = {
    "joints": "joints",
    "max_speed_deg_s": "float",
    "max_sweep_deg": "float",
    "max_step_deg": "float",
    "max_a_max": "float",
    "max_speed_pulses_s": "float",
    "ramp_only": "bool",
    "raw_steps": "bool",
    "faults_allowed": "bool",
    "simulators_only": "bool",
}
TOP_KEYS = ("name", "purpose", "device", "safety", "runs")
RUN_KEYS = ("why", "command", "options")


@dataclass(frozen=True)
class SafetyRules:
    """What the campaign allows. None means no rule of that kind; booleans default to the safe side.

    joints: the joints allowed (an arm's by 0-based index, J1 being 0; a bus's servo ids);
    max_speed_deg_s: cruise speeds and the shaper's v_max; max_sweep_deg: ramp sweeps; max_step_deg: step
    sizes; max_a_max: the shaper's a_max;
    max_speed_pulses_s: bus sweeps; ramp_only: no step runs; raw_steps: raw (unshaped) steps allowed;
    faults_allowed: the campaign goes on after a fault (else it stops at the first); simulators_only: the
    device must be a simulator (also when --robot swaps it).
    """

    joints: tuple[int, ...] | None = None
    max_speed_deg_s: float | None = None
    max_sweep_deg: float | None = None
    max_step_deg: float | None = None
    max_a_max: float | None = None
    max_speed_pulses_s: float | None = None
    ramp_only: bool = False
    raw_steps: bool = False
    faults_allowed: bool = False
    simulators_only: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {k: (list(v) if isinstance(v, tuple) else v) for k, v in self.__dict__.items()}


@dataclass(frozen=True)
class RunSpec:
    """One run of a campaign: index (0-based), the command, its options as written, why, the file line."""

    index: int
    command: str
    options: dict[str, Any]
    why: str
    line: int
    option_lines: dict[str, int] = field(default_factory=dict)

    @property
    def label(self) -> str:
        return f"run {self.index + 1} ({self.command})"

    def to_dict(self) -> dict[str, Any]:
        return {
            "index": self.index,
            "command": self.command,
            "options": dict(self.options),
            "why": self.why,
            "line": self.line,
        }


@dataclass
class Campaign:
    name: str
    purpose: str
    device: str
    safety: SafetyRules
    runs: list[RunSpec]
    path: Path
    header: str = ""
    text: str = ""
    device_line: int = 1

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "purpose": self.purpose,
            "device": self.device,
            "file": str(self.path),
            "safety": self.safety.to_dict(),
            "runs": [r.to_dict() for r in self.runs],
        }


def device_facts(url: str) -> DeviceFacts:
    """The registry's facts of a device URL; raises DeviceURLError when the URL names no known device or
    parameters its family refuses, or a family whose campaigns hold no run of any kind."""
    parsed = check_url(url, None)  # a text with no scheme: the URLs of every kind named
    family = family_of(parsed)
    if not family.campaigns:
        raise DeviceURLError(f"{url}: campaigns do not drive {family.title} devices ({family.name})")
    return url_facts(url)


# ---------------------------------------------------------------------------------------------------------
# typed values


def _as(kind: str, value: Any) -> Any:
    """Convert one YAML value to `kind`; raises ValueError saying what was expected."""
    if kind == "bool":
        if isinstance(value, bool):
            return value
        raise ValueError(f"expected true or false, got {brief(value)}")
    if kind in ("int", "float"):
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ValueError(f"expected a number, got {brief(value)}")
        if not math.isfinite(float(value)):  # before int(): .inf would raise OverflowError there
            raise ValueError(f"expected a finite number, got {brief(value)}")
        if kind == "int":
            if float(value) != int(value):
                raise ValueError(f"expected a whole number, got {brief(value)}")
            return int(value)
        return float(value)
    if kind == "str":
        if not isinstance(value, str):
            raise ValueError(f"expected text, got {brief(value)}")
        return value
    if kind == "joint":  # J1.. as on the command line; a whole number is the file's 0-based index
        if isinstance(value, bool) or not isinstance(value, (int, str)):
            raise ValueError(f"expected a joint name (J1, J2, ...), got {brief(value)}")
        return joint_index(value)[0]
    if kind == "joints" and isinstance(value, list) and any(isinstance(x, str) for x in value):
        try:  # an arm's joints by name (J1, ...); numbers are indices (an arm) or servo ids (a bus)
            return tuple(_as("joint", x) for x in value)
        except ValueError:
            raise ValueError(
                f"expected a list of joint names (J1, ...) or numbers, got {brief(value)}"
            ) from None
    if kind == "joints":
        kind = "ints"
    items = value.replace(";", ",").split(",") if isinstance(value, str) else value
    if not isinstance(items, list) or not items:
        raise ValueError(f"expected a non-empty list of numbers, got {brief(value)}")
    try:
        return tuple(_as(kind[:-1], x if not isinstance(x, str) else float(x)) for x in items)
    except ValueError:
        raise ValueError(f"expected a list of numbers, got {brief(value)}") from None


def _typed(
    doc: YamlText, key: Key, raw: Any, spec: Mapping[str, str], what: str, problems: list[str]
) -> dict[str, Any]:
    """The mapping at `key` with each value converted per spec; unknown keys and bad values are problems."""
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        problems.append(f"{doc.where(key)}: {what} must be a mapping of name: value")
        return {}
    out: dict[str, Any] = {}
    for name, value in raw.items():
        if name not in spec:
            problems.append(f"{doc.where((*key, name))}: unknown {what} {name!r} (known: {', '.join(spec)})")
            continue
        try:
            out[name] = _as(spec[name], value)
        except ValueError as exc:
            problems.append(f"{doc.where((*key, name))}: {what} {name}: {exc}")
    return out


# ---------------------------------------------------------------------------------------------------------
# options -> the commands' own settings


def lag_options(o: Mapping[str, Any], facts: DeviceFacts | None = None) -> LagOptions:
    """A lag run's settings from its typed options, with the device family's bounds where none is given."""
    return from_campaign(LagOptions, o).for_device(facts.motion if facts else None)


def step_options(o: Mapping[str, Any], facts: DeviceFacts | None = None) -> StepOptions:
    """A step run's settings from its typed options, with the device family's bounds where none is given."""
    return from_campaign(StepOptions, o).for_device(facts.motion if facts else None)


def ramp_settings(o: Mapping[str, Any], facts: DeviceFacts | None = None) -> Any:
    """The ramp run's own settings (runs/arm/ramp.py) of a lag run's options."""
    return lag_options(o, facts).run_settings()


def step_settings(o: Mapping[str, Any], facts: DeviceFacts | None = None) -> Any:
    """The step run's own settings (runs/arm/step.py) of a step run's options."""
    return step_options(o, facts).run_settings()


def sweep_config(o: Mapping[str, Any], facts: DeviceFacts) -> SweepConfig:
    """The sweep settings; raises SweepSettingsError (or SettingsError) when its own checks refuse them."""
    return from_campaign(SweepOptions, o).config(facts)


def _command_problems(run: RunSpec, facts: DeviceFacts) -> list[str]:
    """What the run's own command refuses for these options on this device: every problem its settings
    validation finds, then its pre-device checks (the same checks the command runs before it opens)."""
    o = run.options
    if run.command in ARM_COMMANDS and facts.kind != "arm":
        return [f"`{run.command}` needs an arm, but {facts.url} is a servo bus"]
    if run.command == "sweep" and facts.kind != "bus":
        return [f"`sweep` needs a servo bus, but {facts.url} is an arm"]
    if run.command not in family_of(parse_url(facts.url)).campaigns:
        return [f"`{run.command}` is no campaign run of {facts.family} devices"]
    limits = facts.joint_speed_limits or None
    try:
        if run.command == "lag":
            lag_opts = lag_options(o, facts)
            found = lag_opts.problems(
                n_joints=facts.n_joints,
                speed_limits=limits,
                ranges=profile_ranges(facts.url),
                motion=facts.motion,
            )
            if not found:
                check_ramp(lag_opts.run_settings(), cast(Arm, _ArmFacts(facts)))
            return found
        if run.command == "step":
            step_opts = step_options(o, facts)
            found = step_opts.problems(
                n_joints=facts.n_joints,
                simulated=facts.simulated,
                ranges=profile_ranges(facts.url),
                speed_limits=limits,
                motion=facts.motion,
            )
            step = step_opts.run_settings()
            step.confirmed = True  # the typed confirmation is asked when the run starts, not when checking
            if not found:
                check_step(step, cast(Arm, _ArmFacts(facts)))
            return found
        return from_campaign(SweepOptions, o).problems(facts)
    except (RunRefused, ValueError) as exc:
        return [str(exc)]
    return []


@dataclass(frozen=True)
class _ArmFacts:
    """What a run's own check reads of an arm (runs/arm: n_joints, simulated, joint_speed_limits), from the
    URL's facts: the check a run makes when it opens, made before."""

    facts: DeviceFacts

    @property
    def n_joints(self) -> int:
        return self.facts.n_joints

    @property
    def simulated(self) -> bool:
        return self.facts.simulated

    @property
    def joint_speed_limits(self) -> tuple[float, ...]:
        return self.facts.joint_speed_limits


Found = list[tuple[str, str]]  # (option the problem is about, or "" for the run; the problem)


def _lag_rule_problems(s: Any, o: Mapping[str, Any], rules: SafetyRules) -> Found:
    out: Found = []
    if rules.max_sweep_deg is not None and abs(s.sweep_deg) > rules.max_sweep_deg:
        out.append(("sweep", f"sweep {s.sweep_deg:g} deg is above max_sweep_deg {rules.max_sweep_deg:g}"))
    top = max(s.speeds_deg_s, default=0.0)
    if rules.max_speed_deg_s is not None and top > rules.max_speed_deg_s:
        out.append(("speeds", f"speed {top:g} deg/s is above max_speed_deg_s {rules.max_speed_deg_s:g}"))
    if o.get("cold_start") and not rules.simulators_only:
        out.append(
            ("cold_start", "cold_start (streaming inside the enable window) needs `simulators_only: true`")
        )
    if o.get("cold_start") and not rules.faults_allowed:
        out.append(
            ("cold_start", "cold_start makes the controller run away: it needs `faults_allowed: true`")
        )
    return out


def _step_rule_problems(s: Any, rules: SafetyRules) -> Found:
    out: Found = []
    if rules.ramp_only:
        out.append(("", "this campaign is ramp only: step runs are not allowed"))
    if not s.shaped and not rules.raw_steps:
        out.append(("raw", "raw steps are not allowed by this campaign (safety: raw_steps: false)"))
    if rules.max_step_deg is not None and abs(s.size_deg) > rules.max_step_deg:
        out.append(("size", f"step size {s.size_deg:g} deg is above max_step_deg {rules.max_step_deg:g}"))
    if s.shaped and rules.max_speed_deg_s is not None and s.v_max > rules.max_speed_deg_s:
        out.append(("v_max", f"v_max {s.v_max:g} deg/s is above max_speed_deg_s {rules.max_speed_deg_s:g}"))
    if s.shaped and rules.max_a_max is not None and s.a_max > rules.max_a_max:
        out.append(("a_max", f"a_max {s.a_max:g} deg/s^2 is above max_a_max {rules.max_a_max:g}"))
    return out


def _rule_problems(run: RunSpec, rules: SafetyRules, facts: DeviceFacts) -> Found:
    """Every way the run breaks the campaign's safety rules."""
    o, out = run.options, []
    sweep = run.command == "sweep"
    joints = from_campaign(SweepOptions, o).swept(facts) if sweep else (o.get("joint", 0),)
    if rules.joints is not None:
        name = str if sweep else joint_name  # a bus servo by its id, an arm joint by its name
        allowed = ", ".join(name(j) for j in rules.joints)
        out += [
            (
                "joints" if sweep else "joint",
                f"{'servo' if sweep else 'joint'} {name(j)} is not among the "
                f"{'servos' if sweep else 'joints'} this campaign allows ({allowed})",
            )
            for j in joints
            if j not in rules.joints
        ]
    if run.command == "lag":
        out += _lag_rule_problems(ramp_settings(o, facts), o, rules)
    elif run.command == "step":
        out += _step_rule_problems(step_settings(o, facts), rules)
    elif (
        rules.max_speed_pulses_s is not None
        and (speed := from_campaign(SweepOptions, o).speed) > rules.max_speed_pulses_s
    ):
        out.append(
            ("speed", f"speed {speed:g} pulses/s is above max_speed_pulses_s {rules.max_speed_pulses_s:g}")
        )
    return out


def run_problems(run: RunSpec, rules: SafetyRules, facts: DeviceFacts, path: Path) -> list[str]:
    """Every problem of one run on one device, as `file:line: run N (command): what`: its command's own
    checks, then the safety rules. The line is the option's when the problem is about one option."""
    found: Found = [("", p) for p in _command_problems(run, facts)]
    if not found or run.command != "sweep":
        found += _rule_problems(run, rules, facts)
    return [f"{path}:{run.option_lines.get(opt, run.line)}: {run.label}: {msg}" for opt, msg in found]


def device_problems(url: str, rules: SafetyRules, where: str) -> tuple[DeviceFacts | None, list[str]]:
    try:
        facts = device_facts(url)
    except DeviceURLError as exc:
        return None, [f"{where}: device: {exc}"]
    if rules.simulators_only and not facts.simulated:
        return facts, [f"{where}: device {url} is not a simulator, and this campaign runs on simulators only"]
    return facts, []


# ---------------------------------------------------------------------------------------------------------
# the file


def _parse_runs(doc: YamlText, problems: list[str]) -> list[RunSpec]:
    raw = doc.data.get("runs")
    if not isinstance(raw, list) or not raw:
        problems.append(f"{doc.where(('runs',))}: `runs:` must be a non-empty list of runs")
        return []
    runs = []
    for i, item in enumerate(raw):
        key: Key = ("runs", i)
        if not isinstance(item, dict):
            problems.append(f"{doc.where(key)}: run {i + 1} must be a mapping with why, command, options")
            continue
        for extra in sorted(set(item) - set(RUN_KEYS), key=str):
            problems.append(
                f"{doc.where((*key, extra))}: run {i + 1}: unknown key {extra!r} "
                f"(known: {', '.join(RUN_KEYS)})"
            )
        command, why = item.get("command"), item.get("why")
        if command not in COMMANDS:
            problems.append(
                f"{doc.where((*key, 'command'))}: run {i + 1}: command must be one of "
                f"{', '.join(COMMANDS)}, not {brief(command)}"
            )
            continue
        if not isinstance(why, str) or not why.strip():
            problems.append(f"{doc.where(key)}: run {i + 1}: give a short `why:` (what this run shows)")
        options = _typed(doc, (*key, "options"), item.get("options"), OPTIONS[command], "option", problems)
        opt_lines = {name: doc.line((*key, "options", name)) for name in options}
        # only text is kept: str() of a list of nested aliases would expand every one of them
        why_text = why.strip() if isinstance(why, str) else ""
        runs.append(RunSpec(i, command, options, why_text, doc.line(key), opt_lines))
    return runs


# a campaign's folder is <out>/<name>_<stamp> and --resume searches <name>_*: no path, no pattern
PLAIN_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,99}")


def _text_field(doc: YamlText, name: str, problems: list[str], required: bool = True) -> str:
    value = doc.data.get(name)
    if value is None and not required:
        return ""
    if not isinstance(value, str) or not value.strip():
        problems.append(f"{doc.where((name,))}: `{name}:` must be given as text")
        return ""
    return value.strip()


def parse_campaign(doc: YamlText) -> tuple[Campaign, list[str]]:
    """The campaign in a parsed file and every structural problem found (no device check yet)."""
    problems: list[str] = []
    for extra in sorted(set(doc.data) - set(TOP_KEYS), key=str):
        problems.append(f"{doc.where((extra,))}: unknown key {extra!r} (known: {', '.join(TOP_KEYS)})")
    given = _text_field(doc, "name", problems)
    name = given or doc.path.stem  # only to go on checking: a missing name is a problem already
    if given and not PLAIN_NAME.fullmatch(given):
        problems.append(
            f"{doc.where(('name',))}: name {name!r} names the campaign's folder: letters, "
            "digits, '_' and '-' only, starting with a letter or digit, at most 100 characters"
        )
    purpose = _text_field(doc, "purpose", problems)
    device = _text_field(doc, "device", problems)
    rules = _typed(doc, ("safety",), doc.data.get("safety"), SAFETY_KEYS, "safety rule", problems)
    safety = SafetyRules(**rules)
    runs = _parse_runs(doc, problems)
    campaign = Campaign(
        name, purpose, device, safety, runs, doc.path, doc.header, doc.text, device_line=doc.line(("device",))
    )
    return campaign, problems


def validate(campaign: Campaign, robot: str | None = None) -> list[str]:
    """Every problem of every run on the campaign's device, or on `robot` when given (it replaces the
    device for every run). Empty when the campaign may start. An empty `robot` (a `--robot "$UNSET"`) is a
    problem, never the campaign's own device instead."""
    if robot is not None and not robot.strip():
        return [
            "--robot '': an empty device URL; give one, or leave out --robot to run on the campaign's "
            "own device"
        ]
    url = robot or campaign.device
    if not url:
        return []
    where = "--robot" if robot else f"{campaign.path}:{campaign.device_line}"
    facts, problems = device_problems(url, campaign.safety, where)
    if facts is None:
        return problems
    for run in campaign.runs:
        problems += run_problems(run, campaign.safety, facts, campaign.path)
    return problems


def load_campaign(path: str | Path, robot: str | None = None) -> Campaign:
    """Read and validate a campaign file completely; raises CampaignFileError (unreadable YAML) or
    CampaignInvalid listing every problem, each with its file:line. Opens no device."""
    doc = read_campaign_file(path)
    campaign, problems = parse_campaign(doc)
    if campaign.device or robot is not None:
        problems += validate(campaign, robot)
    if problems:
        raise CampaignInvalid(problems)
    return campaign
