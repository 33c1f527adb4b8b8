"""`servotool version`: the tool's version, Python's, and the key dependencies'."""

from __future__ import annotations

import platform
from importlib import metadata

import typer
from rich.table import Table

from servotool import __version__
from servotool.cli.common import console, print_json

KEY_DEPENDENCIES = ("typer", "rich", "numpy", "scipy", "pandas", "pyserial", "matplotlib", "PyYAML",
                    "ruamel.yaml", "platformdirs", "dynamixel-sdk", "pyarrow", "ruckig")


def _installed(name: str) -> str | None:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


def version(json_out: bool = typer.Option(False, "--json", help="Print JSON instead of a table.")) -> None:
    """Print servotool's version, Python's, and the versions of its key dependencies."""
    dependencies = {name: _installed(name) for name in KEY_DEPENDENCIES}
    info = {
        "servotool": __version__,
        "python": platform.python_version(),
        "platform": platform.platform(),
        "dependencies": dependencies,
    }
    if json_out:
        print_json(info)
        return
    table = Table(title=f"servotool {__version__}", show_header=True)
    table.add_column("component")
    table.add_column("version")
    table.add_row("python", platform.python_version())
    for name, ver in dependencies.items():
        table.add_row(name, ver or "[dim]not installed[/]")
    console.print(table)
