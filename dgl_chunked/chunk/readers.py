"""Read-task readers of ``dgl-chunked chunk``: raw edges, keys and feature rows.

Each function reads one read task's pieces (a tuple, see
:mod:`dgl_chunked.io.formats.pieces`) of an inspected source, through its format's
readers (:mod:`dgl_chunked.io.formats`), and returns numpy
arrays, checking values on the way (node IDs in range, no nulls, keys of the
right type); errors name the spec key, the file and the row.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc

from dgl_chunked._typing import IdArray, StorageOptions
from dgl_chunked.chunk.kernels import keys_to_numpy
from dgl_chunked.chunk.probe import INT64, SourcePlan, kind
from dgl_chunked.errors import ChunkMismatchError
from dgl_chunked.io.formats import FileInfo, Piece, get_format

__all__ = ["EdgeEnds", "RowLocator", "read_edge_pieces", "read_feature_rows", "read_key_pieces"]


@dataclass(frozen=True, kw_only=True)
class EdgeEnds:
    """How to read the two endpoint columns: Arrow type, keyed or not, node count."""

    types: tuple[pa.DataType, pa.DataType]
    keyed: tuple[bool, bool]
    counts: tuple[int | None, int | None]
    names: tuple[str, str]


@dataclass(frozen=True, kw_only=True)
class RowLocator:
    """Maps a global row of a source to ``(file, 1-based row in file)`` for messages.

    ``entries`` are ``(path, global_start, rows, first_row_in_file)`` per piece.
    """

    entries: tuple[tuple[str, int, int, int], ...]
    header: bool = False

    @classmethod
    def build(
        cls, read_tasks: Sequence[tuple[Piece, ...]], piece_rows: Sequence[Sequence[int]], *, header: bool = False
    ) -> RowLocator:
        """From the read tasks' pieces and the rows each piece held (``header``: CSV with header)."""
        entries, start, per_file = [], 0, dict[str, int]()
        for pieces, rows in zip(read_tasks, piece_rows, strict=True):
            for piece, n in zip(pieces, rows, strict=True):
                first = per_file.get(piece.path, 0)
                entries.append((piece.path, start, int(n), first))
                per_file[piece.path] = first + int(n)
                start += int(n)
        return cls(entries=tuple(entries), header=header)

    def describe(self, row: int) -> str:
        """``"row R of 'file'"`` for a global 0-based row."""
        for path, start, n, first in self.entries:
            if start <= row < start + n:
                kind = "data row" if self.header else "row"
                tail = " (header excluded)" if self.header else ""
                return f"{kind} {row - start + first + 1}{tail} of {path!r}"
        return f"row {row + 1}"


def _info(plan: SourcePlan, path: str) -> tuple[int, FileInfo]:
    for i, info in enumerate(plan.files):
        if info.path == path:
            return i, info
    raise KeyError(path)


def _column(column: pa.ChunkedArray | pa.Array, want: pa.DataType, where: str, locate: Any) -> npt.NDArray[Any]:
    if column.null_count:
        row = pc.index(pc.is_null(column), True).as_py()
        raise ChunkMismatchError(f"{where}: {locate(row)}: expected a value, found null")
    if column.type != want:
        try:
            column = column.cast(want)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as err:
            raise ChunkMismatchError(f"{where}: {locate(0)}..: expected {want} values ({err})") from err
    return keys_to_numpy(column) if want != INT64 else np.asarray(column.to_numpy(), np.int64)


def _piece_columns(
    plan: SourcePlan, piece: Piece, types: Sequence[pa.DataType], so: StorageOptions
) -> tuple[list[npt.NDArray[Any]], Any]:
    """The selected columns of one piece, and a ``locate(row) -> str`` for messages."""
    spec = plan.spec
    fmt = get_format(spec.format)
    i, info = _info(plan, piece.path)
    if fmt.kind == "text":
        offset, table = fmt.read_text_piece(
            piece,
            where=spec.where,
            delimiter=spec.delimiter,
            header=spec.header,
            columns=plan.columns[i],
            types=types,
            storage_options=so,
        )

        def locate(row: int) -> str:
            return f"{piece.path!r} line {fmt.line_number(piece.path, offset, row, so)}"
    else:
        table = fmt.read_piece(piece, info, plan.columns[i], so)

        def locate(row: int) -> str:
            return f"row {piece.start + row + 1} of {piece.path!r}"

    cols = [_column(table.column(j), t, spec.where, locate) for j, t in enumerate(types)]
    return cols, locate


def _npy_edges(plan: SourcePlan, piece: Piece) -> npt.NDArray[Any]:
    _, info = _info(plan, piece.path)
    fmt = get_format(plan.spec.format)
    n, total = piece.stop - piece.start, int(info.rows or 0)
    if plan.layout == "Ex2":
        return fmt.read_flat(piece.path, info, 2 * piece.start, 2 * n, None).reshape(n, 2)
    out = np.empty((n, 2), info.dtype)
    out[:, 0] = fmt.read_flat(piece.path, info, piece.start, n, None)
    out[:, 1] = fmt.read_flat(piece.path, info, total + piece.start, n, None)
    return out


def _npy_column(values: npt.NDArray[Any], want: pa.DataType) -> npt.NDArray[Any]:
    if want == INT64:
        return values.astype(np.int64)
    return keys_to_numpy(values.astype(str) if values.dtype.kind in "iu" else values)


def _check_range(ids: IdArray, count: int | None, name: str, where: str, locate: Any) -> None:
    if count is None:
        return
    bad = (ids < 0) | (ids >= count)
    if bad.any():
        row = int(np.argmax(bad))
        raise ChunkMismatchError(
            f"{where}: {locate(row)}: {name} node ID {int(ids[row])} is out of range [0, {count}) "
            f"({int(bad.sum())} such rows); IDs are per node type, or give the type a key"
        )


def read_edge_pieces(
    plan: SourcePlan, pieces: tuple[Piece, ...], ends: EdgeEnds, so: StorageOptions = None
) -> tuple[list[npt.NDArray[Any]], list[int]]:
    """``([src, dst], rows per piece)`` of one read task.

    Non-keyed ends are int64 IDs checked against the node count; keyed ends are
    keys (int64 or object arrays of str).
    """
    parts: list[list[npt.NDArray[Any]]] = [[], []]
    rows = []
    for piece in pieces:
        if kind(plan.spec) == "array":
            pair = _npy_edges(plan, piece)
            cols = [_npy_column(pair[:, j], t) for j, t in enumerate(ends.types)]

            def locate(row: int, piece: Piece = piece) -> str:
                return f"row {piece.start + row + 1} of {piece.path!r}"
        else:
            cols, locate = _piece_columns(plan, piece, ends.types, so)
        for j in range(2):
            if not ends.keyed[j]:
                _check_range(cols[j], ends.counts[j], ends.names[j], plan.where, locate)
            parts[j].append(cols[j])
        rows.append(len(cols[0]))
    out = [
        np.concatenate(p) if p else np.empty(0, np.int64 if t == INT64 else object)
        for p, t in zip(parts, ends.types, strict=True)
    ]
    return out, rows


def read_key_pieces(
    plan: SourcePlan, pieces: tuple[Piece, ...], so: StorageOptions = None
) -> tuple[npt.NDArray[Any], list[int]]:
    """``(keys, rows per piece)`` of one read task; keys are int64 or an object array of str."""
    parts = []
    for piece in pieces:
        if kind(plan.spec) == "array":
            _, info = _info(plan, piece.path)
            keys = get_format(plan.spec.format).read_rows(piece.path, info, piece.start, piece.stop, so)
            parts.append(keys_to_numpy(keys))
        else:
            cols, _ = _piece_columns(plan, piece, [plan.key_type or INT64], so)
            parts.append(cols[0])
    rows = [len(p) for p in parts]
    if not parts:
        return np.empty(0, np.int64 if plan.key_type == INT64 else object), rows
    return np.concatenate(parts), rows


def _table_to_array(table: pa.Table, where: str, path: str) -> npt.NDArray[Any]:
    arrays = []
    for j, name in enumerate(table.column_names):
        column = table.column(j).combine_chunks()
        if column.null_count:
            row = pc.index(pc.is_null(column), True).as_py()
            raise ChunkMismatchError(f"{where}: {path!r} column {name!r}: found null in a row near {row + 1}")
        if isinstance(column, pa.ListArray | pa.LargeListArray | pa.FixedSizeListArray):
            lengths = pc.list_value_length(column).to_numpy(zero_copy_only=False)
            if lengths.size and lengths.min() != lengths.max():
                raise ChunkMismatchError(
                    f"{where}: {path!r} column {name!r}: expected vectors "
                    f"of one length, found {lengths.min()}..{lengths.max()}"
                )
            width = int(lengths[0]) if lengths.size else 0
            return np.asarray(column.flatten().to_numpy(zero_copy_only=False)).reshape(-1, width)
        arrays.append(np.asarray(column.to_numpy(zero_copy_only=False)))
    return arrays[0] if len(arrays) == 1 else np.column_stack(arrays)


def read_feature_rows(plan: SourcePlan, start: int, stop: int, so: StorageOptions = None) -> npt.NDArray[Any]:
    """Rows ``[start, stop)`` of a feature source (over its files), in the source dtype."""
    out = np.empty((stop - start, *plan.row_shape), plan.dtype)
    fmt = get_format(plan.spec.format)
    first = 0
    for i, info in enumerate(plan.files):
        n = int(info.rows or 0)
        a, b = max(start, first), min(stop, first + n)
        if a < b:
            piece = Piece(path=info.path, start=a - first, stop=b - first)
            if fmt.kind == "array":
                rows = fmt.read_rows(info.path, info, piece.start, piece.stop, so)
            else:
                table = fmt.read_piece(piece, info, plan.columns[i], so)
                rows = _table_to_array(table, plan.where, info.path)
            out[a - start : b - start] = rows.reshape((b - a, *plan.row_shape))
        first += n
    return out
