"""Schedule-plan: decide whether to compact and write ``<instant>.compaction.requested``.

Mirrors ``ScheduleCompactionActionExecutor`` (validations, trigger strategies) and
``BaseHoodieCompactionPlanGenerator`` + the ``CompactionStrategy`` classes of Hudi 0.14/0.15.
"""

from __future__ import annotations

import re
from collections.abc import Collection
from dataclasses import dataclass
from typing import Any

import pendulum

from lake_orchestration.errors import InstantNotFoundError, PlanError
from lake_orchestration.hudi.model.avro import CompactionOperation, CompactionPlan
from lake_orchestration.hudi.model.file_group import FileSlice
from lake_orchestration.hudi.model.instant import (
    FULL_BOOTSTRAP_INSTANT,
    INIT_INSTANT,
    METADATA_BOOTSTRAP_INSTANT,
    Action,
    Instant,
    InstantTime,
    State,
)
from lake_orchestration.hudi.services.compaction.config import CompactionConfig, CompactionStrategyName, TriggerStrategy
from lake_orchestration.hudi.table.clustering import pending_clustering_file_groups
from lake_orchestration.hudi.table.hudi_table import HudiTable
from lake_orchestration.hudi.table.lock import table_lock

MB = 1024 * 1024
COMPACTION_PLAN_VERSION = 2  # CompactionUtils.LATEST_COMPACTION_METADATA_VERSION: file names, not paths


@dataclass(frozen=True)
class ScheduleResult:
    """The outcome of schedule-plan: the requested instant and its plan, or why nothing was scheduled."""

    instant: InstantTime | None
    plan: CompactionPlan | None
    reason: str

    @property
    def scheduled(self) -> bool:
        return self.instant is not None

    @property
    def operations(self) -> int:
        return len(self.plan.operations or ()) if self.plan is not None else 0

    def to_json_obj(self) -> dict[str, Any]:
        """What ``lake-orch compaction schedule --json`` prints."""
        instant = str(self.instant) if self.instant is not None else None
        return {"scheduled": self.scheduled, "instant": instant, "operations": self.operations, "reason": self.reason}


def operation_metrics(fs: FileSlice, *, max_file_size: int) -> dict[str, float]:
    """``CompactionStrategy.captureMetrics``: sizes in MB by integer division, stored as doubles."""
    log_size = sum(max(lf.size, 0) for lf in fs.log_files)
    base_size = fs.base_file.size if fs.base_file is not None and fs.base_file.size >= 0 else 0
    read_mb = (base_size + log_size) // MB
    write_mb = (base_size if fs.base_file is not None else max_file_size) // MB
    return {
        "TOTAL_LOG_FILES": float(len(fs.log_files)),
        "TOTAL_LOG_FILES_SIZE": float(log_size),
        "TOTAL_IO_READ_MB": float(read_mb),
        "TOTAL_IO_WRITE_MB": float(write_mb),
        "TOTAL_IO_MB": float(read_mb + write_mb),
    }


def _bounded_io(ops: list[CompactionOperation], target_io_mb: int) -> list[CompactionOperation]:
    """``BoundedIOCompactionStrategy.orderAndFilter``: take ops until the IO budget is used up."""
    out = []
    budget = target_io_mb
    for op in ops:
        out.append(op)
        budget -= int((op.metrics or {}).get("TOTAL_IO_MB", 0))
        if budget <= 0:
            break
    return out


_DAY_RE = re.compile(r"(\d{4})[/-](\d{2})[/-](\d{2})")


def _partition_day(p: str) -> str | None:
    m = _DAY_RE.search(p)
    return f"{m.group(1)}/{m.group(2)}/{m.group(3)}" if m else None


def filter_partitions(partitions: list[str], cfg: CompactionConfig, *, today: pendulum.Date | None = None) -> list[str]:
    """``CompactionStrategy.filterPartitionPaths``."""
    if cfg.strategy is CompactionStrategyName.DAY_BASED:
        dated = sorted(
            (p for p in partitions if _partition_day(p)), key=lambda p: _partition_day(p) or "", reverse=True
        )
        return dated[: cfg.daybased_target_partitions]
    if cfg.strategy is CompactionStrategyName.BOUNDED_PARTITION_AWARE:
        # partitions dated today - N days or later, newest first (Java sorts them with DayBased's comparator)
        day = today or pendulum.today("UTC").date()
        earliest = day.subtract(days=cfg.daybased_target_partitions).format("YYYY/MM/DD")
        recent = [p for p in partitions if (_partition_day(p) or "") >= earliest]
        return sorted(recent, key=lambda p: _partition_day(p) or "", reverse=True)
    return partitions


def order_and_filter(ops: list[CompactionOperation], cfg: CompactionConfig) -> list[CompactionOperation]:
    """``CompactionStrategy.orderAndFilter`` of the configured strategy."""
    s = cfg.strategy
    if s is CompactionStrategyName.UNBOUNDED:
        return ops
    if s is CompactionStrategyName.LOG_FILE_SIZE_BASED:
        kept = [o for o in ops if (o.metrics or {}).get("TOTAL_LOG_FILES_SIZE", 0) >= cfg.logfile_size_threshold]
        kept.sort(key=lambda o: (o.metrics or {}).get("TOTAL_LOG_FILES_SIZE", 0), reverse=True)
        return _bounded_io(kept, cfg.target_io_mb)
    if s is CompactionStrategyName.LOG_FILE_NUM_BASED:
        kept = [o for o in ops if (o.metrics or {}).get("TOTAL_LOG_FILES", 0) >= cfg.logfile_num_threshold]
        kept.sort(key=lambda o: (o.metrics or {}).get("TOTAL_LOG_FILES", 0), reverse=True)
        return _bounded_io(kept, cfg.target_io_mb)
    if s in (CompactionStrategyName.DAY_BASED, CompactionStrategyName.BOUNDED_PARTITION_AWARE):
        return ops  # partition filters only: neither strategy applies the IO budget
    return _bounded_io(ops, cfg.target_io_mb)


def _seconds(t: str) -> int:
    """``parsedToSeconds``: the instant's epoch milliseconds / 1000, truncated to whole seconds (as Java)."""
    # a bootstrap's 0000000000000{1,2}: ``new Date(Integer.parseInt(ts))`` (parseDateFromInstantTimeSafely)
    if t in (INIT_INSTANT, METADATA_BOOTSTRAP_INSTANT, FULL_BOOTSTRAP_INSTANT):
        return int(t) // 1000
    return int(InstantTime(t).to_datetime().timestamp())


def trigger_reason(table: HudiTable, new_instant: InstantTime, cfg: CompactionConfig) -> str | None:
    """None if the trigger strategy says compact now; otherwise why not (``needCompact``)."""
    tl = table.timeline
    compaction_times = _compaction_times(table)
    completed_compactions = [i for i in tl.completed().with_actions(Action.COMMIT) if i.time in compaction_times]
    last_compaction = completed_compactions[-1].time if completed_compactions else None
    deltas = [i for i in tl.completed().with_actions(Action.DELTA_COMMIT)]
    if not deltas:
        return "no completed deltacommit on the timeline"
    since = [i for i in deltas if last_compaction is None or i.time > last_compaction]
    last_ts = last_compaction or deltas[0].time
    if cfg.trigger_strategy is TriggerStrategy.NUM_COMMITS_AFTER_LAST_REQUEST:
        requests = [i.time for i in tl.filter(lambda i: i.action is Action.COMPACTION)] + [
            str(i.time) for i in completed_compactions
        ]
        last_req = max(requests) if requests else None
        since = [i for i in deltas if last_req is None or i.time > last_req]
    n = len(since)
    elapsed = _seconds(new_instant) - _seconds(str(last_ts))
    num_ok = n >= cfg.max_delta_commits
    time_ok = elapsed >= cfg.max_delta_seconds
    ok = {
        TriggerStrategy.NUM_COMMITS: num_ok,
        TriggerStrategy.NUM_COMMITS_AFTER_LAST_REQUEST: num_ok,
        TriggerStrategy.TIME_ELAPSED: time_ok,
        TriggerStrategy.NUM_AND_TIME: num_ok and time_ok,
        TriggerStrategy.NUM_OR_TIME: num_ok or time_ok,
    }[cfg.trigger_strategy]
    if ok:
        return None
    since_what = f"since compaction {last_compaction}" if last_compaction else "in total (no compaction yet)"
    return (
        f"{cfg.trigger_strategy.value} not met: {n} delta commit(s) {since_what}, first at {last_ts} "
        f"(hoodie.compact.inline.max.delta.commits={cfg.max_delta_commits}), {int(elapsed)} s elapsed "
        f"(hoodie.compact.inline.max.delta.seconds={cfg.max_delta_seconds})"
    )


def _compaction_times(table: HudiTable) -> set[str]:
    """Instants whose completed ``.commit`` was a compaction (a ``.compaction.requested`` file exists), from the
    listing the timeline was built from."""
    names = table.timeline_file_names()
    return {n.split(".", 1)[0] for n in names if n.endswith(".compaction.requested")}


def require_mor(table: HudiTable) -> None:
    """Refuse a table that is not MERGE_ON_READ: compaction merges log files, which only MERGE_ON_READ tables have.

    Raises:
        PlanError: naming the table and its type.
    """
    if not table.config.is_mor:
        raise PlanError(f"Compaction needs a MERGE_ON_READ table; {table.base_uri} is {table.config.table_type.value}")


def validate_instant(table: HudiTable, instant: InstantTime, *, multi_writer: bool = False) -> None:
    """The scheduling validations of ``ScheduleCompactionActionExecutor``: with a single writer no write may be
    pending at or before the plan's instant; with several (``multi_writer``, see
    :attr:`CompactionConfig.multi_writer`) Java skips that check, and so do we. No completed instant and no
    compaction may be at or after the plan's instant either way (Java checks it for a single writer only; an instant
    made under the table lock always passes it, a given ``--instant-time`` may not)."""
    require_mor(table)
    tl = table.timeline.commits()
    pending_writes = [i for i in tl.pending() if i.action not in (Action.COMPACTION, Action.LOG_COMPACTION)]
    if pending_writes and pending_writes[0].time <= instant and not multi_writer:
        raise PlanError(
            f"Earliest write inflight instant time must be later than compaction time: {pending_writes[0]} "
            f"is pending at or before {instant} on {table.base_uri} (roll it back or wait for it; beside Java "
            "writers in multi-writer mode pass their hoodie.write.concurrency.mode=OPTIMISTIC_CONCURRENCY_CONTROL)"
        )
    conflicting = [i for i in tl if (i.is_completed or i.action is Action.COMPACTION) and i.time >= instant]
    if conflicting:
        raise PlanError(
            f"Following instants have timestamps >= compaction instant {instant} on {table.base_uri}: "
            + ", ".join(str(i) for i in conflicting)
        )


def generate_plan(table: HudiTable, cfg: CompactionConfig) -> CompactionPlan:
    """The operations for every eligible latest file slice, ordered and filtered by the strategy."""
    view = table.fs_view()
    excluded = set(view.pending_compaction) | set(view.pending_log_compaction)
    # and the file groups of pending clustering plans (BaseHoodieCompactionPlanGenerator#generateCompactionPlan)
    excluded |= set(pending_clustering_file_groups(table))
    partitions = filter_partitions(list(view.partitions), cfg)
    ops = []
    for p in partitions:
        for fs in view.latest_file_slices(p):
            if not fs.log_files or fs.file_group_id in excluded:
                continue
            ops.append(
                CompactionOperation(
                    base_instant_time=str(fs.base_instant),
                    delta_file_paths=tuple(lf.name for lf in fs.log_files),
                    data_file_path=fs.base_file.name if fs.base_file is not None else None,
                    file_id=fs.file_id,
                    partition_path=fs.partition_path,
                    metrics=operation_metrics(fs, max_file_size=cfg.max_file_size),
                    # a bootstrap skeleton's source file (CompactionUtils.buildFromFileSlice)
                    bootstrap_file_path=fs.base_file.bootstrap_source if fs.base_file is not None else None,
                )
            )
    ops = order_and_filter(ops, cfg)
    ids = [o.file_id for o in ops]
    if len(ids) != len(set(ids)):
        raise PlanError(f"Compaction plan for {table.base_uri} lists a file group twice: {sorted(ids)}")
    return CompactionPlan(
        operations=tuple(ops),
        extra_metadata=None,
        version=COMPACTION_PLAN_VERSION,
        strategy=None,
        preserve_hoodie_metadata=False,
    )


def schedule_compaction(
    table: HudiTable,
    *,
    config: CompactionConfig | None = None,
    instant_time: InstantTime | str | None = None,
    force: bool = False,
) -> ScheduleResult:
    """Schedule a compaction plan: validate, evaluate the trigger, generate, write ``.compaction.requested``.

    Args:
        table: a MERGE_ON_READ table.
        config: compaction options (Hudi keys via :meth:`CompactionConfig.from_options`).
        instant_time: the plan's instant (``--instant-time``); default: a new instant.
        force: skip the trigger strategy (scheduling on demand, as Hudi's offline ``--schedule`` does).

    Returns:
        The requested instant and plan, or the reason nothing was scheduled (no plan file is written then).

    Raises:
        PlanError: not MOR, an inflight write at or before the instant, or a later/equal completed or pending
            compaction.
        MetadataTableError: the metadata table has a partition other than ``files`` (or is missing though
            ``hoodie.table.metadata.partitions`` lists it) and ``hoodie.metadata.enable`` is not ``false``.
        TableLockedError: another process holds the table lock past ``hoodie.write.lock.wait_time_ms``.
    """
    cfg = config or CompactionConfig()
    # a malformed instant fails here, before the lock or any file is written
    given = InstantTime(instant_time, where=table.base_uri) if instant_time else None
    # Under the table lock: the instant time, the validations and the plan see a timeline no other service or
    # writer changes until the plan is on it (Java schedules table services inside a transaction too).
    with table_lock(table, operation="compaction schedule", config=cfg.lock):
        # one listing of .hoodie/, as of the lock: the instant time, the metadata-table check, the validations and
        # the plan read it
        instant = given or table.new_instant_time()
        if instant_time:
            table.refresh()
        table.ensure_metadata_table_handled(cfg.metadata_options(), service="compaction")
        validate_instant(table, instant, multi_writer=cfg.multi_writer)
        if not force:
            reason = trigger_reason(table, instant, cfg)
            if reason:
                return ScheduleResult(None, None, reason)
        # the plan's execution needs the table schema: a latest commit whose metadata does not decode stops here,
        # naming the file (CorruptFileError), before a plan that no run could execute is written
        table.latest_schema()
        plan = generate_plan(table, cfg)
        if not plan.operations:
            return ScheduleResult(None, None, "no file slice with log files to compact")
        table.create_requested(Instant(instant, Action.COMPACTION, State.REQUESTED), plan.to_bytes())
        return ScheduleResult(instant, plan, f"scheduled {len(plan.operations)} operation(s)")


def pending_compaction_instants(table: HudiTable) -> list[Instant]:
    """Pending compaction instants (requested or inflight), oldest first."""
    return list(table.refresh().timeline.pending_compactions())


def select_pending_plans(
    table: HudiTable,
    *,
    seq: str = "FIFO",
    max_plans: int | None = None,
    exclude: Collection[str] = (),
    refresh: bool = True,
) -> list[str]:
    """The pending compaction plans an offline compactor runs next: ``FIFO`` (oldest first) or ``LIFO``, those in
    ``exclude`` (already requested) left out, at most ``max_plans`` (None: all). The one selection of
    :func:`~.service.run_compaction`, the Dagster pending-plan sensor and the Airflow list task.

    Raises:
        PlanError: ``seq`` is neither FIFO nor LIFO.
    """
    if seq.upper() not in ("FIFO", "LIFO"):
        raise PlanError(f"compaction order {seq!r}: expected FIFO or LIFO")
    timeline = table.refresh().timeline if refresh else table.timeline
    pending = [t for t in (str(i.time) for i in timeline.pending_compactions()) if t not in exclude]
    if seq.upper() == "LIFO":
        pending.reverse()
    return pending if max_plans is None else pending[: max(0, max_plans)]


def is_compaction_committed(table: HudiTable, instant: InstantTime | str) -> bool:
    """Compaction ``instant`` is committed (``<instant>.commit`` completed) on the timeline the table holds: executing
    it again is a no-op."""
    instant = InstantTime(instant, where=table.base_uri)
    done = table.timeline.get(instant, Action.COMMIT)
    return done is not None and done.is_completed


def load_plan(table: HudiTable, instant: InstantTime | str) -> CompactionPlan:
    """The plan of compaction ``instant`` (from ``<instant>.compaction.requested``, which stays once the compaction
    is committed), on the timeline the table holds.

    Raises:
        InstantNotFoundError: no instant ``instant`` on the active timeline, or no plan file for it.
        CorruptFileError: the plan does not decode.
    """
    instant = InstantTime(instant, where=table.base_uri)
    found = table.timeline.get(instant, Action.COMPACTION)
    if found is None:
        raise InstantNotFoundError(table.base_uri, instant, "no compaction plan on the active timeline")
    return table.read_model(Instant(found.time, Action.COMPACTION, State.REQUESTED), CompactionPlan)
