"""The assignment sidecar ``dglc_partition.json``: how dgl_chunked made an assignment
(``docs/spec/assignment.md``, "Sidecar dglc_partition.json").

DGL's ``partition_meta.json`` may only say ``"random"`` or ``"metis"``; the sidecar,
written next to it, records the real method and more (``indent=2``, sorted keys)::

    {
      "binary": "dglc_parts.zarr",          the Zarr copy of the IDs ("" when not written)
      "dgl_algo_name": "random",            what partition_meta.json says
      "dgl_chunked_version": "0.1.0",
      "files": {"paper": [30, "1795459373.408718"], ...},
                                            size and mtime of every <ntype>.txt when written
      "format": "dglc-assignment",
      "format_version": 1,
      "method": "lp",                       the real method
      "num_parts": 3,
      "token": "84035d4d9825de03",          a hash of "files"
      "seed": 7, ...                        provenance: extra keys given by the writer
    }

:class:`AssignmentSidecar` is its model: :meth:`~AssignmentSidecar.from_json`
validates every key (an :class:`~dgl_chunked.errors.AssignmentError` names the
file and the key) and :meth:`~AssignmentSidecar.to_json` writes the same bytes
back. The sidecar is optional: readers that can do without it ignore a broken one
(with a log line) and read the text files.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from dgl_chunked._typing import PathLike, StorageOptions
from dgl_chunked._version import __version__
from dgl_chunked.errors import AssignmentError
from dgl_chunked.io.assignment.layout import SIDECAR_NAME, ZARR_NAME, load_json
from dgl_chunked.storage import fs as _fs

__all__ = [
    "SIDECAR_FORMAT",
    "SIDECAR_FORMAT_VERSION",
    "AssignmentSidecar",
    "read_assignment_sidecar",
    "sidecar_or_none",
]

logger = logging.getLogger(__name__)

SIDECAR_FORMAT = "dglc-assignment"
SIDECAR_FORMAT_VERSION = 1
_KEYS = frozenset(
    (
        "num_parts",
        "method",
        "dgl_algo_name",
        "dgl_chunked_version",
        "format",
        "format_version",
        "files",
        "binary",
        "token",
    )
)
_REWRITE = "rewrite the assignment (dgl-chunked partition --overwrite) or delete the sidecar"


@dataclass(frozen=True, kw_only=True)
class AssignmentSidecar:
    """The content of ``dglc_partition.json`` (see the module docstring).

    ``files`` maps each node type to the ``(size, mtime)`` of its ``<ntype>.txt``
    when written; ``provenance`` holds the extra keys the writer was given (e.g.
    ``seed``, ``balance_ntypes``, ``partitioner``), stored at the top level.
    """

    num_parts: int
    method: str
    dgl_algo_name: str
    files: Mapping[str, tuple[int, str]]
    token: str
    dgl_chunked_version: str = __version__
    binary: str = ZARR_NAME
    format: str = SIDECAR_FORMAT
    format_version: int = SIDECAR_FORMAT_VERSION
    provenance: Mapping[str, Any] = field(default_factory=dict)

    @classmethod
    def create(
        cls,
        *,
        num_parts: int,
        method: str,
        dgl_algo_name: str,
        files: Mapping[str, tuple[int, str]],
        provenance: Mapping[str, Any] | None = None,
        binary: str = ZARR_NAME,
    ) -> AssignmentSidecar:
        """The sidecar for a fresh write: ``token`` hashes ``files``; provenance keys
        that name one of the sidecar's own keys are dropped (those win)."""
        stamps = {t: (int(size), str(mtime)) for t, (size, mtime) in files.items()}
        token = hashlib.sha256(json.dumps(stamps, sort_keys=True).encode()).hexdigest()[:16]
        extra = {k: v for k, v in (provenance or {}).items() if k not in _KEYS}
        return cls(
            num_parts=num_parts,
            method=method,
            dgl_algo_name=dgl_algo_name,
            files=stamps,
            token=token,
            binary=binary,
            provenance=extra,
        )

    def to_json(self) -> bytes:
        """The file's bytes: one JSON object, ``indent=2``, sorted keys, no final newline."""
        body = {
            **dict(self.provenance),
            "num_parts": self.num_parts,
            "method": self.method,
            "dgl_algo_name": self.dgl_algo_name,
            "dgl_chunked_version": self.dgl_chunked_version,
            "format": self.format,
            "format_version": self.format_version,
            "files": {t: list(stamp) for t, stamp in self.files.items()},
            "binary": self.binary,
            "token": self.token,
        }
        return json.dumps(body, indent=2, sort_keys=True, default=str).encode()

    @classmethod
    def from_json(cls, data: bytes | str | Mapping[str, Any], *, where: str) -> AssignmentSidecar:
        """Parse and validate a sidecar (its bytes, or the already decoded object).

        ``where`` names the file in messages.

        Raises
        ------
        AssignmentError
            Invalid JSON, not an object, or a key missing or of the wrong type or
            value; the message names the file and the key.
        """
        obj = _decode(data, where)
        fmt = _get(obj, "format", str, where)
        if fmt != SIDECAR_FORMAT:
            raise AssignmentError(f'{where}: "format": expected {SIDECAR_FORMAT!r}, found {fmt!r}; {_REWRITE}')
        version = _get(obj, "format_version", int, where)
        if version != SIDECAR_FORMAT_VERSION:
            raise AssignmentError(
                f'{where}: "format_version": expected {SIDECAR_FORMAT_VERSION}, found {version!r} '
                f"(written by another dgl_chunked version); {_REWRITE}"
            )
        num_parts = _get(obj, "num_parts", int, where)
        if num_parts < 1:
            raise AssignmentError(f'{where}: "num_parts": expected a positive integer, found {num_parts!r}; {_REWRITE}')
        return cls(
            num_parts=num_parts,
            method=_get(obj, "method", str, where),
            dgl_algo_name=_get(obj, "dgl_algo_name", str, where),
            files=_files(_get(obj, "files", dict, where), where),
            token=_get(obj, "token", str, where),
            dgl_chunked_version=_get(obj, "dgl_chunked_version", str, where),
            binary=_get(obj, "binary", str, where),
            provenance={k: v for k, v in obj.items() if k not in _KEYS},
        )


def _decode(data: bytes | str | Mapping[str, Any], where: str) -> Mapping[str, Any]:
    obj: Any = data
    if isinstance(data, bytes | str):
        try:
            obj = json.loads(data)
        except (json.JSONDecodeError, UnicodeDecodeError) as err:
            line = getattr(err, "lineno", 1)
            raise AssignmentError(
                f"{where}: line {line}: expected valid JSON (the dgl_chunked assignment sidecar), "
                f"found {err}; {_REWRITE}"
            ) from err
    if not isinstance(obj, Mapping):
        raise AssignmentError(f"{where}: expected a JSON object, found {type(obj).__name__}; {_REWRITE}")
    return obj


_TYPE_NAMES = {int: "an integer", str: "a string", dict: "an object"}


def _get(obj: Mapping[str, Any], key: str, kind: type, where: str) -> Any:
    if key not in obj:
        raise AssignmentError(f'{where}: "{key}": expected {_TYPE_NAMES[kind]}, found no such key; {_REWRITE}')
    value = obj[key]
    if not isinstance(value, kind) or isinstance(value, bool):
        raise AssignmentError(f'{where}: "{key}": expected {_TYPE_NAMES[kind]}, found {value!r}; {_REWRITE}')
    return value


def _files(files: dict[str, Any], where: str) -> dict[str, tuple[int, str]]:
    out = {}
    for ntype, stamp in files.items():
        ok = isinstance(stamp, list) and len(stamp) == 2 and type(stamp[0]) is int and isinstance(stamp[1], str)
        if not ok or stamp[0] < 0:
            raise AssignmentError(
                f'{where}: "files"["{ntype}"]: expected [size, mtime] (a non-negative integer and '
                f"a string), found {stamp!r}; {_REWRITE}"
            )
        out[ntype] = (stamp[0], stamp[1])
    return out


def read_assignment_sidecar(
    assign_dir: PathLike, *, storage_options: StorageOptions = None
) -> AssignmentSidecar | None:
    """Read and validate ``ASSIGN/dglc_partition.json``; None when there is none.

    Raises
    ------
    AssignmentError
        The file is a directory, not valid JSON, or fails
        :meth:`AssignmentSidecar.from_json`; the message names the file and key.
    """
    path = _fs.join(assign_dir, SIDECAR_NAME)
    if not _fs.exists(path, storage_options):
        return None
    obj = load_json(path, storage_options, "the dgl_chunked assignment sidecar")
    return AssignmentSidecar.from_json(obj, where=path)


def sidecar_or_none(assign_dir: PathLike, storage_options: StorageOptions) -> AssignmentSidecar | None:
    """The sidecar, or None (with a log line) when it is missing or unreadable: it is optional."""
    try:
        return read_assignment_sidecar(assign_dir, storage_options=storage_options)
    except AssignmentError as err:
        logger.warning("ignoring the dgl_chunked sidecar: %s", err)
        return None
