"""Regenerate torch221_hetero.pt with real torch (run in the DGL 2.1.0 / torch 2.2.1 venv).

    ~/.cache/dgl_chunked/dgl210/bin/python tests/data/graphbolt/make_reference.py DIR

writes DIR/hetero.pt (the archive's top directory is the file stem, "hetero").
``tests/io/test_graphbolt.py`` writes the same graph with our writer and compares bytes.
"""

import sys

import torch
from dgl import graphbolt as gb

g = gb.fused_csc_sampling_graph(
    torch.tensor([0, 2, 5, 7, 8], dtype=torch.int32),
    torch.tensor([1, 3, 0, 1, 2, 0, 3, 2], dtype=torch.int32),
    type_per_edge=torch.tensor([0, 1, 0, 1, 1, 0, 0, 0], dtype=torch.int8),
    node_type_to_id={"n1": 0, "n2": 1},
    edge_type_to_id={"n1:e1:n2": 0, "n2:e2:n1": 1},
    node_attributes={
        "_ID": torch.arange(4, dtype=torch.int64),
        "inner_node": torch.tensor([1, 1, 0, 1], dtype=torch.uint8),
    },
    edge_attributes={"_ID": torch.arange(8, dtype=torch.int64)},
)
torch.save(g, f"{sys.argv[1]}/hetero.pt")
