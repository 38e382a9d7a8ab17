"""Exception and warning hierarchy of dgl_chunked.

Every error a user can cause (bad metadata, bad chunk files, bad assignment
directories, an existing output directory) is a :class:`DglChunkedError`. The
CLI turns those into a one-line message and a non-zero exit code; anything else
is a bug in dgl_chunked and keeps its traceback.

Subclasses also inherit the matching builtin (as zarr does), so code that
catches ``ValueError`` or ``FileNotFoundError`` keeps working.
"""

from __future__ import annotations

__all__ = [
    "DglChunkedError",
    "MetadataError",
    "ChunkMismatchError",
    "ChunkReadError",
    "UnsupportedFormatError",
    "OptionError",
    "UnknownNameError",
    "AssignmentError",
    "DGLFormatError",
    "OutputExistsError",
    "StagingError",
    "SchedulerError",
    "InsufficientSpaceError",
    "ValidationFailed",
    "DglChunkedWarning",
    "EmptyPartitionWarning",
    "PerformanceWarning",
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


class AssignmentError(DglChunkedError, ValueError):
    """A partition-assignment directory is missing files or holds invalid IDs."""


class DGLFormatError(DglChunkedError, ValueError):
    """A DGL binary file (``.dgl``) is corrupt, truncated or not of the expected kind."""


class OutputExistsError(DglChunkedError, FileExistsError):
    """The output directory exists and overwriting was not requested."""


class StagingError(DglChunkedError, RuntimeError):
    """Zarr staging is missing, incomplete or belongs to another input."""


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


class DglChunkedWarning(UserWarning):
    """Base class for dgl_chunked warnings."""


class EmptyPartitionWarning(DglChunkedWarning):
    """A partition owns no node (or edge) of a type that has features.

    ``DistGraphServer`` cannot host zero-row feature tensors (spec section 3.5).
    """


class PerformanceWarning(DglChunkedWarning):
    """Something works but will be slow or memory hungry."""
