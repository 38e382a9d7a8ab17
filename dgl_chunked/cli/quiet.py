"""The worker plugin that keeps a failed task's traceback off the command's stderr."""

from __future__ import annotations

import logging
from typing import Any

from distributed.diagnostics.plugin import WorkerPlugin

__all__ = ["QUIET_LOGGERS", "QuietTaskErrors"]

QUIET_LOGGERS = ("distributed.worker", "distributed.worker.state_machine")
"""Where a worker logs a failed task ("Compute Failed", with the traceback)."""


class QuietTaskErrors(WorkerPlugin):
    """On a worker of the CLI's own LocalCluster: do not log failed tasks (their
    exception reaches the client, which reports it once). Registered once per client,
    it also reaches workers that start later (a nanny's restart)."""

    idempotent = True

    def setup(self, worker: Any) -> None:
        for name in QUIET_LOGGERS:
            logging.getLogger(name).setLevel(logging.CRITICAL)
