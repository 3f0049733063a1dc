"""Operators: the table services of the Dagster shell as Airflow tasks, on the same service core.

Every operator reads its table from a ``hudi`` connection (:class:`~lake_orchestration.airflow.hooks.HudiTableHook`;
``base_path`` and ``options`` are templated, so a path can come from a Variable: ``"{{ var.value.trips_path }}"``)
and returns its typed result's ``to_json_obj()`` — the same JSON ``lake-orch ... --json`` prints — as the XCom.

* :class:`HudiScheduleCompactionOperator` — schedule-plan (Hudi's trigger strategy decides); returns the new plan's
  instant (None: nothing scheduled) and pushes the schedule result under the XCom key ``schedule``.
* :class:`HudiListPendingCompactionsOperator` — the pending plans to run (FIFO/LIFO, at most ``max_plans``): the input
  of ``HudiExecuteCompactionOperator.partial(...).expand(instant=...)``, one mapped task per plan.
* :class:`HudiExecuteCompactionOperator` — execute and commit one plan (engine ``local`` or ``spark``); a committed
  plan is a no-op (``already_committed``), a plan another process is executing skips the task.
* :class:`HudiScheduleClusteringOperator`, :class:`HudiListPendingClusteringOperator`,
  :class:`HudiExecuteClusteringOperator` — the same three steps for clustering (``<instant>.replacecommit``).
* :class:`HudiCleanOperator` — finish pending cleans, plan, execute and commit a new one, remove stale temp files.
* :class:`HudiArchiveOperator` — archive, then merge small archive files (``merge=False``: archive only).
* :class:`HudiRollbackOperator` — roll back one pending write, or every stale one.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal

from airflow.sdk import BaseHook, BaseOperator
from airflow.sdk.exceptions import AirflowSkipException

from lake_orchestration.airflow.hooks import (
    PASSTHROUGH_ESCAPE,
    HudiTableHook,
    HudiTableLocation,
    parse_passthrough_keys,
)
from lake_orchestration.config.options import check_option_keys

if TYPE_CHECKING:
    from airflow.sdk import Context

    from lake_orchestration.engines.base import Engine

EngineName = Literal["local", "spark"]
"""The engines of :func:`lake_orchestration.engines.factory.build_engine`."""

INSTANT_MAP_INDEX = "{{ task.instant }}"
"""The default ``map_index_template`` of :class:`HudiExecuteCompactionOperator`: the (rendered) plan instant."""


class HudiTableOperator(BaseOperator):
    """Base of the table operators: the table's connection, base path and ``hoodie.*`` options.

    Args:
        hudi_conn_id: the ``hudi`` connection (base path, storage options and secrets, default options).
        base_path: the table's base path, over the connection's (templated).
        options: ``hoodie.*`` service options over the connection's ``hoodie_options`` (templated). A ``hoodie.*``
            key nothing reads (a typo) is refused with the closest known key when the DAG is parsed (the task's
            ``options``) or when the task starts (the connection's ``hoodie_options``), as the CLI's ``--option``.
        passthrough_keys: ``hoodie.*`` keys lake_orchestration does not model, passed on unchecked (in ``options``
            or the connection's ``hoodie_options``; the CLI's ``--option-passthrough``).
    """

    template_fields: Sequence[str] = ("base_path", "options")
    ui_color = "#d6ecf7"

    def __init__(
        self,
        *,
        hudi_conn_id: str = HudiTableHook.default_conn_name,
        base_path: str | None = None,
        options: Mapping[str, Any] | None = None,
        passthrough_keys: Sequence[str] | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.hudi_conn_id = hudi_conn_id
        self.base_path = base_path
        source = f"{type(self).__name__} {self.task_id!r}"
        if options is not None and not isinstance(options, Mapping):
            raise TypeError(f"{source}: options is {type(options).__name__} {options!r}, expected a mapping")
        self.options = dict(options or {})
        self.passthrough_keys = sorted(parse_passthrough_keys(passthrough_keys, source=source))
        self._check_options()

    def _check_options(self) -> None:
        check_option_keys(
            self.options,
            source=f"options of task {self.task_id!r}",
            escape=PASSTHROUGH_ESCAPE,
            passthrough=set(self.passthrough_keys),
        )

    def location(self) -> HudiTableLocation:
        """The table's location (after templating); the connection's ``hoodie_options`` keys checked."""
        return HudiTableHook(
            self.hudi_conn_id, base_path=self.base_path or None, passthrough_keys=set(self.passthrough_keys)
        ).get_conn()

    def service_options(self, location: HudiTableLocation) -> dict[str, str]:
        """The connection's ``hoodie_options`` with this task's ``options`` on top (keys checked again after
        templating)."""
        self._check_options()
        return location.service_options(self.options)


class HudiEngineOperator(HudiTableOperator):
    """A table operator whose work can run on Spark.

    Args:
        engine: ``local`` (in the worker process, ``threads`` at a time) or ``spark``.
        spark_conn_id: a Spark connection (``spark`` type: host ``spark://host`` or ``local[4]`` / ``yarn``, port
            appended when set; extra ``{"conf": {...}}``) giving the master; or ``spark_master`` directly.
        spark_conf: more Spark settings (``spark.executor.memory`` ...).
        threads: threads of the local engine.
    """

    template_fields: Sequence[str] = (*HudiTableOperator.template_fields, "spark_master")

    def __init__(
        self,
        *,
        engine: EngineName = "local",
        spark_conn_id: str | None = None,
        spark_master: str | None = None,
        spark_conf: Mapping[str, str] | None = None,
        threads: int = 1,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        if engine not in ("local", "spark"):
            raise ValueError(f"{type(self).__name__} engine={engine!r}: expected 'local' or 'spark'")
        self.engine = engine
        self.spark_conn_id = spark_conn_id
        self.spark_master = spark_master
        self.spark_conf = dict(spark_conf or {})
        self.threads = threads

    def spark_settings(self) -> tuple[str, dict[str, str]]:
        """The Spark master and conf of this task (``spark_master``, else the Spark connection, else local[*])."""
        conf = dict(self.spark_conf)
        master = self.spark_master
        if not master and self.spark_conn_id:
            conn = BaseHook.get_connection(self.spark_conn_id)
            master = conn.host or "local[*]"
            if conn.port:
                master = f"{master}:{conn.port}"
            conf = {**{str(k): str(v) for k, v in (conn.extra_dejson.get("conf") or {}).items()}, **conf}
        return master or "local[*]", conf

    def make_engine(self) -> Engine:
        """The engine of this task, from the one factory (:func:`~lake_orchestration.engines.factory.build_engine`):
        a :class:`~lake_orchestration.engines.local.LocalEngine` (with one thread, the in-process path the CLI and
        Dagster take), or a Spark engine on a session built from :meth:`spark_settings`, started on the first task
        (the worker needs Java 17 and pyspark)."""
        from lake_orchestration.engines.factory import build_engine

        if self.engine == "local":
            return build_engine("local", threads=self.threads)
        master, conf = self.spark_settings()
        return build_engine("spark", spark_master=master, spark_conf=conf, app_name=f"airflow-{self.task_id}")


class HudiScheduleCompactionOperator(HudiTableOperator):
    """Schedule a compaction plan (``<instant>.compaction.requested``) if Hudi's trigger strategy says so.

    Returns the plan's instant (None when nothing was scheduled); the full result (``scheduled``, ``instant``,
    ``reason``, ``operations``) is pushed under the XCom key ``schedule``."""

    def execute(self, context: Context) -> str | None:
        from lake_orchestration.hudi.services.compaction import CompactionConfig, schedule_compaction

        location = self.location()
        config = CompactionConfig.from_options(self.service_options(location))
        result = schedule_compaction(location.open_table(), config=config)
        self.log.info("%s: %s%s", location.base_path, result.reason, f" ({result.instant})" if result.instant else "")
        context["ti"].xcom_push(key="schedule", value=result.to_json_obj())
        return str(result.instant) if result.instant else None


class HudiListPendingCompactionsOperator(HudiTableOperator):
    """The pending compaction plans to execute next, as a list of instants (the input of ``.expand()``).

    Args:
        seq: ``FIFO`` (oldest first) or ``LIFO``.
        max_plans: at most this many (None: all).
    """

    template_fields: Sequence[str] = (*HudiTableOperator.template_fields, "seq", "max_plans")

    def __init__(self, *, seq: str = "FIFO", max_plans: int | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.seq = seq
        self.max_plans = max_plans

    def execute(self, context: Context) -> list[str]:
        from lake_orchestration.hudi.services.compaction import select_pending_plans

        location = self.location()
        max_plans = None if self.max_plans in (None, "", "None") else int(self.max_plans)
        plans = select_pending_plans(location.open_table(), seq=str(self.seq), max_plans=max_plans)
        self.log.info("%s: %d pending compaction plan(s) to run: %s", location.base_path, len(plans), plans)
        return plans


class HudiExecuteCompactionOperator(HudiEngineOperator):
    """Execute and commit the compaction plan ``instant`` (templated; mapped with ``.expand(instant=...)``).

    A crashed inflight attempt is rolled back first; a committed plan is a no-op (``already_committed``); a plan
    another process is executing (fresh heartbeat) skips the task. Returns the ``CompactionResult`` JSON (instant,
    operations, rows/bytes written, log records merged, seconds, rolled-back attempt) plus ``already_committed``.

    Args:
        instant: the plan's instant.
        map_index_template: the label of a mapped task in the UI; by default the plan's instant, so the mapped
            tasks of ``.expand(instant=...)`` read ``20260101120000000`` rather than ``0, 1, 2`` (Airflow's
            ``map_index_template``; None: the map index).
    """

    template_fields: Sequence[str] = (*HudiEngineOperator.template_fields, "instant")

    def __init__(self, *, instant: str, map_index_template: str | None = INSTANT_MAP_INDEX, **kwargs: Any) -> None:
        super().__init__(map_index_template=map_index_template, **kwargs)
        self.instant = instant

    def execute(self, context: Context) -> dict[str, Any]:
        from lake_orchestration.hudi.services.compaction import CompactionConfig, run_compaction_plan

        instant = str(self.instant)
        location = self.location()
        config = CompactionConfig.from_options(self.service_options(location))
        # a committed plan is the core's no-op (already_committed); another process's plan is skipped
        run = run_compaction_plan(location.open_table(), instant, config=config, make_engine=self.make_engine)
        if run.skipped:
            raise AirflowSkipException(f"compaction {instant} of {location.base_path}: {run.skipped}")
        if run.already_committed:
            self.log.info("Compaction %s of %s is already committed: nothing to do", instant, location.base_path)
        else:
            assert run.result is not None
            self.log.info("Compaction %s of %s: %s", instant, location.base_path, run.result.to_json_obj())
        return run.to_json_obj()


class HudiScheduleClusteringOperator(HudiTableOperator):
    """Schedule a clustering plan (``<instant>.replacecommit.requested``, Hudi's size-based plan strategy and
    ``hoodie.clustering.*`` options) if Hudi's trigger says so (with neither ``hoodie.clustering.inline`` nor
    ``hoodie.clustering.async.enabled`` set: whenever a file slice is eligible, as ``HoodieClusteringJob``'s schedule).

    Returns the plan's instant (None when nothing was scheduled); the full result (``scheduled``, ``instant``,
    ``reason``, groups) is pushed under the XCom key ``schedule``."""

    def execute(self, context: Context) -> str | None:
        from lake_orchestration.hudi.services.clustering import ClusteringConfig, schedule_clustering

        location = self.location()
        config = ClusteringConfig.from_options(self.service_options(location))
        result = schedule_clustering(location.open_table(), config=config)
        self.log.info("%s: %s%s", location.base_path, result.reason, f" ({result.instant})" if result.instant else "")
        context["ti"].xcom_push(key="schedule", value=result.to_json_obj())
        return str(result.instant) if result.instant else None


class HudiListPendingClusteringOperator(HudiListPendingCompactionsOperator):
    """The pending clustering plans to execute next, as a list of instants (the input of
    ``HudiExecuteClusteringOperator.partial(...).expand(instant=...)``).

    Args:
        seq: ``FIFO`` (oldest first) or ``LIFO``.
        max_plans: at most this many (None: all).
    """

    def execute(self, context: Context) -> list[str]:
        from lake_orchestration.hudi.services.clustering import select_pending_plans

        location = self.location()
        max_plans = None if self.max_plans in (None, "", "None") else int(self.max_plans)
        plans = select_pending_plans(location.open_table(), seq=str(self.seq), max_plans=max_plans)
        self.log.info("%s: %d pending clustering plan(s) to run: %s", location.base_path, len(plans), plans)
        return plans


class HudiExecuteClusteringOperator(HudiExecuteCompactionOperator):
    """Execute and commit the clustering plan ``instant`` (templated; mapped with ``.expand(instant=...)``): the new
    file groups sorted per ``hoodie.clustering.plan.strategy.sort.columns`` and ``hoodie.layout.optimize.strategy``,
    then ``<instant>.replacecommit``.

    A crashed inflight attempt is rolled back first; a committed plan is a no-op (``already_committed``); a plan
    another process is executing (fresh heartbeat) skips the task. Returns the ``ClusteringResult`` JSON (instant,
    groups, file groups replaced, files/rows/bytes written, seconds, rolled-back attempt) plus
    ``already_committed``. ``map_index_template`` as :class:`HudiExecuteCompactionOperator`'s.
    """

    def execute(self, context: Context) -> dict[str, Any]:
        from lake_orchestration.hudi.services.clustering import ClusteringConfig, run_clustering_plan

        instant = str(self.instant)
        location = self.location()
        config = ClusteringConfig.from_options(self.service_options(location))
        run = run_clustering_plan(location.open_table(), instant, config=config, make_engine=self.make_engine)
        if run.skipped:
            raise AirflowSkipException(f"clustering {instant} of {location.base_path}: {run.skipped}")
        if run.already_committed:
            self.log.info("Clustering %s of %s is already committed: nothing to do", instant, location.base_path)
        else:
            assert run.result is not None
            self.log.info("Clustering %s of %s: %s", instant, location.base_path, run.result.to_json_obj())
        return run.to_json_obj()


class HudiCleanOperator(HudiEngineOperator):
    """Clean (Hudi's ``clean()``): finish pending cleans, then plan, execute (deletes, on the engine) and commit a new
    one if the trigger fires (``hoodie.cleaner.*``), then remove abandoned temporary files. Returns the
    ``CleanResult`` JSON (instants, earliest commit to retain, files, deleted, failed, reason, ...).

    Args:
        dry_run: only report what would be deleted. Clean deletes files, so it is a dry run unless the DAG says
            ``dry_run=False`` (as the Dagster clean job is unless the table says otherwise).
    """

    def __init__(self, *, dry_run: bool = True, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.dry_run = dry_run

    def execute(self, context: Context) -> dict[str, Any]:
        from lake_orchestration.engines.factory import build_engine
        from lake_orchestration.hudi.services.clean import CleanConfig, run_clean

        location = self.location()
        config = CleanConfig.from_options(self.service_options(location))
        # locally the deletes run on clean's own thread pool (its in-process path), as before: ``threads`` is for
        # tasks that compute, not for deletes that wait on storage
        engine = self.make_engine() if self.engine == "spark" else build_engine("local")
        result = run_clean(location.open_table(), config, dry_run=self.dry_run, engine=engine)
        self.log.info(
            "%s: clean %s %s %d file(s); %s",
            location.base_path,
            list(result.instants) or "none",
            "would delete" if self.dry_run else "deleted",
            result.file_count if self.dry_run else result.deleted,
            result.reason,
        )
        return result.to_json_obj()


class HudiArchiveOperator(HudiTableOperator):
    """Archive the active timeline (``hoodie.keep.min/max.commits`` ...), then merge small archive files
    (``hoodie.archive.merge.*``) — the two steps of the Dagster archive job. Returns
    ``{"archive": <ArchiveResult JSON>, "merge": <MergeResult JSON or None>}``.

    Args:
        merge: run the merge step after archiving.
        dry_run: only report what would be archived and merged; archive deletes active instant files, so it is a
            dry run unless the DAG says ``dry_run=False``.
    """

    def __init__(self, *, merge: bool = True, dry_run: bool = True, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.merge = merge
        self.dry_run = dry_run

    def execute(self, context: Context) -> dict[str, Any]:
        from lake_orchestration.hudi.services.archive import ArchiveConfig, archive, merge_archive_files

        location = self.location()
        table = location.open_table()
        config = ArchiveConfig.from_options(self.service_options(location), table_properties=table.config.raw)
        archived = archive(table, config, dry_run=self.dry_run)
        self.log.info(
            "%s: %s %d instant(s)%s",
            location.base_path,
            "would archive" if self.dry_run else "archived",
            len(archived.archived_instants),
            f" into {archived.archive_file}" if archived.archive_file else "",
        )
        merged = merge_archive_files(table, config, dry_run=self.dry_run) if self.merge else None
        if merged is not None:
            self.log.info(
                "%s: merge of small archive files: %s",
                location.base_path,
                f"{len(merged.candidates)} file(s) into {merged.merged_file}" if merged.merged_file else "nothing",
            )
        return {"archive": archived.to_json_obj(), "merge": merged.to_json_obj() if merged is not None else None}


class HudiRollbackOperator(HudiTableOperator):
    """Roll back the pending write ``instant_time`` (templated), or every stale pending write (expired heartbeat, or
    no heartbeat and older than ``timeout_seconds``). Returns the ``lake-orch rollback --json`` rows.

    Args:
        instant_time: the write to roll back (None: every stale one).
        timeout_seconds: a pending write without a heartbeat file older than this is stale (None: never).
        dry_run: only report the plans.
    """

    template_fields: Sequence[str] = (*HudiTableOperator.template_fields, "instant_time")

    def __init__(
        self,
        *,
        instant_time: str | None = None,
        timeout_seconds: float | None = None,
        dry_run: bool = False,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.instant_time = instant_time
        self.timeout_seconds = timeout_seconds
        self.dry_run = dry_run

    def execute(self, context: Context) -> list[dict[str, Any]]:
        from lake_orchestration.hudi.services.rollback import (
            RemovedRollback,
            RollbackResult,
            rollback_instant,
            rollback_stale_writes,
        )
        from lake_orchestration.hudi.services.rollback.config import RollbackConfig

        location = self.location()
        table = location.open_table()
        config = RollbackConfig.from_options(self.service_options(location))
        results: list[RollbackResult | RemovedRollback]
        if self.instant_time:
            # the core routes it: a pending rollback is removed, any other pending write rolled back
            results = [rollback_instant(table, str(self.instant_time), dry_run=self.dry_run, config=config)]
        else:
            results = [
                RollbackResult.of(str(s.instant.time), s.reason, r)
                for s, r in rollback_stale_writes(
                    table, timeout_s=self.timeout_seconds, dry_run=self.dry_run, config=config
                )
            ]
        for r in results:
            self.log.info("%s: %s", location.base_path, r.to_json_obj())
        return [r.to_json_obj() for r in results]
