"""Progress of a long command on stderr, never on stdout (where the text or ``--json`` result goes).

The services report progress as INFO records of the ``lake_orchestration.progress`` loggers (a compaction's start
line, one record per file group merged in process). :func:`progress_on_stderr` shows them while a command runs: on
a terminal the per-file-group records rewrite one progress line (``\\r``), elsewhere (a log file, CI) every record is
a plain line. With a Spark engine the file groups run as Spark tasks: :func:`spark_task_progress` polls Spark's
status tracker and reports the completed tasks of the running stages the same way.
"""

from __future__ import annotations

import logging
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import IO, Any

PROGRESS_LOGGER = "lake_orchestration.progress"
"""Parent of the progress loggers of the services."""


class ProgressHandler(logging.Handler):
    """Writes progress records to ``stream``: records with ``progress_line`` rewrite the current line on a terminal,
    every other record (and every record when ``stream`` is not a terminal) is a line of its own."""

    def __init__(self, stream: IO[str] | None = None) -> None:
        super().__init__(logging.INFO)
        self.stream = stream if stream is not None else sys.stderr
        self.tty = bool(getattr(self.stream, "isatty", lambda: False)())
        self._open_line = False

    def emit(self, record: logging.LogRecord) -> None:
        try:
            msg = record.getMessage()
            if self.tty and getattr(record, "progress_line", False):
                self.stream.write("\r\x1b[K" + msg)
                self._open_line = True
            else:
                self.finish_line()
                self.stream.write(msg + "\n")
            self.stream.flush()
        except Exception:  # a closed stderr must not fail the command
            self.handleError(record)

    def finish_line(self) -> None:
        """End an open progress line, so what follows starts on a line of its own."""
        if self._open_line:
            self.stream.write("\n")
            self.stream.flush()
            self._open_line = False


@contextmanager
def progress_on_stderr(stream: IO[str] | None = None) -> Iterator[ProgressHandler]:
    """Show the ``lake_orchestration.progress`` records on stderr while the block runs (not propagated to the root
    logger, so ``--verbose`` does not print them twice)."""
    logger = logging.getLogger(PROGRESS_LOGGER)
    handler = ProgressHandler(stream)
    saved = (logger.level, logger.propagate)
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    logger.propagate = False
    try:
        yield handler
    finally:
        handler.finish_line()
        logger.removeHandler(handler)
        logger.setLevel(saved[0])
        logger.propagate = saved[1]


@contextmanager
def spark_task_progress(engine: Any, what: str, *, interval_s: float = 1.0) -> Iterator[None]:
    """While the block runs, report the completed tasks of Spark's active stages (one task per file group) as
    progress records of ``what`` (``compaction``), each time the count changes. Does nothing without a Spark
    engine (an engine with a ``spark`` session)."""
    spark = getattr(engine, "spark", None)
    if spark is None:
        yield
        return
    log = logging.getLogger(f"{PROGRESS_LOGGER}.{what}")
    stop = threading.Event()

    def poll() -> None:
        reported: dict[int, tuple[int, int]] = {}  # stage id -> (done, total) last reported
        tracker = spark.sparkContext.statusTracker()
        while True:
            stopping = stop.wait(interval_s)
            try:
                # the active stages, and the ones reported before (a stage that just ended shows its final count)
                ids = sorted(set(tracker.getActiveStageIds()) | {s for s, (d, n) in reported.items() if d < n})
                infos = [(s, tracker.getStageInfo(s)) for s in ids]
            except Exception:  # the session is stopping: progress is best effort
                return
            for stage, info in infos:
                if info is None:
                    continue
                counts = (info.numCompletedTasks, info.numTasks)
                if reported.get(stage) != counts:
                    reported[stage] = counts
                    log.info(
                        "%s: Spark stage %d: %d/%d task(s) done",
                        what.capitalize(),
                        stage,
                        *counts,
                        extra={"progress_line": True},
                    )
            if stopping:
                return

    thread = threading.Thread(target=poll, name="spark-progress", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join(timeout=5)
