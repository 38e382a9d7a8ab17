"""The run forecast: tasks, peak memory per worker, disk and time of a run from
``metadata.json`` and file headers alone, and the refusal when a filesystem lacks
the space (the ``plan`` command).

- :mod:`.estimates`: dispatch's steps (:func:`forecast_dispatch` -> :class:`DispatchForecast`).
- :mod:`.calibration`: the cost model's constants, measured on the project's VM.
- :mod:`.space`: free space per filesystem written, and the refusal.
- :mod:`.network`: the bytes each step moves to and from remote storage, and their
  time at a bandwidth (:func:`forecast_network` -> :class:`NetworkForecast`).
- :mod:`.run`: the whole run, its partition step included (:func:`forecast_run` ->
  :class:`RunForecast`; ``plan_run``/``RunPlan``: deprecated names).
"""

from __future__ import annotations

from dgl_chunked.dispatch.forecast.calibration import CALIBRATION, Calibration
from dgl_chunked.dispatch.forecast.estimates import DispatchForecast, StepForecast, forecast_dispatch
from dgl_chunked.dispatch.forecast.network import NetworkForecast, NetworkStep, forecast_network, parse_bandwidth
from dgl_chunked.dispatch.forecast.run import RunForecast, RunPlan, forecast_run, plan_run
from dgl_chunked.dispatch.forecast.space import DiskNeed, check_space, disk_needs, format_bytes

__all__ = [
    "CALIBRATION",
    "Calibration",
    "DiskNeed",
    "DispatchForecast",
    "NetworkForecast",
    "NetworkStep",
    "RunForecast",
    "RunPlan",
    "StepForecast",
    "check_space",
    "disk_needs",
    "forecast_dispatch",
    "forecast_network",
    "forecast_run",
    "format_bytes",
    "parse_bandwidth",
    "plan_run",
]
