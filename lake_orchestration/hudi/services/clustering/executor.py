"""Execute-plan: one engine task per clustering group, run in-process or on Spark.

Mirrors Hudi 0.15's ``SparkExecuteClusteringCommitActionExecutor`` with ``SparkSortAndSizeExecutionStrategy``
(``MultipleSparkJobExecutionStrategy``): each group's file slices are read as a snapshot read merges them (a
MERGE_ON_READ slice with its log files, up to the last completed instant; deleted records dropped), the rows are
ordered by ``hoodie.clustering.plan.strategy.sort.columns`` with ``hoodie.layout.optimize.strategy`` (linear,
z-order, hilbert: :mod:`.layout`) and written bulk-insert style into new file groups: a new file id ``<uuid>-0`` per
file, base files ``{fileId}_{writeToken}_{instant}.parquet`` of at most about ``target.file.max.bytes`` (at least
the group's ``numOutputFileGroups`` files), each created after its ``CREATE`` marker. Every record keeps its
``_hoodie_commit_time`` and ``_hoodie_commit_seqno`` (``preserveHoodieMetadata``, always true in 0.15), so
incremental readers do not see clustered rows as new; ``_hoodie_file_name`` names the new file.

A group is held in memory while it is sorted (at most ``max.bytes.per.group`` of input, 2 GB by default, as Java
holds a Spark partition's rows in its sort).
"""

from __future__ import annotations

import json
import logging
import math
import time
import uuid
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import pyarrow as pa

from lake_orchestration.config.keys import HoodieKey
from lake_orchestration.engines.base import Engine, TaskAttempt
from lake_orchestration.engines.local import or_local
from lake_orchestration.errors import InstantNotFoundError, PlanError
from lake_orchestration.hudi.log.scanner import InstantFilter
from lake_orchestration.hudi.merge.record_merger import MergeConfig
from lake_orchestration.hudi.model.avro import ClusteringGroup, ClusteringPlan
from lake_orchestration.hudi.model.commit_metadata import RuntimeStats, WriteStat
from lake_orchestration.hudi.model.file_group import BaseFile, FileGroupId, FileSlice, LogFile
from lake_orchestration.hudi.model.instant import Action, Instant, InstantTime
from lake_orchestration.hudi.model.schema import avro_to_arrow_schema, with_meta_fields
from lake_orchestration.hudi.model.timeline import Timeline
from lake_orchestration.hudi.services.attempt import InstantAttempt
from lake_orchestration.hudi.services.clustering.config import ClusteringConfig
from lake_orchestration.hudi.services.clustering.layout import LayoutError, sort_indices
from lake_orchestration.hudi.services.clustering.planner import load_plan
from lake_orchestration.hudi.services.clustering.result import ClusteringExecution
from lake_orchestration.hudi.services.rollback.clustering import rollback_inflight_clustering
from lake_orchestration.hudi.table.hudi_table import HudiTable
from lake_orchestration.hudi.table.lock import table_lock
from lake_orchestration.hudi.table.marker import create_marker
from lake_orchestration.hudi.table.snapshot import merge_config_for, read_file_slice
from lake_orchestration.hudi.write.base_file import BaseFileWriter, ParquetWriteConfig
from lake_orchestration.io.storage import Storage

progress_log = logging.getLogger("lake_orchestration.progress.clustering")
"""Progress of an execution for people (the CLI prints it on stderr)."""


@dataclass(frozen=True, kw_only=True)
class GroupTask:
    """One clustering group with everything its task needs (a typed engine task)."""

    base_uri: str
    storage_options: dict[str, Any] = field(default_factory=dict, repr=False)
    """Storage options (secrets: never shown in a repr)."""
    instant: InstantTime
    partition_path: str
    slices: tuple[FileSlice, ...]
    num_output_file_groups: int
    instant_filter: InstantFilter
    merge: MergeConfig
    avro_schema_json: str
    parquet: ParquetWriteConfig
    sort_columns: tuple[str, ...]
    layout_strategy: str
    curve_build_method: str
    target_file_max_bytes: int
    unique_columns: tuple[str, ...] = ()
    attempt: TaskAttempt


def slices_of(group: ClusteringGroup) -> tuple[FileSlice, ...]:
    """The group's file slices, by file names (the plan holds full paths)."""
    out = []
    for s in group.slices or ():
        p = s.partition_path or ""
        base = None
        if s.data_file_path:
            base = BaseFile.parse(s.data_file_path.rsplit("/", 1)[-1], partition_path=p)
            if s.bootstrap_file_path:
                base = replace(base, bootstrap_source=s.bootstrap_file_path)
        logs = tuple(LogFile.parse(f.rsplit("/", 1)[-1], partition_path=p) for f in s.delta_file_paths or ())
        base_instant = base.instant if base is not None else (logs[0].base_instant if logs else None)
        if base_instant is None:
            raise PlanError(f"Clustering plan slice {p}/{s.file_id} names neither a base file nor log files")
        out.append(FileSlice(FileGroupId(p, s.file_id or ""), InstantTime(base_instant), base, logs))
    return tuple(out)


def clustering_instant_filter(timeline: Timeline, instant: InstantTime) -> InstantFilter:
    """The log blocks clustering reads: up to the last completed write, replacecommit or rollback."""
    last = (
        timeline.completed()
        .filter(lambda i: i.action in (Action.COMMIT, Action.DELTA_COMMIT, Action.ROLLBACK, Action.REPLACE_COMMIT))
        .last
    )
    return InstantFilter.from_timeline(timeline, latest_instant=str(last.time) if last else instant)


def clustering_tasks(
    table: HudiTable, instant: InstantTime, cfg: ClusteringConfig, plan: ClusteringPlan
) -> tuple[list[GroupTask], dict[str, Any]]:
    """One task per group of ``plan`` and the writer schema (with meta fields) they write."""
    schema = table.latest_schema()
    if schema is None:
        raise PlanError(f"No writer schema found on the timeline of {table.base_uri}")
    schema = with_meta_fields(schema) if table.config.populate_meta_fields else schema
    # the plan's sort columns (a plan Java scheduled too), else this run's
    params = (plan.strategy.strategy_params or {}) if plan.strategy is not None else {}
    planned = params.get(HoodieKey.CLUSTERING_SORT_COLUMNS.key, "")
    sort_columns = tuple(c.strip() for c in planned.split(",") if c.strip()) or cfg.sort_columns
    names = {f["name"] for f in schema["fields"]}
    missing = [c for c in sort_columns if c not in names]
    if missing:
        raise PlanError(
            f"Clustering {instant} of {table.base_uri}: sort column(s) {missing} are not columns of the table "
            f"(hoodie.clustering.plan.strategy.sort.columns; columns: {sorted(names)})"
        )
    flt = clustering_instant_filter(table.timeline, instant)
    keys = table.config.record_key_fields
    common: dict[str, Any] = {
        "base_uri": table.base_uri,
        "storage_options": table.storage.options,
        "instant": instant,
        "instant_filter": flt,
        "merge": merge_config_for(table),
        "avro_schema_json": json.dumps(schema, separators=(",", ":")),
        "parquet": cfg.parquet(),
        "sort_columns": sort_columns,
        "layout_strategy": cfg.layout_strategy.value,
        "curve_build_method": cfg.curve_build_method,
        "target_file_max_bytes": cfg.target_file_max_bytes,
        "unique_columns": tuple(keys) if len(keys) == 1 else (),
    }
    tasks = []
    for n, g in enumerate(plan.input_groups or ()):
        slices = slices_of(g)
        tasks.append(
            GroupTask(
                partition_path=slices[0].partition_path if slices else "",
                slices=slices,
                num_output_file_groups=max(1, g.num_output_file_groups or 1),
                attempt=TaskAttempt(n, 0, n),
                **common,
            )
        )
    return tasks, schema


def _read_group(task: GroupTask, storage: Storage, schema: pa.Schema) -> tuple[pa.Table, int]:
    """The merged rows of the group's slices and the bytes of its input files."""
    tables: list[pa.Table] = []
    nbytes = 0
    for fs in task.slices:
        for f in ([fs.base_file] if fs.base_file is not None else []) + list(fs.log_files):
            nbytes += storage.size(storage.join(f.relative_path))
        for t in read_file_slice(
            storage, fs, instant_filter=task.instant_filter, merge_config=task.merge, schema=schema
        ):
            if t.num_rows:
                tables.append(t.select(schema.names).cast(schema) if t.schema != schema else t)
    rows = pa.concat_tables(tables) if tables else schema.empty_table()
    return rows, nbytes


def cluster_group(task: GroupTask) -> list[WriteStat]:
    """Engine task: read, sort and rewrite one clustering group; the write stats of its new files."""
    t0 = time.monotonic()
    storage = Storage(task.base_uri, options=task.storage_options)
    avro = json.loads(task.avro_schema_json)
    schema = avro_to_arrow_schema(avro)
    rows, input_bytes = _read_group(task, storage, schema)
    scan_ms = int((time.monotonic() - t0) * 1000)
    if rows.num_rows == 0:
        return []
    if task.sort_columns:
        try:
            order = sort_indices(rows, list(task.sort_columns), task.layout_strategy, task.curve_build_method)
        except LayoutError as err:
            raise PlanError(f"Clustering {task.instant} of {task.base_uri}: {err}") from err
        rows = rows.take(order)
    n_files = max(task.num_output_file_groups, math.ceil(input_bytes / task.target_file_max_bytes))
    n_files = max(1, min(n_files, rows.num_rows))
    bounds = np.linspace(0, rows.num_rows, n_files + 1).astype(np.int64)
    token = task.attempt.write_token
    p = task.partition_path
    stats = []
    for i in range(n_files):
        t1 = time.monotonic()
        chunk = rows.slice(int(bounds[i]), int(bounds[i + 1] - bounds[i]))
        file_id = f"{uuid.uuid4()}-0"  # FSUtils.createNewFileIdPfx() + "-0": a new file group per file
        name = BaseFile(file_id, token, InstantTime(task.instant)).name
        create_marker(storage, task.instant, p, name, "CREATE")
        writer = BaseFileWriter(
            storage,
            partition_path=p,
            file_id=file_id,
            write_token=token,
            instant=task.instant,
            avro_schema=avro,
            arrow_schema=schema,
            preserve_commit_metadata=True,
            config=task.parquet,
            unique_columns=task.unique_columns,
        )
        writer.write(chunk)
        new_file = writer.close()
        stats.append(
            WriteStat(
                fileId=file_id,
                path=new_file.relative_path,
                prevCommit="null",
                numWrites=writer.rows,
                numInserts=writer.rows,
                totalWriteBytes=new_file.size,
                partitionPath=p,
                fileSizeInBytes=new_file.size,
                runtimeStats=RuntimeStats(
                    totalScanTime=scan_ms if i == 0 else 0, totalCreateTime=int((time.monotonic() - t1) * 1000)
                ),
            )
        )
    return stats


def run_groups(attempt: InstantAttempt, tasks: list[GroupTask], engine: Engine) -> list[WriteStat]:
    """Every group's task: in this process one after the other (checking between groups that the attempt is still
    ours), else on ``engine``."""
    if not engine.in_process:
        return engine.map_tasks(cluster_group, tasks, description=f"clustering {attempt.instant}: execute")
    stats: list[WriteStat] = []
    for n, task in enumerate(tasks, 1):
        attempt.ensure_ours()
        stats += cluster_group(task)
        progress_log.info(
            "Clustering %s: group %d/%d rewritten (%s, %d file slice(s))",
            task.instant,
            n,
            len(tasks),
            task.partition_path or "/",
            len(task.slices),
            extra={"instant": task.instant, "done": n, "total": len(tasks), "progress_line": True},
        )
    return stats


def clustering_attempt(
    table: HudiTable, instant: InstantTime, cfg: ClusteringConfig, token: bytes | None = None
) -> InstantAttempt:
    """This process's attempt at clustering ``instant`` (``token``: an executed attempt's, to check it). A crashed
    attempt (inflight, heartbeat expired) is rolled back first (:func:`rollback_inflight_clustering`: its files
    deleted, the plan requested again), as Java's ``rollbackInflightClustering`` before re-executing a plan."""

    def roll_back(t: HudiTable, i: InstantTime) -> Instant | None:
        return rollback_inflight_clustering(t, i, config=cfg.rollback_config(), check_liveness=False)

    return InstantAttempt(
        table,
        instant,
        action=Action.REPLACE_COMMIT,
        what="clustering",
        interval_ms=cfg.heartbeat_interval_ms,
        tolerable_misses=cfg.heartbeat_tolerable_misses,
        lock=cfg.lock,
        roll_back=roll_back,
        token=token,
    )


def pending_plan(table: HudiTable, instant: InstantTime) -> Instant:
    """The pending clustering ``instant`` on the timeline the table holds.

    Raises:
        InstantNotFoundError: committed (or removed) meanwhile, or never scheduled.
    """
    found = table.timeline.get(instant, Action.REPLACE_COMMIT)
    if found is None or found.action is not Action.REPLACE_COMMIT:
        raise InstantNotFoundError(table.base_uri, instant, "no pending clustering plan")
    if found.is_completed:
        raise InstantNotFoundError(table.base_uri, instant, "already committed")
    return found


def execute_attempt(
    table: HudiTable, instant: InstantTime, *, cfg: ClusteringConfig, engine: Engine | None
) -> tuple[ClusteringExecution, InstantAttempt]:
    """Claim the pending plan ``instant`` (requested -> inflight, a crashed attempt rolled back first), write the
    new file groups and return the write stats with the attempt (its heartbeat still beating; the caller stops it).
    On a failure the attempt is rolled back (if still ours)."""
    t0 = time.monotonic()
    engine = or_local(engine)
    table.refresh()
    pending_plan(table, instant)
    plan = load_plan(table, instant)
    tasks, schema = clustering_tasks(table, instant, cfg, plan)  # a bad sort column fails here, nothing written
    progress_log.info(
        "Clustering %s: %d group(s), %d file slice(s), engine %s",
        instant,
        len(tasks),
        sum(len(t.slices) for t in tasks),
        "local (in-process)" if engine.in_process else engine.name,
        extra={"instant": str(instant)},
    )
    table.ensure_metadata_table_handled(cfg.metadata_options(), service="clustering")
    attempt = clustering_attempt(table, instant, cfg)
    with table_lock(table, operation=f"clustering {instant}", config=cfg.lock):
        attempt.claim(pending_plan(table.refresh(), instant))
    try:
        stats = run_groups(attempt, tasks, engine)
    except BaseException:
        attempt.abandon()
        raise
    execution = ClusteringExecution(
        instant=instant,
        groups=len(tasks),
        stats=tuple(stats),
        plan=plan,
        writer_schema=schema,
        attempt_token=attempt.token,
        rolled_back_attempt=str(attempt.rolled_back.time) if attempt.rolled_back is not None else None,
        seconds=time.monotonic() - t0,
    )
    return execution, attempt


def execute_plan(
    table: HudiTable,
    instant: InstantTime | str,
    *,
    config: ClusteringConfig | None = None,
    engine: Engine | None = None,
) -> ClusteringExecution:
    """Execute-plan only: claim the plan, write the new file groups, return the write stats; nothing is committed
    (:func:`~.committer.commit_execution` does that, here or in another process). The heartbeat stops beating (it is
    not deleted): a commit within the heartbeat expiry always finds the plan still this attempt's.

    Raises:
        InstantNotFoundError: no pending clustering plan ``instant``.
        InstantInProgressError: another process is executing the plan (its heartbeat is fresh).
        PlanError: a sort column that is not a column of the table.
    """
    instant = InstantTime(instant, where=table.base_uri)
    execution, attempt = execute_attempt(table, instant, cfg=config or ClusteringConfig(), engine=engine)
    attempt.heartbeat.stop(delete=False)
    return execution
