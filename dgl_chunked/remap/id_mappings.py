"""GSProcessing's ``raw_id_mappings/<ntype>/``: the user's IDs of a node type, a second source of keys.

GraphStorm's GSProcessing (Spark) gives every node type dense IDs and writes the map,
per node type, as Spark Parquet files (``graphstorm-processing/graphstorm_processing/
graph_loaders/dist_heterogeneous_loader.py``, ``_write_nodeid_mapping_and_update_state``)::

    raw_id_mappings/<ntype>/parquet/part-00000-<uuid>-c000.snappy.parquet   orig, new
    raw_id_mappings/<ntype>/parquet/_SUCCESS, .part-....crc                  Spark's side files

``orig`` is the user's ID (string, or integer when the input column was), ``new`` an
int64 in ``[0, N)``: the node's type-wise ID in the chunked graph, what our glossary
calls its *original ID*. GraphStorm's ``IdReverseMap``
(``python/graphstorm/gconstruct/id_map.py``) reads the whole directory with
``pyarrow.parquet.read_table`` (which skips names starting with ``_`` or ``.``) and
sorts by ``new``; it also accepts GraphStorm 0.2.1's names ``node_str_id`` /
``node_int_id``. We read the same files the same way, but never whole and never
assuming an order: :class:`IdMappingSource` cuts them into row pieces read one at a
time; lookup hashes them by key (:mod:`~dgl_chunked.lookup.tasks`), remap
groups them by block of original IDs (:mod:`~dgl_chunked.remap.id_mapping_tasks`).

Where they are looked for (:func:`find_keys`): ``--id-mappings DIR``, else the chunked
graph (our ``node_keys`` first, then its ``raw_id_mappings/``), else next to the
partitions (``OUT/raw_id_mappings/``), where GraphStorm's ``dist_partition_graph.py``
copies them and its ``remap_result.py`` reads them (``dirname(part_config)``).
"""

from __future__ import annotations

import posixpath
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt
import pyarrow as pa

from dgl_chunked._typing import IdArray, StorageOptions
from dgl_chunked.chunk.kernels import keys_to_numpy
from dgl_chunked.errors import DglChunkedError
from dgl_chunked.io.chunked.graph import ChunkedGraph
from dgl_chunked.io.dgl.partition_config import ID_MAPPINGS_DIR
from dgl_chunked.io.formats import FileInfo, Piece, inspect_file
from dgl_chunked.io.formats.parquet import read_parquet_piece
from dgl_chunked.remap.keys import KeySource, key_source
from dgl_chunked.remap.model import RemapError
from dgl_chunked.storage import fs

__all__ = ["ID_MAPPINGS_DIR", "COLUMN_PAIRS", "IdMappingSource", "Keys", "find_id_mappings", "find_keys"]

COLUMN_PAIRS = (("orig", "new"), ("node_str_id", "node_int_id"))
"""``(user ID, original ID)`` column names: GSProcessing's, then GraphStorm 0.2.1's."""
PIECE_ROWS = 1 << 20


@dataclass(frozen=True)
class IdMappingSource:
    """One node type's ``raw_id_mappings`` files, cut into pieces of at most ``PIECE_ROWS`` rows.

    ``pieces[i]`` is ``(file index, first row, end row)``; ``rows[f]`` is file ``f``'s
    row count (from its footer).
    """

    ntype: str
    root: str
    paths: tuple[str, ...]
    infos: tuple[FileInfo, ...]
    pieces: tuple[tuple[int, int, int], ...]
    column: str
    id_column: str
    is_string: bool
    storage_options: dict[str, Any] | None = field(default=None, compare=False)

    @property
    def total(self) -> int:
        return sum(int(i.rows or 0) for i in self.infos)

    @property
    def num_pieces(self) -> int:
        return len(self.pieces)

    @property
    def label(self) -> str:
        return f"{self.root} (GSProcessing's raw_id_mappings)"

    def where(self, piece: int, row: int) -> str:
        """File and row of row ``row`` of piece ``piece`` (for messages)."""
        f, lo, _ = self.pieces[piece]
        return f"{self.paths[f]} row {lo + row}"

    def pairs(self, piece: int) -> tuple[npt.NDArray[Any], IdArray]:
        """``(user IDs, original IDs)`` of one piece; original IDs checked to lie in ``[0, total)``."""
        f, lo, hi = self.pieces[piece]
        path, info = self.paths[f], self.infos[f]
        table = read_parquet_piece(
            Piece(path=path, start=lo, stop=hi), info, [self.column, self.id_column], self.storage_options
        )
        keys, ids = table.column(0), table.column(1)
        for name, col in ((self.column, keys), (self.id_column, ids)):
            if col.null_count:
                at = int(np.argmax(np.asarray(col.is_null())))
                raise RemapError(f"{path} row {lo + at}: column {name!r} is empty; every row needs a user ID and an ID")
        out = np.asarray(ids.to_numpy(), dtype=np.int64)
        bad = (out < 0) | (out >= self.total)
        if bad.any():
            at = int(np.argmax(bad))
            raise RemapError(
                f"{path} row {lo + at}: {self.id_column} {int(out[at])} is outside [0, {self.total}) "
                f"(the rows of {self.root}); it does not number node type {self.ntype!r}"
            )
        return keys_to_numpy(keys), out


Keys = KeySource | IdMappingSource
"""Where a node type's user IDs come from: our ``chunk``'s ``node_keys`` or GSProcessing's mapping."""


def _visible(path: str, root: str) -> bool:
    rel = posixpath.relpath(path, root)
    return not any(part.startswith(("_", ".")) for part in rel.split("/"))


def _columns(info: FileInfo) -> tuple[str, str]:
    for pair in COLUMN_PAIRS:
        if all(name in info.names for name in pair):
            return pair
    raise RemapError(
        f"{info.path}: has columns {list(info.names)}; an ID mapping needs 'orig' and 'new' "
        "(as GSProcessing writes them) or 'node_str_id' and 'node_int_id'"
    )


def find_id_mappings(root: str, ntype: str, *, storage_options: StorageOptions = None) -> IdMappingSource | None:
    """The files of ``root/<ntype>/`` (any depth, Spark's side files skipped); None when absent.

    Raises
    ------
    RemapError
        A file that is not Parquet, lacks the two columns, or whose columns differ in
        type from the first file's; an ``orig`` column that is neither text nor integer.
    """
    so = storage_options
    base = fs.join(root, ntype)
    filesystem, inner = fs.filesystem(base, so)
    if not filesystem.isdir(inner):
        return None
    found = sorted(p for p in filesystem.find(inner) if _visible(p, inner))
    paths = [filesystem.unstrip_protocol(p) if fs.is_url(base) else p for p in found]
    if not paths:
        raise RemapError(f"{base}: holds no mapping file; expected GSProcessing's parquet/part-*.parquet files")
    infos = []
    for path in paths:
        try:
            infos.append(inspect_file(path, "parquet", f"ID mapping of {ntype!r}", storage_options=so))
        except DglChunkedError as err:
            raise RemapError(str(err)) from None
    column, id_column = _columns(infos[0])
    kinds = None
    for info in infos:
        if _columns(info) != (column, id_column):
            raise RemapError(f"{info.path}: names its columns differently from {infos[0].path}")
        got = (info.types[info.names.index(column)], info.types[info.names.index(id_column)])
        if not pa.types.is_integer(got[1]):
            raise RemapError(f"{info.path}: column {id_column!r} holds {got[1]}; expected integer IDs")
        if not (pa.types.is_integer(got[0]) or pa.types.is_string(got[0]) or pa.types.is_large_string(got[0])):
            raise RemapError(f"{info.path}: column {column!r} holds {got[0]}; expected text or integer user IDs")
        if kinds is not None and pa.types.is_integer(got[0]) != pa.types.is_integer(kinds[0]):
            raise RemapError(f"{info.path}: column {column!r} holds {got[0]}, but {infos[0].path} holds {kinds[0]}")
        kinds = kinds or got
    assert kinds is not None
    pieces = tuple(
        (f, lo, min(lo + PIECE_ROWS, int(info.rows or 0)))
        for f, info in enumerate(infos)
        for lo in range(0, int(info.rows or 0), PIECE_ROWS)
    )
    return IdMappingSource(
        ntype, base, tuple(paths), tuple(infos), pieces, column, id_column, not pa.types.is_integer(kinds[0]), so
    )


def user_ids_known(
    part_root: str, graph: ChunkedGraph | None, id_mappings: str | None, storage_options: StorageOptions = None
) -> bool:
    """Whether a node type without user IDs in :func:`find_keys`'s sources truly has none.

    The chunked graph (its ``node_keys`` and ``raw_id_mappings``), a mappings directory the
    user names, or the ``raw_id_mappings/`` carried beside the partitions list every type
    that has user IDs; without any of them a type's user IDs are unknown, not absent.
    """
    if graph is not None or id_mappings is not None:
        return True
    return fs.exists(fs.join(part_root, ID_MAPPINGS_DIR), storage_options)


def find_keys(
    ntype: str,
    *,
    part_root: str,
    graph: ChunkedGraph | None = None,
    id_mappings: str | None = None,
    total: int | None = None,
    storage_options: StorageOptions = None,
) -> Keys | None:
    """The user IDs of ``ntype``: ``id_mappings``, else the chunked graph's, else the partitions'.

    ``total`` (the partitions' node count of the type) is checked against the source.

    Raises
    ------
    RemapError
        The source is unreadable or holds another number of rows than ``total``.
    """
    so = storage_options
    keys: Keys | None
    if id_mappings is not None:
        keys = find_id_mappings(id_mappings, ntype, storage_options=so)
    else:
        keys = None
        if graph is not None:
            base = graph.metadata.base_dir
            keys = key_source(base, ntype, storage_options=so) or find_id_mappings(
                fs.join(base, ID_MAPPINGS_DIR), ntype, storage_options=so
            )
        if keys is None:
            keys = find_id_mappings(fs.join(part_root, ID_MAPPINGS_DIR), ntype, storage_options=so)
    if keys is not None and total is not None and keys.total != total:
        where = (
            keys.label if isinstance(keys, IdMappingSource) else f"{graph.metadata.base_dir if graph else ''} node_keys"
        )
        raise RemapError(
            f"{where}: holds {keys.total} user IDs of node type {ntype!r}, but the partitions hold {total} nodes; "
            "pass the mapping of the graph the partitions were made from"
        )
    return keys
