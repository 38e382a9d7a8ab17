"""Block-wise lookups into Zarr arrays equal plain fancy indexing."""

from __future__ import annotations

import numpy as np
import zarr
from hypothesis import given, settings
from hypothesis import strategies as st

from dgl_chunked.io.zarr_lookup import create_1d, lookup


@settings(max_examples=40, deadline=None)
@given(length=st.integers(1, 400), chunk=st.integers(1, 50), count=st.integers(0, 300),
       seed=st.integers(0, 2**16))
def test_lookup_equals_fancy_indexing(tmp_path_factory, length, chunk, count, seed):
    store = str(tmp_path_factory.mktemp("z"))
    values = np.random.default_rng(seed).integers(-(10**12), 10**12, length)
    arr = create_1d(store, "v", length=length, dtype="int64", chunk=chunk)
    arr[:] = values
    ids = np.random.default_rng(seed + 1).integers(0, length, count)
    got = lookup(zarr.open_array(store, path="v", mode="r"), ids)
    np.testing.assert_array_equal(got, values[ids])
    assert got.dtype == np.int64
