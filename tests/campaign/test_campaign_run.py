"""Running a campaign on the simulator: one folder, a state file, stop at the first fault, Ctrl-C and resume,
and the report recomputed from the CSVs."""

import json
import re
import signal

import pytest

from servotool.errors import Refused
from servotool.runs.campaign.plan import load_campaign
from servotool.runs.campaign.report import build_report, write_report
from servotool.runs.campaign.run import (
    CampaignHooks,
    CampaignRun,
    CampaignState,
    find_resumable,
    resume_campaign,
    run_campaign,
    start_campaign,
)

SIM = "sim:fr3?enable_ms=100&seed=3&clock=sim"  # simulated time: the same runs whatever the load

TEXT = """
# a short campaign for the tests
name: quick
purpose: quick test campaign
device: "{device}"
safety:
  joints: [0]
  raw_steps: true
  faults_allowed: {faults}
  simulators_only: true
runs:
  - why: lag, one short pass
    command: lag
    options: {{joint: 0, sweep: 8, speeds: [10], settle_ms: 200, realtime: false}}
  - why: a raw 2.5 deg step runs away
    command: step
    options: {{joint: 0, size: 2.5, steps: 1, raw: true, hold_ms: 300, rpc: true, realtime: false}}
  - why: a shaped step stays clean
    command: step
    options: {{joint: 0, size: 2.5, steps: 1, hold_ms: 400, rpc: true, realtime: false}}
"""


def campaign(write_campaign, faults: str):
    return load_campaign(write_campaign(TEXT.format(device=SIM, faults=faults)))


def test_stops_at_the_first_fault_and_keeps_what_finished(write_campaign, tmp_path):
    c = campaign(write_campaign, "false")
    cr = start_campaign(c, tmp_path / "out")
    state = run_campaign(c, cr)
    assert [r.status for r in state.runs] == ["complete", "fault"], state
    assert state.stop_status == "fault" and "run 2 (step)" in state.stopped
    assert state.next_index == 2 and not state.done
    saved = json.loads((cr.folder / "campaign-state.json").read_text())
    assert saved["next_index"] == 2 and len(saved["runs"]) == 2
    assert (cr.folder / "campaign.yaml").read_text() == c.text
    assert len(list(cr.folder.glob("*.csv"))) == 2
    with pytest.raises(Refused, match="does not go past a fault"):
        resume_campaign(c, find_resumable(tmp_path / "out", "quick"))


@pytest.mark.slow
def test_ctrl_c_sets_the_run_aside_and_resume_goes_on(write_campaign, tmp_path):
    c = campaign(write_campaign, "true")
    cr = start_campaign(c, tmp_path / "out")
    pressed = []

    def progress(run):
        def tick(info):
            if run.index == 1 and not pressed and info.k > 5:
                pressed.append(info.k)
                signal.raise_signal(signal.SIGINT)  # what Ctrl-C delivers

        return {"on_tick": tick}

    state = run_campaign(c, cr, CampaignHooks(run_progress=progress))
    assert pressed and state.stop_status == "interrupted" and "run 2 (step)" in state.stopped
    assert [r.index for r in state.runs] == [0] and state.next_index == 1
    assert len(list(cr.folder.glob("*.csv"))) == 1
    assert len(list(cr.folder.glob("*.csv.interrupted"))) == 1  # kept, not part of the results

    edited = load_campaign(write_campaign(TEXT.format(device=SIM, faults="true") + "# edited\n"))
    with pytest.raises(Refused, match="changed since"):
        resume_campaign(edited, find_resumable(tmp_path / "out", "quick"))
    again = resume_campaign(c, find_resumable(tmp_path / "out", "quick"))
    assert again.folder == cr.folder and again.state.next_index == 1
    done = run_campaign(c, again)
    assert done.done and [r.index for r in done.runs] == [0, 1, 2]
    assert [r.status for r in done.runs] == ["complete", "fault", "complete"]
    assert CampaignState.load(cr.folder).done
    with pytest.raises(Refused, match="no unfinished run"):
        find_resumable(tmp_path / "out", "quick")

    report = build_report(cr.folder)
    titles = [t.title for t in report.tables]
    assert titles == ["lag runs (ramps)", "step runs"]
    steps = report.tables[1].rows
    assert [row[0] for row in steps] == ["run 2", "run 3"]
    assert steps[0][1] == "raw" and steps[0][-1] == "runaway"
    assert steps[1][1].startswith("shaped") and steps[1][10] == "0" and steps[1][11] == "0"
    # fr3: L = 78 ms, lag_s rounded up to 0.08; a loaded host adds a few ms of scheduling delay (0.09)
    assert "divergence_guard:" in report.tuning and re.search(r"lag_s: 0\.0[89]\b", report.tuning)
    # one shaped step size: arrival against size would be a single column of points, so it is left out
    assert {f.name for f in report.figures} == {"lag-fit", "step-responses", "runaway-travel"}
    md, page = write_report(cr.folder)
    assert "| run 2 | raw |" in md.read_text()
    html = page.read_text()
    assert html.count("data:image/png;base64,") == len(report.figures) and "src='http" not in html
    # the report opens with what was measured, SIMULATED first; the tuning block carries the mark too
    lines = md.read_text().splitlines()
    assert lines[2] == "## Outcome" and lines[4].startswith("* **SIMULATED**")
    assert re.match(r"\* \*\*Lag: L = 78\.\d\d ms\*\* \(95 % CI ", lines[5]), lines[5]
    assert any("Raw steps: 1 runaway(s)" in line for line in lines[5:9])
    assert "(SIMULATED)" in report.tuning.splitlines()[0]
    # the page is the Markdown rendered: no raw Markdown left in it
    assert "`" not in html and "**" not in html and "<table>" in html and "<code>" in html
    assert "<h2>Outcome</h2>" in html and html.index("Outcome") < html.index("lag runs")


def test_raw_step_on_an_arm_asks_before_anything_opens(write_campaign, tmp_path, monkeypatch):
    monkeypatch.setenv("SERVOTOOL_LOCK_DIR", str(tmp_path / "locks"))
    text = TEXT.format(device=SIM, faults="true").replace("simulators_only: true", "simulators_only: false")
    c = load_campaign(write_campaign(text.replace("raw: true,", "raw: true, test_arm: true,")))
    c.runs[:] = [c.runs[1]]  # the raw step alone: nothing else may try to reach the arm
    asked = []

    def confirm(run, url):
        asked.append((run.index, url))
        return False

    cr = start_campaign(c, tmp_path / "out", robot="fairino://192.0.2.1")
    state = run_campaign(c, cr, CampaignHooks(confirm=confirm))
    assert asked == [(1, "fairino://192.0.2.1")]
    assert state.stop_status == "refused" and "typed confirmation" in state.stopped
    assert not list(cr.folder.glob("*.csv*"))


def test_a_lock_folder_that_cannot_be_used_refuses_the_campaign(write_campaign, tmp_path, monkeypatch):
    blocked = tmp_path / "not-a-folder"
    blocked.write_text("x")
    monkeypatch.setenv("SERVOTOOL_LOCK_DIR", str(blocked))
    text = TEXT.format(device=SIM, faults="true").replace("simulators_only: true", "simulators_only: false")
    c = load_campaign(write_campaign(text.replace("raw: true,", "raw: true, test_arm: true,")))
    cr = start_campaign(c, tmp_path / "out", robot="fairino://192.0.2.1")
    state = run_campaign(c, cr)
    assert state.stop_status == "refused" and "SERVOTOOL_LOCK_DIR" in state.stopped
    assert not list(cr.folder.glob("*.csv*"))


@pytest.mark.slow
def test_sweep_campaign_maps_limits(write_campaign, tmp_path, monkeypatch):
    monkeypatch.setenv("SERVOTOOL_STATE_DIR", str(tmp_path / "state"))
    c = load_campaign(
        write_campaign("""
name: limits
purpose: one joint, fast
device: sim:rosorin-arm?timeout_ms=500
safety: {joints: [3], max_speed_pulses_s: 300}
runs:
  - why: the elbow
    command: sweep
    options: {joints: [3], speed: 300}
""")
    )
    cr = start_campaign(c, tmp_path / "out")
    state = run_campaign(c, cr)
    assert state.done and len(state.runs[0].files) == 2
    report = build_report(cr.folder)
    assert [t.title for t in report.tables] == ["limit sweeps"]
    assert "arm_limit_3: [" in report.limits and not report.tuning


@pytest.mark.parametrize(
    "edit",
    [
        {"next_index": "x"},
        {"next_index": -5},
        {"next_index": 99},
        {"next_index": True},
        {"device": 5},
        {"device": ""},
        {"name": None},
        {"total": "3"},
        {"stopped": 7},
        {"runs": [{"index": 0}]},
        {"runs": "none"},
        {"extra": 1},
    ],
)
def test_a_tampered_state_file_is_refused_with_one_line(write_campaign, tmp_path, edit):
    c = campaign(write_campaign, "true")
    cr = start_campaign(c, tmp_path / "out")
    path = cr.folder / "campaign-state.json"
    state = json.loads(path.read_text())
    path.write_text(json.dumps({**state, "stopped": "Ctrl-C", "stop_status": "stopped", **edit}))
    with pytest.raises(Refused, match="campaign state"):
        resume_campaign(c, find_resumable(tmp_path / "out", c.name))


def test_a_second_run_beside_a_first_cannot_take_its_folder(write_campaign, tmp_path):
    # `campaign run --resume` started while the same campaign runs (a simulator: no device lock to stop it)
    # would pick the running folder and write runs, CSVs and state into it beside the first
    c = campaign(write_campaign, "true")
    cr = start_campaign(c, tmp_path / "out")
    tried = []

    def beside(run, total):
        if run.index == 1:
            with pytest.raises(Refused, match="another servotool process"):
                resume_campaign(c, find_resumable(tmp_path / "out", "quick"))
            before = (cr.folder / "campaign-state.json").read_text()
            second = CampaignRun(cr.folder, CampaignState.load(cr.folder))  # past the check: the lock holds
            with pytest.raises(Refused, match="another servotool process"):
                run_campaign(c, second)
            assert (cr.folder / "campaign-state.json").read_text() == before  # not written over
            tried.append(run.index)

    state = run_campaign(c, cr, CampaignHooks(on_run_start=beside))
    assert tried == [1] and state.done and [r.index for r in state.runs] == [0, 1, 2]
    assert len(list(cr.folder.glob("*.csv"))) == 3


def test_resume_never_picks_the_folder_of_a_campaign_whose_name_extends_this_one(write_campaign, tmp_path):
    longer = load_campaign(
        write_campaign(
            TEXT.format(device=SIM, faults="true").replace("name: quick", "name: quick_more"), "more.yaml"
        )
    )
    start_campaign(longer, tmp_path / "out")  # unfinished, and its folder matches quick_*
    with pytest.raises(Refused, match="no unfinished run of campaign quick "):
        find_resumable(tmp_path / "out", "quick")
    assert find_resumable(tmp_path / "out", "quick_more").name.startswith("quick_more_")


def test_a_second_ctrl_c_while_the_interrupted_run_is_set_aside_leaves_no_partial_csv(
    write_campaign, tmp_path, monkeypatch
):
    # the report is rebuilt from the folder's *.csv: an interrupted run's CSV left under that name would count
    import servotool.runs.campaign.run as campaign_run

    c = campaign(write_campaign, "true")
    cr = start_campaign(c, tmp_path / "out")
    real_move, pressed = campaign_run.shutil.move, []

    def second_ctrl_c(src, dst):
        if not pressed:
            pressed.append(src)
            raise KeyboardInterrupt  # the user pressed Ctrl-C again while the partial CSV was renamed
        return real_move(src, dst)

    monkeypatch.setattr(campaign_run.shutil, "move", second_ctrl_c)

    def progress(run):
        def tick(info):
            if run.index == 0 and info.k == 5:
                signal.raise_signal(signal.SIGINT)

        return {"on_tick": tick}

    state = run_campaign(c, cr, CampaignHooks(run_progress=progress))
    assert pressed and state.stop_status == "interrupted" and not state.runs
    assert not list(cr.folder.glob("*.csv")), list(cr.folder.iterdir())
    assert len(list(cr.folder.glob("*.csv.interrupted"))) == 1
    assert CampaignState.load(cr.folder).stop_status == "interrupted"


def test_resume_refuses_a_folder_whose_copy_of_the_campaign_is_gone(write_campaign, tmp_path):
    # without the copy nothing tells whether the file changed since: resuming could mix two campaigns' runs
    c = campaign(write_campaign, "true")
    cr = start_campaign(c, tmp_path / "out")
    (cr.folder / "campaign.yaml").unlink()
    with pytest.raises(Refused, match="campaign.yaml"):
        resume_campaign(c, find_resumable(tmp_path / "out", "quick"))


def test_an_arm_held_by_another_process_is_named_not_the_folder(write_campaign, tmp_path, monkeypatch):
    # the arm's lock is taken inside the folder's: its refusal says the arm is busy, not the folder
    from servotool.runs.ownership import claim

    monkeypatch.setenv("SERVOTOOL_LOCK_DIR", str(tmp_path / "locks"))
    text = TEXT.format(device=SIM, faults="true").replace("simulators_only: true", "simulators_only: false")
    c = load_campaign(write_campaign(text.replace("raw: true,", "raw: true, test_arm: true,")))
    cr = start_campaign(c, tmp_path / "out", robot="fairino://192.0.2.1")
    with claim("fairino://192.0.2.1"):  # another holder of the arm (a second open file: flock refuses it)
        state = run_campaign(c, cr)
    assert state.stop_status == "refused" and "one run per device" in state.stopped, state.stopped
    assert "being run by another" not in state.stopped
    assert not list(cr.folder.glob("*.csv*"))


def test_two_campaigns_started_in_the_same_second_get_a_folder_each(write_campaign, tmp_path, monkeypatch):
    # the other process makes the folder between the name being chosen and this one making it
    import servotool.runs.campaign.run as campaign_run

    real, raced = campaign_run.unique_path, []

    def chosen_then_taken(folder, name):
        path = real(folder, name)
        if not raced:
            raced.append(path)
            path.mkdir()
        return path

    monkeypatch.setattr(campaign_run, "unique_path", chosen_then_taken)
    c = campaign(write_campaign, "true")
    cr = start_campaign(c, tmp_path / "out")
    assert raced and cr.folder != raced[0] and (cr.folder / "campaign-state.json").is_file()
    assert not any(raced[0].iterdir())  # the other one's folder untouched
