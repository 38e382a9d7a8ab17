"""The 1B / 5B projection of ``bench_cores.py``: its measured per-step work scaled to a larger graph.

Each kind of task (its key without the run token: ``dglc-stage-edges``,
``dglc-write-halo``, ...) is scaled linearly by what its work grows with (:data:`UNITS`):
the edges, or the nodes (node blocks, node features: the feature bytes grow with the
nodes when the features keep their widths). Read and row-range tasks keep their size on
a larger graph (they are cut by bytes or rows), so their longest task stays the measured
one; the tasks of which a partition has a fixed number (:data:`PER_PARTITION`: the HALO
tasks, the skeletons) grow with the partition, so their longest task is scaled too. The
write step runs chains (HALO -> skeleton -> row ranges -> rename), so its shortest
possible time is the longest chain, not the longest task.

Per step, on ``hosts`` machines of ``cores`` worker processes each::

    seconds = max(work / (hosts * cores), longest task or chain) + max(down, up) / (hosts * bandwidth)

with ``down``/``up`` the step's bytes from and to the storage (``forecast_run``'s network
forecast for the measured graph, scaled by the step's work-weighted ratio): the model of
``docs/scaling.md`` that the simulated cluster measured (a host's bytes over its link, both
directions at once, plus the step's compute). The client's time (no task running) is the
run at 2 workers' scaled by the number of tasks (which follows the input's bytes, so the
edges ratio). Only linear scaling is assumed: no cache effects of larger ID maps (slower),
no contention of many cores for one machine's memory bandwidth or disk.
"""

from __future__ import annotations

from typing import Any

UNITS = {
    "dglc-assign-random": "nodes",
    "dglc-stage-assignment": "nodes",
    "dglc-number-nodes": "nodes",
    "dglc-stage-node-features": "nodes",
    "dglc-stage-node-data": "nodes",
    "dglc-write-skeleton": "nodes",
    "dglc-write-node_feat-skeleton": "nodes",
    "dglc-write-node_feat-rows": "nodes",
    "dglc-write-node_feat": "nodes",
    "dglc-write-partition": "nodes",
    "dglc-stage-edges": "edges",
    "dglc-stage-edge-features": "edges",
    "dglc-write-halo": "edges",
    "dglc-write-edges": "edges",
    "dglc-write-edge_feat-skeleton": "edges",
    "dglc-write-edge_feat-rows": "edges",
    "dglc-write-edge_feat": "edges",
}
"""What each kind of task's work grows with; a kind not listed takes the larger ratio."""

PER_PARTITION = {"dglc-write-halo", "dglc-write-skeleton", "dglc-write-partition"}
"""Kinds with a fixed number of tasks per partition: their longest task grows with the graph."""

CHAINS = (
    ("dglc-write-halo", "dglc-write-skeleton", "dglc-write-edges", "dglc-write-partition"),
    ("dglc-write-node_feat-skeleton", "dglc-write-node_feat-rows", "dglc-write-node_feat"),
    ("dglc-write-edge_feat-skeleton", "dglc-write-edge_feat-rows", "dglc-write-edge_feat"),
)
"""Tasks of one file of the write step that run one after the other."""


def _ratio(kind: str, ratios: dict[str, float]) -> float:
    unit = UNITS.get(kind)
    return ratios[unit] if unit else max(ratios.values())


def project(
    one: dict[str, Any],
    two: dict[str, Any] | None,
    measured: tuple[int, int],
    target: tuple[int, int],
    *,
    hosts: int,
    cores: int,
    bandwidth: float,
    step_bytes: dict[str, tuple[int, int]] | None = None,
) -> dict[str, Any]:
    """Seconds per step and in all for ``target`` ``(nodes, edges)`` on ``hosts`` x ``cores``.

    Parameters
    ----------
    one, two
        The runs at 1 worker (work, longest tasks per kind) and 2 workers (client time;
        None: the run at 1 worker's).
    measured
        ``(nodes, edges)`` of the measured graph.
    bandwidth
        Bytes per second of each host's link to the storage, each direction.
    step_bytes
        ``{step: (down, up)}`` bytes of the measured graph's steps (``forecast_run``).
    """
    ratios = {"nodes": target[0] / measured[0], "edges": target[1] / measured[1]}
    threads = hosts * cores
    steps: dict[str, dict[str, float]] = {}
    for name, row in one["steps"].items():
        kinds = row.get("kinds", {})
        if not kinds:
            continue
        work = sum(k["work"] * _ratio(kind, ratios) for kind, k in kinds.items())
        longest = {
            kind: k["longest"] * (_ratio(kind, ratios) if kind in PER_PARTITION else 1.0) for kind, k in kinds.items()
        }
        critical = max([max(longest.values()), *(sum(longest.get(kind, 0.0) for kind in chain) for chain in CHAINS)])
        weight = sum(k["work"] for k in kinds.values()) or 1.0
        grows = work / weight
        down, up = (step_bytes or {}).get(name, (0, 0))
        network = max(down, up) * grows / (hosts * bandwidth)
        compute = max(work / threads, critical)
        steps[name] = {
            "work": work,
            "critical": critical,
            "compute": compute,
            "gb_down": down * grows / 1e9,
            "gb_up": up * grows / 1e9,
            "network": network,
            "seconds": compute + network,
        }
    client = (two or one)["client"] * ratios["edges"]
    total = client + sum(s["seconds"] for s in steps.values())
    return {
        "target": {"nodes": target[0], "edges": target[1]},
        "ratios": ratios,
        "hosts": hosts,
        "cores": cores,
        "bandwidth": bandwidth,
        "client": client,
        "steps": steps,
        "seconds": total,
    }


def print_projection(rows: list[dict[str, Any]]) -> None:
    """One block per host count: per step its work, critical path, network and seconds."""
    for p in rows:
        t = p["target"]
        print(
            f"\nprojection to {t['nodes']:,} nodes / {t['edges']:,} edges on {p['hosts']} host(s) x {p['cores']} "
            f"cores, {p['bandwidth'] / 1e9:.2f} GB/s per host each way (x{p['ratios']['nodes']:.0f} nodes, "
            f"x{p['ratios']['edges']:.0f} edges; client {p['client']:.1f} s)"
        )
        print(f"  {'step':<28} {'work s':>9} {'critical s':>11} {'GB down/up':>14} {'network s':>10} {'seconds':>9}")
        for name, s in p["steps"].items():
            gb = f"{s['gb_down']:.0f}/{s['gb_up']:.0f}"
            print(
                f"  {name:<28} {s['work']:>9.0f} {s['critical']:>11.1f} {gb:>14} {s['network']:>10.1f} "
                f"{s['seconds']:>9.1f}"
            )
        print(f"  {'total':<28} {'':>9} {'':>11} {'':>14} {'':>10} {p['seconds']:>9.1f}  ({p['seconds'] / 60:.1f} min)")
