"""Single flags shared by several commands, and the parsers behind them.

Each decorator adds its flags in the order ``--help`` lists them; a command that
uses one gets the same flag names, defaults and help texts as every other. The flag
groups that build typed options are in :mod:`dgl_chunked.cli.flags`.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import click

from dgl_chunked._typing import parse_size as parse_bytes_once
from dgl_chunked.errors import OptionError

__all__ = [
    "add_options",
    "parse_size",
    "parse_storage_options",
    "scratch_option",
    "storage_option",
    "task_size_option",
]

F = TypeVar("F", bound=Callable[..., Any])


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


def scratch_option(default: str) -> Callable[[F], F]:
    """``--scratch-dir DIR``; ``default`` names the flag whose folder is used without it."""
    return click.option(
        "--scratch-dir",
        default=None,
        metavar="DIR",
        help=f"Where intermediate data goes, in a dglc-* folder removed afterwards (default: {default}); "
        "on a cluster without a shared disk, a URL every worker reaches (s3://...).",
    )
