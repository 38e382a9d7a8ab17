"""What ``remap`` writes for one type: rows in original-ID order, block by block, under temporary names.

Layout of a remap output directory (``.dglc-owned.json`` marks it as ours)::

    OUT/
      remap.json                         written last: what every file holds
      nodes/<ntype>.npy                  format npy: row i = original (type-wise) ID i
      nodes/<ntype>.present.npy          pairs covering some IDs only: bool, which rows hold a result
      nodes/<ntype>.zarr/<value>         format zarr: the same as a Zarr group (and its "present" array)
      nodes/<ntype>/part-<k>.parquet     format parquet: <value>, [nid,] type_nid; only rows with a result
      nodes/<ntype>/part-<k>.csv         format csv: the same columns (:mod:`~dgl_chunked.remap.tables`)
      edges/<src:rel:dst>...             the same per edge type (columns src_nid, dst_nid, type_eid)

Everything is first written under ``OUT/_tmp/`` (a local ``.npy`` is preallocated
and each block task writes its rows at their offset; elsewhere each block writes a
piece and one task concatenates them), moved to its final name once every block
is done, and ``remap.json`` comes last: an interrupted run never looks finished.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

import numpy as np
import numpy.typing as npt
import pyarrow as pa
from fsspec.implementations.local import LocalFileSystem

from dgl_chunked._typing import StorageOptions
from dgl_chunked.io.formats.files import makedirs_for
from dgl_chunked.io.formats.npy import npy_header_bytes, raw_bytes
from dgl_chunked.io.formats.zarr import create_zarr_group, write_zarr_rows
from dgl_chunked.remap.tables import table_columns, write_table
from dgl_chunked.storage import fs

__all__ = ["FORMATS", "MANIFEST", "TMP_DIR", "OutputFormat", "TypeOutput"]

OutputFormat = Literal["npy", "zarr", "parquet", "csv"]
FORMATS: tuple[OutputFormat, ...] = ("npy", "zarr", "parquet", "csv")
MANIFEST = "remap.json"
TMP_DIR = "_tmp"


def _pwrite_all(fd: int, data: memoryview, offset: int) -> None:
    while data.nbytes:
        n = os.pwrite(fd, data, offset)
        data, offset = data[n:], offset + n


class KeyReader(Protocol):
    """The user IDs of a type, one block of original IDs at a time (``node_keys`` or staged raw_id_mappings)."""

    def read(self, lo: int, hi: int) -> pa.Array: ...


class EndpointReader(Protocol):
    """An edge type's ``src_nid`` and ``dst_nid``, one block of original edge IDs at a time
    (:class:`~dgl_chunked.remap.endpoints.Endpoints`)."""

    @property
    def label(self) -> str: ...

    def read(self, lo: int, hi: int) -> tuple[pa.Array, pa.Array]: ...


@dataclass(frozen=True)
class TypeOutput:
    """One type's output files and how a block task writes into them.

    Attributes
    ----------
    out_dir
        The remap output directory.
    stem
        ``nodes/<ntype>`` or ``edges/<src:rel:dst>``.
    id_column
        ``type_nid`` or ``type_eid``: the original-ID column of Parquet output.
    value
        Name of the value array / column.
    subset
        Results cover only some IDs (pairs): npy/zarr outputs get a ``present`` mask.
    keys
        The user IDs (parquet/csv: the ``nid`` column), or None.
    endpoints
        An edge type's endpoints (parquet/csv: the ``src_nid`` and ``dst_nid`` columns), or None.
    renames
        ``--column-names``: built-in column name -> the user's (parquet/csv).
    delimiter
        The CSV delimiter.
    """

    out_dir: str
    stem: str
    format: OutputFormat
    id_column: str
    value: str
    dtype: np.dtype[Any]
    row_shape: tuple[int, ...]
    total: int
    block_rows: int
    subset: bool
    keys: KeyReader | None = None
    endpoints: EndpointReader | None = None
    renames: Mapping[str, str] = field(default_factory=dict)
    delimiter: str = ","
    storage_options: dict[str, Any] | None = field(default=None, compare=False)

    # --- names -----------------------------------------------------------------------

    @property
    def local(self) -> bool:
        return isinstance(fs.filesystem(self.out_dir, self.storage_options)[0], LocalFileSystem)

    def names(self) -> dict[str, str]:
        """Role -> path relative to the output directory (``values``, ``present``, ``dataset``)."""
        if self.format == "npy":
            out = {"values": f"{self.stem}.npy"}
            if self.subset:
                out["present"] = f"{self.stem}.present.npy"
            return out
        if self.format == "zarr":
            return {"group": f"{self.stem}.zarr"}
        return {"dataset": self.stem}

    def tmp(self, rel: str) -> str:
        return fs.join(self.out_dir, f"{TMP_DIR}/{rel}")

    def pieces(self, rel: str) -> str:
        return self.tmp(f"{rel}.pieces")

    # --- client side -----------------------------------------------------------------

    def prepare(self) -> None:
        """Create the temporary files every block writes into (called once, before the blocks)."""
        so = self.storage_options
        if self.format == "npy":
            for role, rel in self.names().items():
                dtype, shape = self._array(role)
                header = npy_header_bytes(dtype, shape)
                if self.local:
                    path = fs.filesystem(self.tmp(rel), so)[1]
                    makedirs_for(path, None)
                    with open(path, "wb") as f:
                        f.write(header)
                        f.truncate(len(header) + int(np.prod(shape, dtype=np.int64)) * dtype.itemsize)
                else:
                    target = fs.join(self.pieces(rel), "header")
                    makedirs_for(target, so)
                    fs.atomic_write_bytes(target, header, so)
        elif self.format == "zarr":
            arrays = {}
            for role in ("values", "present") if self.subset else ("values",):
                dtype, shape = self._array(role)
                fill = np.zeros((), dtype).item() if role == "present" or dtype.kind != "f" else float("nan")
                arrays[self.value if role == "values" else "present"] = (dtype, shape, fill)
            create_zarr_group(self.tmp(f"{self.stem}.zarr"), arrays, max(1, self.block_rows), so)
        else:  # parquet, csv: a directory of one file per block
            fs.filesystem(self.tmp(self.stem), so)[0].makedirs(fs.filesystem(self.tmp(self.stem), so)[1], exist_ok=True)

    def _array(self, role: str) -> tuple[np.dtype[Any], tuple[int, ...]]:
        if role == "present":
            return np.dtype(np.bool_), (self.total,)
        return self.dtype, (self.total, *self.row_shape)

    def concat_jobs(self) -> list[tuple[str, list[str]]]:
        """For non-local npy: ``(target, pieces)`` to concatenate, header first."""
        if self.format != "npy" or self.local:
            return []
        nblocks = -(-self.total // max(1, self.block_rows)) if self.total else 0
        out = []
        for rel in self.names().values():
            base = self.pieces(rel)
            out.append((self.tmp(rel), [fs.join(base, "header")] + [fs.join(base, f"{k:06d}") for k in range(nblocks)]))
        return out

    # --- block task ------------------------------------------------------------------

    def write_block(self, k: int, lo: int, values: npt.NDArray[Any], present: npt.NDArray[np.bool_] | None) -> None:
        """Write block ``k`` (original IDs ``[lo, lo + len(values))``)."""
        so = self.storage_options
        if self.format == "npy":
            arrays = {"values": values, "present": present}
            for role, rel in self.names().items():
                data = np.ascontiguousarray(arrays[role])
                if self.local:
                    dtype, shape = self._array(role)
                    path = fs.filesystem(self.tmp(rel), so)[1]
                    start = len(npy_header_bytes(dtype, shape)) + lo * (data.nbytes // max(1, data.shape[0]))
                    fd = os.open(path, os.O_WRONLY)
                    try:
                        _pwrite_all(fd, raw_bytes(data), start)
                    finally:
                        os.close(fd)
                else:
                    with fs.open_file(fs.join(self.pieces(rel), f"{k:06d}"), "wb", so) as f:
                        f.write(raw_bytes(data))
        elif self.format == "zarr":
            rows = {self.value: values} if present is None else {self.value: values, "present": present}
            write_zarr_rows(self.tmp(f"{self.stem}.zarr"), lo, rows, so)
        else:
            self._write_table(k, lo, values, present)

    def _write_table(self, k: int, lo: int, values: npt.NDArray[Any], present: npt.NDArray[np.bool_] | None) -> None:
        ids = np.arange(lo, lo + values.shape[0], dtype=np.int64)
        keep = None if present is None else np.flatnonzero(present)
        arrays: list[Any] = [values if keep is None else values[keep]]
        if self.keys is not None:
            keys = self.keys.read(lo, lo + values.shape[0])
            arrays.append(keys if keep is None else keys.take(pa.array(keep)))
        if self.endpoints is not None:
            ends = self.endpoints.read(lo, lo + values.shape[0])
            arrays += [e if keep is None else e.take(pa.array(keep)) for e in ends]
        arrays.append(ids if keep is None else ids[keep])
        path = fs.join(self.tmp(self.stem), f"part-{k:05d}.{self.format}")
        write_table(path, self.format, self.columns(), arrays, self.delimiter, self.storage_options)

    def fill_value(self) -> Any:
        """What a row without a result holds in npy/zarr output (NaN for floats, else 0)."""
        return np.nan if self.dtype.kind == "f" else 0

    def columns(self) -> list[str]:
        """Parquet / CSV columns, in order, renamed."""
        return table_columns(
            self.value, self.id_column, self.keys is not None, self.renames, with_ends=self.endpoints is not None
        )


def publish(output: TypeOutput, so: StorageOptions) -> dict[str, str]:
    """Move the temporary files to their final names; return role -> relative path."""
    names = output.names()
    for rel in names.values():
        filesystem, src = fs.filesystem(output.tmp(rel), so)
        _, dst = fs.filesystem(fs.join(output.out_dir, rel), so)
        filesystem.makedirs(fs.parent(dst) if not fs.is_url(dst) else dst.rsplit("/", 1)[0], exist_ok=True)
        if filesystem.exists(dst):
            filesystem.rm(dst, recursive=True)
        filesystem.mv(src, dst, recursive=True)
    return names
