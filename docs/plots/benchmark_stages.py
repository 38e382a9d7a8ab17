"""Dispatch stage times of bench_pipeline.py, from benchmarks/results/pipeline.json."""

import json
from pathlib import Path

import matplotlib.pyplot as plt

results = json.loads(Path("benchmarks/results/pipeline.json").read_text())
run = next(r for r in results["runs"] if r["dispatch_stages_s"])
stages = run["dispatch_stages_s"]
fig, ax = plt.subplots(figsize=(8, 2.6))
ax.barh(list(stages)[::-1], list(stages.values())[::-1])
ax.set(title=f"dispatch stages, {run['graph']} graph", xlabel="seconds")
