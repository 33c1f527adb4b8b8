"""A capture whose publication was cut off after its data was whole (its temporary file full size) is
recovered by `servotool incidents list`: read back whole, then published under the name it was being
published as; one cut short, or one a running recorder may still be writing, is left where it is and named
(before: every leftover was reported as incomplete and never offered for recovery). A campaign killed while
its report was written points at `servotool analyze FOLDER --report` on `campaign run --resume`."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from servotool.cli.app import main
from servotool.io.captures import (
    CAPTURE_FORMAT,
    CAPTURE_VERSION,
    list_captures,
    publish_capture,
    read_capture,
    recover_leftovers,
)
from servotool.io.paths import state_dir
from tests.campaign.test_campaign_run import SIM, TEXT

GONE_PID = 2**22 + 12345  # above the kernel's largest pid: no process has it


def _capture(dest: Path, name: str, pid: int, cut: int | None = None) -> Path:
    """A capture as a publication cut off before its link would have left it: `.NAME.PID.tmp`."""
    header = {
        "format": CAPTURE_FORMAT,
        "version": CAPTURE_VERSION,
        "id": name.removesuffix(".jsonl"),
        "counts": {"fast": 3, "context": 0},
        "end": "complete",
        "trigger_axes": [2],
    }
    samples = [{"t": k * 0.01, "axis": 2, "ma": 100 + k} for k in range(3)]
    published = publish_capture(dest, name, header, samples)
    tmp = dest / f".{published.name}.{pid}.tmp"
    data = published.read_bytes()
    tmp.write_bytes(data if cut is None else data[:cut])
    published.unlink()
    return tmp


def test_a_whole_leftover_is_published_under_its_name(tmp_path):
    whole = _capture(tmp_path, "capture_20261201T100000Z.jsonl", GONE_PID)
    cut = _capture(tmp_path, "capture_20261201T110000Z.jsonl", GONE_PID, cut=-5)
    writing = _capture(tmp_path, "capture_20261201T120000Z.jsonl", os.getppid())  # a live process's
    results = {r.leftover.name: r for r in recover_leftovers(tmp_path)}
    assert results[whole.name].published == tmp_path / "capture_20261201T100000Z.jsonl"
    assert not whole.exists() and read_capture(results[whole.name].published)[0]["counts"]["fast"] == 3
    assert results[cut.name].published is None and "incomplete" in results[cut.name].reason and cut.exists()
    assert results[writing.name].published is None and "may still be writing" in results[writing.name].reason
    assert writing.exists()
    assert [p.name for p, _ in list_captures(tmp_path)] == ["capture_20261201T100000Z.jsonl"]
    assert recover_leftovers(tmp_path)[0].published is None  # the rest stay as they are, said again


def test_a_name_taken_meanwhile_gets_the_next_free_name(tmp_path):
    tmp = _capture(tmp_path, "capture_x.jsonl", GONE_PID)
    (tmp_path / "capture_x.jsonl").write_text("someone else's\n")
    (result,) = recover_leftovers(tmp_path)
    assert result.published == tmp_path / "capture_x-2.jsonl"
    assert (tmp_path / "capture_x.jsonl").read_text() == "someone else's\n" and not tmp.exists()


def test_incidents_list_recovers_and_names_what_it_left(monkeypatch, capsys):
    dest = state_dir() / "captures"
    dest.mkdir(parents=True)
    _capture(dest, "capture_20261201T100000Z.jsonl", GONE_PID)
    cut = _capture(dest, "capture_20261201T110000Z.jsonl", GONE_PID, cut=30)
    monkeypatch.setattr(sys, "argv", ["servotool", "incidents", "list"])
    with pytest.raises(SystemExit) as exit_info:
        main()
    out = capsys.readouterr()
    assert exit_info.value.code in (0, None), out
    assert "note: recovered capture_20261201T100000Z.jsonl" in out.err
    assert f"note: left {cut.name}: incomplete" in out.err
    assert "1 capture(s)" in out.out and "Traceback" not in out.err


def test_resume_of_a_campaign_whose_report_is_missing_says_how_to_rebuild_it(tmp_path, monkeypatch, capsys):
    campaign = tmp_path / "c.yaml"
    campaign.write_text(TEXT.format(device=SIM, faults="true").lstrip("\n"))
    out = tmp_path / "out"

    def servotool(*argv: str) -> tuple[int, str]:
        monkeypatch.setattr(sys, "argv", ["servotool", *argv])
        with pytest.raises(SystemExit) as exit_info:
            main()
        return exit_info.value.code or 0, capsys.readouterr().err

    code, err = servotool("campaign", "run", str(campaign), "--out", str(out))
    assert code == 0, err
    (folder,) = out.iterdir()
    (folder / "report.md").unlink()  # killed while the report was written: report.md not yet in place
    code, err = servotool("campaign", "run", str(campaign), "--out", str(out), "--resume")
    assert code == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "no unfinished run" in lines[0], err
    assert f"`servotool analyze {folder} --report`" in lines[0]
