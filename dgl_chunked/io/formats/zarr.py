"""Zarr arrays (format ``zarr``): ``remap``'s result files, read by row ranges, and its
Zarr outputs, written block by block.

A result file ``x.zarr`` is a Zarr array, or a Zarr group whose entry is named by the
result's key; only its metadata is read to learn rows, dtype and row shape, and a row
range reads the chunks that overlap it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, cast

import numpy as np
import numpy.typing as npt

from dgl_chunked._typing import StorageOptions
from dgl_chunked.errors import ChunkMismatchError
from dgl_chunked.io.formats.registry import FileFormat, register_format
from dgl_chunked.io.formats.rows import RowFile
from dgl_chunked.storage.arrays import zarr_store

__all__ = ["ZarrFormat", "create_zarr_group", "write_zarr_rows", "zarr_array"]


@register_format
class ZarrFormat(FileFormat):
    """Zarr arrays and groups: ``remap``'s results."""

    name = "zarr"
    title = "Zarr"
    extensions = (".zarr",)
    roles = frozenset({"results"})
    kind = "array"

    def open_result(self, path: str, key: str | None, storage_options: StorageOptions) -> RowFile:
        arr = zarr_array(path, key, storage_options)
        if not arr.shape:
            raise ChunkMismatchError(f"{path}: is a 0-d array; expected one row per ID")
        return RowFile(
            path,
            self.name,
            key,
            int(arr.shape[0]),
            np.dtype(arr.dtype),
            tuple(arr.shape[1:]),
            reader=self,
            storage_options=storage_options,
        )

    def read_result_rows(self, file: RowFile, lo: int, hi: int) -> npt.NDArray[Any]:
        return np.asarray(zarr_array(file.path, file.key, file.storage_options)[lo:hi])


def zarr_array(path: str, key: str | None, storage_options: StorageOptions) -> Any:
    """The Zarr array at ``path`` (or its entry ``key``), opened read-only."""
    import zarr

    return zarr.open_array(zarr_store(path, storage_options, read_only=True), path=key or "", mode="r")


def create_zarr_group(
    path: str, arrays: Mapping[str, tuple[np.dtype[Any], tuple[int, ...], Any]], chunk_rows: int, so: StorageOptions
) -> None:
    """Create the Zarr group ``path`` holding ``arrays`` (name -> dtype, shape, fill value),
    chunked by ``chunk_rows`` rows, which blocks then fill with :func:`write_zarr_rows`."""
    import zarr

    group = zarr.open_group(zarr_store(path, so, read_only=False), mode="w")
    for name, (dtype, shape, fill) in arrays.items():
        group.create_array(name, shape=shape, chunks=(chunk_rows, *shape[1:]), dtype=dtype, fill_value=fill)


def write_zarr_rows(path: str, lo: int, rows: Mapping[str, npt.NDArray[Any]], so: StorageOptions) -> None:
    """Write each array of ``rows`` at rows ``[lo, lo + len)`` of the same-named array of group ``path``."""
    import zarr

    group = zarr.open_group(zarr_store(path, so, read_only=False), mode="r+")
    for name, values in rows.items():
        cast(Any, group[name])[lo : lo + values.shape[0]] = values
