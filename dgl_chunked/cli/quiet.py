"""The worker plugin that keeps a failed task's traceback off the command's stderr."""

from __future__ import annotations

import logging
from typing import Any

from distributed.diagnostics.plugin import WorkerPlugin

__all__ = ["QUIET_LOGGERS", "QuietTaskErrors", "quiet_shutdown_kills"]

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


def _not_a_shutdown_kill(record: logging.LogRecord) -> bool:
    return not record.getMessage().startswith("Worker process still alive after")


def quiet_shutdown_kills() -> None:
    """Drop the nanny's "Worker process still alive after N seconds, killing" warning.

    When a command stops on an error, its own LocalCluster closes while a worker may still
    be inside a task; on a loaded machine the nanny's grace period (``distributed``'s
    ``Nanny.kill``) runs out and it kills the process, as intended. The warning would be a
    second line under the command's one ``error:`` line and tells the user nothing.
    """
    nanny = logging.getLogger("distributed.nanny")
    if _not_a_shutdown_kill not in nanny.filters:
        nanny.addFilter(_not_a_shutdown_kill)
