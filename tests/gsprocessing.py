"""A graph laid out as GraphStorm's GSProcessing writes it: the generator of the GSProcessing tier.

:func:`write_gsprocessing_graph` writes, from a seed, what GSProcessing (Spark) and its
``repartition_files.py`` leave for GraphStorm's partition step, read from GraphStorm's
source (``graphstorm-processing/graphstorm_processing/graph_loaders/
dist_heterogeneous_loader.py``, ``graph_loaders/row_count_utils.py``,
``repartition_files.py``; ``python/graphstorm/gpartition/dist_partition_graph.py``
dispatches with ``--metadata-filename``):

- every structure and feature entry is ``{"format": {"name": "parquet", "delimiter": ""},
  "data": [...], "row_counts": [...]}`` (``_create_metadata_entry``, ``ParquetRowCounter``);
- Spark's files ``<dir>/parquet/part-<k:05d>-<uuid>-c000.snappy.parquet`` with uneven row
  counts (one empty file), a ``_SUCCESS`` and a hidden ``.part-...crc`` beside each
  (``_write_df``); the classification labels and the masks are written with pyarrow as
  ``part-<k:05d>-<uuid>.parquet`` (``_write_pyarrow_table``);
- ``raw_id_mappings/<ntype>/parquet/``: ``orig`` (string) and ``new`` (int64), ordered by
  ``new``; ``num_nodes_per_type`` is the sum of their row counts;
- ``edges/<src_rel_dst>/parquet/`` with columns ``src_int_id, dst_int_id``, and for every
  relation the reverse type ``dst:rel-rev:src`` (listed right after it) whose files hold
  ``dst_int_id, src_int_id``;
- features as one column named after the feature: a scalar (``user/age`` float64, edge
  ``rate`` float32, ``movie/year`` int64) or a list (``movie/title`` list of float32);
  ``user/occupation`` a classification label: float64 with NaN where the label is missing
  (``toPandas`` of a nullable long), with the ``shape`` metadata ``(rows,)``
  (``modify_metadata_for_flat_arrays``), as have the int8 masks ``train_mask``,
  ``val_mask``, ``test_mask``;
- ``metadata.json`` with the edge feature ``rate`` in files whose row counts differ from
  the structure's, and ``updated_row_counts_metadata.json`` naming the repartitioned
  files (``parquet-repartitioned-<uuid>/part-<k:05d>-<name>.snappy.parquet``) whose counts
  match; both with ``graph_info`` and ``raw_id_mappings``.

The returned :class:`GSProcessingGraph` holds the truth: string IDs by new ID, edges and
features as DGL 2.1.0's ``ParquetArrayParser`` reads them (a scalar column without
``shape`` metadata is ``(N, 1)``). ``python -m tests.gsprocessing DIR`` writes the graph.
"""

from __future__ import annotations

import hashlib
import json
import sys
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.parquet as pq

__all__ = ["GSProcessingGraph", "NODE_COUNTS", "RELATIONS", "write_assignment_txt", "write_gsprocessing_graph"]

NODE_COUNTS = {"genre": 6, "movie": 23, "user": 31}
"""Nodes per type (GSProcessing sorts ``node_type``)."""

RELATIONS = {"user:rates:movie": 70, "movie:included_in:genre": 30}
"""Edges per relation; each also gets its ``-rev`` type."""

_FILE_COUNTS = {"genre": [2, 4], "movie": [9, 1, 13], "user": [12, 0, 11, 8]}
"""Rows per ``raw_id_mappings`` file (and per feature file of the type)."""

_EDGE_FILE_COUNTS = {"user:rates:movie": [31, 4, 35], "movie:included_in:genre": [17, 0, 13]}
_RATE_SPARK_COUNTS = [20, 26, 24]
"""Rows per file of ``rate`` as Spark wrote it, before ``repartition_files.py``."""

SPARK_METADATA = {
    b"org.apache.spark.version": b"3.5.1",
    b"org.apache.spark.sql.parquet.row.metadata": b'{"type":"struct","fields":[]}',
}


@dataclass
class GSProcessingGraph:
    """What :func:`write_gsprocessing_graph` wrote, and the truth to check against."""

    root: Path
    graph_name: str
    node_ids: dict[str, npt.NDArray[Any]]
    """``ntype -> orig`` string IDs, row ``i`` is the node whose new (per-type) ID is ``i``."""
    edges: dict[str, tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]]
    """Canonical edge type -> ``(src, dst)`` per-type IDs, reverse types included."""
    node_features: dict[str, dict[str, npt.NDArray[Any]]] = field(default_factory=dict)
    """As DGL 2.1.0's ``ParquetArrayParser`` reads the files (shapes and dtypes)."""
    edge_features: dict[str, dict[str, npt.NDArray[Any]]] = field(default_factory=dict)
    metadata_files: tuple[str, str] = ("metadata.json", "updated_row_counts_metadata.json")

    def digest(self) -> str:
        """SHA-256 of the truth (IDs, edges, features: values, dtypes, shapes): equal
        digests, equal graphs, whichever numpy or pyarrow wrote the files."""
        h = hashlib.sha256()
        for ntype in sorted(self.node_ids):
            h.update(f"{ntype}:{','.join(self.node_ids[ntype])}".encode())
        arrays = {f"edges/{e}/{i}": a for e, pair in self.edges.items() for i, a in enumerate(pair)}
        for kind, feats in (("node", self.node_features), ("edge", self.edge_features)):
            arrays |= {f"{kind}/{t}/{f}": a for t, fs in feats.items() for f, a in fs.items()}
        for key in sorted(arrays):
            a = np.ascontiguousarray(arrays[key])
            h.update(f"{key}:{a.dtype.str}:{a.shape}".encode())
            h.update(a.tobytes())
        return h.hexdigest()


class _Writer:
    """Writes the files of one graph; ``rng`` makes names and values reproducible."""

    def __init__(self, root: Path, rng: np.random.Generator) -> None:
        self.root = root
        self.rng = rng

    def uid(self) -> str:
        return str(uuid.UUID(bytes=self.rng.bytes(16), version=4))

    def spark(self, folder: str, table: pa.Table, counts: list[int]) -> list[str]:
        """Spark's ``df.write.parquet(folder + "/parquet")``: part files, ``.crc``, ``_SUCCESS``."""
        out = self.root / folder / "parquet"
        out.mkdir(parents=True, exist_ok=True)
        job = self.uid()
        table = table.replace_schema_metadata({**(table.schema.metadata or {}), **SPARK_METADATA})
        paths = self._parts(out, table, counts, lambda k: f"part-{k:05d}-{job}-c000.snappy.parquet", crc=True)
        (out / "_SUCCESS").write_bytes(b"")
        txn = int(self.rng.integers(10**17, 10**18))  # Databricks' commit protocol
        (out / f"_committed_{txn}").write_text('{"added":[],"removed":[]}')
        (out / f"_started_{txn}").write_bytes(b"")
        return paths

    def pyarrow(self, folder: str, table: pa.Table, counts: list[int], *, flat: bool = False) -> list[str]:
        """``_write_pyarrow_table``: ``part-<k>-<uuid>.parquet``, no side files; ``flat`` adds
        the ``shape`` metadata ``repartition_files.py`` gives labels and masks."""
        out = self.root / folder / "parquet"
        out.mkdir(parents=True, exist_ok=True)
        job = self.uid()
        return self._parts(out, table, counts, lambda k: f"part-{k:05d}-{job}.parquet", crc=False, flat=flat)

    def repartitioned(self, folder: str, table: pa.Table, counts: list[int], template: str) -> list[str]:
        """``repartition_parquet_files``: ``parquet-repartitioned-<uuid>/part-<k>-<rest of name>``."""
        out = self.root / folder / f"parquet-repartitioned-{self.uid()}"
        out.mkdir(parents=True, exist_ok=True)
        rest = template.split("-", 2)[2]
        return self._parts(out, table, counts, lambda k: f"part-{k:05d}-{rest}", crc=False)

    def _parts(
        self, out: Path, table: pa.Table, counts: list[int], name: Any, *, crc: bool, flat: bool = False
    ) -> list[str]:
        assert sum(counts) == table.num_rows, (out, counts, table.num_rows)
        paths, start = [], 0
        for k, n in enumerate(counts):
            part = table.slice(start, n)
            if flat:
                meta = {b"shape": f"({n},)".encode(), **(part.schema.metadata or {})}
                part = part.replace_schema_metadata(meta)
            path = out / name(k)
            pq.write_table(part, path, compression="snappy")
            if crc:
                (out / f".{path.name}.crc").write_bytes(b"crc\x00" + self.rng.bytes(8))
            paths.append(path.relative_to(self.root).as_posix())
            start += n
        return paths


def _entry(paths: list[str], counts: list[int]) -> dict[str, Any]:
    return {"format": {"name": "parquet", "delimiter": ""}, "data": paths, "row_counts": counts}


def _edge_count(etype: str) -> int:
    src, rel, dst = etype.split(":")
    return RELATIONS[etype] if etype in RELATIONS else RELATIONS[f"{dst}:{rel.removesuffix('-rev')}:{src}"]


def _rev(etype: str) -> str:
    src, rel, dst = etype.split(":")
    return f"{dst}:{rel}-rev:{src}"


def write_gsprocessing_graph(root: str | Path, *, seed: int = 39, graph_name: str = "movielens") -> GSProcessingGraph:
    """Write the GSProcessing-shaped graph into ``root`` (created; must not hold one already).

    The same ``seed`` writes the same values and file names (the Parquet bytes follow
    the installed pyarrow).
    """
    root = Path(root)
    root.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    w = _Writer(root, rng)
    g = GSProcessingGraph(root=root, graph_name=graph_name, node_ids={}, edges={})
    meta: dict[str, Any] = {"edge_type": [], "node_type": sorted(NODE_COUNTS), "graph_name": graph_name}
    for etype in RELATIONS:
        meta["edge_type"] += [etype, _rev(etype)]
    # node ID maps: distinct random strings, 'new' = row order
    mappings: dict[str, Any] = {}
    for ntype in meta["node_type"]:
        n = NODE_COUNTS[ntype]
        codes = rng.choice(16**7, size=n, replace=False)
        orig = np.array([f"{ntype[0]}-{c:07x}" for c in codes], dtype=object)
        g.node_ids[ntype] = orig
        table = pa.table({"orig": pa.array(orig.tolist(), pa.string()), "new": pa.array(np.arange(n), pa.int64())})
        mappings[ntype] = _entry(w.spark(f"raw_id_mappings/{ntype}", table, _FILE_COUNTS[ntype]), _FILE_COUNTS[ntype])
    # edges and their reverse types
    edges: dict[str, Any] = {}
    for etype, count in RELATIONS.items():
        s, _, d = etype.split(":")
        src = rng.integers(0, NODE_COUNTS[s], count).astype(np.int64)
        dst = rng.integers(0, NODE_COUNTS[d], count).astype(np.int64)
        g.edges[etype], g.edges[_rev(etype)] = (src, dst), (dst, src)
        counts = _EDGE_FILE_COUNTS[etype]
        folder = f"edges/{etype.replace(':', '_')}"
        fwd = pa.table({"src_int_id": src, "dst_int_id": dst})
        edges[etype] = _entry(w.spark(folder, fwd, counts), counts)
        rev = pa.table({"dst_int_id": dst, "src_int_id": src})
        edges[_rev(etype)] = _entry(w.spark(f"edges/{_rev(etype).replace(':', '_')}", rev, counts), counts)
    node_data, updated_edge_data, edge_data = _node_data(w, g), {}, {}
    rate = rng.integers(1, 11, RELATIONS["user:rates:movie"]).astype(np.float32) / 2
    g.edge_features["user:rates:movie"] = {"rate": rate.reshape(-1, 1)}
    table = pa.table({"rate": rate})
    spark_paths = w.spark("edge_data/user_rates_movie-rate", table, _RATE_SPARK_COUNTS)
    edge_data["user:rates:movie"] = {"rate": _entry(spark_paths, _RATE_SPARK_COUNTS)}
    counts = _EDGE_FILE_COUNTS["user:rates:movie"]
    moved = w.repartitioned("edge_data/user_rates_movie-rate", table, counts, Path(spark_paths[0]).name)
    updated_edge_data["user:rates:movie"] = {"rate": _entry(moved, counts)}
    for name, data in (("metadata.json", edge_data), ("updated_row_counts_metadata.json", updated_edge_data)):
        doc = {
            **meta,
            "num_nodes_per_type": [NODE_COUNTS[t] for t in meta["node_type"]],
            "num_edges_per_type": [_edge_count(e) for e in meta["edge_type"]],
            "node_data": node_data,
            "edge_data": data,
            "edges": edges,
            "raw_id_mappings": mappings,
            "graph_info": _graph_info(meta),
        }
        (root / name).write_text(json.dumps(doc, indent=4))
    return g


def _node_data(w: _Writer, g: GSProcessingGraph) -> dict[str, Any]:
    """Node features: scalar and list columns (Spark), a label with NaN and int8 masks (pyarrow)."""
    rng, out = w.rng, {}
    n, counts = NODE_COUNTS["user"], _FILE_COUNTS["user"]
    age = rng.integers(18, 70, n).astype(np.float64) / 100
    label = rng.integers(0, 5, n).astype(np.float64)
    label[rng.random(n) < 0.25] = np.nan  # missing labels: NaN after toPandas
    split = rng.integers(0, 3, n)
    split[np.isnan(label)] = 3  # a node without a label is in no split
    user = {"age": _entry(w.spark("node_data/user-age", pa.table({"age": age}), counts), counts)}
    path = w.pyarrow("node_data/user-label-occupation", pa.table({"occupation": label}), counts, flat=True)
    user["occupation"] = _entry(path, counts)
    g.node_features["user"] = {"age": age.reshape(-1, 1), "occupation": label}
    for k, mask in enumerate(("train_mask", "val_mask", "test_mask")):
        values = (split == k).astype(np.int8)
        path = w.pyarrow(f"node_data/user-{mask}", pa.table({mask: values}), counts, flat=True)
        user[mask] = _entry(path, counts)
        g.node_features["user"][mask] = values
    out["user"] = user
    n, counts = NODE_COUNTS["movie"], _FILE_COUNTS["movie"]
    title = rng.standard_normal((n, 4)).astype(np.float32)
    year = rng.integers(1950, 2024, n).astype(np.int64)
    vectors = pa.array(title.tolist(), pa.list_(pa.float32()))
    out["movie"] = {
        "title": _entry(w.spark("node_data/movie-title", pa.table({"title": vectors}), counts), counts),
        "year": _entry(w.spark("node_data/movie-year", pa.table({"year": year}), counts), counts),
    }
    g.node_features["movie"] = {"title": title, "year": year.reshape(-1, 1)}
    return out


def _graph_info(meta: dict[str, Any]) -> dict[str, Any]:
    """``_finalize_graphinfo_dict``'s keys for this graph (DGL ignores them)."""
    return {
        "graph_type": "heterogeneous",
        "num_nodes": sum(NODE_COUNTS.values()),
        "num_edges": 2 * sum(RELATIONS.values()),
        "num_ntype": len(meta["node_type"]),
        "num_rels": len(meta["edge_type"]),
        "num_nodes_ntype": dict(NODE_COUNTS),
        "num_edges_etype": {e: _edge_count(e) for e in meta["edge_type"]},
        "nfeat_size": {"user": {"age": 1}, "movie": {"title": 4, "year": 1}},
        "efeat_size": {"user:rates:movie": {"rate": 1}},
        "task_type": "node_class",
        "ntype_label": ["user"],
        "ntype_label_property": ["occupation"],
        "ntype_to_label_masks": {"user": ["train_mask", "val_mask", "test_mask"]},
        "etype_label": [],
        "etype_label_property": [],
        "label_map": {"0": 0, "1": 1, "2": 2, "3": 3, "4": 4},
        "label_properties": {},
    }


def write_assignment_txt(g: GSProcessingGraph, out: str | Path, num_parts: int = 2) -> dict[str, npt.NDArray[np.int64]]:
    """A fixed assignment in DGL's layout (``<ntype>.txt``, ``partition_meta.json``):
    node ``i`` of the ``k``-th type goes to ``(7 i + k) % num_parts``."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    parts = {}
    for k, ntype in enumerate(sorted(g.node_ids)):
        parts[ntype] = (np.arange(len(g.node_ids[ntype]), dtype=np.int64) * 7 + k) % num_parts
        (out / f"{ntype}.txt").write_text("".join(f"{p}\n" for p in parts[ntype]))
    meta = {"algo_name": "random", "num_parts": num_parts, "version": "1.0.0"}
    (out / "partition_meta.json").write_text(json.dumps(meta, indent=4))
    return parts


if __name__ == "__main__":  # python -m tests.gsprocessing DIR
    write_gsprocessing_graph(sys.argv[1])
