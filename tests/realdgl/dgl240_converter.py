"""DGL v2.4.0's GraphBolt converter and ``_find_edges``, verbatim, to run inside DGL 2.1.0.

DGL 2.4.0 is not on PyPI (the newest there is 2.2.1), so the real-DGL tier runs DGL
v2.4.0's own source (tag v2.4.0, commit c6c874bf7ea085beb04ea1487cfd216a0bacd6c1,
Apache License 2.0, (c) the DGL authors) on top of the DGL 2.1.0 side virtualenv:

- ``python/dgl/distributed/partition.py`` lines 1354-1657: ``DTYPES_TO_CHECK``,
  ``_cast_to_minimum_dtype``, ``is_homogeneous``, ``init_type_per_edge``,
  ``gb_convert_single_dgl_partition``, ``dgl_partition_to_graphbolt``;
- ``python/dgl/distributed/graph_services.py`` lines 337-366: ``_find_edges`` (what
  ``DistGraph.find_edges`` and so ``DistEdgeDataLoader`` run on a partition);
- ``python/dgl/distributed/dist_graph.py`` lines 1392-1432: ``DistGraph.find_edges``
  (v2.1.0's refuses GraphBolt with an assertion; v2.4.0's is otherwise the same), under
  a stand-in class whose method ``dgl_side_gb24.py`` binds to DGL 2.1's ``DistGraph``.

Only the imports below are ours. Everything these functions call from DGL is
byte-identical in v2.1.0 and v2.4.0 (``load_partition``, ``load_partition_book``,
``_load_part_config``, ``_dump_part_config``, ``RESERVED_FIELD_DTYPE``), except
GraphBolt's C++ ``fused_csc_sampling_graph``/``expand_indptr``, whose pickle is the same
(``docs/spec/graphbolt.md``). ``DGL2GB_EID`` / ``GB_DST_ID`` are v2.4.0's
``dgl/distributed/constants.py`` values. Loaded only by ``dgl_side_gb24.py``.
"""

# ruff: noqa
# fmt: off
# mypy: ignore-errors
import concurrent
import concurrent.futures
import copy
import multiprocessing as mp
import os
from functools import partial

import torch

from dgl import backend as F, graphbolt as gb
from dgl.base import dgl_warning, EID, ETYPE, NID, NTYPE
from dgl.distributed.partition import (
    RESERVED_FIELD_DTYPE,
    _dump_part_config,
    _load_part_config,
    load_partition,
    load_partition_book,
)

DGL2GB_EID = "_dgl2gb_eid"
GB_DST_ID = "_gb_dst_id"


# ---- python/dgl/distributed/partition.py @ v2.4.0, lines 1354-1657 ----
# [TODO][Rui] Due to int64_t is expected in RPC, we have to limit the data type
# of node/edge IDs to int64_t. See more details in #7175.
DTYPES_TO_CHECK = {
    "default": [torch.int32, torch.int64],
    NID: [torch.int64],
    EID: [torch.int64],
    NTYPE: [torch.int8, torch.int16, torch.int32, torch.int64],
    ETYPE: [torch.int8, torch.int16, torch.int32, torch.int64],
    "inner_node": [torch.uint8],
    "inner_edge": [torch.uint8],
    "part_id": [torch.int8, torch.int16, torch.int32, torch.int64],
}


def _cast_to_minimum_dtype(predicate, data, field=None):
    if data is None:
        return data
    dtypes_to_check = DTYPES_TO_CHECK.get(field, DTYPES_TO_CHECK["default"])
    if data.dtype not in dtypes_to_check:
        dgl_warning(
            f"Skipping as the data type of field {field} is {data.dtype}, "
            f"while supported data types are {dtypes_to_check}."
        )
        return data
    for dtype in dtypes_to_check:
        if predicate < torch.iinfo(dtype).max:
            return data.to(dtype)
    return data


# Utility functions.
def is_homogeneous(ntypes, etypes):
    """Checks if the provided ntypes and etypes form a homogeneous graph."""
    return len(ntypes) == 1 and len(etypes) == 1


def init_type_per_edge(graph, gpb):
    """Initialize edge ids for every edge type."""
    etype_ids = gpb.map_to_per_etype(graph.edata[EID])[0]
    return etype_ids


def gb_convert_single_dgl_partition(
    part_id,
    graph_formats,
    part_config,
    store_eids,
    store_inner_node,
    store_inner_edge,
):
    """Converts a single DGL partition to GraphBolt.

    Parameters
    ----------
    part_id : int
        The numerical ID of the partition to convert.
    graph_formats : str or list[str], optional
        Save partitions in specified formats. It could be any combination of
        `coo`, `csc`. As `csc` format is mandatory for `FusedCSCSamplingGraph`,
        it is not necessary to specify this argument. It's mainly for
        specifying `coo` format to save edge ID mapping and destination node
        IDs. If not specified, whether to save `coo` format is determined by
        the availability of the format in DGL partitions. Default: None.
    store_eids : bool, optional
        Whether to store edge IDs in the new graph. Default: True.
    store_inner_node : bool, optional
        Whether to store inner node mask in the new graph. Default: False.
    store_inner_edge : bool, optional
        Whether to store inner edge mask in the new graph. Default: False.
    """
    debug_mode = "DGL_DIST_DEBUG" in os.environ
    if debug_mode:
        dgl_warning(
            "Running in debug mode which means all attributes of DGL partitions"
            " will be saved to the new format."
        )

    part_meta = _load_part_config(part_config)
    num_parts = part_meta["num_parts"]

    graph, _, _, gpb, _, _, _ = load_partition(
        part_config, part_id, load_feats=False
    )
    _, _, ntypes, etypes = load_partition_book(part_config, part_id)
    is_homo = is_homogeneous(ntypes, etypes)
    node_type_to_id = (
        None if is_homo else {ntype: ntid for ntid, ntype in enumerate(ntypes)}
    )
    edge_type_to_id = (
        None
        if is_homo
        else {
            gb.etype_tuple_to_str(etype): etid for etype, etid in etypes.items()
        }
    )
    # Obtain CSC indtpr and indices.
    indptr, indices, edge_ids = graph.adj_tensors("csc")

    # Save node attributes. Detailed attributes are shown below.
    #  DGL_GB\Attributes  dgl.NID("_ID")  dgl.NTYPE("_TYPE")  "inner_node"  "part_id"
    #  DGL_Homograph           ✅                🚫                  ✅          ✅
    #  GB_Homograph            ✅                🚫               optional       🚫
    #  DGL_Heterograph         ✅                ✅                  ✅          ✅
    #  GB_Heterograph          ✅                🚫               optional       🚫
    required_node_attrs = [NID]
    if store_inner_node:
        required_node_attrs.append("inner_node")
    if debug_mode:
        required_node_attrs = list(graph.ndata.keys())
    node_attributes = {attr: graph.ndata[attr] for attr in required_node_attrs}

    # Save edge attributes. Detailed attributes are shown below.
    #  DGL_GB\Attributes  dgl.EID("_ID")  dgl.ETYPE("_TYPE")  "inner_edge"
    #  DGL_Homograph           ✅               🚫                  ✅
    #  GB_Homograph         optional            🚫               optional
    #  DGL_Heterograph         ✅               ✅                  ✅
    #  GB_Heterograph       optional            ✅               optional
    type_per_edge = None
    if not is_homo:
        type_per_edge = init_type_per_edge(graph, gpb)[edge_ids]
        type_per_edge = type_per_edge.to(RESERVED_FIELD_DTYPE[ETYPE])
    required_edge_attrs = []
    if store_eids:
        required_edge_attrs.append(EID)
    if store_inner_edge:
        required_edge_attrs.append("inner_edge")
    if debug_mode:
        required_edge_attrs = list(graph.edata.keys())
    edge_attributes = {
        attr: graph.edata[attr][edge_ids] for attr in required_edge_attrs
    }
    # When converting DGLGraph to FusedCSCSamplingGraph, edge IDs are
    # re-ordered(actually FusedCSCSamplingGraph does not have edge IDs
    # in nature). So we need to save such re-order info for any
    # operations that uses original local edge IDs. For now, this is
    # required by `DistGraph.find_edges()` for link prediction tasks.
    #
    # What's more, in order to find the dst nodes efficiently, we save
    # dst nodes directly in the edge attributes.
    #
    # So we require additional `(2 * E) * dtype` space in total.
    if graph_formats is not None and isinstance(graph_formats, str):
        graph_formats = [graph_formats]
    save_coo = (
        graph_formats is None and "coo" in graph.formats()["created"]
    ) or (graph_formats is not None and "coo" in graph_formats)
    if save_coo:
        edge_attributes[DGL2GB_EID] = torch.argsort(edge_ids)
        edge_attributes[GB_DST_ID] = gb.expand_indptr(
            indptr, dtype=indices.dtype
        )

    # Cast various data to minimum dtype.
    # Cast 1: indptr.
    indptr = _cast_to_minimum_dtype(graph.num_edges(), indptr)
    # Cast 2: indices.
    indices = _cast_to_minimum_dtype(graph.num_nodes(), indices)
    # Cast 3: type_per_edge.
    type_per_edge = _cast_to_minimum_dtype(
        len(etypes), type_per_edge, field=ETYPE
    )
    # Cast 4: node/edge_attributes.
    predicates = {
        NID: part_meta["num_nodes"],
        "part_id": num_parts,
        NTYPE: len(ntypes),
        EID: part_meta["num_edges"],
        ETYPE: len(etypes),
        DGL2GB_EID: part_meta["num_edges"],
        GB_DST_ID: part_meta["num_nodes"],
    }
    for attributes in [node_attributes, edge_attributes]:
        for key in attributes:
            if key not in predicates:
                continue
            attributes[key] = _cast_to_minimum_dtype(
                predicates[key], attributes[key], field=key
            )

    csc_graph = gb.fused_csc_sampling_graph(
        indptr,
        indices,
        node_type_offset=None,
        type_per_edge=type_per_edge,
        node_attributes=node_attributes,
        edge_attributes=edge_attributes,
        node_type_to_id=node_type_to_id,
        edge_type_to_id=edge_type_to_id,
    )
    orig_graph_path = os.path.join(
        os.path.dirname(part_config),
        part_meta[f"part-{part_id}"]["part_graph"],
    )
    csc_graph_path = os.path.join(
        os.path.dirname(orig_graph_path), "fused_csc_sampling_graph.pt"
    )
    torch.save(csc_graph, csc_graph_path)

    return os.path.relpath(csc_graph_path, os.path.dirname(part_config))
    # Update graph path.


def dgl_partition_to_graphbolt(
    part_config,
    *,
    store_eids=True,
    store_inner_node=False,
    store_inner_edge=False,
    graph_formats=None,
    n_jobs=1,
):
    """Convert partitions of dgl to FusedCSCSamplingGraph of GraphBolt.

    This API converts `DGLGraph` partitions to `FusedCSCSamplingGraph` which is
    dedicated for sampling in `GraphBolt`. New graphs will be stored alongside
    original graph as `fused_csc_sampling_graph.pt`.

    In the near future, partitions are supposed to be saved as
    `FusedCSCSamplingGraph` directly. At that time, this API should be deprecated.

    Parameters
    ----------
    part_config : str
        The partition configuration JSON file.
    store_eids : bool, optional
        Whether to store edge IDs in the new graph. Default: True.
    store_inner_node : bool, optional
        Whether to store inner node mask in the new graph. Default: False.
    store_inner_edge : bool, optional
        Whether to store inner edge mask in the new graph. Default: False.
    graph_formats : str or list[str], optional
        Save partitions in specified formats. It could be any combination of
        `coo`, `csc`. As `csc` format is mandatory for `FusedCSCSamplingGraph`,
        it is not necessary to specify this argument. It's mainly for
        specifying `coo` format to save edge ID mapping and destination node
        IDs. If not specified, whether to save `coo` format is determined by
        the availability of the format in DGL partitions. Default: None.
    n_jobs: int
        Number of parallel jobs to run during partition conversion. Max parallelism
        is determined by the partition count.
    """
    debug_mode = "DGL_DIST_DEBUG" in os.environ
    if debug_mode:
        dgl_warning(
            "Running in debug mode which means all attributes of DGL partitions"
            " will be saved to the new format."
        )
    part_meta = _load_part_config(part_config)
    new_part_meta = copy.deepcopy(part_meta)
    num_parts = part_meta["num_parts"]

    # [Rui] DGL partitions are always saved as homogeneous graphs even though
    # the original graph is heterogeneous. But heterogeneous information like
    # node/edge types are saved as node/edge data alongside with partitions.
    # What needs more attention is that due to the existence of HALO nodes in
    # each partition, the local node IDs are not sorted according to the node
    # types. So we fail to assign ``node_type_offset`` as required by GraphBolt.
    # But this is not a problem since such information is not used in sampling.
    # We can simply pass None to it.

    # Iterate over partitions.
    convert_with_format = partial(
        gb_convert_single_dgl_partition,
        graph_formats=graph_formats,
        part_config=part_config,
        store_eids=store_eids,
        store_inner_node=store_inner_node,
        store_inner_edge=store_inner_edge,
    )
    # Need to create entirely new interpreters, because we call C++ downstream
    # See https://docs.python.org/3.12/library/multiprocessing.html#contexts-and-start-methods
    # and https://pybind11.readthedocs.io/en/stable/advanced/misc.html#global-interpreter-lock-gil
    rel_path_results = []
    if n_jobs > 1 and num_parts > 1:
        mp_ctx = mp.get_context("spawn")
        with concurrent.futures.ProcessPoolExecutor(  # pylint: disable=unexpected-keyword-arg
            max_workers=min(num_parts, n_jobs),
            mp_context=mp_ctx,
        ) as executor:
            futures = []
            for part_id in range(num_parts):
                futures.append(executor.submit(convert_with_format, part_id))

        for part_id in range(num_parts):
            rel_path_results.append(futures[part_id].result())
    else:
        # If running single-threaded, avoid spawning new interpreter, which is slow
        for part_id in range(num_parts):
            rel_path_results.append(convert_with_format(part_id))

    for part_id in range(num_parts):
        # Update graph path.
        new_part_meta[f"part-{part_id}"][
            "part_graph_graphbolt"
        ] = rel_path_results[part_id]

    # Save dtype info into partition config.
    # [TODO][Rui] Always use int64_t for node/edge IDs in GraphBolt. See more
    # details in #7175.
    new_part_meta["node_map_dtype"] = "int64"
    new_part_meta["edge_map_dtype"] = "int64"

    _dump_part_config(part_config, new_part_meta)
    print(f"Converted partitions to GraphBolt format into {part_config}")


# ---- python/dgl/distributed/graph_services.py @ v2.4.0, lines 337-366 ----
def _find_edges(local_g, partition_book, seed_edges):
    """Given an edge ID array, return the source
    and destination node ID array ``s`` and ``d`` in the local partition.
    """
    local_eids = partition_book.eid2localeid(seed_edges, partition_book.partid)
    if isinstance(local_g, gb.FusedCSCSamplingGraph):
        # When converting from DGLGraph to FusedCSCSamplingGraph, the edge IDs
        # are re-ordered. In order to find the correct node pairs, we need to
        # map the DGL edge IDs back to GraphBolt edge IDs.
        if (
            DGL2GB_EID not in local_g.edge_attributes
            or GB_DST_ID not in local_g.edge_attributes
        ):
            raise ValueError(
                "The edge attributes DGL2GB_EID and GB_DST_ID are not found. "
                "Please make sure `coo` format is available when generating "
                "partitions in GraphBolt format."
            )
        local_eids = local_g.edge_attributes[DGL2GB_EID][local_eids]
        local_src = local_g.indices[local_eids]
        local_dst = local_g.edge_attributes[GB_DST_ID][local_eids]
        global_nid_mapping = local_g.node_attributes[NID]
    else:
        local_eids = F.astype(local_eids, local_g.idtype)
        local_src, local_dst = local_g.find_edges(local_eids)
        global_nid_mapping = local_g.ndata[NID]
    global_src = global_nid_mapping[local_src]
    global_dst = global_nid_mapping[local_dst]
    return global_src, global_dst


# ---- python/dgl/distributed/dist_graph.py @ v2.4.0, lines 1392-1432: DistGraph.find_edges ----
# (v2.1.0's is the same plus 'assert self._use_graphbolt is False'; dgl_side_gb24.py binds this one)
from dgl.distributed.graph_services import find_edges as dist_find_edges


class DistGraph:
    def find_edges(self, edges, etype=None):
        """Given an edge ID array, return the source
        and destination node ID array ``s`` and ``d``.  ``s[i]`` and ``d[i]``
        are source and destination node ID for edge ``eid[i]``.

        Parameters
        ----------
        edges : Int Tensor
            Each element is an ID. The tensor must have the same device type
              and ID data type as the graph's.

        etype : str or (str, str, str), optional
            The type names of the edges. The allowed type name formats are:

            * ``(str, str, str)`` for source node type, edge type and destination node type.
            * or one ``str`` edge type name if the name can uniquely identify a
              triplet format in the graph.

            Can be omitted if the graph has only one type of edges.

        Returns
        -------
        tensor
            The source node ID array.
        tensor
            The destination node ID array.
        """
        if etype is None:
            assert (
                len(self.etypes) == 1
            ), "find_edges requires etype for heterogeneous graphs."

        gpb = self.get_partition_book()
        if len(gpb.etypes) > 1:
            edges = gpb.map_to_homo_eid(edges, etype)
        src, dst = dist_find_edges(self, edges)
        if len(gpb.ntypes) > 1:
            _, src = gpb.map_to_per_ntype(src)
            _, dst = gpb.map_to_per_ntype(dst)
        return src, dst
