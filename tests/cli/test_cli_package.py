"""The ``dgl_chunked.cli`` package: every command a module defines is reachable from the group.

Commands are plain ``click.command`` objects in one module per group of commands, and
``dgl_chunked/cli/__init__.py`` adds them to ``cli``; a command defined but not added
would exist only in the source. The flags and errors themselves are tested through
``dgl-chunked`` in ``test_bad_arguments.py``, ``test_bad_input.py`` and the
``test_cli.py`` of each package.
"""

from __future__ import annotations

import importlib
import pkgutil

import click
from click.testing import CliRunner

import dgl_chunked.cli
from dgl_chunked.cli import cli


def _defined_commands() -> dict[str, click.Command]:
    found = {}
    for info in pkgutil.iter_modules(dgl_chunked.cli.__path__, "dgl_chunked.cli."):
        module = importlib.import_module(info.name)
        for value in vars(module).values():
            if isinstance(value, click.Command) and getattr(value.callback, "__module__", None) == info.name:
                assert value.name is not None
                found[value.name] = value
    return found


def _group_commands() -> dict[str, click.Command | None]:
    ctx = click.Context(cli)
    return {name: cli.get_command(ctx, name) for name in cli.list_commands(ctx)}


def test_every_defined_command_is_in_the_group() -> None:
    defined = _defined_commands()
    listed = _group_commands()
    assert set(defined) == set(listed)
    assert all(listed[name] is command for name, command in defined.items())
    assert {"validate", "synth", "chunk", "partition", "report", "dispatch", "run", "verify"} <= set(defined)


def test_every_command_prints_its_help() -> None:
    runner = CliRunner()
    for name in _group_commands():
        result = runner.invoke(cli, [name, "--help"])
        assert result.exit_code == 0, (name, result.output)
        assert result.output.startswith(f"Usage: cli {name} [OPTIONS]"), (name, result.output[:80])
