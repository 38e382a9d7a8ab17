"""Kernel unit tests (pure numpy): hashing, buckets, dedup, key lookup, fills and casts."""

from __future__ import annotations

import numpy as np
import pytest

from dgl_chunked.chunk import kernels as tf


@pytest.mark.parametrize("seed", range(4))
def test_duplicate_rows_keeps_the_first_by_original_order(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(0, 60))
    src, dst = rng.integers(0, 5, n), rng.integers(0, 5, n)
    task = np.sort(rng.integers(0, 3, n))
    row = np.concatenate([np.arange(c) for c in np.bincount(task, minlength=3)]).astype(np.int64)
    order = rng.permutation(n)  # the kernel must not depend on input order
    got = tf.duplicate_rows(task[order], row[order], src[order], dst[order])
    seen, expect = set(), []
    for i in range(n):  # task-major, row-minor = original order
        if (src[i], dst[i]) in seen:
            expect.append(i)
        seen.add((src[i], dst[i]))
    assert sorted(order[got].tolist()) == expect


def test_duplicate_rows_of_nothing():
    empty = np.empty(0, np.int64)
    assert tf.duplicate_rows(empty, empty, empty, empty).size == 0


@pytest.mark.parametrize("keys", [np.array([10, 3, 7], np.int64), np.array(["b", "a", "long-key"], dtype=object)])
def test_lookup_keys_and_missing(keys):
    ids = np.array([4, 5, 6])
    query = np.concatenate([keys[[2, 0, 0]], np.array(["zz" if keys.dtype == object else 99], dtype=keys.dtype)])
    np.testing.assert_array_equal(tf.lookup_keys(keys, ids, query), [6, 4, 4, -1])
    assert tf.lookup_keys(keys, ids, keys[:0]).size == 0
    assert (tf.lookup_keys(keys[:0], ids[:0], keys) == -1).all()


def test_key_buckets_are_deterministic_and_in_range():
    keys = np.array([f"k{i}" for i in range(200)], dtype=object)
    a, b = tf.key_buckets(keys, 7), tf.key_buckets(keys[::-1].copy(), 7)[::-1]
    np.testing.assert_array_equal(a, b)
    assert a.min() >= 0 and a.max() < 7 and len(set(a.tolist())) == 7
    ints = tf.key_buckets(np.arange(100, dtype=np.int64), 3)
    assert set(ints.tolist()) == {0, 1, 2}


def test_bucket_order_is_stable_with_bounds():
    buckets = np.array([2, 0, 2, 1, 0])
    order, offsets = tf.bucket_order(buckets, 4)
    np.testing.assert_array_equal(order, [1, 4, 3, 0, 2])
    np.testing.assert_array_equal(offsets, [0, 2, 3, 5, 5])


def test_pair_buckets_separate_direction():
    src, dst = np.arange(1000), np.arange(1000)[::-1]
    a, b = tf.pair_buckets(src, dst, 16), tf.pair_buckets(dst, src, 16)
    assert a.min() >= 0 and a.max() < 16 and (a != b).any()
    np.testing.assert_array_equal(a, tf.pair_buckets(src.copy(), dst.copy(), 16))


def test_first_duplicate_key():
    keys = np.array(["a", "b", "c", "b", "a"], dtype=object)
    assert tf.first_duplicate_key(keys, np.array([4, 1, 2, 3, 0])) == ("a", 0, 4)
    assert tf.first_duplicate_key(keys[:3], np.arange(3)) is None


def test_fill_cast_and_self_loops():
    rows = tf.fill_rows(3, (2,), np.dtype("float16"), 0.5)
    assert rows.dtype == np.float16 and rows.shape == (3, 2) and (rows == 0.5).all()
    assert tf.fill_rows(2, (), np.dtype(bool), 1.0).tolist() == [True, True]
    x = np.arange(4.0)
    assert tf.cast_rows(x, None) is x and tf.cast_rows(x, np.dtype("int8")).dtype == np.int8
    s, d = tf.self_loop_edges(3, 6)
    assert s.tolist() == d.tolist() == [3, 4, 5]
