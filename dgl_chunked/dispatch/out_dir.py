"""The output directory of dispatch: what it holds, where the staging goes, overwrite rules."""

from __future__ import annotations

import fnmatch

from dgl_chunked._typing import StorageOptions
from dgl_chunked.dispatch.carry import ID_MAPPINGS_TMP
from dgl_chunked.errors import OutputExistsError
from dgl_chunked.io.dgl.partition_config import CONFIG_NAME, ID_MAPPINGS_DIR, OUTPUT_KIND
from dgl_chunked.storage import fs
from dgl_chunked.storage.owned import location_token, require_owned
from dgl_chunked.storage.trash import TRASH_MARK

__all__ = ["OUTPUT_KIND", "OUTPUT_ENTRIES", "STAGING_NAME", "staging_location", "prepare_out_dir"]

STAGING_NAME = "_staging"
OUTPUT_ENTRIES = (
    CONFIG_NAME,
    f"{CONFIG_NAME}.tmp-dglc",
    "part[0-9]*",
    "_tmp_part[0-9]*",
    STAGING_NAME,
    f"{STAGING_NAME}{TRASH_MARK}*",
    ID_MAPPINGS_DIR,
    ID_MAPPINGS_TMP,
)
"""What dispatch writes at the top of its output; ``--overwrite`` refuses anything else."""


def staging_location(out: str, staging_dir: str | None, storage_options: StorageOptions = None) -> str:
    """The staging directory: ``OUT/_staging``, or ``DIR/dglc-staging-<token>`` for ``--staging-dir DIR``.

    The token names the output, so a rerun into the same output finds (and resumes)
    its staging, and runs into different outputs can share ``DIR``. ``DIR`` itself
    is never marked, emptied or removed.
    """
    if staging_dir is None:
        return fs.join(out, STAGING_NAME)
    token = location_token(out, storage_options=storage_options)
    return fs.join(str(staging_dir), f"dglc-staging-{token}")


def prepare_out_dir(out: str, overwrite: bool, storage_options: StorageOptions) -> None:
    """Refuse a complete output unless overwriting; keep a crashed run's parts for resume.

    ``out`` is already ours (marked, leased). An output is complete when its
    partition config exists (it is written last). Partition directories without a
    config belong to an interrupted run: the staging fingerprint decides later
    whether they are reused or rewritten. Overwriting removes only the entries
    dispatch writes, and refuses (before removing anything) when ``out`` holds others.
    """
    config = fs.join(out, CONFIG_NAME)
    if not fs.exists(config, storage_options):
        return
    if not overwrite:
        raise OutputExistsError(
            f"output directory {out!r} already holds a partitioned graph ({CONFIG_NAME}); "
            "pass overwrite (--overwrite) to replace it or choose another --out-dir"
        )
    require_owned(out, expected=OUTPUT_ENTRIES, verb="overwritten", storage_options=storage_options)
    filesystem, inner = fs.filesystem(out, storage_options)
    _, config_inner = fs.filesystem(config, storage_options)
    filesystem.rm(config_inner)  # first, so the output never looks complete meanwhile
    for path in filesystem.ls(inner, detail=False):
        name = path.rstrip("/").rsplit("/", 1)[-1]
        if name != STAGING_NAME and any(fnmatch.fnmatchcase(name, p) for p in OUTPUT_ENTRIES):
            filesystem.rm(path, recursive=True)
