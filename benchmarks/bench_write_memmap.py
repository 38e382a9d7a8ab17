"""Peak memory and throughput of ``write_tensor_dict`` from a large ``.npy`` memmap.

Creates a float32 ``.npy`` of ``--size-gb`` (written chunk-wise through
``np.lib.format.open_memmap``), then writes it to a DGL tensor-dict file in a
*fresh* subprocess and reports that subprocess's peak RSS (``VmHWM``, ``peak_memory.py``,
which includes file-backed memmap pages it touched) and the write throughput. The
target is a peak RSS below 300 MB for any input size.

The input is created in its own subprocess too: Linux carries a parent's RSS
high-water mark into a forked child's ``ru_maxrss`` across ``exec`` (not its
``VmHWM``), so a parent that had touched the 2 GB memmap would weigh on the child.

Usage::

    python benchmarks/bench_write_memmap.py [--size-gb 2] [--dir DIR] [--cold] [--keep]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from peak_memory import peak_rss_mb

ROW = 256  # float32 columns: 1 KiB per row
CHUNK_ROWS = 64 * 1024  # 64 MiB per chunk while creating the input


def make_input(path: Path, size_gb: float) -> tuple[int, int]:
    """Write a ``(rows, ROW)`` float32 .npy chunk-wise; return its shape."""
    rows = int(size_gb * 2**30) // (ROW * 4)
    arr = np.lib.format.open_memmap(path, mode="w+", dtype=np.float32, shape=(rows, ROW))
    for start in range(0, rows, CHUNK_ROWS):
        stop = min(rows, start + CHUNK_ROWS)
        arr[start:stop] = np.arange(start, stop, dtype=np.float32)[:, None]
        arr.flush()
    del arr
    return rows, ROW


def evict(path: Path) -> None:
    """Drop a file from the page cache (so the child reads from disk)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)


def child(npy: str, out: str) -> None:
    """Runs in the fresh subprocess: write, then report JSON on stdout."""
    from dgl_chunked.io.dgl.binary import read_tensor_dict, write_tensor_dict

    arr = np.load(npy, mmap_mode="r")
    rss_before = peak_rss_mb() * 1024
    start = time.perf_counter()
    write_tensor_dict(out, {"_N/feat": arr})
    seconds = time.perf_counter() - start
    peak_kb = peak_rss_mb() * 1024
    back = read_tensor_dict(out, mmap=True)["_N/feat"]
    ok = back.shape == arr.shape and all(
        np.array_equal(back[i : i + 3], arr[i : i + 3]) for i in (0, arr.shape[0] // 2, arr.shape[0] - 3)
    )
    print(
        json.dumps(
            {
                "bytes": int(arr.nbytes),
                "seconds": seconds,
                "peak_rss_kb": peak_kb,
                "rss_after_imports_kb": rss_before,
                "verified": bool(ok),
            }
        )
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--size-gb", type=float, default=2.0)
    parser.add_argument("--dir", default=None, help="work directory (default: a new temp dir)")
    parser.add_argument("--cold", action="store_true", help="evict the input from the page cache first")
    parser.add_argument("--keep", action="store_true", help="keep the files")
    parser.add_argument("--child", nargs=2, metavar=("NPY", "OUT"), help=argparse.SUPPRESS)
    parser.add_argument("--make", metavar="NPY", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(*args.child)
        return 0
    if args.make:
        print(json.dumps(make_input(Path(args.make), args.size_gb)))
        return 0
    work = Path(args.dir or tempfile.mkdtemp(prefix="dglc-bench-"))
    work.mkdir(parents=True, exist_ok=True)
    npy, out = work / "feat.npy", work / "node_feat.dgl"
    try:
        made = subprocess.run(
            [sys.executable, __file__, "--make", str(npy), "--size-gb", str(args.size_gb)],
            capture_output=True,
            text=True,
            check=True,
        )
        shape = tuple(json.loads(made.stdout))
        if args.cold:
            evict(npy)
        proc = subprocess.run(
            [sys.executable, __file__, "--child", str(npy), str(out)], capture_output=True, text=True, check=False
        )
        if proc.returncode != 0:
            print(proc.stderr, file=sys.stderr)
            return proc.returncode
        result = json.loads(proc.stdout.strip().splitlines()[-1])
        mb = result["bytes"] / 1e6
        print(f"input: {npy} float32 {shape} = {mb:.0f} MB ({'cold' if args.cold else 'warm'} page cache)")
        print(f"write_tensor_dict: {result['seconds']:.2f} s, {mb / result['seconds']:.0f} MB/s")
        print(
            f"peak RSS of the writing subprocess: {result['peak_rss_kb'] / 1024:.0f} MB "
            f"(after imports: {result['rss_after_imports_kb'] / 1024:.0f} MB; target < 300 MB)"
        )
        print(f"output verified: {result['verified']}, {out.stat().st_size} bytes")
        return 0 if result["verified"] and result["peak_rss_kb"] < 300 * 1024 else 1
    finally:
        if not args.keep:
            for path in (npy, out):
                path.unlink(missing_ok=True)
            if args.dir is None:
                work.rmdir()


if __name__ == "__main__":
    sys.exit(main())
