"""`servotool version`: the tool's version, Python's, and the key dependencies'."""

from __future__ import annotations

import platform
from importlib import metadata

import typer

from servotool import __version__
from servotool.cli.common import OUTPUT, console, print_json
from servotool.cli.render import compact_table
from servotool.devices.registry import FAMILIES
from servotool.motion.compiled import implementation

KEY_DEPENDENCIES = (
    "typer",
    "rich",
    "numpy",
    "scipy",
    "pandas",
    "pyserial",
    "matplotlib",
    "PyYAML",
    "ruamel.yaml",
    "platformdirs",
    "pyarrow",
    "ruckig",
    # then what each device family's clients need, as the family names it
    *dict.fromkeys(pkg for fam in FAMILIES for pkg in fam.client_packages),
)


def _installed(name: str) -> str | None:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


def version(json_out: bool = typer.Option(False, "--json", help="Print JSON instead of a table.")) -> None:
    """Print servotool's version, Python's, and the versions of its key dependencies.

    The first line is the verdict (versions, and which key dependency is missing); the table, whether the
    generator's profile math runs compiled, and the platform follow (--quiet keeps the first line alone)."""
    dependencies = {name: _installed(name) for name in KEY_DEPENDENCIES}
    info = {
        "servotool": __version__,
        "python": platform.python_version(),
        "platform": platform.platform(),
        "dependencies": dependencies,
        # the generator's profile math: "compiled" (built by mypyc at install) or "python"
        "generator": implementation(),
    }
    if json_out:
        print_json(info)
        return
    missing = [name for name, ver in dependencies.items() if ver is None]
    installed = f"{len(dependencies) - len(missing)} of {len(dependencies)}"
    # the release or development number only (0.1.dev600): the commit after it goes to a detail line, so the
    # verdict and its missing dependencies stay on one line of 80 columns
    release = __version__.partition("+")[0]
    verdict = f"[bold]servotool {release}[/], Python {info['python']}, key dependencies {installed}"
    if missing:
        verdict += f" ([yellow]missing {', '.join(missing)}[/])"
    console.print(verdict, highlight=False)
    table = compact_table()
    table.add_column("dependency")
    table.add_column("version", overflow="fold")
    for name, ver in dependencies.items():
        table.add_row(name, ver or "[yellow]not installed[/]")
    console.print(table)
    if not OUTPUT.quiet:  # a detail line: --quiet keeps the verdict alone
        if "+" in __version__:
            console.print(f"full version: {__version__}", highlight=False)
        console.print(f"generator profile math: {info['generator']}", highlight=False)
        console.print(f"platform: {info['platform']}", highlight=False, soft_wrap=True)
