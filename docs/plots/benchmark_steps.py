"""Dispatch step times of bench_pipeline.py, from benchmarks/results/pipeline.json."""

import json
from pathlib import Path

import matplotlib.pyplot as plt

results = json.loads(Path("benchmarks/results/pipeline.json").read_text())
run = next(r for r in results["runs"] if r["dispatch_steps_s"])
steps = run["dispatch_steps_s"]
fig, ax = plt.subplots(figsize=(8, 2.6))
ax.barh(list(steps)[::-1], list(steps.values())[::-1])
ax.set(title=f"dispatch steps, {run['graph']} graph", xlabel="seconds")
