"""Every command's help teaches at 80 columns: metavars that say what a value is, an Examples section whose
command lines parse, and the terms its output uses defined in the glossary."""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterator
from pathlib import Path

import pytest
import typer
from typer import _click as click
from typer.core import TyperGroup
from typer.testing import CliRunner

from servotool.cli.app import app
from servotool.cli.examples import TERMS, examples_of

runner = CliRunner()
ROOT = Path(__file__).resolve().parents[2]
TYPE_LABELS = re.compile(r"<(str|int|float|path|Path|list\[|bool|int range|float range)")


def _paths() -> Iterator[list[str]]:
    root = typer.main.get_command(app)
    ctx = click.core.Context(root)

    def walk(cmd: click.core.Command, prefix: list[str]) -> Iterator[list[str]]:
        yield prefix
        if isinstance(cmd, TyperGroup):
            for name in cmd.list_commands(ctx):
                yield from walk(cmd.get_command(ctx, name), [*prefix, name])

    yield from walk(root, [])


PATHS = list(_paths())


def _help(path: list[str]) -> str:
    result = runner.invoke(app, [*path, "--help"], env={"COLUMNS": "80"}, terminal_width=80)
    assert result.exit_code == 0, result.output
    return result.output


def test_every_command_is_listed():
    assert len(PATHS) > 25
    assert ["lag"] in PATHS and ["servo", "move"] in PATHS and ["campaign", "run"] in PATHS


@pytest.mark.parametrize("path", PATHS, ids=lambda p: " ".join(p) or "servotool")
def test_help_at_80_columns_has_metavars_and_examples(path):
    text = _help(path)
    assert not TYPE_LABELS.search(text), TYPE_LABELS.search(text)
    assert "\n Examples" in text
    assert max(len(line) for line in text.splitlines()) <= 80
    # an example's command line is whole on its line, ready to copy
    for _, line in examples_of(" ".join(path)):
        assert f"   {line}" in text  # indented under the heading, whole on its line


def _command(words: list[str]) -> tuple[click.core.Command, list[str], list[str]]:
    """The click command an example runs, the command path and the rest of its arguments."""
    root = typer.main.get_command(app)
    ctx = click.core.Context(root)
    cmd: click.core.Command = root
    path: list[str] = []
    args = [w for w in words if w not in ("-v", "-q")]
    while isinstance(cmd, TyperGroup) and args and not args[0].startswith("-"):
        cmd = cmd.get_command(ctx, args[0])
        path.append(args.pop(0))
    return cmd, path, args


@pytest.mark.parametrize("path", PATHS, ids=lambda p: " ".join(p) or "servotool")
def test_every_example_parses_as_its_command(path):
    examples = examples_of(" ".join(path))
    assert examples
    for _, line in examples:
        words = shlex.split(line)
        assert words[0] == "servotool"
        cmd, where, args = _command(words[1:])
        if "-h" in args or isinstance(cmd, TyperGroup):
            continue
        assert where[: len(path)] == path, line
        cmd.make_context(" ".join(where), list(args), resilient_parsing=False)
        # an example teaches the current spelling, never a hidden former one
        hidden = {o for p in cmd.params if getattr(p, "hidden", False) for o in p.opts}
        assert not hidden & {a.split("=")[0] for a in args}, line


def _glossary_terms() -> set[str]:
    text = (ROOT / "docs" / "glossary.md").read_text()
    return {m.group(1).split(" (")[0].lower() for m in re.finditer(r"^### (.+)$", text, re.M)}


def test_every_term_the_help_names_is_in_the_glossary():
    defined = _glossary_terms()
    for path, terms in TERMS.items():
        missing = [t for t in terms if t.lower() not in defined]
        assert not missing, (path, missing)
    assert "glossary.md" in (ROOT / "mkdocs.yml").read_text()


def test_the_help_points_to_the_glossary_where_terms_appear():
    assert "docs/glossary.md" in _help(["lag"])
    assert "guard-view lag" in _help(["lag"])
