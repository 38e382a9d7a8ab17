"""The ``dgl-chunked`` command line.

Each command parses its flags, builds options, connects to or creates a Dask
cluster (only here), calls one public API function and prints a summary. A
:class:`~dgl_chunked.errors.DglChunkedError` becomes one line on stderr and exit
code 1 (2 for usage errors); anything else is a bug and keeps its traceback.

One module per group of commands, each a plain ``click.command`` that this
module adds to the group :data:`cli`:

- :mod:`~dgl_chunked.cli.preparing`: ``validate``, ``synth``, ``chunk``;
- :mod:`~dgl_chunked.cli.partitioning`: ``partition``, ``report``;
- :mod:`~dgl_chunked.cli.parmetis`: ``parmetis-export``, ``parmetis-import``;
- :mod:`~dgl_chunked.cli.running`: ``dispatch``, ``run``, ``plan`` (a forecast of ``run``);
- :mod:`~dgl_chunked.cli.finishing`: ``inspect``, ``verify``, ``convert-graphbolt``;
- :mod:`~dgl_chunked.cli.remapping`: ``remap``, ``lookup`` (results back to original IDs, seeds in);

and what they share: :mod:`~dgl_chunked.cli.options` (flags),
:mod:`~dgl_chunked.cli.errors` (the ``error:`` line) and
:mod:`~dgl_chunked.cli.context` (Dask client, scratch folder).

A command's module is imported when the command runs (:class:`LazyGroup`), so
``dgl-chunked dispatch`` never imports ``chunk``'s or ``verify``'s dependencies
(0.2 s of the command's fixed cost, measured with ``python -X importtime``).
"""

from __future__ import annotations

import importlib
import logging

import click

from dgl_chunked import __version__
from dgl_chunked.cli.errors import user_errors

__all__ = ["COMMANDS", "LazyGroup", "cli", "main", "user_errors"]

COMMANDS = {
    "validate": "dgl_chunked.cli.preparing:validate_command",
    "synth": "dgl_chunked.cli.preparing:synth_command",
    "chunk": "dgl_chunked.cli.preparing:chunk_command",
    "inspect": "dgl_chunked.cli.finishing:inspect_command",
    "partition": "dgl_chunked.cli.partitioning:partition_command",
    "report": "dgl_chunked.cli.partitioning:report_command",
    "parmetis-export": "dgl_chunked.cli.parmetis:parmetis_export_command",
    "parmetis-import": "dgl_chunked.cli.parmetis:parmetis_import_command",
    "dispatch": "dgl_chunked.cli.running:dispatch_command",
    "run": "dgl_chunked.cli.running:run_command",
    "plan": "dgl_chunked.cli.running:plan_command",
    "convert-graphbolt": "dgl_chunked.cli.finishing:convert_graphbolt_command",
    "verify": "dgl_chunked.cli.finishing:verify_command",
    "remap": "dgl_chunked.cli.remapping:remap_command",
    "lookup": "dgl_chunked.cli.remapping:lookup_command",
}
"""Every command: its name and ``module:attribute`` (``--help`` lists them by name)."""


class LazyGroup(click.Group):
    """A group that imports a command's module only when the command is looked up."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name in COMMANDS and cmd_name not in self.commands:
            module, attribute = COMMANDS[cmd_name].split(":")
            self.add_command(getattr(importlib.import_module(module), attribute), cmd_name)
        return super().get_command(ctx, cmd_name)


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="dgl-chunked")
@click.option(
    "--log-level",
    type=click.Choice(["DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"], case_sensitive=False),
    default="WARNING",
    show_default=True,
)
def cli(log_level: str) -> None:
    """Partition Chunked Graph Format data into DGL distributed partitions, on Dask."""
    logging.basicConfig(level=log_level.upper(), format="%(levelname)s %(name)s: %(message)s")


def main(argv: list[str] | None = None) -> int:
    """Entry point of the console script; returns the exit code."""
    try:
        rv = cli.main(args=argv, prog_name="dgl-chunked", standalone_mode=False)
    except click.exceptions.Exit as exc:
        return int(exc.exit_code)
    except click.ClickException as exc:
        exc.show()
        return exc.exit_code
    except click.exceptions.Abort:
        click.echo("aborted", err=True)
        return 1
    except SystemExit as exc:
        return int(exc.code or 0)
    return int(rv or 0)
