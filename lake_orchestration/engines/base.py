"""The engine seam: services hand an engine typed tasks and an importable task function; the engine runs them
in this process (:class:`~lake_orchestration.engines.local.LocalEngine`) or on Spark executors
(:class:`~lake_orchestration.engines.spark.SparkEngine`) and returns every result.

A service takes ``engine: Engine | None`` (``None``: the local engine) and never imports an engine module, so this
module sits below the services (and ``hudi.write``) in the layers contract, while the engines sit above them.

Task rules (so a task runs the same everywhere):

* ``fn`` is an importable top-level function taking one task and returning a list of results; tasks and results
  are picklable (frozen dataclasses of plain values, file slices, instant filters, merge configs).
* A task's ``storage_options`` field (secrets; the task then also has the ``base_uri`` they are for) travels only
  inside the pickled task function on Spark, never as DataFrame data; tasks that travel as data are encoded with
  :mod:`lake_orchestration.engines.codec`.
* A task that writes files has an ``attempt: TaskAttempt`` field: its write token. The service sets the local
  value; on Spark the engine hands in the running task attempt (``{partitionId}-{stageId}-{taskAttemptId}``, as
  Hudi's ``FSUtils.makeWriteToken``), so a retried or speculative attempt writes another file name and the
  commit keeps only the one in the write stats.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol, TypeVar

from lake_orchestration.hudi.model.file_group import make_write_token

if TYPE_CHECKING:
    import pyarrow as pa

T = TypeVar("T")
R = TypeVar("R")


@dataclass(frozen=True)
class TaskAttempt:
    """Who writes a task's files: the task's index in its job, the stage and the attempt (the write token)."""

    partition_id: int
    stage_id: int = 0
    attempt_id: int = 0

    @property
    def write_token(self) -> str:
        return make_write_token(self.partition_id, self.stage_id, self.attempt_id)


class Engine(Protocol):
    """Runs the per-file-group work of a service (see the module doc for the task rules)."""

    name: str

    def map_tasks(self, fn: Callable[[T], list[R]], tasks: Sequence[T], *, description: str) -> list[R]:
        """``fn`` on every task (one engine task each); all results, in task order on the local engine.

        ``description`` names the work for humans (a Spark job description): never put secrets in it.
        """
        ...

    def map_record_groups(
        self,
        fn: Callable[[T, pa.Table], list[R]],
        groups: Sequence[tuple[T, pa.Table]],
        *,
        description: str,
    ) -> list[R]:
        """``fn(task, records)`` on every group; the records travel as data (a DataFrame on Spark), the tasks as
        with :meth:`map_tasks`."""
        ...
