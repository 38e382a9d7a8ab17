"""File formats, one module per format, each registered in :mod:`.registry`.

========  ==============  ==========================================================
name      module          roles
========  ==============  ==========================================================
csv       :mod:`.csv`     edges; chunk's raw edges and keys; queries; outputs
tsv       :mod:`.csv`     chunk's raw edges and keys; queries (CSV with a tab)
parquet   :mod:`.parquet` edges, features; chunk's raw input; results; queries; outputs
numpy     :mod:`.npy`     features; chunk's raw input; results; queries
orc       :mod:`.orc`     edges, features; chunk's raw input; results; queries
zarr      :mod:`.zarr`    results
torch     :mod:`.torch`   results (``torch.save`` files of tensors: ``.pt``, ``.pth``)
dgl       :mod:`.dgl`     results (DGL tensor dicts: ``.dgl``)
========  ==============  ==========================================================

Every reader and writer of a format lives in its module; the rest of the package
asks the registry (:func:`get_format`, :func:`formats_with`, :func:`format_of_path`,
:func:`open_result`).
Shared pieces: :mod:`.files` (sources, sizes, read errors), :mod:`.pieces` (what
inspection learns of a file, and how a source is cut), :mod:`.arrow_tables` (Arrow
tables as edge and feature arrays, for every table format), :mod:`.csv_rows` (the
forgiving CSV parse that names a bad row), :mod:`.rows` (a result file read by row
ranges: ``RowFile``), :mod:`.tensor_rows` (tensors stored as one run of bytes, read by
row ranges, for the tensor-file formats), and the byte-level codecs of those:
:mod:`.dgl_records` (DGL's binary records and the bounds-checked ``Cursor``),
:mod:`.torch_zip` (torch's zip container) and :mod:`.torch_pickle` (its pickle), on
which ``dgl_chunked.io.dgl`` and ``dgl_chunked.io.graphbolt`` build DGL's and
GraphBolt's own files. Importing this package registers every format.
"""

from __future__ import annotations

# The import order is the registration order, the order in which messages list formats.
# isort: off
from dgl_chunked.io.formats import csv, parquet, npy, orc, zarr, torch, dgl

# isort: on
from dgl_chunked.io.formats.pieces import FileInfo, Piece, split_pieces
from dgl_chunked.io.formats.registry import (
    FileFormat,
    format_of_path,
    formats_with,
    get_format,
    inspect_file,
    open_result,
    register_format,
)

__all__ = [
    "FileFormat",
    "FileInfo",
    "Piece",
    "csv",
    "dgl",
    "format_of_path",
    "formats_with",
    "get_format",
    "inspect_file",
    "npy",
    "open_result",
    "orc",
    "parquet",
    "register_format",
    "split_pieces",
    "torch",
    "zarr",
]
