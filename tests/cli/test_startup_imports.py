"""`-h` of every command parses its options without importing what only running it needs.

scipy, pandas and matplotlib load when a command computes or plots, never to show its help (the figure
of `servotool --help` is measured by benchmarks/cli_startup.py, not here).
"""

import json
import subprocess
import sys

HEAVY = ("scipy", "pandas", "matplotlib")

# In a fresh interpreter: every command's and subcommand's `-h`, in turn, and the heavy modules present
# after each (the first command to list one is the one that imported it).
PROBE = """
import json, sys
from servotool.cli.app import COMMANDS, app, load_command

def helps():
    for entry in COMMANDS:
        yield [entry.name]
        for sub in getattr(load_command(entry), "commands", {}):
            yield [entry.name, sub]

seen = []
for path in [[]] + list(helps()):
    try:
        app([*path, "-h"], prog_name="servotool")
    except SystemExit as exc:
        if exc.code:
            raise
    seen.append([" ".join(path), [m for m in HEAVY if m in sys.modules]])
print(json.dumps(seen))
"""


def test_no_command_help_imports_scipy_pandas_or_matplotlib(tmp_path):
    env = {"SERVOTOOL_CONFIG": str(tmp_path / "config.yaml"), "COLUMNS": "80", "TERM": "dumb",
           "PYTHONPATH": ":".join(sys.path)}
    proc = subprocess.run([sys.executable, "-c", f"HEAVY = {HEAVY!r}\n{PROBE}"], capture_output=True,
                          text=True, env=env, timeout=120)
    assert proc.returncode == 0, proc.stderr
    seen = json.loads(proc.stdout.splitlines()[-1])
    assert len(seen) > 20  # the root, 13 commands and their subcommands
    loaded = [(command or "servotool", heavy) for command, heavy in seen if heavy]
    assert not loaded, f"-h imported {loaded[0][1]} first at `{loaded[0][0]} -h`"
