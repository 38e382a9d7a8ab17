"""ParMETIS text files: the input DGL's ``pm_dglpart`` reads, and the output it writes
(``docs/spec/parmetis.md``).

Pure kernels (numpy, pandas, pyarrow; no Dask). The Dask wiring lives in
:mod:`dgl_chunked.parmetis.export`, :mod:`~dgl_chunked.parmetis.edges`,
:mod:`~dgl_chunked.parmetis.result_files` and :mod:`~dgl_chunked.parmetis.importing`.

Input (DGL guide, "ParMETIS input format"), all ASCII, space-separated, no header::

    OUT/
      <name>_nodes.txt   one line per node, in orig_nid order (type-major):
                         <ntype_id> <w_0> ... <w_{T-1}> <m_0> ... <m_{K-1}> <type_nid>
                         w_j = 1 if ntype_id == j else 0 (one-hot: balance node types),
                         m_k = 1 if balance mask k is true for the node, else 0
      <name>_edges.txt   one line per kept edge: <src_orig_nid> <dst_orig_nid> <type_eid> <etype_id>
      <name>_stats.txt   <num_nodes> <num_edges> <num_node_weights>     (written last)

Output: ``p<rank>-<name>_nodes.txt`` files whose lines are input node lines with the
partition appended (``<ntype_id> <weights...> <type_nid> <part_id>``, "nodes" form),
or ``<orig_nid> <part_id>`` lines (the input of DGL's ``parmetis_postprocess.py``,
"gnid" form). A file with two columns is read as "gnid", with three or more as "nodes".

Reading is split into line-aligned byte pieces so that errors can name the line:
:func:`line_starts` counts the lines of each piece (a planning pass),
:func:`parse_output_piece` parses one piece and checks every value,
:func:`check_exactly_once` checks one node range after the rows were gathered by
``orig_nid``. Finding the files and reading their pieces: :mod:`.result_files`.
"""

from __future__ import annotations

import io
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.csv as pacsv

from dgl_chunked._typing import IdArray, PartArray
from dgl_chunked.errors import AssignmentError

__all__ = [
    "OutputForm",
    "ParsedPiece",
    "check_exactly_once",
    "encode_edge_lines",
    "encode_node_lines",
    "encode_stats",
    "form_of",
    "line_starts",
    "parmetis_file_names",
    "parse_output_piece",
]

OutputForm = Literal["auto", "nodes", "gnid"]
_WRITE = pacsv.WriteOptions(include_header=False, delimiter=" ", quoting_style="none")


def parmetis_file_names(name: str) -> tuple[str, str, str]:
    """``(<name>_nodes.txt, <name>_edges.txt, <name>_stats.txt)``."""
    return f"{name}_nodes.txt", f"{name}_edges.txt", f"{name}_stats.txt"


def _lines(columns: Sequence[npt.NDArray[Any]]) -> bytes:
    if not len(columns[0]):
        return b""
    table = pa.table({str(i): np.asarray(c, np.int64) for i, c in enumerate(columns)})
    buf = io.BytesIO()
    pacsv.write_csv(table, buf, write_options=_WRITE)
    return buf.getvalue()


def encode_node_lines(
    *, type_id: int, num_types: int, start: int, stop: int, masks: Sequence[npt.NDArray[Any] | None]
) -> bytes:
    """Node lines of per-type nodes ``[start, stop)`` of node type ``type_id``.

    ``masks[k]`` is the balance mask ``k`` of these nodes (non-zero = true), or None
    when the type has no such feature (weight 0).
    """
    rows = stop - start
    cols: list[npt.NDArray[Any]] = [np.full(rows, type_id, np.int64)]
    cols += [np.full(rows, int(j == type_id), np.int64) for j in range(num_types)]
    for k, mask in enumerate(masks):
        if mask is None:
            cols.append(np.zeros(rows, np.int64))
            continue
        values = np.asarray(mask).reshape(-1)
        if values.shape[0] != rows:
            raise ValueError(f"mask {k}: expected {rows} rows, found {values.shape[0]}")  # our bug
        cols.append((values != 0).astype(np.int64))
    cols.append(np.arange(start, stop, dtype=np.int64))
    return _lines(cols)


def encode_edge_lines(src: IdArray, dst: IdArray, type_eid: IdArray, etype_id: IdArray) -> bytes:
    """Edge lines ``<src> <dst> <type_eid> <etype_id>`` (homogeneous src and dst)."""
    return _lines([src, dst, type_eid, etype_id])


def encode_stats(num_nodes: int, num_edges: int, num_weights: int) -> bytes:
    """The stats line ``<num_nodes> <num_edges> <num_node_weights>``."""
    return f"{num_nodes} {num_edges} {num_weights}\n".encode("ascii")


# --- reading ParMETIS output ------------------------------------------------------


def line_starts(data: bytes, *, start: int) -> tuple[int, int]:
    """Line starts inside the byte range ``[start, start + len(data) - (start > 0))``.

    ``data`` holds the file bytes from ``start - 1`` (from 0 when ``start`` is 0)
    to the piece end. Returns ``(first, count)``: the absolute offset of the first
    line starting in the piece (-1 if none) and how many lines start in it.
    """
    if start == 0:
        if not data:
            return -1, 0
        return 0, 1 + data.count(b"\n", 0, len(data) - 1)
    count = data.count(b"\n", 0, len(data) - 1)
    if not count:
        return -1, 0
    return start - 1 + data.index(b"\n") + 1, count


def form_of(ncols: int, form: OutputForm, path: str) -> Literal["nodes", "gnid"]:
    """The form of a file with ``ncols`` columns; AssignmentError when it cannot be one."""
    found: Literal["nodes", "gnid"] | None = "gnid" if ncols == 2 else "nodes" if ncols >= 3 else None
    if found is None or (form != "auto" and form != found):
        want = {
            "auto": "2 (<orig_nid> <part_id>) or at least 3",
            "gnid": "2 (<orig_nid> <part_id>)",
            "nodes": "at least 3 (<ntype_id> <weights...> <type_nid> <part_id>)",
        }[form]
        raise AssignmentError(
            f"{path}: line 1: expected {want} columns, found {ncols}; is this a ParMETIS output file?"
        )
    return found


@dataclass(frozen=True)
class ParsedPiece:
    """The nodes named by one piece of an output file."""

    orig_nid: IdArray
    part_id: PartArray
    line: IdArray  # 1-based line number of every row


def _fast_columns(data: bytes, ncols: int, keep: list[int]) -> list[npt.NDArray[np.int64]] | None:
    """pyarrow's parse of single-space lines (every column must be an integer; the
    ``keep`` columns are returned); None when anything is unusual."""
    if b"\n\n" in data or data.startswith(b"\n") or b"\r" in data:
        return None
    names = [f"c{i}" for i in range(ncols)]
    try:
        table = pacsv.read_csv(
            pa.py_buffer(data),
            read_options=pacsv.ReadOptions(column_names=names, use_threads=False),
            parse_options=pacsv.ParseOptions(delimiter=" ", ignore_empty_lines=False),
            convert_options=pacsv.ConvertOptions(column_types={n: pa.int64() for n in names}),
        )
    except (pa.ArrowInvalid, pa.ArrowTypeError):
        return None
    if any(table.column(i).null_count for i in range(ncols)):
        return None
    return [np.asarray(table.column(k).to_numpy(), np.int64) for k in keep]


def _slow_columns(
    data: bytes, ncols: int, keep: list[int], first_line: int, path: str
) -> tuple[list[npt.NDArray[np.int64]], IdArray]:
    """Line-by-line parse (any whitespace, blank lines skipped); errors name the line."""
    rows: list[list[int]] = []
    lines: list[int] = []
    for i, raw in enumerate(data.split(b"\n")):
        tokens = raw.split()
        if not tokens:
            continue
        where = f"{path}: line {first_line + i}"
        if len(tokens) != ncols:
            raise AssignmentError(
                f"{where}: expected {ncols} columns (as on the first line), found "
                f"{len(tokens)} in {raw[:80]!r}; every line needs the same columns"
            )
        try:
            values = [int(token) for token in tokens]
        except ValueError:
            raise AssignmentError(
                f"{where}: expected integers, found {raw[:80]!r}; ParMETIS output holds integer columns only"
            ) from None
        rows.append([values[k] for k in keep])
        lines.append(first_line + i)
    if not rows:
        return [np.empty(0, np.int64) for _ in keep], np.empty(0, np.int64)
    try:
        matrix = np.array(rows, dtype=np.int64)
    except OverflowError:
        bad = next(j for j, r in enumerate(rows) if any(not -(2**63) <= v < 2**63 for v in r))
        raise AssignmentError(f"{path}: line {lines[bad]}: expected int64 values, found {rows[bad]}") from None
    return [matrix[:, j] for j in range(len(keep))], np.asarray(lines, np.int64)


def parse_output_piece(
    data: bytes,
    *,
    path: str,
    first_line: int,
    ncols: int,
    form: Literal["nodes", "gnid"],
    type_offsets: IdArray,
    num_parts: int,
) -> ParsedPiece:
    """Parse whole lines of one output file (``first_line`` is the 1-based number of
    the first line in ``data``) and check every value.

    Raises
    ------
    AssignmentError
        A non-integer or missing value, a column count unlike the first line's, an
        unknown node type, a node ID outside its type, or a partition ID outside
        ``[0, num_parts)``; the message names the file and the first bad line.
    """
    keep = [0, ncols - 2, ncols - 1] if form == "nodes" else [0, 1]
    cols = _fast_columns(data, ncols, keep)
    if cols is not None:
        lines = np.arange(first_line, first_line + len(cols[0]), dtype=np.int64)
    else:
        cols, lines = _slow_columns(data, ncols, keep, first_line, path)
    num_types = len(type_offsets) - 1
    checks: list[tuple[npt.NDArray[np.bool_], Callable[[int], str]]]
    if form == "nodes":
        ntype, type_nid, part = cols
        type_ok = (ntype >= 0) & (ntype < num_types)
        safe = np.where(type_ok, ntype, 0)
        counts = np.diff(type_offsets)[safe]
        nid_ok = type_ok & (type_nid >= 0) & (type_nid < counts)
        orig = type_offsets[safe] + np.where(nid_ok, type_nid, 0)
        checks = [
            (type_ok, lambda r: f"a node type ID in [0, {num_types}), found {int(ntype[r])}"),
            (
                nid_ok,
                lambda r: (
                    f"a type_nid in [0, {int(counts[r])}) (the node count of type "
                    f"{int(ntype[r])}), found {int(type_nid[r])}"
                ),
            ),
        ]
    else:
        orig, part = cols
        total = int(type_offsets[-1])
        checks = [
            ((orig >= 0) & (orig < total), lambda r: f"a homogeneous node ID in [0, {total}), found {int(orig[r])}")
        ]
    checks.append(
        (
            (part >= 0) & (part < num_parts),
            lambda r: f"a partition ID in [0, {num_parts}) (num_parts), found {int(part[r])}",
        )
    )
    ok = np.logical_and.reduce([c for c, _ in checks])
    if not ok.all():
        row = int(np.argmin(ok))
        what = next(msg for c, msg in checks if not c[row])
        raise AssignmentError(
            f"{path}: line {int(lines[row])}: expected {what(row)}; fix the file, or num_parts if it is wrong"
        )
    return ParsedPiece(orig_nid=np.asarray(orig, np.int64), part_id=part.astype(np.int32), line=lines)


def _describe_node(orig_nid: int, type_names: Sequence[str], type_offsets: IdArray) -> str:
    t = int(np.searchsorted(type_offsets, orig_nid, side="right")) - 1
    return f"{type_names[t]!r} {orig_nid - int(type_offsets[t])} (orig_nid {orig_nid})"


def check_exactly_once(
    orig_nid: IdArray,
    part_id: PartArray,
    file: npt.NDArray[np.int32],
    line: IdArray,
    *,
    lo: int,
    hi: int,
    files: Sequence[str],
    type_names: Sequence[str],
    type_offsets: IdArray,
) -> PartArray:
    """Partition IDs of nodes ``[lo, hi)`` (``orig_nid``) from rows that must name each
    of them exactly once (every ``orig_nid`` given is inside the range).

    Raises
    ------
    AssignmentError
        A node named twice (both files and lines are given) or a node never named.
    """
    order = np.lexsort((line, file, orig_nid))
    ids = orig_nid[order]
    dup = np.flatnonzero(ids[1:] == ids[:-1])
    if dup.size:
        a, b = order[dup[0]], order[dup[0] + 1]
        node = _describe_node(int(ids[dup[0]]), type_names, type_offsets)
        raise AssignmentError(
            f"{files[file[b]]}: line {int(line[b])}: expected each node once, found node {node} again "
            f"(first at {files[file[a]]}: line {int(line[a])}); remove the duplicate line"
        )
    if len(ids) != hi - lo:
        present = np.zeros(hi - lo, bool)
        present[ids - lo] = True
        node = _describe_node(lo + int(np.argmin(present)), type_names, type_offsets)
        shown = ", ".join(files[:4]) + (f" and {len(files) - 4} more" if len(files) > 4 else "")
        raise AssignmentError(
            f"{shown}: expected a line for every node, found no line for node {node} "
            f"({hi - lo - len(ids)} node(s) missing in orig_nid range [{lo}, {hi})); "
            "pass every ParMETIS output file"
        )
    return np.asarray(part_id[order], np.int32)
