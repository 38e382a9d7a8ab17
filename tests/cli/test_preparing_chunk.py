"""The ``dgl-chunked chunk`` command."""

from __future__ import annotations

import json

import numpy as np

from dgl_chunked.cli import main
from dgl_chunked.io.chunked.metadata import read_metadata


def test_chunk_command_writes_a_valid_graph(tmp_path, capsys):
    np.save(tmp_path / "e.npy", np.array([[0, 1, 2, 2], [1, 2, 2, 0]]))
    np.save(tmp_path / "f.npy", np.eye(3, dtype=np.float64))
    (tmp_path / "spec.json").write_text(
        json.dumps(
            {
                "graph_name": "cli",
                "node_types": {"n": {"features": {"f": {"path": "f.npy", "dtype": "float32"}}}},
                "edge_types": {"n:e:n": {"source": "e.npy", "reverse": True, "self_loops": "remove"}},
            }
        )
    )
    args = ["chunk", "--spec", str(tmp_path / "spec.json"), "--out-dir", str(tmp_path / "out"), "--num-chunks", "2"]
    assert main(args) == 0
    assert "wrote 'cli'" in capsys.readouterr().out
    meta = read_metadata(tmp_path / "out")
    assert meta.edge_type_names == ("n:e:n", "n:rev-e:n")
    assert meta.num_edges_per_type == (3, 3)
    assert main(["validate", "--in-dir", str(tmp_path / "out")]) == 0
    assert main(args) == 1  # exists
    assert main([*args, "--overwrite"]) == 0
