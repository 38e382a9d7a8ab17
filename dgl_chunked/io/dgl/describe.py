"""Human-readable views of DGL files: summaries and field-by-field annotations."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import numpy.typing as npt

from dgl_chunked.io.dgl.model import GraphData

__all__ = ["describe", "format_annotation"]


def format_annotation(rows: list[tuple[int, int, str, str]], file_size: int | None = None) -> str:
    """Render :func:`annotate_dgl_file` rows like ``annot_g_default.txt``."""
    lines = []
    for offset, size, name, value in rows:
        lines.append(f"{offset:6d} {size:5d}  {name}" + ("" if name.startswith("(") else f" = {value}"))
    if file_size is not None:
        end = rows[-1][0] + rows[-1][1] if rows else 0
        lines.append(f"EOF at {end} file size {file_size}")
    return "\n".join(lines) + "\n"


def _dtype_name(arr: npt.NDArray[Any]) -> str:
    meta: Mapping[str, Any] = arr.dtype.metadata or {}
    return str(meta.get("dgl_dtype", arr.dtype.name))


def _values(arr: npt.NDArray[Any], count: int) -> str:
    flat = np.asarray(arr).reshape(-1)
    if _dtype_name(arr) == "bfloat16":  # raw bits -> float32 for display
        flat = (flat.astype(np.uint32) << 16).view(np.float32)
    head = np.array2string(flat[:count], separator=", ", threshold=count + 1, max_line_width=10**9)
    more = f" ... ({flat.shape[0]} values)" if flat.shape[0] > count else ""
    return head + more


def _table(tensors: Mapping[str, npt.NDArray[Any]], indent: str, values: int) -> list[str]:
    if not tensors:
        return [f"{indent}(none)"]
    width = max(len(key) for key in tensors)
    out = []
    for key, arr in tensors.items():
        out.append(f"{indent}{key:<{width}}  {_dtype_name(arr):<8}  {tuple(arr.shape)}")
        if values:
            out.append(f"{indent}  values: {_values(arr, values)}")
    return out


def _graph_lines(index: int, g: GraphData, values: int) -> list[str]:
    out = [f"graph {index}:", f"  idtype: {g.idtype.name}", "  ntypes (num nodes):"]
    out += [f"    {ntype}: {g.num_nodes[ntype]}" for ntype in g.ntypes]
    out.append("  canonical etypes (num edges; stored formats; allowed formats):")
    for etype in g.canonical_etypes:
        out.append(
            f"    ({', '.join(etype)}): {g.num_edges(etype)} edges; stored: "
            f"{', '.join(g.stored_formats[etype])}; allowed: {', '.join(g.allowed_formats[etype])}"
        )
        if values:
            src, dst = g.edges(etype)
            out.append(f"      src: {_values(src, values)}")
            out.append(f"      dst: {_values(dst, values)}")
    for ntype in g.ntypes:
        out.append(f"  ndata[{ntype}]:")
        out += _table(g.ndata.get(ntype, {}), "    ", values)
    for etype in g.canonical_etypes:
        out.append(f"  edata[{':'.join(etype)}]:")
        out += _table(g.edata.get(etype, {}), "    ", values)
    return out


def describe(
    path: str,
    size: int,
    tensors: Mapping[str, npt.NDArray[Any]],
    graphs: list[GraphData] | None,
    *,
    values: int = 0,
) -> str:
    """Summary text of a tensor-dict file (``graphs is None``) or a graph file.

    ``tensors`` are the entries of a tensor dict, or the labels of a graph file.
    """
    if graphs is None:
        head = [path, f"kind: tensor dict (dgl.data.utils.load_tensors), {len(tensors)} entries, {size} bytes"]
        return "\n".join(head + _table(tensors, "  ", values)) + "\n"
    lines = [
        path,
        f"kind: graph file (dgl.load_graphs), format version 2, {len(graphs)} graph(s), {size} bytes",
        "labels:",
        *_table(tensors, "  ", values),
    ]
    for index, graph in enumerate(graphs):
        lines += _graph_lines(index, graph, values)
    return "\n".join(lines) + "\n"
