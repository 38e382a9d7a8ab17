"""Tables of remap's ``parquet`` and ``csv`` output: one file per block, columns as GraphStorm names them.

GraphStorm's ``remap_result`` (``python/graphstorm/gconstruct/remap_result.py``) writes
node results as the value column (``pred`` or ``emb``) then ``nid``, the user's ID
(``GS_REMAP_NID_COL``), read from ``raw_id_mappings``, and edge predictions as ``pred``,
``src_nid``, ``dst_nid`` (``GS_REMAP_SRC_NID_COL``, ``GS_REMAP_DST_NID_COL``: the
endpoints' user IDs, ``worker_remap_edge_pred``); ``--output-format parquet|csv``
(default ``parquet``), ``--output-delimiter`` (default ``,``) and ``--column-names
OLD,NEW ...`` renaming built-in columns. Its CSV writer (``write_data_csv_file``) is
pandas' ``to_csv(index=False, sep=delimiter)`` with a header line in every file, a
row of a 2-D value written as its values joined by ``;`` (``str`` of each Python
number). We write the same, plus our ``type_nid`` / ``type_eid`` (the original
type-wise ID) last:

    <value>, nid, type_nid      node types with user IDs (node_keys or raw_id_mappings)
    <value>, type_nid           node types without
    <value>, src_nid, dst_nid, type_eid
                                edge types: the endpoints' user IDs, or their original
                                IDs where the end type has none (:mod:`~dgl_chunked.remap.endpoints`)
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy.typing as npt
import pyarrow as pa

from dgl_chunked._typing import StorageOptions
from dgl_chunked.errors import OptionError
from dgl_chunked.io.formats import get_format

__all__ = [
    "DST_NID_COLUMN",
    "NID_COLUMN",
    "SRC_NID_COLUMN",
    "TABLE_FORMATS",
    "check_renames",
    "table_columns",
    "write_table",
]

NID_COLUMN = "nid"
"""The user-ID column: GraphStorm's ``GS_REMAP_NID_COL``."""
SRC_NID_COLUMN = "src_nid"
"""An edge's source, by its user ID: GraphStorm's ``GS_REMAP_SRC_NID_COL``."""
DST_NID_COLUMN = "dst_nid"
"""An edge's destination, by its user ID: GraphStorm's ``GS_REMAP_DST_NID_COL``."""
TABLE_FORMATS = ("parquet", "csv")


def table_columns(
    value: str, id_column: str, with_keys: bool, renames: Mapping[str, str], *, with_ends: bool = False
) -> list[str]:
    """The column names of one type's table, renamed (``with_ends``: an edge type's endpoints)."""
    ends = [SRC_NID_COLUMN, DST_NID_COLUMN] if with_ends else []
    names = [value, *([NID_COLUMN] if with_keys else []), *ends, id_column]
    return [renames.get(n, n) for n in names]


def check_renames(renames: Mapping[str, str], columns: Mapping[str, list[str]]) -> None:
    """Every renamed column exists in some type's table; no table ends up with a name twice.

    ``columns`` maps a type to its columns before renaming.

    Raises
    ------
    OptionError
        An unknown column, or two columns of one type with the same name.
    """
    known = sorted({c for cols in columns.values() for c in cols})
    for old in renames:
        if old not in known:
            raise OptionError(f"--column-names: the output has no column {old!r}; its columns are {known}")
    for name, cols in columns.items():
        renamed = [renames.get(c, c) for c in cols]
        twice = sorted({c for c in renamed if renamed.count(c) > 1})
        if twice:
            raise OptionError(f"--column-names: {name} would have two columns named {twice[0]!r}; pick another name")


def write_table(
    path: str,
    fmt: str,
    names: list[str],
    arrays: list[npt.NDArray[Any] | pa.Array],
    delimiter: str,
    so: StorageOptions,
) -> None:
    """Write one block's table (columns ``names``, data ``arrays``) as Parquet or CSV at ``path``
    (the format's own writer, :mod:`dgl_chunked.io.formats`)."""
    get_format(fmt).write_result_table(path, names, arrays, delimiter, so)
