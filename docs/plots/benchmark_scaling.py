"""Scaling of time and memory of bench_pipeline.py, from benchmarks/results/pipeline.json."""

import json
from pathlib import Path

import matplotlib.pyplot as plt

results = json.loads(Path("benchmarks/results/pipeline.json").read_text())
runs = [r for r in results["runs"] if r["memory_limit"] == "default"]
edges = [r["edges"] for r in runs]
fig, (ax_t, ax_m) = plt.subplots(1, 2, figsize=(10, 3.8))
for key, label in [("partition_s", "partition"), ("dispatch_s", "dispatch"), ("total_s", "total")]:
    ax_t.loglog(edges, [r[key] for r in runs], "o-", label=label)
ax_t.loglog(edges, [runs[0]["total_s"] * e / edges[0] for e in edges], "k:", label="linear in edges")
ref = results["dgl_reference"]
ax_t.errorbar(
    [edges[0]],
    [sum(ref["chunked_pipeline_s"]) / 2],
    yerr=[[1], [1]],
    fmt="s",
    color="grey",
    label="DGL chunked pipeline",
)
ax_t.set(title="wall time (2 workers)", xlabel="edges", ylabel="seconds")
ax_t.legend(fontsize=8)
for i in range(2):
    ax_m.plot(edges, [r["worker_peak_rss_mb"][i] for r in runs], "o-", label=f"worker {i}")
ax_m.axhline(ref["chunked_pipeline_rss_mb_per_rank"], color="grey", ls="--", label="DGL pipeline, per rank")
ax_m.set(title="peak RSS per worker", xlabel="edges", ylabel="MB", xscale="log", ylim=(0, 2000))
ax_m.legend(fontsize=8)
