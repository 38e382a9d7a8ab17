"""The issue-21 table on S3 (moto): nothing the tool did not write is deleted or altered.

Same rules as ``tests/behaviour/test_ownership.py`` through the Python API on the synchronous
scheduler: an output prefix holding a foreign object is refused, ``overwrite`` never
removes a foreign object, an output containing the input is refused, a bucket root
given as the staging location gets a marked ``dglc-staging-*`` prefix that is removed
afterwards (the bucket and its other objects stay), a second run on a leased output is
refused. Every foreign object is compared byte for byte afterwards.
"""

from __future__ import annotations

import json
import os
import shutil
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

pytest.importorskip("s3fs")
pytest.importorskip("moto.server")

from dgl_chunked.chunk import chunk_graph
from dgl_chunked.dispatch import DispatchOptions, dispatch
from dgl_chunked.errors import EmptyPartitionWarning, OutputExistsError
from dgl_chunked.io.assignment import write_assignment
from dgl_chunked.io.chunked.graph import open_chunked_graph
from dgl_chunked.parmetis import export_parmetis
from dgl_chunked.partition import assign_partitions
from dgl_chunked.storage.owned import (
    MARKER_NAME,
    ForeignDataError,
    LeaseHeldError,
    OverlapError,
    acquire_lease,
    create_owned_dir,
    read_marker,
    remove_owned,
)
from dgl_chunked.synth import SynthSpec, write_synthetic_graph
from tests.conftest import make_bucket

from .test_s3 import S3, s3  # noqa: F401  (the moto fixture)

USER = b"user object \x00\xff"
BUCKET = "dglc-own"


def _make_bucket(s3: S3, name: str) -> str:  # noqa: F811
    make_bucket(s3.options, name)
    s3.fs.invalidate_cache()
    return name


@pytest.fixture(scope="module")
def bucket(s3: S3) -> str:  # noqa: F811
    """A bucket of our own for these tests."""
    return _make_bucket(s3, BUCKET)


@pytest.fixture(scope="module")
def inputs(tmp_path_factory: pytest.TempPathFactory, golden_dir: Path) -> Path:
    d = tmp_path_factory.mktemp("own-s3")
    tiny = golden_dir / "tiny-pipeline"
    shutil.copytree(tiny / "chunked", d / "chunked")
    shutil.copytree(tiny / "partition_assignment", d / "assign")
    (d / "raw").mkdir()
    np.save(d / "raw" / "e.npy", np.array([[0, 1, 2, 2, 3], [1, 2, 2, 0, 4]]))
    spec = {"graph_name": "own", "node_types": {"n": {"count": 5}}, "edge_types": {"n:e:n": {"source": "e.npy"}}}
    (d / "raw" / "spec.json").write_text(json.dumps(spec))
    return d


def _objects(s3: S3, prefix: str) -> dict[str, bytes]:  # noqa: F811
    """Every object under ``bucket/prefix`` (markers aside) -> bytes."""
    return {k: s3.fs.cat_file(k) for k in sorted(s3.fs.find(prefix)) if not k.endswith(MARKER_NAME)}


def _put(s3: S3, key: str, data: bytes = USER) -> None:  # noqa: F811
    s3.fs.pipe_file(key, data)
    s3.fs.invalidate_cache()


# --- the writers, as the CLI calls them (url -> writes an output there) ---------------------------

Writer = Callable[[S3, Path, str, bool], Any]


def _synth(s3: S3, d: Path, url: str, overwrite: bool) -> Any:  # noqa: F811
    spec = SynthSpec.homogeneous(30, 90, feat_dim=2)
    return write_synthetic_graph(url, spec, overwrite=overwrite, storage_options=s3.options)


def _chunk(s3: S3, d: Path, url: str, overwrite: bool) -> Any:  # noqa: F811
    return chunk_graph(d / "raw" / "spec.json", url, num_chunks=2, overwrite=overwrite, storage_options=s3.options)


def _partition(s3: S3, d: Path, url: str, overwrite: bool) -> Any:  # noqa: F811
    graph = open_chunked_graph(d / "chunked")
    parts = assign_partitions(graph, 2)
    return write_assignment(
        url,
        parts,
        num_parts=2,
        algo_name="random",
        overwrite=overwrite,
        storage_options=s3.options,
        inputs=graph.input_locations(),
    )


def _export(s3: S3, d: Path, url: str, overwrite: bool) -> Any:  # noqa: F811
    return export_parmetis(open_chunked_graph(d / "chunked"), url, overwrite=overwrite, storage_options=s3.options)


def _dispatch(s3: S3, d: Path, url: str, overwrite: bool, staging: str | None = None) -> Any:  # noqa: F811
    # a local staging keeps it quick (moto answers in ~20 ms); the bucket-root test stages on S3
    opts = DispatchOptions(overwrite=overwrite, staging_dir=staging or str(d / "staging"))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", EmptyPartitionWarning)
        return dispatch(d / "chunked", d / "assign", url, options=opts, storage_options=s3.options)


WRITERS: dict[str, tuple[Writer, str]] = {
    "synth": (_synth, "synth"),
    "chunk": (_chunk, "chunk"),
    "partition": (_partition, "assignment"),
    "parmetis-export": (_export, "parmetis-export"),
    "dispatch": (_dispatch, "dispatch"),
}


@pytest.mark.parametrize("command", list(WRITERS))
def test_s3_output_holding_a_foreign_object_is_refused(
    command: str,
    s3: S3,  # noqa: F811
    bucket: str,
    inputs: Path,
) -> None:
    prefix = f"{bucket}/foreign-{command}"
    _put(s3, f"{prefix}/notes.txt")
    before = _objects(s3, prefix)
    with pytest.raises(ForeignDataError, match=r"notes\.txt"):
        WRITERS[command][0](s3, inputs, f"s3://{prefix}", False)
    assert _objects(s3, prefix) == before
    assert not s3.fs.exists(f"{prefix}/{MARKER_NAME}")


@pytest.mark.parametrize("command", list(WRITERS))
def test_s3_overwrite_keeps_foreign_objects_and_second_run_is_refused(
    command: str,
    s3: S3,  # noqa: F811
    bucket: str,
    inputs: Path,
) -> None:
    writer, kind = WRITERS[command]
    prefix = f"{bucket}/ours-{command}"
    url = f"s3://{prefix}"
    writer(s3, inputs, url, False)
    s3.fs.invalidate_cache()
    assert read_marker(url, storage_options=s3.options).kind == kind  # type: ignore[union-attr]
    if command != "parmetis-export":  # it only refuses files of the same name
        with pytest.raises(OutputExistsError):
            writer(s3, inputs, url, False)
    _put(s3, f"{prefix}/zz-user.txt")
    before = _objects(s3, prefix)
    with pytest.raises(ForeignDataError, match=r"zz-user\.txt"):
        writer(s3, inputs, url, True)
    assert _objects(s3, prefix) == before
    s3.fs.rm(f"{prefix}/zz-user.txt")
    s3.fs.invalidate_cache()
    held = pytest.raises(LeaseHeldError, match=rf"pid {os.getpid()}, started")
    with acquire_lease(url, kind, storage_options=s3.options), held:
        writer(s3, inputs, url, True)
    if command != "dispatch":  # (the local table reruns dispatch; on moto it takes ~20 s)
        writer(s3, inputs, url, True)  # free again


def test_s3_output_containing_the_input_is_refused(s3: S3, bucket: str, inputs: Path) -> None:  # noqa: F811
    s3.fs.put(str(inputs / "chunked"), f"{bucket}/work/chunked", recursive=True)
    s3.fs.put(str(inputs / "assign"), f"{bucket}/work/assign", recursive=True)
    s3.fs.invalidate_cache()
    before = _objects(s3, f"{bucket}/work")
    so = s3.options
    with pytest.raises(OverlapError, match="contains the chunked graph directory"):
        dispatch(f"s3://{bucket}/work/chunked", f"s3://{bucket}/work/assign", f"s3://{bucket}/work", storage_options=so)
    with pytest.raises(OverlapError, match="staging directory .* is inside the chunked graph directory"):
        dispatch(
            f"s3://{bucket}/work/chunked",
            f"s3://{bucket}/work/assign",
            f"s3://{bucket}/elsewhere",
            options=DispatchOptions(staging_dir=f"s3://{bucket}/work/chunked"),
            storage_options=so,
        )
    assert _objects(s3, f"{bucket}/work") == before
    assert not s3.fs.exists(f"{bucket}/elsewhere")


@pytest.mark.parametrize("command", ["dispatch", "chunk"])
def test_s3_bucket_root_as_staging_keeps_the_bucket_and_its_objects(
    command: str,
    s3: S3,  # noqa: F811
    inputs: Path,
    tmp_path: Path,
) -> None:
    root = _make_bucket(s3, f"dglc-root-{command}")
    _put(s3, f"{root}/team/data.bin", USER * 5)
    _put(s3, f"{root}/readme.txt")
    before = _objects(s3, root)
    out = tmp_path / "out"
    if command == "dispatch":
        _dispatch(s3, inputs, str(out), False, staging=f"s3://{root}")
    else:
        chunk_graph(
            inputs / "raw" / "spec.json", out, num_chunks=2, staging_dir=f"s3://{root}/", storage_options=s3.options
        )
    s3.fs.invalidate_cache()
    assert (out / "metadata.json").is_file()
    assert s3.fs.exists(root)
    assert _objects(s3, root) == before  # our dglc-*staging-* prefix is gone, nothing else changed
    assert sorted(s3.fs.ls(root, detail=False)) == [f"{root}/readme.txt", f"{root}/team"]


def test_s3_remove_owned_needs_the_marker_and_never_removes_a_bucket(s3: S3) -> None:  # noqa: F811
    root = _make_bucket(s3, "dglc-root-remove")
    _put(s3, f"{root}/prefix/user.txt")
    with pytest.raises(ForeignDataError, match="lacks the marker"):
        remove_owned(f"s3://{root}/prefix", storage_options=s3.options)
    with pytest.raises(ForeignDataError, match="lacks the marker"):
        remove_owned(f"s3://{root}", storage_options=s3.options)
    assert s3.fs.cat_file(f"{root}/prefix/user.txt") == USER
    s3.fs.rm(f"{root}/prefix", recursive=True)
    s3.fs.invalidate_cache()
    create_owned_dir(f"s3://{root}", "scratch", storage_options=s3.options)  # an empty bucket: ours now
    _put(s3, f"{root}/x/y.bin", b"ours")
    remove_owned(f"s3://{root}", storage_options=s3.options)
    s3.fs.invalidate_cache()
    assert s3.fs.exists(root) and s3.fs.ls(root, detail=False) == []
