"""The services' progress in the Dagster run log.

The services report progress as INFO records of the ``lake_orchestration.progress`` loggers (a compaction's start
line, one record per file group merged in process; the CLI shows them on stderr, see
:mod:`lake_orchestration.cli.progress`). Dagster records only what goes through ``context.log``, so an execute step
forwards those records while it runs: the start line and the last file group always, the file groups in between at
most every :data:`EVERY_SECONDS` (a plan of thousands of file groups must not flood the event log). With the Spark
engine the step also logs the Spark UI's address when the session has one.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

PROGRESS_LOGGER = "lake_orchestration.progress"
"""Parent of the services' progress loggers (as :data:`lake_orchestration.cli.progress.PROGRESS_LOGGER`)."""
EVERY_SECONDS = 5.0
"""Least time between two forwarded per-file-group records (the first and the last always go)."""


class _RunLogHandler(logging.Handler):
    """Forwards progress records to a Dagster step's ``context.log``."""

    def __init__(self, log: Any) -> None:
        super().__init__(logging.INFO)
        self._log = log
        self._last = float("-inf")
        self._guard = threading.Lock()

    def emit(self, record: logging.LogRecord) -> None:
        done, total = getattr(record, "done", None), getattr(record, "total", None)
        with self._guard:
            now = time.monotonic()
            if done is not None and done not in (1, total) and now - self._last < EVERY_SECONDS:
                return
            self._last = now
        try:
            self._log.info(record.getMessage())
        except Exception:  # a logging failure must not fail the step
            self.handleError(record)


@contextmanager
def progress_in_run_log(context: Any, spark: Any = None) -> Iterator[None]:
    """While the block runs, the services' progress records go to ``context.log`` (Dagster's run log); with a
    ``spark`` session whose UI is on, its address is logged first."""
    if spark is not None:
        url = _spark_ui_url(spark)
        if url:
            context.log.info(f"Spark UI: {url}")
    logger = logging.getLogger(PROGRESS_LOGGER)
    handler = _RunLogHandler(context.log)
    level = logger.level
    logger.addHandler(handler)
    if logger.getEffectiveLevel() > logging.INFO:
        logger.setLevel(logging.INFO)
    try:
        yield
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)


def _spark_ui_url(spark: Any) -> str | None:
    """The Spark UI of a classic session (None for Spark Connect, or with ``spark.ui.enabled=false``)."""
    try:
        return spark.sparkContext.uiWebUrl or None
    except Exception:  # Spark Connect has no SparkContext
        return None
