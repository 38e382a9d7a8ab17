"""Exception and warning hierarchy of dgl_chunked.

Every error a user can cause (bad metadata, bad chunk files, bad assignment
directories, an existing output directory) is a :class:`DglChunkedError`. The
CLI turns those into a one-line message and a non-zero exit code; anything else
is a bug in dgl_chunked and keeps its traceback.

Subclasses also inherit the matching builtin (as zarr does), so code that
catches ``ValueError`` or ``FileNotFoundError`` keeps working.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

__all__ = [
    "MISSING",
    "Problems",
    "DglChunkedError",
    "MetadataError",
    "ChunkMismatchError",
    "ChunkReadError",
    "UnsupportedFormatError",
    "OptionError",
    "UnknownNameError",
    "MissingPackageError",
    "AssignmentError",
    "DGLFormatError",
    "OutputExistsError",
    "SchedulerError",
    "InsufficientSpaceError",
    "ValidationFailed",
    "DglChunkedWarning",
    "EmptyPartitionWarning",
    "one_line",
]


class DglChunkedError(Exception):
    """Base class for all dgl_chunked errors caused by input or configuration."""


class MetadataError(DglChunkedError, ValueError):
    """``metadata.json`` (or another JSON document) is malformed or inconsistent."""


class ChunkMismatchError(DglChunkedError, ValueError):
    """A chunk file's contents disagree with ``metadata.json`` (rows, dtype, ID range)."""


class ChunkReadError(DglChunkedError, OSError):
    """A chunk file is missing, unreadable or corrupt."""


class UnsupportedFormatError(DglChunkedError, ValueError):
    """A ``format.name`` (or option) that dgl_chunked does not know."""


class OptionError(DglChunkedError, ValueError):
    """An option or argument has a value out of range or of the wrong kind."""


class UnknownNameError(DglChunkedError, KeyError):
    """A node type, edge type or feature name that the graph does not have."""

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0]) if self.args else ""


class MissingPackageError(DglChunkedError, ImportError):
    """A method needs a package that is not installed (the message says what to install)."""


class AssignmentError(DglChunkedError, ValueError):
    """A partition-assignment directory is missing files or holds invalid IDs."""


class DGLFormatError(DglChunkedError, ValueError):
    """A DGL binary file (``.dgl``) is corrupt, truncated or not of the expected kind."""


class OutputExistsError(DglChunkedError, FileExistsError):
    """The output directory exists and overwriting was not requested."""


class SchedulerError(DglChunkedError, OSError):
    """The Dask scheduler given (``--scheduler``) cannot be reached."""


class InsufficientSpaceError(DglChunkedError, OSError):
    """The output or staging filesystem has less free space than the run needs."""


class ValidationFailed(DglChunkedError):
    """One or more problems were found by ``validate`` or ``verify``.

    ``problems`` holds every message, not just the first.
    """

    def __init__(self, problems: list[str]) -> None:
        self.problems = list(problems)
        head = f"{len(self.problems)} problem(s) found"
        super().__init__(head + ":\n" + "\n".join(f"  - {p}" for p in self.problems))


def one_line(err: BaseException | str) -> str:
    """``err`` as one line of printable text (pyarrow's messages span several lines and
    quote damaged bytes), prefixed by its class name when it is an exception."""
    text = " ".join(str(err).split())
    text = "".join(c if c.isprintable() else ascii(c)[1:-1] for c in text)
    return f"{type(err).__name__}: {text}" if isinstance(err, BaseException) else text


_T = TypeVar("_T")


class _Missing:
    def __repr__(self) -> str:
        return "nothing (key missing)"


MISSING: Any = _Missing()
"""The ``found`` of a key that is absent: :meth:`Problems.add` shows it as "nothing (key missing)"."""


class Problems:
    """Collects every problem found in one document or run, then raises them as one error.

    Parsers and planners report each problem as they meet it and go on, so the user
    sees all of them at once. A problem is a message plus the error class it would
    raise alone; :meth:`error` builds one error of the first problem's class that
    lists every message (and keeps them in ``err.problems``).

    Parameters
    ----------
    subject
        What was checked, for the heading: ``"metadata.json"``, ``"the chunk spec"``.
    prefix
        Put before every ``where`` given to :meth:`add` (``"spec "``).
    error
        The class of a problem recorded by :meth:`add` or :meth:`note`.

    Examples
    --------
    >>> from dgl_chunked.errors import Problems
    >>> problems = Problems("metadata.json")
    >>> problems.add("graph_name", "a string", 7, "name the graph")
    >>> problems.messages
    ['graph_name: expected a string, found 7; name the graph']
    """

    def __init__(self, subject: str, *, prefix: str = "", error: type[DglChunkedError] | None = None) -> None:
        self.subject = subject
        self.prefix = prefix
        self.error_class = error or MetadataError
        self._items: list[tuple[str, DglChunkedError | type[DglChunkedError]]] = []

    def __len__(self) -> int:
        return len(self._items)

    @property
    def messages(self) -> list[str]:
        """Every message, in the order found."""
        return [message for message, _ in self._items]

    def add(self, where: str, expected: str, found: Any, fix: str = "") -> None:
        """Record ``WHERE: expected EXPECTED, found FOUND; FIX`` (``found`` is shown by repr, cut at 80)."""
        text = repr(found)
        text = text if len(text) <= 80 else text[:77] + "..."
        tail = f"; {fix}" if fix else ""
        self.note(f"{self.prefix}{where}: expected {expected}, found {text}{tail}")

    def note(self, message: str, error: type[DglChunkedError] | None = None) -> None:
        """Record a message already written out (of class ``error``, default the collector's)."""
        self._items.append((message, error or self.error_class))

    def run(self, func: Callable[..., _T], *args: Any, **kwargs: Any) -> _T | None:
        """``func(*args, **kwargs)``, or None after recording the DglChunkedError it raised."""
        try:
            return func(*args, **kwargs)
        except DglChunkedError as err:
            self._items.append((str(err), err))
            return None

    def error(self) -> DglChunkedError | None:
        """One error listing every problem (the first problem's class), or None if none.

        A single problem caught by :meth:`run` is returned as it was raised.
        """
        if not self._items:
            return None
        first = self._items[0][1]
        if len(self._items) == 1 and isinstance(first, DglChunkedError):
            return first
        cls = type(first) if isinstance(first, DglChunkedError) else first
        messages = self.messages
        if len(messages) == 1:
            err = cls(messages[0])
        else:
            lines = "\n".join(f"  - {m}" for m in messages)
            err = cls(f"{len(messages)} problems in {self.subject}:\n{lines}")
        err.problems = messages  # type: ignore[attr-defined]
        return err

    def raise_if_any(self) -> None:
        """Raise :meth:`error` when any problem was recorded."""
        err = self.error()
        if err is not None:
            raise err


class DglChunkedWarning(UserWarning):
    """Base class for dgl_chunked warnings."""


class EmptyPartitionWarning(DglChunkedWarning):
    """A partition owns no node (or edge) of a type that has features.

    ``DistGraphServer`` cannot host zero-row feature tensors (``docs/spec/partition-config.md``,
    "Feature files").
    """
