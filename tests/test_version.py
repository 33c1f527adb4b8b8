"""One version source (git tags, through setuptools-scm), and that full version in every file written."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import servotool
from servotool.io.csvlog import CsvLogWriter, read_meta
from servotool.recorder.capture import OpenCapture, TriggerAxis, assemble
from servotool.recorder.settings import RecorderSettings

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    tomllib = pytest.importorskip("tomli")

ROOT = Path(__file__).resolve().parents[1]


def test_the_version_is_the_one_computed_once():
    assert servotool.__version__ == servotool.full_version()
    assert servotool.__version__ is servotool.full_version()  # cached: one answer per process
    with pytest.raises(AttributeError):
        _ = servotool.no_such_name  # type: ignore[attr-defined]


def test_pyproject_takes_the_version_from_git_only():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert "version" not in project["project"] and "version" in project["project"]["dynamic"]
    assert any(r.startswith("setuptools-scm") for r in project["build-system"]["requires"])
    # the base a clone without tags counts from, the same for the build and for a source tree at run time
    assert project["tool"]["setuptools_scm"]["fallback_version"] == servotool._SCM_FALLBACK


def test_every_csv_header_names_the_full_version(tmp_path):
    path = tmp_path / "run.csv"
    with CsvLogWriter(
        path, device="sim:arm-x", simulated=True, config={"mode": "ramp"}, units={}, columns=["t"]
    ) as log:
        log.write(t=0.0)
    assert f"# tool: servotool {servotool.__version__}\n" in path.read_text(encoding="utf-8")
    assert read_meta(path).tool == f"servotool {servotool.__version__}"


def test_every_capture_header_names_the_full_version():
    window = OpenCapture(1.0, 1.8e9, 3.0, [TriggerAxis(12, 0x20, None, 1.0)])
    capture = assemble(
        window, [], [], [], now=2.0, end="disconnect", torque_off=None, settings=RecorderSettings(), device={}
    )
    assert capture.header["tool"] == f"servotool {servotool.__version__}"
    assert json.loads(json.dumps(capture.header))["tool"] == capture.header["tool"]


class _Dist:
    """The two things full_version reads of an installed distribution."""

    def __init__(self, files: list, direct_url: dict | None) -> None:
        self.files = files
        self._direct = direct_url

    def read_text(self, name: str) -> str | None:
        return json.dumps(self._direct) if name == "direct_url.json" and self._direct is not None else None


def test_only_the_install_of_the_running_code_answers(tmp_path):
    root = servotool._HERE.parent.parent
    editable = {"url": root.as_uri(), "dir_info": {"editable": True}}
    assert servotool._installed_from(_Dist([], editable), root)
    other = {"url": (tmp_path / "elsewhere").as_uri(), "dir_info": {"editable": True}}
    assert not servotool._installed_from(_Dist([], other), root)
    assert not servotool._installed_from(_Dist([], {"url": root.as_uri(), "dir_info": {}}), root)
    assert not servotool._installed_from(_Dist([], None), root)


def _git(repo: Path, *args: str) -> str:
    cmd = [
        "git",
        "-C",
        str(repo),
        "-c",
        "user.name=t",
        "-c",
        "user.email=t@example.invalid",
        "-c",
        "commit.gpgsign=false",
        "-c",
        "tag.gpgsign=false",
        *args,
    ]
    return subprocess.run(cmd, check=True, capture_output=True, text=True, timeout=60).stdout.strip()


@pytest.fixture
def repo(tmp_path):
    pytest.importorskip("setuptools_scm")
    if shutil.which("git") is None:
        pytest.skip("no git")
    repo = tmp_path / "tree"
    repo.mkdir()
    (repo / "pyproject.toml").write_text('[project]\nname = "x"\ndynamic = ["version"]\n')
    _git(repo, "init", "-q")
    _git(repo, "add", "pyproject.toml")
    _git(repo, "commit", "-q", "-m", "one")
    return repo


def test_a_tree_without_tags_is_a_development_version_with_its_commit(repo):
    commit = _git(repo, "rev-parse", "--short=7", "HEAD")
    version = servotool._version_from_git(repo)
    assert version is not None and version.startswith("0.1.dev1+g")
    assert version.removeprefix("0.1.dev1+g").startswith(commit)


def test_a_tag_is_the_release_and_the_commits_after_it_count_on(repo):
    _git(repo, "tag", "v1.2.3")
    assert servotool._version_from_git(repo) == "1.2.3"
    (repo / "a").write_text("a")
    _git(repo, "add", "a")
    _git(repo, "commit", "-q", "-m", "two")
    commit = _git(repo, "rev-parse", "--short=7", "HEAD")
    version = servotool._version_from_git(repo)
    assert version is not None and version.startswith(f"1.2.4.dev1+g{commit}")


def test_a_folder_that_is_no_checkout_is_not_asked(tmp_path):
    assert servotool._version_from_git(tmp_path) is None
    (tmp_path / "pyproject.toml").write_text("")
    assert servotool._version_from_git(tmp_path) is None  # no .git beside it
