"""How a command fails: one ``error:`` line on stderr and exit code 1.

A :class:`~dgl_chunked.errors.DglChunkedError` is the input's fault and an
environment :class:`OSError` (full disk, quota, permissions, a wrong path) the
machine's: both become one line naming the file and saying what to do. Anything
else is a bug and keeps its traceback.
"""

from __future__ import annotations

import errno
import functools
import logging
import sys
from collections.abc import Callable
from typing import Any, NoReturn, TypeVar

import click

from dgl_chunked.errors import DglChunkedError

__all__ = ["environment_error", "fail", "fail_line", "os_error_message", "user_errors"]

F = TypeVar("F", bound=Callable[..., Any])

logger = logging.getLogger("dgl_chunked.cli")

# Filesystem errors that are about the environment (space, limits, permissions,
# paths), not bugs: the CLI reports them in one line, like input errors.
_SPACE_ERRNOS = {
    errno.ENOSPC: "free space on that device or choose another --out-dir / --staging-dir",
    errno.EFBIG: "the file exceeds the file-size limit (ulimit -f) or the filesystem's maximum "
    "file size; raise the limit or write elsewhere",
    errno.EDQUOT: "the disk quota is exhausted; free space or choose another directory",
    errno.EROFS: "the filesystem is read-only; choose another directory",
}
_PATH_ERRNOS = {
    errno.EACCES: "check the permissions of that path",
    errno.EPERM: "check the permissions of that path",
    errno.ENOTDIR: "a component of that path is a file, not a directory; fix the path",
    errno.EISDIR: "a directory is in the way of a file; fix the path",
    errno.EEXIST: "something is in the way of that path; remove it or choose another path",
    errno.ENOENT: "check the path (and the bucket, for URLs)",
}


def environment_error(err: BaseException) -> OSError | None:
    """The environment OSError that caused ``err`` (itself, or one in its cause chain:
    Dask wraps a shuffle's full disk in a RuntimeError), else None."""
    seen: set[int] = set()
    current: BaseException | None = err
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if (
            isinstance(current, OSError)
            and not isinstance(current, DglChunkedError)
            and (current.errno in _SPACE_ERRNOS or (current.errno in _PATH_ERRNOS and current.filename))
        ):
            return current
        current = current.__cause__ or current.__context__
    return None


def os_error_message(err: OSError, kwargs: dict[str, Any]) -> str | None:
    """One line for an environment OSError (naming the file), or None for other errors.

    ``kwargs`` are the command's arguments: ``out_dir`` names where a write failed
    when the error itself names no file.
    """
    code = err.errno
    if code in _SPACE_ERRNOS:
        fix = _SPACE_ERRNOS[code]
    elif code in _PATH_ERRNOS and err.filename is not None:
        fix = _PATH_ERRNOS[code]
    else:
        return None
    name = errno.errorcode.get(code, str(code))
    if err.filename is not None:
        where = f"could not write {err.filename}" if code in _SPACE_ERRNOS else f"{err.filename}"
    else:  # e.g. inside zarr or a Dask shuffle, which do not say which file
        out = kwargs.get("out_dir")
        where = (
            f"a write failed under {out}, its staging or Dask's local directory"
            if out
            else "a write failed (possibly in Dask's local directory)"
        )
    return f"{where}: {err.strerror or err} ({name}); {fix}"


def user_errors(func: F) -> F:
    """Turn DglChunkedError (and environment OSErrors such as a full disk) into a
    one-line message and exit code 1; ``--log-level DEBUG`` also logs the traceback."""

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return func(*args, **kwargs)
        except DglChunkedError as err:
            logger.debug("user error", exc_info=True)
            problems = getattr(err, "problems", None)
            if isinstance(problems, list) and len(problems) > 1:  # every one on stdout, the first on the error line
                for problem in problems:
                    click.echo(f"  - {problem}")
                fail_line(problems)
            click.echo(f"error: {err}", err=True)
            sys.exit(1)
        except Exception as err:  # noqa: BLE001 - re-raised unless it is the environment's fault
            cause = environment_error(err)
            if cause is None:
                raise
            logger.debug("filesystem error", exc_info=True)
            click.echo(f"error: {os_error_message(cause, kwargs)}", err=True)
            sys.exit(1)

    return wrapper  # type: ignore[return-value]


def fail(what: str, problems: list[str]) -> NoReturn:
    """The one ``error:`` line closing a list of problems (it repeats the first), then exit 1."""
    fail_line(problems, what)


def fail_line(problems: list[str], what: str = "") -> NoReturn:
    """``error: [WHAT: ]FIRST PROBLEM (and N more, listed above)`` on stderr, then exit 1."""
    more = f" (and {len(problems) - 1} more, listed above)" if len(problems) > 1 else ""
    click.echo(f"error: {what + ': ' if what else ''}{problems[0]}{more}", err=True)
    sys.exit(1)  # main() maps SystemExit to the exit code
