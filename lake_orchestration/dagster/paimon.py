"""The definitions of a ``format: paimon`` table: an Apache Paimon primary-key table compacted by this project.

Per table ``t`` (names from :class:`~lake_orchestration.dagster.translator.DagsterHudiTranslator`, the Hudi table's
names under the ``paimon`` prefix):

* ``paimon/t`` — the table; materializing it records its compaction health
  (:class:`~lake_orchestration.paimon.health.PaimonTableHealth`: sorted runs and level-0 files per bucket, pending
  size amplification, the latest snapshot) as typed metadata;
* ``paimon/t/compaction`` — materializing it runs the graph ``compaction_execute`` -> ``compaction_commit``:
  the first op plans the latest snapshot (universal compaction, or full with run config ``full: true``) and writes
  the compacted files (one engine task per bucket, on the ``pyspark`` resource when the table's engine is
  ``spark``); the second writes the COMPACT snapshot from the execution it is handed. A failed commit is retried
  alone: the execution carries its ``commitUser``, so a retry after a commit that did land finds its snapshot and
  writes nothing. A commit that conflicts with another writer deletes the execution's files and fails without
  retries; the next run plans from the new latest snapshot (Java's dedicated compaction job does the same);
* ``t__compaction`` — the asset job of ``paimon/t/compaction``, with the schedule ``t__compaction_schedule``
  (``schedule_cron``);
* ``t__new_snapshots_sensor`` — requests a compaction run when APPEND snapshots were committed since its cursor
  (:class:`NewSnapshotsCursor`, the last snapshot id it judged; run key = the latest snapshot id);
* the check ``sorted_runs_within_stop_trigger`` on ``paimon/t``: no bucket has more sorted runs than
  ``num-sorted-run.stop-trigger`` (where Java writers stop and wait for compaction).

Paimon has no plan file, so the compaction asset is not partitioned: a run always plans the latest snapshot.
"""

import json
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import dagster as dg

from lake_orchestration.dagster.assets import build_health_asset
from lake_orchestration.dagster.config import HudiTableConfig
from lake_orchestration.dagster.errors import DagsterHudiError, SensorCursorError, hudi_step
from lake_orchestration.dagster.resources import table_engine
from lake_orchestration.dagster.translator import DagsterHudiTranslator, service_executor
from lake_orchestration.errors import PaimonCommitConflictError
from lake_orchestration.paimon.health import PaimonTableHealth, paimon_table_health
from lake_orchestration.paimon.model.snapshot import CommitKind
from lake_orchestration.paimon.services.compaction import (
    PaimonCompactionCommit,
    PaimonCompactionExecution,
    abort_execution,
    commit_compaction,
    execute_compaction,
    plan_compaction,
)
from lake_orchestration.paimon.table import PaimonTable

CHECK_NAMES = ("sorted_runs_within_stop_trigger",)
"""The checks of a Paimon table asset."""


def paimon_health_metadata(health: PaimonTableHealth) -> dict[str, dg.MetadataValue]:
    """The table asset's metadata: the figures of ``health`` typed (ints, the size amplification as a float, the
    latest snapshot's time as a timestamp) and the buckets as JSON."""
    md: dict[str, dg.MetadataValue] = {}
    for k, v in health.to_json_obj().items():
        if k in ("buckets", "time_millis") or v is None:
            continue
        if isinstance(v, bool) or not isinstance(v, int | float):
            md[k] = dg.MetadataValue.text(str(v))
        elif isinstance(v, int):
            md[k] = dg.MetadataValue.int(v)
        else:
            md[k] = dg.MetadataValue.float(float(v))
    when = health.snapshot_datetime
    if when is not None:
        md["snapshot_time"] = dg.MetadataValue.timestamp(when)
    md["buckets"] = dg.MetadataValue.json([b.to_json_obj() for b in health.buckets])
    return md


def build_paimon_table_asset(cfg: HudiTableConfig, translator: DagsterHudiTranslator) -> dg.AssetsDefinition:
    """``paimon/<t>``: the table; a materialization records its compaction health."""

    def measure(table: Any) -> tuple[str, dict[str, dg.MetadataValue]]:
        health = paimon_table_health(table)
        summary = f"snapshot {health.snapshot_id}, max sorted runs {health.max_sorted_runs}"
        return summary, paimon_health_metadata(health)

    return build_health_asset(cfg, translator, kind="paimon", measure=measure)


class PaimonCompactionRunConfig(dg.Config):
    """Run config of the ``compaction_execute`` op."""

    full: bool = False
    """Full compaction (Paimon's ``compact --full``): every bucket to one sorted run at the max level."""


@dataclass(frozen=True, kw_only=True)
class ExecutedCompaction:
    """What ``compaction_execute`` hands to ``compaction_commit`` (pickled by the IO manager, so a retried commit
    reads it without executing again)."""

    snapshot_id: int | None
    """The snapshot the plan was made from (None: the table has no snapshot)."""
    execution: PaimonCompactionExecution | None
    """The executed plan to commit; None: nothing to compact."""
    commit_user: str
    """``commitUser`` of the COMPACT snapshot (a retried commit finds its snapshot by it)."""


def execution_metadata(execution: PaimonCompactionExecution) -> dict[str, dg.MetadataValue]:
    """The execute op's output metadata: counts as ints."""
    results = execution.results
    return {
        "snapshot_id": dg.MetadataValue.int(execution.plan.snapshot_id or 0),
        "buckets": dg.MetadataValue.int(len(results)),
        "files_before": dg.MetadataValue.int(sum(len(r.before) for r in results)),
        "files_upgraded": dg.MetadataValue.int(sum(r.upgraded for r in results)),
        "files_rewritten": dg.MetadataValue.int(sum(r.rewritten for r in results)),
        "files_written": dg.MetadataValue.int(len(execution.written)),
        "rows_before": dg.MetadataValue.int(sum(f.row_count for r in results for f in r.before)),
        "rows_after": dg.MetadataValue.int(sum(f.row_count for r in results for f in r.after)),
    }


def commit_metadata(
    commit: PaimonCompactionCommit, execution: PaimonCompactionExecution
) -> dict[str, dg.MetadataValue]:
    """The compaction asset's metadata: the new snapshot, entry counts and each bucket's figures."""
    return {
        **execution_metadata(execution),
        "compact_snapshot_id": dg.MetadataValue.int(commit.snapshot.id),
        "deleted_files": dg.MetadataValue.int(commit.deleted_files),
        "added_files": dg.MetadataValue.int(commit.added_files),
        "total_record_count": dg.MetadataValue.int(commit.snapshot.total_record_count or 0),
        "commit_attempts": dg.MetadataValue.int(commit.attempts),
        "snapshot_time": dg.MetadataValue.timestamp(commit.snapshot.time_millis / 1000),
        "bucket_results": dg.MetadataValue.json([r.to_json_obj() for r in execution.results]),
    }


def committed_snapshot(table: PaimonTable, after: int, commit_user: str) -> int | None:
    """The id of a COMPACT snapshot newer than ``after`` committed by ``commit_user``, or None."""
    latest = table.latest_snapshot_id()
    for snapshot_id in range(after + 1, (latest or after) + 1):
        snap = table.snapshot(snapshot_id)
        if snap.commit_user == commit_user and snap.commit_kind is CommitKind.COMPACT:
            return snapshot_id
    return None


def paimon_execute_step(
    context: dg.OpExecutionContext, cfg: HudiTableConfig, config: PaimonCompactionRunConfig
) -> ExecutedCompaction:
    """The Paimon compaction's execute step (one body for a table's op and the fleet's): plan the latest snapshot,
    write the compacted files, commit nothing."""
    commit_user = str(uuid.uuid4())
    with hudi_step(cfg) as step:
        table = step.open_table()
        plan = plan_compaction(table, full=config.full)
        if plan.is_empty:
            context.log.info(f"{cfg.name}: no compaction needed at snapshot {plan.snapshot_id}")
            return ExecutedCompaction(snapshot_id=plan.snapshot_id, execution=None, commit_user=commit_user)
        spark = context.resources.pyspark.spark_session if cfg.engine == "spark" else None
        execution = execute_compaction(plan, storage=table.storage, engine=table_engine(cfg.engine, spark))
    context.add_output_metadata(execution_metadata(execution))
    return ExecutedCompaction(snapshot_id=plan.snapshot_id, execution=execution, commit_user=commit_user)


def paimon_commit_step(
    context: dg.OpExecutionContext, cfg: HudiTableConfig, executed: ExecutedCompaction
) -> dg.Output[None]:
    """The Paimon compaction's commit step: a COMPACT snapshot (a retry after a commit that landed writes nothing)."""
    execution = executed.execution
    if execution is None:
        return dg.Output(None, metadata={"snapshot_id": executed.snapshot_id or 0, "compacted": False})
    with hudi_step(cfg) as step:
        table = step.open_table()
        done = committed_snapshot(table, execution.plan.snapshot_id or 0, executed.commit_user)
        if done is not None:  # a retry after a commit that landed
            context.log.info(f"{cfg.name}: compaction already committed as snapshot {done}: nothing written")
            return dg.Output(None, metadata={"compact_snapshot_id": done, "already_committed": True})
        try:
            commit = commit_compaction(table, execution, commit_user=executed.commit_user)
        except PaimonCommitConflictError as err:
            removed = abort_execution(table, execution)
            raise DagsterHudiError(
                f"PaimonCommitConflictError: {err}; the {removed} file(s) this compaction wrote were deleted, the "
                "next run plans from the new latest snapshot",
                table=cfg.name,
                table_uri=cfg.base_path,
                timeline=step.timeline_excerpt(),
                error=type(err).__name__,
                allow_retries=False,
            ) from err
    if commit is None:
        return dg.Output(None, metadata={"snapshot_id": executed.snapshot_id or 0, "compacted": False})
    return dg.Output(None, metadata=commit_metadata(commit, execution))


def build_paimon_compaction_asset(cfg: HudiTableConfig, translator: DagsterHudiTranslator) -> dg.AssetsDefinition:
    """``paimon/<t>/compaction``: the graph ``compaction_execute`` -> ``compaction_commit`` (module docstring)."""
    pool = translator.get_pool(cfg)
    tags = translator.get_tags(cfg, "compaction")

    @dg.op(
        name=translator.get_op_name(cfg, "compaction_execute"),
        ins={"table": dg.In(dg.Nothing)},
        retry_policy=cfg.retry_policy(),
        pool=pool,
        tags=tags,
        required_resource_keys={"pyspark"} if cfg.engine == "spark" else set(),
        description=f"Plan the latest snapshot of {cfg.name} and write the compacted files (nothing committed)",
    )
    def execute_op(context: dg.OpExecutionContext, config: PaimonCompactionRunConfig) -> ExecutedCompaction:
        return paimon_execute_step(context, cfg, config)

    @dg.op(
        name=translator.get_op_name(cfg, "compaction_commit"),
        retry_policy=cfg.retry_policy(),
        pool=pool,
        tags=tags,
        description=f"Commit an executed compaction of {cfg.name} as a COMPACT snapshot",
    )
    def commit_op(context: dg.OpExecutionContext, executed: ExecutedCompaction) -> dg.Output[None]:
        return paimon_commit_step(context, cfg, executed)

    @dg.graph_asset(
        key=translator.get_compaction_asset_key(cfg),
        group_name=translator.get_group_name(cfg),
        kinds={"paimon", "spark"} if cfg.engine == "spark" else {"paimon"},
        ins={"table": dg.AssetIn(key=translator.get_asset_key(cfg), dagster_type=dg.Nothing)},
        description=f"Merge-tree compaction of {cfg.name}: plan the latest snapshot, execute, commit a COMPACT "
        "snapshot",
    )
    def _asset(table: None) -> Any:
        return commit_op(execute_op(table))

    return _asset


def build_paimon_compaction_job(cfg: HudiTableConfig, translator: DagsterHudiTranslator) -> Any:
    """``<t>__compaction``: the asset job of ``paimon/<t>/compaction``."""
    return dg.define_asset_job(
        translator.get_job_name(cfg, "compaction"),
        selection=dg.AssetSelection.assets(translator.get_compaction_asset_key(cfg)),
        tags=translator.get_tags(cfg, "compaction"),
        executor_def=service_executor(cfg),
        description=f"Compact the Paimon table {cfg.name}: plan and execute, then commit a COMPACT snapshot",
    )


def build_paimon_schedule(cfg: HudiTableConfig, translator: DagsterHudiTranslator, job: Any) -> dg.ScheduleDefinition:
    """``<t>__compaction_schedule``: the compaction job on ``schedule_cron``."""
    return dg.ScheduleDefinition(
        name=translator.get_schedule_name(cfg, "compaction"),
        job=job,
        cron_schedule=cfg.schedule_cron,
        description=f"Runs {job.name} ({cfg.schedule_cron})",
    )


@dataclass(frozen=True, kw_only=True)
class NewSnapshotsCursor:
    """The cursor of ``<t>__new_snapshots_sensor``: the latest snapshot id it judged (None: first evaluation)."""

    snapshot_id: int | None = None
    """Snapshots up to this id were judged."""

    EXPECTED = '{"snapshot_id": <int>}'
    """The serialized form, for error messages."""

    def to_json(self) -> str:
        """``{"snapshot_id": N}``."""
        return json.dumps({"snapshot_id": self.snapshot_id})

    @classmethod
    def from_json(cls, cursor: str | None, *, table: str, sensor: str) -> "NewSnapshotsCursor":
        """Decode a cursor (None or empty: the first evaluation).

        Raises:
            SensorCursorError: not JSON, or not ``{"snapshot_id": <int>}``.
        """
        if not cursor:
            return cls()
        try:
            data = json.loads(cursor)
            value = data["snapshot_id"]
            if isinstance(value, bool) or not isinstance(value, int):
                raise TypeError(f"snapshot_id {value!r} is not an integer")
            return cls(snapshot_id=value)
        except (ValueError, KeyError, TypeError) as err:
            raise SensorCursorError(
                table=table, sensor=sensor, cursor=cursor, expected=cls.EXPECTED, detail=str(err)
            ) from err


def new_append_snapshots(table: PaimonTable, after: int | None) -> tuple[int | None, list[int]]:
    """The latest snapshot id and the APPEND snapshots after ``after`` (None: only the latest is judged); snapshots
    already expired are skipped."""
    latest = table.latest_snapshot_id()
    if latest is None:
        return None, []
    earliest = table.earliest_snapshot_id() or latest
    start = latest if after is None else max(after + 1, earliest)
    appends = [i for i in range(start, latest + 1) if table.snapshot(i).commit_kind is CommitKind.APPEND]
    return latest, appends


def build_new_snapshots_sensor(
    cfg: HudiTableConfig, translator: DagsterHudiTranslator, job: Any
) -> dg.SensorDefinition:
    """``<t>__new_snapshots_sensor``: a compaction run when APPEND snapshots were committed since the cursor."""
    name = translator.get_sensor_name(cfg, "new_snapshots")

    @dg.sensor(
        name=name,
        job=job,
        minimum_interval_seconds=60,
        description=f"Requests a compaction run ({job.name}) when APPEND snapshots were committed on {cfg.name}",
    )
    def _sensor(context: dg.SensorEvaluationContext) -> dg.SensorResult:
        cursor = NewSnapshotsCursor.from_json(context.cursor, table=cfg.name, sensor=name)
        with hudi_step(cfg) as step:
            latest, appends = new_append_snapshots(step.open_table(), cursor.snapshot_id)
        next_cursor = NewSnapshotsCursor(snapshot_id=latest if latest is not None else cursor.snapshot_id).to_json()
        if not appends:
            return dg.SensorResult(
                skip_reason=f"no new APPEND snapshot on {cfg.name} (latest {latest})", cursor=next_cursor
            )
        return dg.SensorResult(
            run_requests=[
                dg.RunRequest(
                    run_key=f"snapshot-{latest}",
                    tags={"paimon/snapshot": str(latest), "paimon/new_appends": str(len(appends))},
                )
            ],
            cursor=next_cursor,
        )

    return _sensor


def _stop_trigger_check(health: PaimonTableHealth) -> dg.AssetCheckResult:
    over = health.buckets_over_stop_trigger
    return dg.AssetCheckResult(
        check_name="sorted_runs_within_stop_trigger",
        passed=not over,
        metadata={
            "max_sorted_runs": dg.MetadataValue.int(health.max_sorted_runs),
            "num-sorted-run.stop-trigger": dg.MetadataValue.int(health.stop_trigger),
            "buckets_over_stop_trigger": dg.MetadataValue.int(len(over)),
            "over": dg.MetadataValue.json(
                [{"partition": b.partition, "bucket": b.bucket, "sorted_runs": b.sorted_runs} for b in over[:20]]
            ),
        },
    )


def build_paimon_checks(cfg: HudiTableConfig, translator: DagsterHudiTranslator) -> dg.AssetChecksDefinition:
    """The checks of ``paimon/<t>`` as one ``multi_asset_check`` (the latest snapshot is read once)."""
    key = translator.get_asset_key(cfg)
    descriptions = {
        "sorted_runs_within_stop_trigger": "No bucket has more sorted runs than num-sorted-run.stop-trigger "
        "(where writers stop and wait for compaction)"
    }
    specs = [dg.AssetCheckSpec(n, asset=key, description=descriptions[n]) for n in CHECK_NAMES]

    @dg.multi_asset_check(specs=specs, name=f"{key.to_python_identifier()}__checks", can_subset=True)
    def _checks(context: dg.AssetCheckExecutionContext) -> Iterator[dg.AssetCheckResult]:
        selected = {k.name for k in context.selected_asset_check_keys}
        with hudi_step(cfg) as step:
            health = paimon_table_health(step.open_table())
        if "sorted_runs_within_stop_trigger" in selected:
            yield _stop_trigger_check(health)

    return _checks


@dataclass(frozen=True, kw_only=True)
class PaimonTableDefinitions:
    """Everything one Paimon table contributes to the definitions."""

    assets: list[Any]
    jobs: list[Any]
    schedules: list[Any]
    sensors: list[Any]
    checks: list[Any]


def build_paimon_table_definitions(cfg: HudiTableConfig, translator: DagsterHudiTranslator) -> PaimonTableDefinitions:
    """The assets, job, schedule, sensor and checks of a ``format: paimon`` table."""
    job = build_paimon_compaction_job(cfg, translator)
    return PaimonTableDefinitions(
        assets=[build_paimon_table_asset(cfg, translator), build_paimon_compaction_asset(cfg, translator)],
        jobs=[job],
        schedules=[build_paimon_schedule(cfg, translator, job)],
        sensors=[build_new_snapshots_sensor(cfg, translator, job)],
        checks=[build_paimon_checks(cfg, translator)],
    )
