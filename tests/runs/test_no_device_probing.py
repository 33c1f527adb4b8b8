"""runs/ and cli/ find what an arm offers by its protocols (devices.arm), never by probing it by name."""

from __future__ import annotations

import ast
from pathlib import Path

import servotool

ROOT = Path(servotool.__file__).parent
# the names an arm goes by in runs/ and cli/
ARM_NAMES = {"arm", "robot", "device"}


def _target(node: ast.expr) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "self":
        return node.attr
    return None


def _probes(path: Path, root: Path = ROOT) -> list[str]:
    out = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.args):
            continue
        who = _target(node.args[0])
        if node.func.id in ("getattr", "hasattr") and who in ARM_NAMES:
            out.append(f"{path.relative_to(root)}:{node.lineno}: {node.func.id}({who}, ...)")
    return out


def test_runs_and_cli_never_probe_an_arm_with_getattr_or_hasattr():
    files = sorted((ROOT / "runs").rglob("*.py")) + sorted((ROOT / "cli").rglob("*.py"))
    assert files
    probes = [p for f in files for p in _probes(f)]
    assert not probes, "declare it on a protocol of devices/arm.py:\n" + "\n".join(probes)


def test_the_check_finds_a_probe(tmp_path):
    probe = tmp_path / "probe.py"
    probe.write_text("def f(arm, s):\n    return getattr(arm, 'silence_s', None), hasattr(s.arm, 'x')\n")
    assert len(_probes(probe, tmp_path)) == 1  # self.arm only: s.arm is some other object's


def test_a_run_csv_keeps_its_fault_columns():
    from servotool.runs.arm.stream import FAULT_COLUMNS, columns

    assert FAULT_COLUMNS == ("main_code", "sub_code")
    assert columns(6, False)[-5:] == ["errcode", "main_code", "sub_code", "dev_t", "info"]
