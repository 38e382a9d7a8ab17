"""Inspection of raw sources for ``dgl-chunked chunk`` (headers and footers only).

Each ``inspect_*`` function opens every file of one source's header, footer or
first line, resolves its columns, layout and dtypes, and returns a
:class:`SourcePlan`; a problem raises a :class:`~dgl_chunked.errors.DglChunkedError`
naming the spec key and the file. No data rows are read (except the first row of
a Parquet list column of variable length, to learn the vector size).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import pyarrow as pa

from dgl_chunked._typing import StorageOptions
from dgl_chunked.chunk.spec import SourceSpec
from dgl_chunked.errors import ChunkMismatchError
from dgl_chunked.io.chunked import formats as _formats
from dgl_chunked.io.formats import FileInfo, Piece, get_format, inspect_file, split_pieces

__all__ = ["INT64", "STRING", "SourcePlan", "inspect_edges", "inspect_feature", "inspect_key", "kind"]

INT64 = pa.int64()
STRING = pa.string()


@dataclass(frozen=True, kw_only=True)
class SourcePlan:
    """An inspected source.

    ``columns[i]`` are file ``i``'s selected columns (a table's names, CSV 0-based
    indices); ``rows`` is the total (None for CSV until read); ``row_shape``,
    ``dtype`` (source) and ``out_dtype`` describe features; ``layout`` is the
    storage order of ``.npy`` edges; ``key_type`` is the Arrow type of keys.
    """

    spec: SourceSpec
    files: tuple[FileInfo, ...]
    columns: tuple[tuple[Any, ...], ...] = ()
    rows: int | None = None
    row_shape: tuple[int, ...] = ()
    dtype: np.dtype[Any] | None = None
    out_dtype: np.dtype[Any] | None = None
    layout: str | None = None
    key_type: pa.DataType | None = None

    @property
    def where(self) -> str:
        """The spec key, for messages."""
        return self.spec.where

    def read_tasks(self, num_tasks: int) -> list[tuple[Piece, ...]]:
        """The pieces of each read task: split by rows for arrays and tables, by bytes for text."""
        return split_pieces(self.files, num_tasks, by_bytes=kind(self.spec) == "text")


# --- sources ----------------------------------------------------------------------------


def kind(spec: SourceSpec) -> str:
    """The kind of the source's format (``array``, ``table`` or ``text``; see
    :mod:`dgl_chunked.io.formats.registry`)."""
    return get_format(spec.format).kind


def _is_text(dtype: pa.DataType) -> bool:
    return bool(pa.types.is_string(dtype) or pa.types.is_large_string(dtype) or pa.types.is_string_view(dtype))


def _infos(spec: SourceSpec, so: StorageOptions) -> list[FileInfo]:
    return [
        inspect_file(p, spec.format, spec.where, delimiter=spec.delimiter, header=spec.header, storage_options=so)
        for p in spec.paths
    ]


def _select(spec: SourceSpec, info: FileInfo, default: Sequence[Any]) -> tuple[Any, ...]:
    """Selected columns of one file: a table's names or CSV indices; checks they exist."""
    wanted = list(spec.columns) if spec.columns is not None else list(default)
    names = list(info.names)
    out = []
    for col in wanted:
        if isinstance(col, int) and kind(spec) == "text" and spec.header:
            raise ChunkMismatchError(
                f"{spec.where}.columns: {info.path!r} has a header; "
                f"name columns by header names {names}, found index {col}"
            )
        if isinstance(col, str) and kind(spec) == "text" and not spec.header:
            raise ChunkMismatchError(
                f"{spec.where}.columns: expected 0-based indices (the file "
                f"has no header), found {col!r}; or set header: true"
            )
        known = col in names if isinstance(col, str) else (col < len(names) or not names)
        if not known:
            found = names if isinstance(col, str) else f"{len(names)} fields on the first line"
            raise ChunkMismatchError(f"{spec.where}.columns: unknown column {col!r} in {info.path!r}; found {found}")
        out.append(names.index(col) if isinstance(col, str) and kind(spec) == "text" else col)
    return tuple(out)


def _default_columns(spec: SourceSpec, info: FileInfo, count: int | None) -> list[Any]:
    if kind(spec) == "text":
        return list(range(count or 0)) if count else []
    return list(info.names[:count] if count else info.names)


def inspect_edges(spec: SourceSpec, end_types: tuple[pa.DataType, pa.DataType], so: StorageOptions) -> SourcePlan:
    """Inspect an edge source: ``.npy`` shape/layout and dtype, or the two columns."""
    infos = _infos(spec, so)
    if kind(spec) == "array":
        return _inspect_npy_edges(spec, infos, end_types)
    columns = tuple(_select(spec, i, _default_columns(spec, i, 2)) for i in infos)
    for info, cols in zip(infos, columns, strict=True):
        if len(cols) != 2:
            raise ChunkMismatchError(
                f"{spec.where}: {info.path!r}: expected 2 columns (source, destination), found {list(info.names)}"
            )
        if kind(spec) == "table":
            for col, want in zip(cols, end_types, strict=True):
                have = info.types[info.names.index(col)]
                if not pa.types.is_integer(have) and not (want == STRING and _is_text(have)):
                    raise ChunkMismatchError(
                        f"{spec.where}.columns: {info.path!r} column {col!r}: expected "
                        f"{'integer node IDs' if want == INT64 else 'keys'}, found type {have}"
                    )
    rows = None if kind(spec) == "text" else sum(int(i.rows or 0) for i in infos)
    return SourcePlan(spec=spec, files=tuple(infos), columns=columns, rows=rows)


def _inspect_npy_edges(
    spec: SourceSpec, infos: list[FileInfo], end_types: tuple[pa.DataType, pa.DataType]
) -> SourcePlan:
    out, layouts = [], set()
    for info in infos:
        shape = info.shape
        if len(shape) != 2 or 2 not in shape:
            raise ChunkMismatchError(f"{spec.where}: {info.path!r}: expected shape (2, E) or (E, 2), found {shape}")
        layout = spec.layout or ("2xE" if shape[0] == 2 and shape[1] != 2 else "Ex2")
        if spec.layout is None and shape == (2, 2):
            raise ChunkMismatchError(
                f"{spec.where}.layout: {info.path!r} has shape (2, 2); say 'layout: 2xE' or 'layout: Ex2'"
            )
        if (layout == "2xE" and shape[0] != 2) or (layout == "Ex2" and shape[1] != 2):
            raise ChunkMismatchError(
                f"{spec.where}.layout: {info.path!r}: layout {layout!r} does not fit shape {shape}"
            )
        kind = info.dtype.kind if info.dtype is not None else "?"
        if kind not in "iu" and not (kind == "U" and STRING in end_types):
            raise ChunkMismatchError(
                f"{spec.where}: {info.path!r}: expected integer node IDs, found dtype {info.dtype}"
            )
        storage = {"2xE": "Ex2", "Ex2": "2xE"}[layout] if info.fortran else layout
        layouts.add(storage)
        rows = shape[1] if layout == "2xE" else shape[0]
        out.append(replace(info, rows=int(rows)))
    if len(layouts) > 1:
        raise ChunkMismatchError(f"{spec.where}: files mix the (2, E) and (E, 2) layouts")
    return SourcePlan(
        spec=spec, files=tuple(out), rows=sum(int(i.rows or 0) for i in out), layout=layouts.pop() if layouts else "Ex2"
    )


def _feature_dtype(
    spec: SourceSpec, dtypes: set[np.dtype[Any]], where_file: str
) -> tuple[np.dtype[Any], np.dtype[Any]]:
    if len(dtypes) != 1:
        raise ChunkMismatchError(f"{spec.where}: files have different dtypes {sorted(map(str, dtypes))}")
    dtype = dtypes.pop()
    if dtype.kind not in "biuf":
        raise ChunkMismatchError(f"{spec.where}: {where_file}: expected a numeric or bool feature, found dtype {dtype}")
    out = spec.dtype or dtype
    if out not in _formats.FEATURE_DTYPES:
        raise ChunkMismatchError(
            f"{spec.where}: {where_file}: dtype {dtype} cannot be loaded by DGL; add "
            f"'dtype:' with one of {sorted(str(d) for d in _formats.FEATURE_DTYPES)}"
        )
    return dtype, out


def inspect_feature(spec: SourceSpec, so: StorageOptions) -> SourcePlan:
    """Inspect a feature source: rows, row shape, dtype and output dtype."""
    infos = _infos(spec, so)
    first = infos[0].path
    if kind(spec) == "array":
        shapes = {i.shape[1:] for i in infos}
        for info in infos:
            if len(info.shape) not in (1, 2):
                raise ChunkMismatchError(
                    f"{spec.where}: {info.path!r}: expected a 1-D or 2-D array, found shape {info.shape}"
                )
            if info.fortran and len(info.shape) == 2 and info.shape[1] > 1:
                raise ChunkMismatchError(
                    f"{spec.where}: {info.path!r} is Fortran-ordered; rewrite it with numpy.ascontiguousarray"
                )
        if len(shapes) != 1:
            raise ChunkMismatchError(f"{spec.where}: files have different row shapes {sorted(shapes)}")
        dtype, out = _feature_dtype(spec, {i.dtype for i in infos if i.dtype is not None}, first)
        return SourcePlan(
            spec=spec,
            files=tuple(infos),
            rows=sum(int(i.rows or 0) for i in infos),
            row_shape=shapes.pop(),
            dtype=dtype,
            out_dtype=out,
        )
    columns = tuple(_select(spec, i, _default_columns(spec, i, None)) for i in infos)
    row_shape, dtypes = _table_feature_shape(spec, infos, columns, so)
    dtype, out = _feature_dtype(spec, dtypes, first)
    return SourcePlan(
        spec=spec,
        files=tuple(infos),
        columns=columns,
        row_shape=row_shape,
        rows=sum(int(i.rows or 0) for i in infos),
        dtype=dtype,
        out_dtype=out,
    )


def _table_feature_shape(
    spec: SourceSpec, infos: list[FileInfo], columns: tuple[Any, ...], so: StorageOptions
) -> tuple[tuple[int, ...], set[np.dtype[Any]]]:
    shapes: set[tuple[int, ...]] = set()
    dtypes: set[np.dtype[Any]] = set()
    for info, cols in zip(infos, columns, strict=True):
        types = [info.types[info.names.index(c)] for c in cols]
        if len(types) == 1 and (
            pa.types.is_list(types[0]) or pa.types.is_large_list(types[0]) or pa.types.is_fixed_size_list(types[0])
        ):
            value = types[0].value_type
            if pa.types.is_fixed_size_list(types[0]):
                shapes.add((types[0].list_size,))
            elif info.rows:
                row = get_format(spec.format).read_piece(Piece(path=info.path, start=0, stop=1), info, cols, so)
                shapes.add((len(row.column(0)[0]),))
            types = [value]
        else:
            shapes.add(() if len(types) == 1 else (len(types),))
        for t in types:
            if not (pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_boolean(t)):
                raise ChunkMismatchError(
                    f"{spec.where}: {info.path!r}: expected numeric or bool columns, found type {t}"
                )
            dtypes.add(np.dtype(t.to_pandas_dtype()))
    if len(shapes) > 1:
        raise ChunkMismatchError(f"{spec.where}: files have different row shapes {sorted(shapes)}")
    dtype = {np.result_type(*dtypes)} if dtypes else {np.dtype("float32")}
    return (shapes.pop() if shapes else ()), dtype


def inspect_key(spec: SourceSpec, so: StorageOptions) -> SourcePlan:
    """Inspect a key source: its column and whether keys are integers or strings."""
    infos = _infos(spec, so)
    if kind(spec) == "array":
        kinds = {i.dtype.kind for i in infos if i.dtype is not None}
        if any(len(i.shape) != 1 for i in infos) or not kinds <= set("iuUS") or len(kinds) > 1:
            raise ChunkMismatchError(
                f"{spec.where}: expected 1-D integer or string arrays, found {[(i.shape, str(i.dtype)) for i in infos]}"
            )
        key_type = INT64 if kinds <= set("iu") else STRING
        return SourcePlan(spec=spec, files=tuple(infos), key_type=key_type, rows=sum(int(i.rows or 0) for i in infos))
    columns = tuple(_select(spec, i, _default_columns(spec, i, 1)) for i in infos)
    key_type = STRING
    if kind(spec) == "table":
        types = {i.types[i.names.index(c[0])] for i, c in zip(infos, columns, strict=True)}
        if all(pa.types.is_integer(t) for t in types):
            key_type = INT64
        elif not all(_is_text(t) for t in types):
            raise ChunkMismatchError(
                f"{spec.where}.column: expected integer or string keys, found types {sorted(map(str, types))}"
            )
    rows = None if kind(spec) == "text" else sum(int(i.rows or 0) for i in infos)
    return SourcePlan(spec=spec, files=tuple(infos), columns=columns, rows=rows, key_type=key_type)
