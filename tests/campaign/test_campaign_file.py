"""Campaign files: parsed as data, validated completely, one problem per line with file:line."""

from pathlib import Path

import pytest

from servotool.io.campaign_file import CampaignFileError, shipped_campaign_files
from servotool.runs.campaign.plan import CampaignInvalid, load_campaign

GOOD = """
# what it shows
name: t
purpose: a test campaign
device: sim:fr3
safety:
  joints: [0]
  max_step_deg: 2.5
  max_speed_deg_s: 20
  max_sweep_deg: 10
  raw_steps: true
  faults_allowed: true
runs:
  - why: ramp
    command: lag
    options: {joint: 0, sweep: 5, speeds: [10, 20]}
  - why: a raw step
    command: step
    options: {joint: 0, size: 1.5, steps: 1, raw: true, test_arm: true}
"""


def test_good_file_is_data(write_campaign):
    c = load_campaign(write_campaign(GOOD))
    assert c.name == "t" and c.device == "sim:fr3" and c.header == "what it shows"
    assert [r.command for r in c.runs] == ["lag", "step"]
    assert c.runs[0].options["speeds"] == (10.0, 20.0)
    assert c.safety.joints == (0,) and c.safety.raw_steps and not c.safety.ramp_only
    assert c.runs[1].line == 16


def problems_of(path: Path, robot: str | None = None) -> list[str]:
    with pytest.raises(CampaignInvalid) as info:
        load_campaign(path, robot)
    return info.value.problems


def test_every_problem_is_reported_with_its_line(write_campaign):
    text = GOOD.replace("size: 1.5", "size: 3").replace("speeds: [10, 20]", "speeds: [10, 40]")
    text = text.replace("sweep: 5", "sweep: 5, colour: red").replace("why: ramp", "why: ''")
    path = write_campaign(text)
    problems = problems_of(path)
    assert len(problems) == 4, problems
    assert all(p.startswith(f"{path}:") for p in problems)
    joined = "\n".join(problems)
    assert f"{path}:15: unknown option 'colour'" in joined
    assert f"{path}:13: run 1: give a short `why:`" in joined
    assert "40 deg/s is above max_speed_deg_s 20" in joined and f"{path}:15:" in joined
    assert f"{path}:18: run 2 (step): step size 3 deg is above max_step_deg 2.5" in joined


def test_command_validation_and_safety_rules(write_campaign):
    text = GOOD.replace("raw_steps: true", "raw_steps: false").replace("joint: 0, size", "joint: 7, size")
    problems = problems_of(write_campaign(text))
    joined = "\n".join(problems)
    assert "--joint" in joined or "joint 7" in joined  # the step command's own check
    assert "raw steps are not allowed" in joined
    assert "joint J8 is not among the joints" in joined


def test_robot_swap_is_validated_again(write_campaign):
    path = write_campaign(GOOD.replace(", test_arm: true", ""))
    load_campaign(path)  # fine on the simulator
    problems = problems_of(path, robot="fairino://192.0.2.1")
    assert any("--test-arm" in p for p in problems)
    text = GOOD.replace("faults_allowed: true", "faults_allowed: true\n  simulators_only: true")
    sims_only = write_campaign(text, "s.yaml")
    assert any("simulators only" in p for p in problems_of(sims_only, robot="fairino://192.0.2.1"))


def test_wrong_types_and_structure(write_campaign):
    text = GOOD.replace("steps: 1,", "steps: many,").replace("raw_steps: true", "raw_steps: 3")
    text = text.replace("command: lag", "command: dance") + "colour: blue\n"
    problems = problems_of(write_campaign(text))
    joined = "\n".join(problems)
    assert "steps: expected a number" in joined
    assert "raw_steps: expected true or false" in joined
    assert "command must be one of lag, step, sweep" in joined
    assert "unknown key 'colour'" in joined


def test_infinite_and_nan_numbers_are_problems_not_tracebacks(write_campaign):
    text = GOOD.replace("steps: 1,", "steps: .inf,").replace("joint: 0, sweep: 5", "joint: .nan, sweep: 5")
    text = text.replace("speeds: [10, 20]", "speeds: [10, .inf]")
    joined = "\n".join(problems_of(write_campaign(text)))
    assert "steps: expected a finite number, got inf" in joined
    assert "joint: expected a joint name (J1, J2, ...), got nan" in joined
    assert "speeds: expected a list of numbers" in joined


def test_yaml_syntax_error_names_the_line(write_campaign):
    path = write_campaign("name: x\nruns: [\n  - a: b\n")
    with pytest.raises(CampaignFileError, match=rf"{path}:\d+: not valid YAML"):
        load_campaign(path)


def test_cold_start_needs_simulators_and_faults(write_campaign):
    text = GOOD.replace("speeds: [10, 20]}", "speeds: [10, 20], cold_start: true}")
    text = text.replace("faults_allowed: true", "faults_allowed: false")
    joined = "\n".join(problems_of(write_campaign(text)))
    assert "simulators_only: true" in joined and "faults_allowed: true" in joined


def test_shipped_campaigns_are_valid():
    files = shipped_campaign_files()
    names = {f.stem for f in files}
    assert {
        "fairino-1-simmachine-baseline",
        "fairino-2-enable-window-runaway",
        "fairino-3-gap-injection-udp",
        "fairino-4-gap-injection-rpc",
        "fairino-5-giant-step",
        "fairino-6-smooth-ramps",
        "fairino-7-shaped-steps",
        "fairino-8-fr20-lag",
        "fairino-9-amax-ceiling",
        "rosorin-arm-limits",
    } <= names
    for f in files:
        c = load_campaign(f)
        assert c.purpose and c.header, f
        assert c.device.startswith("sim:"), "a shipped campaign never moves an arm unless --robot says so"


def test_fr20_protocol_is_ramp_only_on_a_real_arm():
    fr20 = next(f for f in shipped_campaign_files() if f.stem == "fairino-8-fr20-lag")
    c = load_campaign(fr20, robot="fairino://192.0.2.1?model=fr20")
    assert c.safety.ramp_only and all(r.command == "lag" for r in c.runs)
    assert [r.options["joint"] for r in c.runs] == [5, 0]


def test_sweep_runs_get_every_problem_of_the_sweep_checks(write_campaign):
    path = write_campaign("""
name: bad
purpose: sweeps
device: sim:rosorin-arm
safety: {joints: [1, 2], max_speed_pulses_s: 50}
runs:
  - why: two problems of its own
    command: sweep
    options: {joints: [1, 1], speed: 0.0, inside: 500}
  - why: against the rules
    command: sweep
    options: {joints: [3], speed: 80}
  - why: an arm command on a bus
    command: lag
    options: {joint: 0}
""")
    joined = "\n".join(problems_of(path))
    assert "name a servo twice" in joined and "inside 500 pulses" in joined
    assert "servo 3 is not among the servos" in joined and "80 pulses/s is above" in joined
    assert "`lag` needs an arm" in joined


@pytest.mark.parametrize(
    ("query", "word"),
    [
        ("silence_ms=nan", "silence_ms"),
        ("bogus=1", "unknown parameter"),
        ("model=fr99", "unknown model"),
        ("rpc_port=70000", "rpc_port"),
        ("transport=tcp", "transport"),
    ],
)
def test_a_real_arm_url_is_checked_whole_as_the_run_will_open_it(write_campaign, query, word):
    # the check said 'valid' and the run refused the same URL when it opened the arm
    path = write_campaign(GOOD)
    problems = problems_of(path, robot=f"fairino://192.0.2.1?{query}")
    assert any(word in p for p in problems), problems


@pytest.mark.parametrize(
    "name",
    ["../../escape", "a/b", ".hidden", "x_*", "new\\nline", "tab\\there", "..", "é" * 3 + "/x", "v1.2"],
)
def test_a_name_that_is_no_plain_folder_name_is_refused_with_its_line(write_campaign, name):
    # the run's folder is <out>/<name>_<stamp>: "../../escape" wrote it outside --out, "x_*" made --resume's
    # search match other campaigns' folders
    text = GOOD.replace("name: t", f'name: "{name}"')
    with pytest.raises(CampaignInvalid) as info:
        load_campaign(write_campaign(text))
    assert any(":2:" in p and "name" in p for p in info.value.problems), info.value.problems


def test_a_plain_name_with_dashes_underscores_and_digits_is_fine(write_campaign):
    assert load_campaign(write_campaign(GOOD.replace("name: t", "name: fr3-lag_v2"))).name == "fr3-lag_v2"


def test_a_missing_name_is_one_problem_whatever_the_file_is_called(write_campaign):
    # the file's stem stands in for the name only to go on checking: it is not judged as a name too
    text = GOOD.replace("name: t\n", "")
    with pytest.raises(CampaignInvalid) as info:
        load_campaign(write_campaign(text, name="my campaign.yaml"))
    assert [p for p in info.value.problems if "name" in p] == [
        p for p in info.value.problems if "`name:` must be given" in p
    ], info.value.problems
    assert len([p for p in info.value.problems if "name" in p]) == 1


def test_a_folder_or_a_non_utf8_file_is_one_plain_reason(tmp_path):
    from servotool.io.campaign_file import read_campaign_file

    with pytest.raises(CampaignFileError) as folder:
        read_campaign_file(tmp_path)
    assert str(folder.value) == f"{tmp_path}: cannot be read: Is a directory"
    (tmp_path / "c.yaml").write_bytes(b"name: \xff\n")
    with pytest.raises(CampaignFileError) as latin:
        read_campaign_file(tmp_path / "c.yaml")
    assert str(latin.value) == f"{tmp_path / 'c.yaml'}: cannot be read: not UTF-8 text"
