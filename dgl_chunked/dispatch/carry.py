"""GSProcessing's ``raw_id_mappings/`` carried next to the partitions, as GraphStorm's wrapper does.

GraphStorm's ``python/graphstorm/gpartition/dist_partition_graph.py`` (``main``), after
DGL's dispatch, copies ``INPUT/raw_id_mappings`` to ``OUTPUT/dist_graph/raw_id_mappings``
with ``shutil.copytree`` (every file, Spark's ``_SUCCESS`` and ``.crc`` files too):
beside the partition config, where ``python/graphstorm/gconstruct/remap_result.py``
looks for it (``os.path.dirname(part_config)/raw_id_mappings``). ``dispatch`` (and so
``run``) does the same when the chunked graph's directory holds ``raw_id_mappings/``:
one task per file streams it into ``OUT/_tmp_raw_id_mappings/`` (ours, inside our
marked output), which is then renamed ``OUT/raw_id_mappings``, before the partition
config is written. The input is only read; a rerun or ``--overwrite`` removes and
redoes only the copy inside the output.
"""

from __future__ import annotations

import posixpath
import shutil

from dask.delayed import delayed

from dgl_chunked._typing import StorageOptions
from dgl_chunked.compute import StepRunner
from dgl_chunked.io.dgl.partition_config import ID_MAPPINGS_DIR
from dgl_chunked.storage import fs

__all__ = ["ID_MAPPINGS_DIR", "ID_MAPPINGS_TMP", "carry_id_mappings", "id_mapping_files"]

ID_MAPPINGS_TMP = "_tmp_raw_id_mappings"
_COPY_BYTES = 16 << 20


def id_mapping_files(graph_dir: str, storage_options: StorageOptions = None) -> list[str]:
    """Paths, relative to ``graph_dir/raw_id_mappings``, of every file under it; ``[]`` when it is absent."""
    filesystem, inner = fs.filesystem(fs.join(graph_dir, ID_MAPPINGS_DIR), storage_options)
    if not filesystem.isdir(inner):
        return []
    root = inner.rstrip("/")
    return sorted(posixpath.relpath(p, root) for p in filesystem.find(root))


def _copy(src: str, dst: str, so: StorageOptions) -> None:
    filesystem, inner = fs.filesystem(dst, so)
    filesystem.makedirs(posixpath.dirname(inner), exist_ok=True)
    with fs.open_file(src, "rb", so) as f, fs.open_file(dst, "wb", so) as g:
        shutil.copyfileobj(f, g, _COPY_BYTES)


def _remove(path: str, so: StorageOptions) -> None:
    filesystem, inner = fs.filesystem(path, so)
    if filesystem.exists(inner):
        filesystem.rm(inner, recursive=True)


def carry_id_mappings(graph_dir: str, out: str, runner: StepRunner, token: str, so: StorageOptions = None) -> int:
    """Copy ``graph_dir/raw_id_mappings`` to ``out/raw_id_mappings``; return the number of files (0: none).

    ``out`` is our marked, leased output: an earlier copy there (an interrupted run's)
    is ours and is replaced, or removed when the input has none any more.
    """
    files = id_mapping_files(graph_dir, so)
    tmp, final = fs.join(out, ID_MAPPINGS_TMP), fs.join(out, ID_MAPPINGS_DIR)
    _remove(tmp, so)
    _remove(final, so)  # an entry of our marked output (OUTPUT_ENTRIES): a stale copy must not outlive its input
    if not files:
        return 0
    src = fs.join(graph_dir, ID_MAPPINGS_DIR)
    tasks = [
        delayed(_copy, pure=False)(fs.join(src, rel), fs.join(tmp, rel), so, dask_key_name=(f"dglc-carry-{token}", i))
        for i, rel in enumerate(files)
    ]
    runner.compute(tasks, "carry raw_id_mappings")
    filesystem, tmp_inner = fs.filesystem(tmp, so)
    final_inner = fs.filesystem(final, so)[1]
    if fs.is_url(out) and not out.startswith("file://"):
        # object stores have no directories: move the objects one by one, as the workers
        # left them (a listing cached in this process may be stale), as publish_partition does
        filesystem.invalidate_cache(tmp_inner)
        for path in filesystem.find(tmp_inner):
            filesystem.mv(path, final_inner + path[len(tmp_inner) :])
    else:
        filesystem.mv(tmp_inner, final_inner, recursive=True)
    return len(files)
