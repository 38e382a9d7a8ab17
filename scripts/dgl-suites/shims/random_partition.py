"""Shim for DGL's tools/partition_algo/random_partition.py (dgl_chunked DGL-suite harness).

Replaces DGL's random partitioning step (``--in_dir DIR --out_dir DIR --num_partitions N``,
which writes ``<ntype>.txt`` per node type and ``partition_meta.json`` in ``--out_dir``) with
    dgl-chunked partition --method random --in-dir IN --out-dir OUT --num-parts N
(our random method is a seeded hash, seed 0 by default; DGL's is ``np.random``, unseeded).

The command is ``$DGLC_BIN`` (set by scripts/dgl-suites/run.sh), else ``dgl-chunked`` on PATH.
"""

import argparse
import os
import sys

DGLC = os.environ.get("DGLC_BIN", "dgl-chunked")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--in_dir", type=str, required=True)
    parser.add_argument("--out_dir", type=str, required=True)
    parser.add_argument("--num_partitions", type=int, required=True)
    args = parser.parse_args()

    cmd = [
        DGLC,
        "partition",
        "--method",
        "random",
        "--in-dir",
        args.in_dir,
        "--out-dir",
        args.out_dir,
        "--num-parts",
        str(args.num_partitions),
    ]
    print("[shim random_partition.py] " + " ".join(cmd), file=sys.stderr, flush=True)
    os.execvp(DGLC, cmd)


if __name__ == "__main__":
    main()
