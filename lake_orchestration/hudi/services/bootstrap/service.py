"""A bootstrap end to end: plan -> create the table -> METADATA_ONLY (execute, commit) -> FULL_RECORD.

Mirrors Hudi 0.14/0.15 ``SparkBootstrapCommitActionExecutor.execute``: the table must have no commit; the
METADATA_ONLY partitions are bootstrapped and committed first (``00000000000001``), then the FULL_RECORD ones
(``00000000000002``). The new table's ``hoodie.properties`` records ``hoodie.bootstrap.base.path`` and
``hoodie.bootstrap.index.class``. A crash before ``00000000000001`` commits leaves it pending:
:func:`~lake_orchestration.hudi.services.rollback.bootstrap.rollback_bootstrap` rolls it back. A crash after it
committed (``00000000000002`` pending or not started) is resumed by bootstrapping again with the same settings: the
plan is checked against the committed bootstrap index, a pending ``...02`` whose heartbeat expired is rolled back,
and the FULL_RECORD half is written (Java instead restores the whole table to its initial state before bootstrapping
again; resuming keeps the committed, already readable METADATA_ONLY half).

The verbs: :func:`prepare_bootstrap` (the decision: refuse, resume, or with ``retry_failed`` roll a failed attempt
back and start over) -> :func:`execute_bootstrap`; :func:`bootstrap` is both, what the CLI and Dagster call.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from lake_orchestration.config.keys import TABLE_CONFIG_PREFIX, HoodieKey
from lake_orchestration.config.options import HeartbeatConfig
from lake_orchestration.engines.base import Engine
from lake_orchestration.errors import PlanError, TableNotFoundError
from lake_orchestration.hudi.hfile.bootstrap_index import BOOTSTRAP_INDEX_CLASS
from lake_orchestration.hudi.model.instant import FULL_BOOTSTRAP_INSTANT, METADATA_BOOTSTRAP_INSTANT
from lake_orchestration.hudi.model.properties import new_table_properties
from lake_orchestration.hudi.services.bootstrap.committer import commit_metadata_only
from lake_orchestration.hudi.services.bootstrap.config import BootstrapConfig, BootstrapMode
from lake_orchestration.hudi.services.bootstrap.executor import execute_full_record, execute_metadata_only
from lake_orchestration.hudi.services.bootstrap.planner import BootstrapPlan, plan_bootstrap
from lake_orchestration.hudi.services.rollback import rollback_write
from lake_orchestration.hudi.services.rollback.bootstrap import rollback_bootstrap
from lake_orchestration.hudi.services.rollback.config import RollbackConfig
from lake_orchestration.hudi.table import HudiTable
from lake_orchestration.hudi.table.heartbeat import Heartbeat, attempt_liveness

log = logging.getLogger(__name__)


@dataclass(frozen=True, kw_only=True)
class BootstrapResult:
    """A bootstrap done (or, on a dry run, planned)."""

    plan: BootstrapPlan
    """The per-partition plan."""
    dry_run: bool
    """True if nothing was written."""
    metadata_only_instant: str | None = None
    """``00000000000001`` when METADATA_ONLY partitions were committed."""
    full_record_instant: str | None = None
    """``00000000000002`` when FULL_RECORD partitions were committed."""
    skeleton_files: int = 0
    """Skeleton base files written (one per METADATA_ONLY source file)."""
    full_record_base_files: int = 0
    """Base files the FULL_RECORD bulk insert wrote."""
    full_record_rows: int = 0
    """Rows the FULL_RECORD bulk insert wrote."""
    resumed: bool = False
    """True if ``00000000000001`` had been committed by an earlier, killed run and only the FULL_RECORD half was
    written."""

    def to_json_obj(self) -> dict[str, Any]:
        """The result as ``lake-orch bootstrap --json`` prints it (the plan, plus what was committed)."""
        return {
            **self.plan.to_json_obj(),
            "dry_run": self.dry_run,
            "metadata_only_instant": self.metadata_only_instant,
            "full_record_instant": self.full_record_instant,
            "skeleton_files": self.skeleton_files,
            "full_record_base_files": self.full_record_base_files,
            "full_record_rows": self.full_record_rows,
            "resumed": self.resumed,
        }


def bootstrap_table_properties(plan: BootstrapPlan, config: BootstrapConfig) -> dict[str, str]:
    """``hoodie.properties`` of the new table: the write options' table config plus the bootstrap keys."""
    w = config.write
    extra = {k: v for k, v in w.options.items() if k.startswith(TABLE_CONFIG_PREFIX)}
    extra[HoodieKey.BOOTSTRAP_BASE_PATH.key] = plan.source_path
    extra[HoodieKey.BOOTSTRAP_INDEX_CLASS.key] = BOOTSTRAP_INDEX_CLASS
    return new_table_properties(
        name=w.table_name or "",
        table_type=w.table_type,
        record_key_fields=w.record_key_fields,
        partition_fields=w.partition_fields,
        precombine_field=w.precombine_field,
        key_generator=w.key_generator,
        hive_style_partitioning=w.hive_style_partitioning,
        payload_class=w.payload_class,
        create_schema=plan.schema_json,
        database_name="default",
        extra=extra,
    )


def _open_table(base_uri: str, plan: BootstrapPlan, config: BootstrapConfig, storage_options: Any) -> HudiTable:
    props = bootstrap_table_properties(plan, config)
    try:
        table = HudiTable(base_uri, storage_options=storage_options)
    except TableNotFoundError:
        return HudiTable.create(base_uri, props, storage_options=storage_options)
    # an existing table without commits (checked by the planner) gets the bootstrap keys
    table.update_properties(
        {
            HoodieKey.BOOTSTRAP_BASE_PATH.key: props[HoodieKey.BOOTSTRAP_BASE_PATH.key],
            HoodieKey.BOOTSTRAP_INDEX_CLASS.key: props[HoodieKey.BOOTSTRAP_INDEX_CLASS.key],
        }
    )
    return table


@dataclass(frozen=True, kw_only=True)
class PreparedBootstrap:
    """What :func:`prepare_bootstrap` decided: the plan to execute, and the failed attempts it rolled back."""

    plan: BootstrapPlan
    rolled_back: tuple[str, ...] = ()
    """Rollback instants of a failed earlier bootstrap rolled back first (``retry_failed``)."""


def prepare_bootstrap(
    base_uri: str,
    config: BootstrapConfig,
    *,
    storage_options: Mapping[str, str] | None = None,
    dry_run: bool = False,
    retry_failed: bool = False,
    rollback_config: RollbackConfig | None = None,
) -> PreparedBootstrap:
    """The bootstrap decision every shell gets from here, before anything of the bootstrap is written: a table with
    commits is refused, unless its only commit is the METADATA_ONLY half ``00000000000001`` of this bootstrap (then
    the FULL_RECORD half is resumed); a failed earlier attempt (``00000000000001`` pending, no commit) is refused
    with the rollback to run, or, with ``retry_failed`` (an orchestrator retrying its own step), rolled back first
    (not on a dry run) so the bootstrap starts over.

    ``rollback_config``: the rollback's settings (default: the write options' lock and heartbeat).

    Raises:
        PlanError: as :func:`plan_bootstrap` (a retry cannot change any of them: the table has commits, a failed
            bootstrap is pending without ``retry_failed``, the source or the selection is wrong).
    """
    opts = dict(storage_options) if storage_options else None
    rolled_back: list[str] = []
    if retry_failed and not dry_run:
        try:
            table = HudiTable(base_uri, storage_options=opts)
        except TableNotFoundError:
            table = None
        if table is not None and table.timeline.completed_commits().last is None:
            rb = rollback_config or RollbackConfig(
                lock=config.write.lock,
                heartbeat=HeartbeatConfig.from_options(config.write.options, service="bootstrap"),
            )
            rolled_back = [str(i.time) for i in rollback_bootstrap(table, config=rb)]
            for t in rolled_back:
                log.warning("Rolled back a failed bootstrap of %s (%s)", base_uri, t)
    return PreparedBootstrap(
        plan=plan_bootstrap(base_uri, config, storage_options=opts), rolled_back=tuple(rolled_back)
    )


def execute_bootstrap(
    base_uri: str,
    prepared: PreparedBootstrap | BootstrapPlan,
    config: BootstrapConfig,
    *,
    storage_options: Mapping[str, str] | None = None,
    engine: Engine | None = None,
) -> BootstrapResult:
    """Write the planned bootstrap (:func:`prepare_bootstrap`): create the table (or give an empty one the
    bootstrap keys), execute and commit the METADATA_ONLY half ``00000000000001`` (or, resumed, roll back a failed
    FULL_RECORD half), then the FULL_RECORD half ``00000000000002``.

    Raises:
        PlanError: a resumed FULL_RECORD half ``00000000000002`` is still being written (fresh heartbeat): a later
            retry may succeed.
        StorageError: the source or the table cannot be read or written.
    """
    plan = prepared.plan if isinstance(prepared, PreparedBootstrap) else prepared
    opts = dict(storage_options) if storage_options else None
    table = _open_table(base_uri, plan, config, opts)
    metadata_instant = None
    skeletons = 0
    if plan.resume:
        _roll_back_failed_full_record(table, config)
    elif plan.partitions_in(BootstrapMode.METADATA_ONLY):
        heartbeat = Heartbeat(
            table.storage, METADATA_BOOTSTRAP_INSTANT, interval_ms=config.write.heartbeat_interval_ms
        ).start()
        try:
            execution = execute_metadata_only(table, plan, config, engine=engine)
            commit_metadata_only(table, plan, execution, lock=config.write.lock)
        except BaseException:
            heartbeat.stop(delete=False)  # the expiring heartbeat tells a rollback the bootstrap is gone
            raise
        heartbeat.stop(delete=True)
        metadata_instant, skeletons = METADATA_BOOTSTRAP_INSTANT, len(execution.writes)
    full = execute_full_record(table.refresh(), plan, config, engine=engine)
    return BootstrapResult(
        plan=plan,
        dry_run=False,
        metadata_only_instant=metadata_instant,
        full_record_instant=full.instant if full is not None else None,
        skeleton_files=skeletons,
        full_record_base_files=len(full.files_written) if full is not None else 0,
        full_record_rows=full.inserted if full is not None else 0,
        resumed=plan.resume,
    )


def bootstrap(
    base_uri: str,
    config: BootstrapConfig,
    *,
    storage_options: Mapping[str, str] | None = None,
    engine: Engine | None = None,
    dry_run: bool = False,
    retry_failed: bool = False,
) -> BootstrapResult:
    """Bootstrap the parquet dataset at ``config.source_path`` into a new Hudi table at ``base_uri``:
    :func:`prepare_bootstrap` then :func:`execute_bootstrap` (the verb the CLI and Dagster call; it takes the
    table's path, not a table: the table is created here).

    Args:
        base_uri: the table's base path (created; an existing table must have no commit).
        config: source path, mode selector, and the new table's write options.
        storage_options: options for object stores (the table's and the source's).
        engine: runs the skeleton tasks and the bulk insert's file-group tasks (default: in this process).
        dry_run: only plan (nothing is written).
        retry_failed: roll back a failed earlier attempt first (see :func:`prepare_bootstrap`).

    Returns:
        The plan and what was committed.

    Raises:
        PlanError: no source files, key fields missing from the source, or the table already has commits or a
            pending bootstrap (without ``retry_failed``).
        StorageError: the source or the table cannot be read or written.
    """
    prepared = prepare_bootstrap(
        base_uri, config, storage_options=storage_options, dry_run=dry_run, retry_failed=retry_failed
    )
    if dry_run:
        return BootstrapResult(plan=prepared.plan, dry_run=True)
    return execute_bootstrap(base_uri, prepared, config, storage_options=storage_options, engine=engine)


def _roll_back_failed_full_record(table: HudiTable, config: BootstrapConfig) -> None:
    """Before a resumed FULL_RECORD half: roll back the pending ``00000000000002`` of the killed run (its files and
    markers), unless its heartbeat says the run is still alive.

    Raises:
        PlanError: ``00000000000002`` is pending and its writer's heartbeat is fresh (a bootstrap is running).
    """
    pending = table.refresh().timeline.get(FULL_BOOTSTRAP_INSTANT)
    if pending is None or pending.is_completed:
        return
    beats = HeartbeatConfig.from_options(config.write.options, service="bootstrap")
    liveness = attempt_liveness(
        table.storage,
        FULL_BOOTSTRAP_INSTANT,
        inflight_path=table.instant_path(pending),
        interval_ms=beats.interval_ms,
        tolerable_misses=beats.tolerable_misses,
    )
    if liveness.alive:
        raise PlanError(
            f"Cannot resume the bootstrap of {table.base_uri}: its FULL_RECORD half {pending.file_name} is still "
            f"being written ({liveness.describe()}); wait for it, or resume after the heartbeat expired"
        )
    rollback_write(table, FULL_BOOTSTRAP_INSTANT, config=RollbackConfig(lock=config.write.lock, heartbeat=beats))
