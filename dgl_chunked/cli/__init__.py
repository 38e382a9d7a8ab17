"""The ``dgl-chunked`` command line.

Each command parses its flags, builds options, connects to or creates a Dask
cluster (only here), calls one public API function and prints a summary. A
:class:`~dgl_chunked.errors.DglChunkedError` becomes one line on stderr and exit
code 1 (2 for usage errors); anything else is a bug and keeps its traceback.

One module per group of commands, each a plain ``click.command`` that this
module adds to the group :data:`cli`:

- :mod:`~dgl_chunked.cli.inputs`: ``validate``, ``synth``, ``chunk``;
- :mod:`~dgl_chunked.cli.partitioning`: ``partition``, ``report``;
- :mod:`~dgl_chunked.cli.parmetis`: ``parmetis-export``, ``parmetis-import``;
- :mod:`~dgl_chunked.cli.running`: ``dispatch``, ``run``, ``plan`` (a forecast of ``run``);
- :mod:`~dgl_chunked.cli.outputs`: ``inspect``, ``verify``, ``convert-graphbolt``;
- :mod:`~dgl_chunked.cli.remapping`: ``remap``, ``lookup`` (results back to original IDs, seeds in);

and what they share: :mod:`~dgl_chunked.cli.options` (flags),
:mod:`~dgl_chunked.cli.errors` (the ``error:`` line) and
:mod:`~dgl_chunked.cli.context` (Dask client, scratch folder).
"""

from __future__ import annotations

import logging

import click

from dgl_chunked import __version__
from dgl_chunked.cli.errors import user_errors
from dgl_chunked.cli.inputs import chunk_command, synth_command, validate_command
from dgl_chunked.cli.outputs import convert_graphbolt_command, inspect_command, verify_command
from dgl_chunked.cli.parmetis import parmetis_export_command, parmetis_import_command
from dgl_chunked.cli.partitioning import partition_command, report_command
from dgl_chunked.cli.remapping import lookup_command, remap_command
from dgl_chunked.cli.running import dispatch_command, plan_command, run_command

__all__ = ["cli", "main", "user_errors"]


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
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


for _command in (
    validate_command,
    synth_command,
    chunk_command,
    inspect_command,
    partition_command,
    report_command,
    parmetis_export_command,
    parmetis_import_command,
    dispatch_command,
    run_command,
    plan_command,
    convert_graphbolt_command,
    verify_command,
    remap_command,
    lookup_command,
):
    cli.add_command(_command)


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
