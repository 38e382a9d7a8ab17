"""Check a finished partition output against its chunked input, independently of dispatch.

Works on any output in the chunked pipeline's layout, ours or DGL's, as long as
``orig_nids.dgl`` and ``orig_eids.dgl`` were saved (they are the only record of
which input node and edge each row is). Every rule DGL's loaders and DistGraph
rely on (spec sections 3.2-3.6) is checked, and every node, edge and feature row
is compared with the input.

This version holds the input graph in memory (it is meant for tests and for
graphs up to a few hundred million edges); an out-of-core version on Dask is
planned.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from dgl_chunked._typing import PathLike, StorageOptions
from dgl_chunked.io import fs
from dgl_chunked.io.chunked import ChunkedGraph, open_chunked_graph
from dgl_chunked.io.dgl_format import read_graphs, read_tensor_dict
from dgl_chunked.io.formats import read_edge_chunk, read_feature_chunk
from dgl_chunked.io.partition_config import PartitionConfig, read_partition_config

__all__ = ["VerifyReport", "verify_partitions", "load_partition_output", "PartitionFiles"]


@dataclass
class VerifyReport:
    """Problems found (empty when the output is correct) and what was checked."""

    problems: list[str] = field(default_factory=list)
    checked: dict[str, int] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return not self.problems

    def expect(self, condition: bool, message: str) -> bool:
        if not condition:
            self.problems.append(message)
        return condition


@dataclass
class PartitionFiles:
    """One partition's files, read eagerly."""

    ndata: dict[str, npt.NDArray[Any]]
    edata: dict[str, npt.NDArray[Any]]
    src: npt.NDArray[np.int64]
    dst: npt.NDArray[np.int64]
    node_feats: dict[str, npt.NDArray[Any]]
    edge_feats: dict[str, npt.NDArray[Any]]
    orig_nids: dict[str, npt.NDArray[np.int64]] | None
    orig_eids: dict[str, npt.NDArray[np.int64]] | None
    formats: tuple[str, ...]


def load_partition_output(
    out_dir: PathLike, *, storage_options: StorageOptions = None
) -> tuple[PartitionConfig, list[PartitionFiles]]:
    """Read a partition config and every partition's files with our own reader."""
    config = read_partition_config(out_dir, storage_options=storage_options)
    parts = []
    for p in range(config.num_parts):
        base = fs.join(str(out_dir), f"part{p}")
        graphs, _ = read_graphs(fs.join(base, "graph.dgl"), storage_options=storage_options)
        g = graphs[0]
        src, dst = g.edges()
        etype = g.canonical_etypes[0]
        parts.append(PartitionFiles(
            ndata=g.ndata.get(g.ntypes[0], {}), edata=g.edata.get(etype, {}),
            src=np.asarray(src, np.int64), dst=np.asarray(dst, np.int64),
            node_feats=read_tensor_dict(fs.join(base, "node_feat.dgl"), storage_options=storage_options),
            edge_feats=read_tensor_dict(fs.join(base, "edge_feat.dgl"), storage_options=storage_options),
            orig_nids=_optional(fs.join(base, "orig_nids.dgl"), storage_options),
            orig_eids=_optional(fs.join(base, "orig_eids.dgl"), storage_options),
            formats=g.stored_formats[etype],
        ))
    return config, parts


def _optional(path: str, storage_options: StorageOptions) -> dict[str, Any] | None:
    return read_tensor_dict(path, storage_options=storage_options) if fs.exists(path, storage_options) else None


def verify_partitions(
    graph: ChunkedGraph | PathLike,
    out_dir: PathLike,
    *,
    assignment: Mapping[str, npt.NDArray[np.integer]] | None = None,
    storage_options: StorageOptions = None,
) -> VerifyReport:
    """Check every node, edge, ID map and feature row of an output against its input.

    Parameters
    ----------
    graph
        The chunked input (object or directory).
    out_dir
        The partition output directory (holds the partition config ``metadata.json``).
    assignment
        Optional ``ntype -> partition per node`` to also check ownership.

    Returns
    -------
    VerifyReport
    """
    if not isinstance(graph, ChunkedGraph):
        graph = open_chunked_graph(graph, storage_options=storage_options)
    report = VerifyReport()
    config, parts = load_partition_output(out_dir, storage_options=storage_options)
    checker = _Checker(graph, config, parts, report)
    checker.run(assignment)
    return report


class _Checker:
    def __init__(self, graph: ChunkedGraph, config: PartitionConfig, parts: list[PartitionFiles],
                 report: VerifyReport) -> None:
        self.graph, self.meta, self.config, self.parts, self.r = graph, graph.metadata, config, parts, report
        self.ntypes = list(self.meta.node_types)
        self.etypes = [e.name for e in self.meta.edge_types]
        self.node_ranges = _ranges(config.node_map, self.ntypes, config.num_parts)
        self.edge_ranges = _ranges(config.edge_map, self.etypes, config.num_parts)

    def run(self, assignment: Mapping[str, npt.NDArray[np.integer]] | None) -> None:
        r = self.r
        r.expect(self.config.ntypes == {t: i for i, t in enumerate(self.ntypes)},
                 f"config ntypes {self.config.ntypes} do not follow metadata node_type order {self.ntypes}")
        r.expect(self.config.etypes == {e: i for i, e in enumerate(self.etypes)},
                 f"config etypes {self.config.etypes} do not follow metadata edge_type order {self.etypes}")
        _check_contiguous(self.node_ranges, "node_map", r)
        _check_contiguous(self.edge_ranges, "edge_map", r)
        if not r.ok:
            return
        node_orig = self._node_orig_map()
        if node_orig is None:
            return
        self._check_node_permutation(node_orig, assignment)
        edges_seen = {e: np.zeros(self.meta_edges(e), np.int64) for e in self.etypes}
        for p, part in enumerate(self.parts):
            self._check_partition(p, part, node_orig, edges_seen)
        for e, seen in edges_seen.items():
            r.expect(bool((seen == 1).all()),
                     f"edge type {e!r}: {int((seen != 1).sum())} input edges are not stored exactly once")
        r.checked["partitions"] = len(self.parts)

    def meta_edges(self, etype: str) -> int:
        return int(sum(ref.stop - ref.start for ref in self.graph.edge_chunks(etype)))

    def _node_orig_map(self) -> tuple[npt.NDArray[np.int32], npt.NDArray[np.int64]] | None:
        """new_nid -> (type id, type_nid) from orig_nids and node_map."""
        n = int(self.node_ranges[:, :, 1].max()) if self.node_ranges.size else 0
        types = np.full(n, -1, np.int32)
        ids = np.full(n, -1, np.int64)
        for p, part in enumerate(self.parts):
            if not self.r.expect(part.orig_nids is not None and part.orig_eids is not None,
                                 f"part{p}: orig_nids.dgl / orig_eids.dgl missing; verify needs them"):
                return None
            for t, ntype in enumerate(self.ntypes):
                s, e = self.node_ranges[p, t]
                orig = part.orig_nids.get(ntype, np.zeros(0, np.int64))  # type: ignore[union-attr]
                if self.r.expect(orig.shape == (e - s,), f"part{p}: orig_nids[{ntype!r}] has "
                                 f"{orig.shape[0]} entries, node_map says {e - s}"):
                    types[s:e], ids[s:e] = t, orig
        return types, ids

    def _check_node_permutation(self, node_orig: tuple[Any, Any],
                                assignment: Mapping[str, npt.NDArray[np.integer]] | None) -> None:
        types, ids = node_orig
        for t, ntype in enumerate(self.ntypes):
            got = np.sort(ids[types == t])
            n = self.meta.num_nodes(ntype)
            self.r.expect(np.array_equal(got, np.arange(n)),
                          f"node type {ntype!r}: orig_nids are not a permutation of 0..{n - 1}")
            if assignment is not None and got.shape[0] == n:
                new_of = np.empty(n, np.int64)
                new_of[ids[types == t]] = np.flatnonzero(types == t)
                part_of = _part_of(new_of, self.node_ranges)
                self.r.expect(np.array_equal(part_of, np.asarray(assignment[ntype])),
                              f"node type {ntype!r}: nodes are not in their assigned partitions")
        self.r.checked["nodes"] = int((types >= 0).sum())

    def _check_partition(self, p: int, part: PartitionFiles, node_orig: tuple[Any, Any],
                         edges_seen: dict[str, npt.NDArray[np.int64]]) -> None:
        r = self.r
        lo, hi = int(self.node_ranges[p, 0, 0]), int(self.node_ranges[p, -1, 1])
        n_inner = hi - lo
        nid = part.ndata.get("_ID")
        if not r.expect(nid is not None and "inner_node" in part.ndata and "_ID" in part.edata,
                        f"part{p}: graph.dgl lacks _ID / inner_node / edge _ID"):
            return
        assert nid is not None
        inner = part.ndata["inner_node"]
        r.expect(np.array_equal(nid[:n_inner], np.arange(lo, hi)),
                 f"part{p}: inner nodes are not first with _ID = {lo} + k")
        r.expect(bool((inner[:n_inner] == 1).all() and (inner[n_inner:] == 0).all()),
                 f"part{p}: inner_node is not 1 for the first {n_inner} nodes and 0 after")
        halo = nid[n_inner:]
        r.expect(bool(((halo < lo) | (halo >= hi)).all()), f"part{p}: a HALO node is owned by part{p}")
        types, ids = node_orig
        if "_TYPE" in part.ndata:
            r.expect(np.array_equal(part.ndata["_TYPE"], types[nid]), f"part{p}: node _TYPE disagrees with node_map")
        self._check_edges(p, part, types, ids, lo, hi, edges_seen)
        self._check_features(p, part, ids)

    def _check_edges(self, p: int, part: PartitionFiles, types: Any, ids: Any, lo: int, hi: int,
                     edges_seen: dict[str, npt.NDArray[np.int64]]) -> None:
        r = self.r
        e_lo, e_hi = int(self.edge_ranges[p, 0, 0]), int(self.edge_ranges[p, -1, 1])
        eid = part.edata["_ID"]
        r.expect(np.array_equal(eid, np.arange(e_lo, e_hi)),
                 f"part{p}: edge _ID is not {e_lo}..{e_hi - 1} in local order")
        if eid.shape[0] != e_hi - e_lo:
            return
        n_inner = hi - lo
        nid = part.ndata["_ID"]
        used_halo = np.unique(part.src[part.src >= n_inner])
        r.expect(used_halo.shape[0] == nid.shape[0] - n_inner,
                 f"part{p}: HALO nodes are not exactly the non-owned sources of owned edges")
        r.expect(bool((part.dst < n_inner).all()), f"part{p}: an edge's destination is not an inner node")
        for k, etype in enumerate(self.etypes):
            s, e = (int(x) for x in self.edge_ranges[p, k])
            orig = part.orig_eids.get(etype, np.zeros(0, np.int64))  # type: ignore[union-attr]
            if not r.expect(orig.shape == (e - s,), f"part{p}: orig_eids[{etype!r}] has {orig.shape[0]}"
                            f" entries, edge_map says {e - s}"):
                continue
            if "_TYPE" in part.edata:
                r.expect(bool((part.edata["_TYPE"][s - e_lo:e - e_lo] == k).all()),
                         f"part{p}: edge _TYPE disagrees with edge_map for {etype!r}")
            np.add.at(edges_seen[etype], orig, 1)
            spec = self.meta.etype(etype)
            truth_src, truth_dst = self._truth_edges(etype)
            src_new = nid[part.src[s - e_lo:e - e_lo]]
            dst_new = nid[part.dst[s - e_lo:e - e_lo]]
            ok = (np.array_equal(types[src_new], np.full(e - s, self.meta.ntype_id(spec.src_type)))
                  and np.array_equal(ids[src_new], truth_src[orig])
                  and np.array_equal(types[dst_new], np.full(e - s, self.meta.ntype_id(spec.dst_type)))
                  and np.array_equal(ids[dst_new], truth_dst[orig]))
            r.expect(ok, f"part{p}: edges of {etype!r} do not match the input edges named by orig_eids")
            self.r.checked["edges"] = self.r.checked.get("edges", 0) + (e - s)

    def _check_features(self, p: int, part: PartitionFiles, ids: Any) -> None:
        for kind, data, feats, ranges, orig in (
            ("node", self.meta.node_data, part.node_feats, self.node_ranges, part.orig_nids),
            ("edge", self.meta.edge_data, part.edge_feats, self.edge_ranges, part.orig_eids),
        ):
            names = self.ntypes if kind == "node" else self.etypes
            expected_keys = {f"{t}/{f}" for t, fs_ in data.items() for f in fs_}
            self.r.expect(set(feats) == expected_keys,
                          f"part{p}: {kind}_feat.dgl keys {sorted(feats)} != {sorted(expected_keys)}")
            for t, fs_ in data.items():
                k = names.index(t)
                s, e = (int(x) for x in ranges[p, k])
                for f in fs_:
                    got = feats.get(f"{t}/{f}")
                    want = self._truth_feature(kind, t, f)[orig[t]]  # type: ignore[index]
                    if want.dtype == np.bool_:
                        want = want.astype(np.uint8)
                    self.r.expect(got is not None and got.shape[0] == e - s and got.dtype == want.dtype
                                  and np.array_equal(got, want),
                                  f"part{p}: {kind} feature {t}/{f} rows differ from the input")

    def _truth_edges(self, etype: str) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
        cache = self.__dict__.setdefault("_edges", {})
        if etype not in cache:
            pieces = [read_edge_chunk(ref.path, fmt=ref.fmt, options=ref.options,
                                      storage_options=ref.storage_options)
                      for ref in self.graph.edge_chunks(etype)]
            cache[etype] = (np.concatenate([p[0] for p in pieces] or [np.zeros(0, np.int64)]),
                            np.concatenate([p[1] for p in pieces] or [np.zeros(0, np.int64)]))
        return cache[etype]  # type: ignore[no-any-return]

    def _truth_feature(self, kind: str, type_name: str, feat: str) -> npt.NDArray[Any]:
        refs = (self.graph.node_feature_chunks(type_name, feat) if kind == "node"
                else self.graph.edge_feature_chunks(type_name, feat))
        return np.concatenate([np.asarray(read_feature_chunk(ref.path, fmt=ref.fmt, options=ref.options,
                                                             storage_options=ref.storage_options))
                               for ref in refs])


def _ranges(mapping: Mapping[str, list[list[int]]], names: list[str], num_parts: int) -> npt.NDArray[np.int64]:
    out = np.zeros((num_parts, len(names), 2), np.int64)
    for t, name in enumerate(names):
        out[:, t, :] = np.asarray(mapping[name], np.int64).reshape(num_parts, 2)
    return out


def _check_contiguous(ranges: npt.NDArray[np.int64], what: str, report: VerifyReport) -> None:
    flat = ranges.reshape(-1, 2)
    report.expect(bool(flat.size == 0 or (flat[0, 0] == 0 and (flat[1:, 0] == flat[:-1, 1]).all()
                                          and (flat[:, 1] >= flat[:, 0]).all())),
                  f"{what} ranges are not contiguous partition-major, type-major from 0")


def _part_of(new_ids: npt.NDArray[np.int64], ranges: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
    starts = np.append(ranges[:, 0, 0], ranges[-1, -1, 1])
    return np.searchsorted(starts[:-1], new_ids, side="right") - 1
