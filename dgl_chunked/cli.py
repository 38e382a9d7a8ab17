"""The ``dgl-chunked`` command line.

Each command parses its flags, builds options, connects to or creates a Dask
cluster (only here), calls one public API function and prints a summary. A
:class:`~dgl_chunked.errors.DglChunkedError` becomes one line on stderr and exit
code 1 (2 for usage errors); anything else is a bug and keeps its traceback.
"""

from __future__ import annotations

import functools
import logging
import sys
from collections.abc import Callable
from typing import Any, TypeVar

import click

from dgl_chunked import __version__
from dgl_chunked.errors import DglChunkedError

F = TypeVar("F", bound=Callable[..., Any])

logger = logging.getLogger(__name__)


def user_errors(func: F) -> F:
    """Turn DglChunkedError into a one-line message and exit code 1."""

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return func(*args, **kwargs)
        except DglChunkedError as err:
            click.echo(f"error: {err}", err=True)
            sys.exit(1)

    return wrapper  # type: ignore[return-value]


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


# --- commands: validate, synth (io) -------------------------------------------

# --- commands: inspect (DGL binary files) -------------------------------------

# --- commands: partition, report (assignment) ---------------------------------

# --- commands: dispatch, run, verify ------------------------------------------


def main(argv: list[str] | None = None) -> int:
    """Entry point of the console script; returns the exit code."""
    try:
        cli.main(args=argv, prog_name="dgl-chunked", standalone_mode=False)
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
    return 0
