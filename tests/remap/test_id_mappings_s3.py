"""raw_id_mappings on an object store (moto S3): carried by run, found by lookup and remap next to the partitions."""

from __future__ import annotations

import warnings
from pathlib import Path

import dask
import numpy as np
import pandas as pd
import pytest

import dgl_chunked as dglc
from dgl_chunked.errors import EmptyPartitionWarning
from dgl_chunked.lookup import lookup_ids
from dgl_chunked.remap import remap_results
from dgl_chunked.verify import load_partition_output

from ..conftest import moto_s3
from .gsp_mappings import string_ids, write_mapping

pytest.importorskip("s3fs")
pytest.importorskip("moto.server")

BUCKET = "dglc-idmap"


def test_mappings_carried_and_used_on_s3(tmp_path: Path) -> None:
    import s3fs

    with moto_s3(BUCKET) as (_, options), dask.config.set(scheduler="synchronous"):
        s3 = s3fs.S3FileSystem(**options)
        spec = dglc.SynthSpec.homogeneous(300, 1500, feat_dim=4, num_chunks=2)
        dglc.write_synthetic_graph(tmp_path / "small", spec)
        users = string_ids(300, 5)
        write_mapping(tmp_path / "small" / "raw_id_mappings", "_N", users, files=3, seed=6)
        s3.put(str(tmp_path / "small"), f"{BUCKET}/small", recursive=True)
        graph = dglc.open_chunked_graph(f"s3://{BUCKET}/small", storage_options=options)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", EmptyPartitionWarning)
            dglc.run(
                graph,
                f"s3://{BUCKET}/out",
                num_parts=2,
                storage_options=options,
                options=dglc.DispatchOptions(save_orig_nids=True),
            )
        local = sorted(p.relative_to(tmp_path / "small") for p in (tmp_path / "small/raw_id_mappings").rglob("*"))
        carried = sorted(k.split(f"{BUCKET}/out/", 1)[1] for k in s3.find(f"{BUCKET}/out/raw_id_mappings"))
        assert carried == [str(p) for p in local if (tmp_path / "small" / p).is_file()]
        assert not s3.exists(f"{BUCKET}/out/_tmp_raw_id_mappings")
        s3.get(f"{BUCKET}/out", str(tmp_path / "out"), recursive=True)
        orig = np.concatenate([p.orig_nids["_N"] for p in load_partition_output(tmp_path / "out")[1]])

        pick = np.random.default_rng(1).choice(300, size=40, replace=False)
        queries = pd.DataFrame({"id": users[pick]})
        seeds = lookup_ids(f"s3://{BUCKET}/out", queries, f"s3://{BUCKET}/seeds", storage_options=options)
        assert sum(seeds.rows) == 40
        s3.get(f"{BUCKET}/seeds", str(tmp_path / "seeds"), recursive=True)
        got = np.concatenate([np.load(tmp_path / "seeds" / f"part{p}" / "_N.orig_nids.npy") for p in range(2)])
        np.testing.assert_array_equal(np.sort(got), np.sort(pick))

        np.save(tmp_path / "pred.npy", orig.astype(np.float64))  # row i (new ID i) = its original ID
        remap_results(
            f"s3://{BUCKET}/out",
            {"_N": str(tmp_path / "pred.npy")},
            tmp_path / "remapped",
            format="parquet",
            storage_options=options,
        )
    table = pd.read_parquet(tmp_path / "remapped" / "nodes" / "_N")
    np.testing.assert_array_equal(table["value"].to_numpy(), table["type_nid"].to_numpy().astype(np.float64))
    np.testing.assert_array_equal(table["nid"].to_numpy(), users[table["type_nid"].to_numpy()])
