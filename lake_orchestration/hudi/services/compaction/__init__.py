"""Compaction (MERGE_ON_READ): schedule-plan -> execute-plan -> commit, as Hudi 0.14/0.15 does it.

``schedule_compaction`` writes ``<instant>.compaction.requested``; ``run_compaction`` picks pending plans
(``--instant-time``, or ``--seq FIFO|LIFO`` with ``--max-plans``), rolls back a crashed attempt (inflight) first,
moves the plan to inflight, executes one task per operation (in-process or on Spark) and commits ``<instant>.commit``.
"""

from __future__ import annotations

import json
import logging
import time
from dataclasses import dataclass, field
from typing import Any

from lake_orchestration.engines.base import Engine
from lake_orchestration.errors import InstantInProgressError, InstantNotFoundError, PlanError
from lake_orchestration.hudi.model.avro import CompactionPlan
from lake_orchestration.hudi.model.commit_metadata import CommitMetadata, WriteStat
from lake_orchestration.hudi.model.instant import Action, Instant, State
from lake_orchestration.hudi.model.schema import with_meta_fields
from lake_orchestration.hudi.services.compaction.attempt import CompactionAttempt
from lake_orchestration.hudi.services.compaction.committer import commit_compaction, compaction_commit_metadata
from lake_orchestration.hudi.services.compaction.config import (
    CompactionConfig,
    CompactionStrategyName,
    TriggerStrategy,
)
from lake_orchestration.hudi.services.compaction.executor import (
    OperationTask,
    compactor_instant_filter,
    run_operations,
    verify_operations,
)
from lake_orchestration.hudi.services.compaction.planner import ScheduleResult, schedule_compaction
from lake_orchestration.hudi.table.hudi_table import HudiTable
from lake_orchestration.hudi.table.lock import table_lock
from lake_orchestration.hudi.table.snapshot import merge_config_for

log = logging.getLogger(__name__)

__all__ = [
    "CompactionConfig",
    "CompactionResult",
    "CompactionStrategyName",
    "ScheduleResult",
    "TriggerStrategy",
    "execute_compaction",
    "pending_compaction_instants",
    "run_compaction",
    "schedule_compaction",
]


@dataclass
class CompactionResult:
    """One executed and committed compaction plan."""

    instant: str
    operations: int
    stats: list[WriteStat]
    metadata: CommitMetadata
    rolled_back_attempt: str | None = None
    seconds: float = 0.0
    rows_written: int = field(init=False)
    bytes_written: int = field(init=False)
    log_records: int = field(init=False)

    def __post_init__(self) -> None:
        self.rows_written = sum(s.numWrites for s in self.stats)
        self.bytes_written = sum(s.totalWriteBytes for s in self.stats)
        self.log_records = sum(s.totalLogRecords for s in self.stats)

    def to_json_obj(self) -> dict[str, Any]:
        """What ``lake-orch compaction run --json`` prints for this plan."""
        return {
            "instant": self.instant,
            "operations": self.operations,
            "rows_written": self.rows_written,
            "bytes_written": self.bytes_written,
            "log_records": self.log_records,
            "seconds": round(self.seconds, 3),
            "rolled_back_attempt": self.rolled_back_attempt,
        }

    def operations_json(self) -> list[dict[str, Any]]:
        """One object per written file group (the Dagster ``write_stats`` metadata)."""
        return [
            {
                "partition": s.partitionPath,
                "file_id": s.fileId,
                "rows": s.numWrites,
                "log_records": s.totalLogRecords,
                "log_files": s.totalLogFilesCompacted,
            }
            for s in self.stats
        ]


def pending_compaction_instants(table: HudiTable) -> list[Instant]:
    """Pending compaction instants (requested or inflight), oldest first."""
    return list(table.refresh().timeline.pending_compactions())


def load_plan(table: HudiTable, instant: str) -> CompactionPlan:
    req = Instant(table.timeline.get(instant, Action.COMPACTION).time, Action.COMPACTION, State.REQUESTED)  # type: ignore[union-attr]
    return CompactionPlan.from_bytes(table.read_instant(req), path=table.storage.uri(table.instant_path(req)))


def compaction_tasks(
    table: HudiTable, instant: str, cfg: CompactionConfig, *, plan: CompactionPlan | None = None
) -> tuple[list[OperationTask], dict]:
    """The per-operation tasks of plan ``instant`` and the writer schema (with meta fields) they write."""
    plan = plan or load_plan(table, instant)
    schema = table.latest_schema()
    if schema is None:
        raise PlanError(f"No writer schema found on the timeline of {table.base_uri}")
    schema = with_meta_fields(schema) if table.config.populate_meta_fields else schema
    # the timeline as the caller last loaded it: execute_compaction refreshes it on entry and under the lock (claim)
    flt = compactor_instant_filter(table.timeline, instant)
    common = {
        "base_uri": table.base_uri,
        "storage_options": table.storage.options,
        "instant": instant,
        "instant_filter": flt,
        "merge": merge_config_for(table),
        "avro_schema_json": json.dumps(schema, separators=(",", ":")),
        "parquet": cfg.parquet(),
        "memory_max_bytes": cfg.memory_max_bytes,
        # a single record key field is unique within a file group, as the record key is: no dictionary for it
        "unique_columns": tuple(table.config.record_key_fields) if len(table.config.record_key_fields) == 1 else (),
    }
    return [OperationTask.for_operation(op, n, **common) for n, op in enumerate(plan.operations or ())], schema


def check_base_files(table: HudiTable, plan: CompactionPlan) -> None:
    """Every base file the plan merges opens as Parquet (footer read), so a corrupt one stops the run before
    anything is written instead of failing one operation after others wrote their files.

    Raises:
        CorruptFileError: a base file that is empty, truncated or not Parquet, naming it.
    """
    for op in plan.operations or ():
        if op.data_file_path:
            name = op.data_file_path.rsplit("/", 1)[-1]
            table.storage.open_parquet(table.storage.join(op.partition_path or "", name)).close()


def execute_compaction(
    table: HudiTable, instant: str, *, config: CompactionConfig | None = None, engine: Engine | None = None
) -> CompactionResult:
    """Execute and commit the pending plan ``instant`` (rolling back a crashed inflight attempt first).

    The plan's heartbeat (``.hoodie/.heartbeat/<instant>``, ``hoodie.client.heartbeat.*``) is kept from before the
    requested -> inflight transition until the commit; see :mod:`.attempt`.

    Raises:
        InstantInProgressError: another process is executing the plan (its heartbeat is fresh); nothing was done.
        InvalidInstantStateError: at commit time the plan was no longer this process's (nothing committed).
        CorruptLogBlockError: a log block the plan merges does not decode; raised before anything is written (the
            plan stays as it was, requested or inflight).
    """
    return _execute_compaction(table, instant, cfg=config or CompactionConfig(), engine=engine, refresh=True)


def _execute_compaction(
    table: HudiTable, instant: str, *, cfg: CompactionConfig, engine: Engine | None, refresh: bool
) -> CompactionResult:
    """:func:`execute_compaction`; ``refresh=False`` when the caller has just listed the timeline."""
    t0 = time.monotonic()
    if refresh:
        table.refresh()
    pending = table.timeline.get(instant, Action.COMPACTION)
    if pending is None or pending.action is not Action.COMPACTION:
        done = table.timeline.get(instant, Action.COMMIT)
        detail = "already committed" if done is not None and done.is_completed else "no pending compaction plan"
        raise InstantNotFoundError(table.base_uri, instant, detail)
    plan = load_plan(table, instant)
    check_base_files(table, plan)
    # Every log block the plan merges must decode before anything is written (CorruptLogBlockError otherwise).
    verify_operations(compaction_tasks(table, str(instant), cfg, plan=plan)[0], engine=engine)
    table.ensure_metadata_table_handled(cfg.metadata_options(), service="compaction")
    # Decide and move to inflight under the table lock, holding the plan's heartbeat from before the transition to
    # the commit: a second process finds it live and refuses instead of rolling back a running attempt.
    attempt = CompactionAttempt(table, str(instant), cfg)
    with table_lock(table, operation=f"compaction {instant}", config=cfg.lock):
        attempt.claim()
    committed = False
    try:
        try:
            tasks, schema = compaction_tasks(table, str(instant), cfg, plan=plan)
            # in-process, the attempt stops between tasks once another process took the plan over
            stats = attempt.run_local(tasks) if engine is None else run_operations(tasks, engine=engine)
            md = compaction_commit_metadata(stats, plan, schema)
        except Exception:
            attempt.abandon()  # roll our own attempt back, so a retry need not wait for the heartbeat to expire
            raise
        commit_compaction(table, str(instant), md, lock=cfg.lock, verify=attempt.verify(stats))
        committed = True
    finally:
        attempt.heartbeat.stop(delete=committed)
    rolled_back = str(attempt.rolled_back.time) if attempt.rolled_back is not None else None
    return CompactionResult(
        instant=str(instant),
        operations=len(tasks),
        stats=stats,
        metadata=md,
        rolled_back_attempt=rolled_back,
        seconds=time.monotonic() - t0,
    )


def run_compaction(
    table: HudiTable,
    *,
    instant_time: str | None = None,
    seq: str = "FIFO",
    max_plans: int = 1,
    schedule: bool = False,
    config: CompactionConfig | None = None,
    engine: Engine | None = None,
) -> list[CompactionResult]:
    """Run pending compaction plans like Hudi's offline compactor (``HoodieCompactor``).

    Args:
        instant_time: run exactly this plan (``--instant-time``).
        seq: ``FIFO`` (oldest plan first) or ``LIFO`` (``--seq``); a plan another process is executing (fresh
            heartbeat) is skipped with a warning.
        max_plans: at most this many plans (``--max-plans``).
        schedule: schedule a plan first (``--schedule``; the trigger strategy still applies).
        engine: the engine running the operations (default: in this process, one after the other).
    """
    cfg = config or CompactionConfig()
    if seq.upper() not in ("FIFO", "LIFO"):
        raise ValueError(f"--seq {seq!r}: expected FIFO or LIFO")
    if schedule:
        schedule_compaction(table, config=cfg)
    if instant_time is not None:
        return [execute_compaction(table, instant_time, config=cfg, engine=engine)]
    pending = [str(i.time) for i in pending_compaction_instants(table)]
    if seq.upper() == "LIFO":
        pending.reverse()
    results: list[CompactionResult] = []
    for n, t in enumerate(pending):
        if len(results) >= max(0, max_plans):
            break
        try:
            # the first plan runs on the timeline just listed; later ones on a fresh listing
            results.append(_execute_compaction(table, t, cfg=cfg, engine=engine, refresh=n > 0))
        except InstantInProgressError as err:
            # another process executes this plan: leave it to it (plans never share a file group)
            log.warning("Skipping compaction %s: %s", t, err.detail)
    return results
