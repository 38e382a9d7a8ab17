"""Flags shared by several commands, and the parsers behind them.

Each decorator adds its flags in the order ``--help`` lists them; a command that
uses one gets the same flag names, defaults and help texts as every other.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import click

from dgl_chunked._typing import parse_size as parse_bytes_once
from dgl_chunked.errors import OptionError

__all__ = [
    "SCHEDULER_HELP",
    "add_options",
    "assignment_cluster_options",
    "cluster_options",
    "local_cluster_options",
    "parse_size",
    "parse_storage_options",
    "scratch_option",
    "storage_option",
    "task_size_option",
]

F = TypeVar("F", bound=Callable[..., Any])

SCHEDULER_HELP = "Existing Dask scheduler address or file (default: local threads)."


def add_options(func: F, options: Sequence[Callable[[Any], Any]]) -> F:
    """Apply click options so that ``--help`` lists them in the order given."""
    for option in reversed(options):
        func = option(func)
    return func


def parse_storage_options(ctx: Any, param: Any, value: str | None) -> dict[str, Any] | None:
    """``--storage-options '{"endpoint_url": "http://..."}'`` -> dict (click callback)."""
    if value is None:
        return None
    try:
        parsed = json.loads(value)
    except json.JSONDecodeError as err:
        raise click.BadParameter(f"expected a JSON object, found {value!r} ({err})") from err
    if not isinstance(parsed, dict):
        raise click.BadParameter(f"expected a JSON object, found {type(parsed).__name__} {value!r}")
    return parsed


def parse_size(text: str, flag: str) -> int:
    """``"256MiB"`` -> bytes (:func:`dgl_chunked._typing.parse_size`); a usage error
    naming ``flag`` when it is not a size."""
    try:
        return parse_bytes_once(text, flag)
    except OptionError as err:
        raise click.BadParameter(f"{text!r} is not a size such as 256MiB or 0", param_hint=flag) from err


def storage_option(func: F) -> F:
    """The ``--storage-options JSON`` flag: fsspec options for every path and URL."""
    return click.option(
        "--storage-options",
        "storage_options",
        metavar="JSON",
        default=None,
        callback=parse_storage_options,
        help='fsspec options for URLs, e.g. \'{"endpoint_url": "http://127.0.0.1:9000"}\' '
        "(s3fs also reads AWS_* and FSSPEC_S3_* environment variables).",
    )(func)


def local_cluster_options(func: F) -> F:
    """``--scheduler`` / ``--workers`` of the commands that run on local threads by default."""
    return add_options(
        func,
        [
            click.option("--scheduler", metavar="ADDRESS", default=None, help=SCHEDULER_HELP),
            click.option("--workers", type=click.IntRange(min=1), default=None, help="Use a LocalCluster."),
        ],
    )


def assignment_cluster_options(func: F) -> F:
    """``--scheduler`` / ``--workers`` of the commands that read or write an assignment."""
    return add_options(
        func,
        [
            click.option(
                "--scheduler",
                metavar="ADDRESS",
                default=None,
                help="Run on this existing Dask scheduler (address or scheduler file).",
            ),
            click.option(
                "--workers",
                type=click.IntRange(min=1),
                default=None,
                help="Run on a new LocalCluster with N worker processes.",
            ),
        ],
    )


def task_size_option(func: F) -> F:
    """``--task-size SIZE``: the decoded bytes one read task aims at."""
    return click.option(
        "--task-size",
        "task_size",
        metavar="SIZE",
        default=None,
        help="Input files are read in tasks of about this many decoded bytes, several small "
        "files per task (default: $DGLC_TASK_SIZE, else 32MiB).",
    )(func)


def cluster_options(func: F) -> F:
    """Flags shared by every command that always runs on a Dask cluster (dispatch, run)."""
    options = [
        click.option(
            "--scheduler",
            metavar="ADDRESS",
            help="Use this existing Dask scheduler (tcp://host:8786 or a scheduler file) "
            "instead of starting a LocalCluster.",
        ),
        click.option(
            "--workers",
            type=click.IntRange(min=1),
            default=None,
            help="LocalCluster worker processes (default: number of CPUs).",
        ),
        click.option("--threads-per-worker", type=click.IntRange(min=1), default=1, show_default=True),
        click.option(
            "--memory-limit",
            metavar="SIZE",
            default=None,
            help="LocalCluster memory limit per worker, e.g. 2GiB; Dask spills beyond it.",
        ),
        click.option("--no-progress", is_flag=True, help="Do not show progress bars."),
    ]
    return task_size_option(storage_option(add_options(func, options)))


def scratch_option(default: str) -> Callable[[F], F]:
    """``--scratch-dir DIR``; ``default`` names the flag whose folder is used without it."""
    return click.option(
        "--scratch-dir",
        default=None,
        metavar="DIR",
        help=f"Where intermediate data goes, in a dglc-* folder removed afterwards (default: {default}); "
        "on a cluster without a shared disk, a URL every worker reaches (s3://...).",
    )
