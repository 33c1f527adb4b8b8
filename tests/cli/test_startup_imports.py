"""`-h` of every command parses its options without importing what only running it needs.

scipy, pandas and matplotlib load when a command computes or plots, never to show its help (the figure
of `servotool --help` is measured by benchmarks/cli_startup.py, not here).
"""

import json
import subprocess
import sys

import pytest

HEAVY = ("scipy", "pandas", "matplotlib")
# the commands whose options need no numpy either (the bus and simulator commands import their devices)
NUMPY_FREE = (
    "lag",
    "step",
    "analyze",
    "shape",
    "record",
    "ports",
    "version",
    "incidents",
    "campaign",
    "config",
)

# In a fresh interpreter: every command's and subcommand's `-h`, in turn, and the heavy modules present
# after each (the first command to list one is the one that imported it).
PROBE = """
import itertools, json, sys
from servotool.cli.app import COMMANDS, app, load_command

def helps():
    for entry in COMMANDS:
        if ONLY and entry.name not in ONLY:
            continue
        yield [entry.name]
        for sub in getattr(load_command(entry), "commands", {}):
            yield [entry.name, sub]

seen = []
for path in itertools.chain([[]], helps()):  # each command loaded just before its own -h
    try:
        app([*path, "-h"], prog_name="servotool")
    except SystemExit as exc:
        if exc.code:
            raise
    seen.append([" ".join(path), [m for m in HEAVY if m in sys.modules]])
print(json.dumps(seen))
"""


def _probe(tmp_path, heavy, only=()):
    env = {
        "SERVOTOOL_CONFIG": str(tmp_path / "config.yaml"),
        "COLUMNS": "80",
        "TERM": "dumb",
        "PYTHONPATH": ":".join(sys.path),
    }
    code = f"HEAVY = {heavy!r}\nONLY = {only!r}\n{PROBE}"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.splitlines()[-1])


def test_no_command_help_imports_scipy_pandas_or_matplotlib(tmp_path):
    seen = _probe(tmp_path, HEAVY)
    assert len(seen) > 20  # the root, 13 commands and their subcommands
    loaded = [(command or "servotool", heavy) for command, heavy in seen if heavy]
    assert not loaded, f"-h imported {loaded[0][1]} first at `{loaded[0][0]} -h`"


def test_the_arm_and_file_commands_help_imports_no_numpy(tmp_path):
    seen = _probe(tmp_path, ("numpy",), NUMPY_FREE)
    assert {command.split()[0] for command, _ in seen if command} == set(NUMPY_FREE)
    loaded = [command or "servotool" for command, heavy in seen if heavy]
    assert not loaded, f"-h imported numpy first at `{loaded[0]} -h`"


# A command run in a fresh interpreter, then the modules it left loaded (as JSON, stderr's last line).
RUN = """
import json, sys
from servotool.cli.app import app
try:
    app(sys.argv[1:], prog_name="servotool")
except SystemExit as exc:
    if exc.code:
        raise
print(json.dumps(sorted(sys.modules)), file=sys.stderr)
"""
# what an analysis never needs: pandas builds a --table, matplotlib draws a --plot, and the first-order
# filter of the lag fit runs on scipy.linalg's BLAS, not scipy.signal (which drags in scipy.stats)
UNNEEDED = ("pandas", "matplotlib", "scipy.signal", "scipy.stats")


def _modules_after(tmp_path, *argv: str, unneeded: tuple[str, ...] = UNNEEDED) -> list[str]:
    env = {
        "SERVOTOOL_CONFIG": str(tmp_path / "config.yaml"),
        "COLUMNS": "80",
        "TERM": "dumb",
        "PYTHONPATH": ":".join(sys.path),
        "SERVOTOOL_STATE_DIR": str(tmp_path / "state"),
        "SERVOTOOL_LOCK_DIR": str(tmp_path / "locks"),
    }
    proc = subprocess.run(
        [sys.executable, "-c", RUN, *argv], capture_output=True, text=True, env=env, timeout=300
    )
    assert proc.returncode == 0, proc.stderr
    modules: list[str] = json.loads(proc.stderr.splitlines()[-1])
    return [m for m in unneeded if m in modules]


@pytest.mark.parametrize("kind", ["ramp", "sweep"])
def test_analyzing_one_file_imports_neither_pandas_nor_matplotlib_nor_scipy_signal(tmp_path, kind):
    from tests.cli.test_analyze_cli import write_ramp, write_sweep

    path = write_ramp(tmp_path / "r.csv", 0.05) if kind == "ramp" else write_sweep(tmp_path / "s.csv")
    assert _modules_after(tmp_path, "analyze", str(path), "--json") == []


@pytest.mark.slow
@pytest.mark.parametrize(
    "argv",
    [
        [
            "lag",
            "--ramp",
            "--robot",
            "sim:simmachine?clock=sim",
            "--sweep",
            "5",
            "--speeds",
            "10,20",
            "--ramp-ms",
            "100",
            "--settle-ms",
            "300",
            "--json",
        ],
        ["step", "--robot", "sim:fr3?clock=sim", "--size", "10", "--steps", "1", "--json"],
        [
            "sweep",
            "--bus",
            "sim:rosorin-arm?clock=sim&obstacle_2=740",
            "--servo",
            "2",
            "--direction",
            "down",
            "--json",
        ],
    ],
    ids=["lag", "step", "sweep"],
)
def test_a_run_ending_in_its_analysis_imports_only_what_the_analysis_needs(tmp_path, argv):
    assert _modules_after(tmp_path, *argv, "--out", str(tmp_path)) == []


def test_reading_the_config_file_leaves_ruamel_unloaded(tmp_path):
    # every command reads the config file as it starts; only `config set` and `config unset` edit it
    (tmp_path / "config.yaml").write_text("# mine\nout: runs\n", encoding="utf-8")
    assert _modules_after(tmp_path, "config", "show", unneeded=("ruamel.yaml",)) == []
