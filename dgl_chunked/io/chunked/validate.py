"""Check a Chunked Graph Format directory and report every problem.

:func:`validate_chunked_graph` parses ``metadata.json`` (metadata problems are
reported all at once), then checks every chunk file in Dask tasks on the current
scheduler, consecutive small files together in tasks of about the task size (by their
declared rows, else their size on disk; :mod:`.groups`): existence, readability, row
counts against the metadata, node-ID ranges of edges, feature dimensionality and dtype. It then compares the files of
each type with each other (dtype and row shape) and with the type's count. Every
message names the JSON key or the file, and the row where relevant.

Edge files are read completely (to check node IDs); ``.npy`` features are checked
from their headers and sizes; Parquet features are read.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
from dask.base import compute, tokenize
from dask.delayed import delayed

from dgl_chunked._dask import run_token
from dgl_chunked._typing import PathLike, StorageOptions
from dgl_chunked.errors import DglChunkedError, ValidationFailed
from dgl_chunked.io.chunked import formats as _formats
from dgl_chunked.io.chunked.chunks import edge_id_problems
from dgl_chunked.io.chunked.groups import EDGE_ROW_BYTES, group_ranges, resolve_task_bytes
from dgl_chunked.io.chunked.metadata import ArraySource, ChunkedGraphMetadata, read_metadata
from dgl_chunked.io.formats import get_format
from dgl_chunked.io.formats.files import file_sizes

__all__ = [
    "FeatureSummary",
    "FileCheck",
    "TypeSummary",
    "ValidationReport",
    "check_edge_file",
    "check_edge_files",
    "check_feature_file",
    "check_feature_files",
    "validate_chunked_graph",
]


@dataclass(frozen=True, kw_only=True)
class FileCheck:
    """Result of checking one chunk file (returned by a task)."""

    path: str
    rows: int | None = None
    nbytes: int = 0
    row_shape: tuple[int, ...] | None = None
    dtype: str | None = None
    problems: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()


@dataclass(frozen=True, kw_only=True)
class FeatureSummary:
    """One feature of one type: files, rows, row shape, dtype, bytes."""

    name: str
    files: int
    rows: int
    row_shape: tuple[int, ...] | None
    dtype: str | None
    nbytes: int


@dataclass(frozen=True, kw_only=True)
class TypeSummary:
    """One node or edge type: count, structure files and features."""

    kind: Literal["node", "edge"]
    name: str
    rows: int
    files: int
    nbytes: int
    features: tuple[FeatureSummary, ...] = ()


@dataclass
class ValidationReport:
    """Everything :func:`validate_chunked_graph` found.

    ``problems`` make the input invalid; ``warnings`` do not (for example an
    undeclared empty CSV file, which dgl_chunked reads but DGL v2.2.1 rejects).
    """

    problems: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    summary: list[TypeSummary] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """True when no problem was found."""
        return not self.problems

    def raise_if_failed(self) -> None:
        """Raise :class:`ValidationFailed` listing every problem, if any."""
        if self.problems:
            raise ValidationFailed(self.problems)

    def summary_table(self) -> str:
        """A plain-text table: one line per type and one per feature."""
        header = f"{'kind':<5} {'type':<40} {'rows':>12} {'files':>6} {'bytes':>12}  feature"
        lines = [header, "-" * len(header)]
        for t in self.summary:
            lines.append(f"{t.kind:<5} {t.name:<40} {t.rows:>12} {t.files:>6} {t.nbytes:>12}")
            for f in t.features:
                shape = "?" if f.row_shape is None else str((f.rows, *f.row_shape))
                lines.append(f"{'':<5} {'':<40} {f.rows:>12} {f.files:>6} {f.nbytes:>12}  {f.name} {shape} {f.dtype}")
        return "\n".join(lines)


# --- per-file kernels (run as tasks) -------------------------------------------


def _size(path: str, storage_options: StorageOptions) -> tuple[int | None, str | None]:
    try:
        return _formats.file_size(path, storage_options), None
    except DglChunkedError as err:
        return None, f"missing file: {err}"


def check_edge_file(
    path: str,
    *,
    fmt: str,
    options: Mapping[str, Any],
    storage_options: StorageOptions,
    expected_rows: int | None,
    num_src: int,
    num_dst: int,
) -> FileCheck:
    """Read one edge file and report row-count, parse and node-ID problems."""
    size, missing = _size(path, storage_options)
    if size is None:
        return FileCheck(path=path, problems=(str(missing),))
    if size == 0 and get_format(fmt).kind == "text":
        if expected_rows == 0:
            return FileCheck(path=path, rows=0)
        if expected_rows is None:
            warning = f"edge file {path!r} is empty; read as 0 edges (DGL v2.2.1 rejects empty CSV files)"
            return FileCheck(path=path, rows=0, warnings=(warning,))
        problem = f"edge file {path!r} is empty, but metadata.json declares {expected_rows} rows for it"
        return FileCheck(path=path, rows=0, problems=(problem,))
    try:
        src, dst = _formats.read_edge_chunk(path, fmt=fmt, options=options, storage_options=storage_options)
    except DglChunkedError as err:
        return FileCheck(path=path, nbytes=size, problems=(str(err),))
    problems = edge_id_problems(src, dst, num_src=num_src, num_dst=num_dst, path=path)
    if expected_rows is not None and len(src) != expected_rows:
        problems.insert(
            0,
            f"edge file {path!r}: expected {expected_rows} rows (num_edges_per_chunk or row_counts), found {len(src)}",
        )
    return FileCheck(path=path, rows=len(src), nbytes=size, problems=tuple(problems))


def check_feature_file(
    path: str,
    *,
    fmt: str,
    options: Mapping[str, Any],
    storage_options: StorageOptions,
    expected_rows: int | None = None,
) -> FileCheck:
    """Check one feature file: readable, not truncated, 1-D/2-D, supported dtype, and
    ``expected_rows`` (the entry's ``row_counts``) when given."""
    size, missing = _size(path, storage_options)
    if size is None:
        return FileCheck(path=path, problems=(str(missing),))
    try:
        rows, row_shape, dtype = _formats.feature_chunk_info(
            path, fmt=fmt, options=options, storage_options=storage_options
        )
        if not get_format(fmt).header_proves_values:  # a footer does not prove the values convert
            _formats.read_feature_chunk(path, fmt=fmt, options=options, storage_options=storage_options)
    except DglChunkedError as err:
        problem = "empty file: " + str(err) if size == 0 else str(err)
        return FileCheck(path=path, nbytes=size, problems=(problem,))
    problems = []
    if expected_rows is not None and rows != expected_rows:
        problems.append(f"feature file {path!r}: expected {expected_rows} rows (row_counts), found {rows}")
    if len(row_shape) > 1:
        problems.append(
            f"feature file {path!r}: expected a 1-D or 2-D array, found shape {(rows, *row_shape)} "
            f"({len(row_shape) + 1}-D); reshape it to (rows, -1)"
        )
    if dtype not in _formats.FEATURE_DTYPES:
        allowed = sorted(str(d) for d in _formats.FEATURE_DTYPES)
        problems.append(f"feature file {path!r}: expected a dtype among {allowed}, found {dtype}")
    return FileCheck(
        path=path,
        rows=rows,
        nbytes=size,
        row_shape=row_shape,
        dtype=str(dtype),
        problems=tuple(problems),
    )


# --- wiring --------------------------------------------------------------------


def check_edge_files(paths: Sequence[str], expected: Sequence[int | None], **kwargs: Any) -> list[FileCheck]:
    """:func:`check_edge_file` of consecutive files (one task)."""
    return [check_edge_file(p, expected_rows=rows, **kwargs) for p, rows in zip(paths, expected, strict=True)]


def check_feature_files(paths: Sequence[str], expected: Sequence[int | None], **kwargs: Any) -> list[FileCheck]:
    """:func:`check_feature_file` of consecutive files (one task)."""
    return [check_feature_file(p, expected_rows=rows, **kwargs) for p, rows in zip(paths, expected, strict=True)]


def _ranges(source: ArraySource, declared: Sequence[int | None], row_bytes: int, task_bytes: int, so: Any) -> Any:
    """The files of one source in tasks: by declared rows, else by their size on disk."""
    if all(r is not None for r in declared):
        weights = [int(r or 0) * row_bytes for r in declared]
    else:
        weights = file_sizes(list(source.paths), so)
    return group_ranges(weights, task_bytes)


def _edge_tasks(
    meta: ChunkedGraphMetadata, storage_options: StorageOptions, run: str, task_bytes: int
) -> dict[str, list[Any]]:
    tasks: dict[str, list[Any]] = {}
    for i, spec in enumerate(meta.edge_types):
        source = meta.edges[spec.name]
        expected: Sequence[int | None] = (
            meta.num_edges_per_chunk[i] if meta.num_edges_per_chunk else [None] * len(source.paths)
        )
        tasks[spec.name] = [
            delayed(check_edge_files, pure=True)(
                source.paths[lo:hi],
                expected[lo:hi],
                fmt=source.format,
                options=dict(source.options),
                storage_options=storage_options,
                num_src=meta.num_nodes(spec.src_type),
                num_dst=meta.num_nodes(spec.dst_type),
                dask_key_name=f"dglc-validate-edges-{run}-{tokenize(source.paths[lo:hi], source, expected[lo:hi])}",
            )
            for lo, hi in _ranges(source, expected, EDGE_ROW_BYTES, task_bytes, storage_options)
        ]
    return tasks


def _feature_tasks(
    data: Mapping[str, Mapping[str, ArraySource]], storage_options: StorageOptions, run: str, task_bytes: int
) -> dict[tuple[str, str], list[Any]]:
    return {
        (tname, feat): [
            delayed(check_feature_files, pure=True)(
                src.paths[lo:hi],
                list(src.row_counts or [None] * len(src.paths))[lo:hi],
                fmt=src.format,
                options=dict(src.options),
                storage_options=storage_options,
                dask_key_name=f"dglc-validate-features-{run}-{tokenize(src.paths[lo:hi], src)}",
            )
            for lo, hi in _ranges(src, [None], 1, task_bytes, storage_options)
        ]
        for tname, feats in data.items()
        for feat, src in feats.items()
    }


def _feature_summary(
    name: str,
    source: ArraySource,
    checks: list[FileCheck],
    expected: int | None,
    report: ValidationReport,
    misfits: Callable[[Sequence[str], Sequence[int]], str] = lambda paths, rows: "",
) -> FeatureSummary:
    good = [c for c in checks if c.rows is not None and not c.problems]
    first = next((c for c in good if c.rows), good[0] if good else None)
    one = _formats.feature_dtype(np.dtype(c.dtype) for c in good if c.dtype)
    for c in good:
        if first is not None and one is None and c.dtype != first.dtype:
            report.problems.append(
                f"{source.where}: file {c.path!r} has dtype {c.dtype}, but {first.path!r} has "
                f"{first.dtype}; all files of a feature must share one dtype"
            )
        if first is not None and c.rows and c.row_shape != first.row_shape:
            report.problems.append(
                f"{source.where}: file {c.path!r} has row shape {c.row_shape}, but {first.path!r} has "
                f"{first.row_shape}; all files of a feature must share one row shape"
            )
    rows = sum(c.rows or 0 for c in checks)
    if expected is not None and len(good) == len(checks) and rows != expected:
        report.problems.append(
            f"{source.where}: expected {expected} rows in total (the type's count), found {rows} "
            f"across {len(checks)} files{misfits([c.path for c in checks], [c.rows or 0 for c in checks])}; "
            "fix the files or the counts"
        )
    return FeatureSummary(
        name=name,
        files=len(checks),
        rows=rows,
        row_shape=None if first is None else first.row_shape,
        dtype=None if first is None else str(one or first.dtype),
        nbytes=sum(c.nbytes for c in checks),
    )


def _collect(
    meta: ChunkedGraphMetadata,
    edge_checks: Mapping[str, list[FileCheck]],
    node_feats: Mapping[tuple[str, str], list[FileCheck]],
    edge_feats: Mapping[tuple[str, str], list[FileCheck]],
) -> ValidationReport:
    report = ValidationReport()
    for checks in [*edge_checks.values(), *node_feats.values(), *edge_feats.values()]:
        for c in checks:
            report.problems.extend(c.problems)
            report.warnings.extend(c.warnings)
    for i, ntype in enumerate(meta.node_types):
        feats = tuple(
            _feature_summary(
                f,
                meta.node_data[ntype][f],
                node_feats[(ntype, f)],
                meta.num_nodes_per_type[i],
                report,
                functools.partial(meta.misfit_feature_files, "node", ntype),
            )
            for f in meta.node_data.get(ntype, {})
        )
        nbytes = sum(f.nbytes for f in feats)
        report.summary.append(
            TypeSummary(
                kind="node",
                name=ntype,
                rows=meta.num_nodes_per_type[i],
                files=0,
                nbytes=nbytes,
                features=feats,
            )
        )
    for i, etype in enumerate(meta.edge_type_names):
        checks = edge_checks[etype]
        counted = sum(c.rows or 0 for c in checks)
        declared = meta.num_edges_per_type[i] if meta.num_edges_per_type is not None else None
        complete = all(c.rows is not None and not c.problems for c in checks)
        if declared is not None and complete and counted != declared:
            report.problems.append(
                f"num_edges_per_type[{i}]: expected {declared} edges of {etype!r}, found {counted} "
                f"rows in {meta.edges[etype].where}.data; fix the counts or the files"
            )
        expected = declared if declared is not None else (counted if complete else None)
        feats = tuple(
            _feature_summary(
                f,
                meta.edge_data[etype][f],
                edge_feats[(etype, f)],
                expected,
                report,
                functools.partial(meta.misfit_feature_files, "edge", etype),
            )
            for f in meta.edge_data.get(etype, {})
        )
        nbytes = sum(c.nbytes for c in checks) + sum(f.nbytes for f in feats)
        rows = declared if declared is not None else counted
        report.summary.append(
            TypeSummary(
                kind="edge",
                name=etype,
                rows=rows,
                files=len(checks),
                nbytes=nbytes,
                features=feats,
            )
        )
    return report


def validate_chunked_graph(
    path: PathLike,
    *,
    storage_options: StorageOptions = None,
    metadata_filename: str = "metadata.json",
    task_bytes: int | str | None = None,
) -> ValidationReport:
    """Check metadata and every chunk file; collect every problem.

    The per-file checks run as Dask tasks on the current scheduler (one
    ``dask.compute``), several small files per task. Metadata problems are reported
    without checking files.

    Parameters
    ----------
    path
        Input directory or metadata file; local path or fsspec URL.
    storage_options
        fsspec options for URLs.
    metadata_filename
        Metadata file name inside ``path``.
    task_bytes
        Bytes of files one task checks (:mod:`~dgl_chunked.io.chunked.groups`); default
        ``$DGLC_TASK_SIZE``, else 32 MiB.

    Returns
    -------
    ValidationReport
        ``ok`` is True when no problem was found; ``summary`` has one row per type.
    """
    try:
        meta = read_metadata(path, storage_options=storage_options, metadata_filename=metadata_filename)
    except DglChunkedError as err:  # MetadataError lists every problem in .problems
        return ValidationReport(problems=list(getattr(err, "problems", [str(err)])))
    # A fresh token per call: a cluster still holding an earlier call's results
    # (or another job's) must not answer for files that may have changed since.
    run = run_token(meta.fingerprint())
    size = resolve_task_bytes(task_bytes)
    edge_tasks = _edge_tasks(meta, storage_options, run, size)
    node_tasks = _feature_tasks(meta.node_data, storage_options, run, size)
    edge_feat_tasks = _feature_tasks(meta.edge_data, storage_options, run, size)
    edge_checks, node_feats, edge_feats = compute(edge_tasks, node_tasks, edge_feat_tasks)

    def flat(per_task: Mapping[Any, list[list[FileCheck]]]) -> dict[Any, list[FileCheck]]:
        return {k: [c for checks in tasks for c in checks] for k, tasks in per_task.items()}

    return _collect(meta, flat(edge_checks), flat(node_feats), flat(edge_feats))
