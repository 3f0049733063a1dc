"""The engine seam: services hand an engine typed tasks and an importable task function; the engine runs them
in this process (:class:`~lake_orchestration.engines.local.LocalEngine`) or on Spark executors
(:class:`~lake_orchestration.engines.spark.SparkEngine`) and returns every result.

A service takes ``engine: Engine`` (the local engine by default: :func:`lake_orchestration.engines.local.or_local`
turns an omitted engine into a :class:`~lake_orchestration.engines.local.LocalEngine`, so no service branches on a
missing engine) and never imports the Spark engine. This module and the local engine sit below the services (and
``hudi.write``) in the layers contract; the Spark engine and the factory
(:func:`lake_orchestration.engines.factory.build_engine`, which every shell uses) sit above them. No engine module
imports a Hudi or Paimon module: the engines run the tasks a table format hands them.

What an engine can do beyond the protocol is a property of the engine, never of the shell that built it:
``in_process`` (True on a one-thread :class:`~lake_orchestration.engines.local.LocalEngine`) tells a service that the
tasks would run here, one after the other, so it may run them itself and share state between them (compaction keeps
the log blocks its check decoded and stops between file groups once another process took the plan over).

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
        """``{taskPartitionId}-{stageId}-{taskAttemptId}`` (Hudi's ``FSUtils.makeWriteToken``)."""
        return f"{self.partition_id}-{self.stage_id}-{self.attempt_id}"


class Engine(Protocol):
    """Runs the per-file-group work of a service (see the module doc for the task rules)."""

    name: str
    """``local`` or ``spark`` (logs and progress lines)."""

    in_process: bool
    """True when the tasks would run in this process and thread, one after the other (see the module doc): the
    service may then run them itself instead of through :meth:`map_tasks`."""

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
