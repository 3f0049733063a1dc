"""The fleet model: one set of Dagster definitions for any number of tables (issue 27).

The per-table model (:func:`~lake_orchestration.dagster.build_hudi_definitions`) builds per table 2 assets, 5 jobs,
3 sensors and up to 3 schedules: fine for ten tables, minutes to load for a thousand. The fleet model builds a fixed
set, whatever the number of tables:

* ``fleet/compaction_plans`` — the compaction plans of every table as one asset with dynamic partitions
  ``<table>|<instant>`` (partitions definition ``fleet__compaction_instants``); materializing a partition executes
  and commits that plan. A backfill of its missing partitions runs every pending plan of the fleet; selecting the
  partitions ``t|*`` runs those of one table.
* ``fleet/health`` — one asset for the fleet: a materialization records a row per table (compaction backlog, cleaner
  lag, archival lag, metadata-table lag, small files, breaches of its policy) as Dagster table metadata, and the
  fleet-wide figures Dagster plots over time (``tables_breaching``, ``total_pending_compactions``,
  ``max_max_log_files_per_slice`` ...); its check ``tables_within_policy`` fails naming the tables that breach their
  policy.
* jobs ``fleet__compaction`` (the asset job of ``fleet/compaction_plans``), ``fleet__schedule_compaction``,
  ``fleet__clean``, ``fleet__archive``, ``fleet__rollback``, ``fleet__measure_health``: shared by every table; the
  table of a run is its tag ``lake_orchestration/table`` (the sensors and schedules set it; from the launchpad, add
  the tag).
* one sensor per service kind: ``fleet__compaction_sensor``, ``fleet__clean_sensor``, ``fleet__archive_sensor``,
  ``fleet__stale_inflight_sensor`` (and ``fleet__clustering_sensor``, with the job ``fleet__clustering`` and a
  schedule per ``clustering_cron``, when a table opts into clustering: ``hoodie.clustering.async.enabled``). Each
  tick walks every table with one listing of ``.hoodie/``
  (:func:`lake_orchestration.fleet.probe.probe`); a table whose listing did not change since the sensor's last tick
  (its fingerprint, kept per table in the cursor) costs that one request and nothing else. Of the changed tables the
  sensor requests at most ``budget_per_tick`` runs, most overdue x weight first
  (:func:`lake_orchestration.fleet.probe.order`); the tables it could not serve keep their old fingerprint and are
  judged again next tick.
* schedules per policy, not per table: one per service and distinct cron of the tables (``schedule_cron``,
  ``clean_cron``, ``archive_cron``), e.g. ``fleet__clean__0_x_x_x_x_schedule`` for every table cleaned at
  ``0 * * * *``: a full sweep of its tables (no cursor) within the same budget, which also catches what a failed run
  left due.

Re-discovery: with a :class:`FleetDiscovery` (the code location passes its config file's ``discover:``), each prefix
is searched again every ``rediscover_interval_minutes`` (default 60, 0: at load only) at the first sensor or
schedule tick after the interval; the sensors, schedules, runs and ``fleet/health`` all look tables up in the latest
discovery's list (new tables served, tables gone from storage dropped, ``tables:`` entries kept; a failed discovery
keeps the previous list). The list and the time of the last discovery live in the code server's process (the daemon
evaluates every tick there; a new process discovers at load).

Every service step calls the same step bodies as the per-table ops (:func:`~lake_orchestration.dagster.jobs.
clean_plan_step` ..., :func:`~lake_orchestration.dagster.assets.execute_plan_step` ...), given the table the run names.

Limits: every run carries the tags ``lake_orchestration/table``, ``lake_orchestration/service`` and
``lake_orchestration/pool`` (the table's ``policy.pool``, else the service), so the instance's run queue bounds them
(``concurrency: runs: tag_concurrency_limits``): 1 run per table (``applyLimitPerUniqueValue``), N per pool or
service. The compaction steps also run in the Dagster pool ``fleet_compaction`` (op concurrency: at most N
compaction steps fleet-wide, ``dagster instance concurrency set fleet_compaction N``).

A Paimon table of the fleet is compacted by ``fleet__paimon_compaction`` (the same step bodies as its own job in the
per-table model, :mod:`lake_orchestration.dagster.paimon`), requested by ``fleet__compaction_sensor`` when its
planner has buckets to compact (the probe lists ``snapshot/``), and measured by ``fleet/health``.
"""

import collections
import dataclasses
import json
import logging
import math
import re
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import dagster as dg

from lake_orchestration.dagster.assets import commit_plan_step, execute_plan_step
from lake_orchestration.dagster.config import HudiConfigError, HudiTableConfig, validate_tables
from lake_orchestration.dagster.jobs import (
    MaintenanceRunConfig,
    RollbackConfig,
    archive_step,
    clean_commit_step,
    clean_execute_step,
    clean_plan_step,
    merge_archive_files_step,
    rollback_step,
    schedule_compaction_step,
)
from lake_orchestration.dagster.resources import build_spark_resource
from lake_orchestration.dagster.translator import LIGHT_EXECUTOR, DagsterHudiTranslator, definitions_executor

TABLE_TAG = "lake_orchestration/table"
"""The run tag naming the table of a fleet run (and the key of the 1-run-per-table limit)."""
SERVICE_TAG = "lake_orchestration/service"
"""The run tag naming the service (``compaction``, ``schedule_compaction``, ``clean``, ``archive``, ``rollback``)."""
POOL_TAG = "lake_orchestration/pool"
"""The run tag naming the table's ``policy.pool`` (else the service): the key of per-group limits."""
COMPACTION_POOL = "fleet_compaction"
"""The Dagster pool of the fleet's compaction steps (at most N fleet-wide: set its limit in the instance)."""
PARTITIONS_DEF = "fleet__compaction_instants"
"""The dynamic partitions of ``fleet/compaction_plans``: ``<table>|<instant>``."""
SEP = "|"
COMPACTION_KEY = dg.AssetKey(["fleet", "compaction_plans"])
HEALTH_KEY = dg.AssetKey(["fleet", "health"])
HEALTH_CHECK = "tables_within_policy"
DEFAULT_BUDGET = 20
"""Runs a fleet sensor requests at most per tick."""
FLEET_AUTO_MIN_TABLES = 20
"""``fleet: auto`` (the default) builds the fleet model from this many tables on."""
PROBE_THREADS = 16
"""Tables a tick probes at once (each probe is one listing: on an object store, mostly waiting)."""
SENSOR_SERVICES = ("compaction", "clean", "archive", "stale_inflight")
"""The fleet's sensors, one per service kind."""

_CURSOR_EXPECTED = '{"fingerprints": {table: fingerprint}}'
_log = logging.getLogger(__name__)


def _monotonic() -> float:
    """The clock of re-discovery (a test replaces it)."""
    return time.monotonic()


def use_fleet_model(setting: bool | str | None, n_tables: int) -> bool:
    """Whether a config's tables get the fleet model: ``fleet: true`` / ``false``, or ``auto`` (default): from
    :data:`FLEET_AUTO_MIN_TABLES` tables on."""
    if setting is None or setting == "auto":
        return n_tables >= FLEET_AUTO_MIN_TABLES
    if isinstance(setting, bool):
        return setting
    raise HudiConfigError("fleet", f"expected true, false or auto, got {setting!r}")


def partition_key(table: str, instant: str) -> str:
    """The partition of ``fleet/compaction_plans`` of plan ``instant`` of ``table``: ``<table>|<instant>``."""
    return f"{table}{SEP}{instant}"


def split_partition_key(key: str) -> tuple[str, str]:
    """``(table, instant)`` of a partition key of ``fleet/compaction_plans``.

    Raises:
        HudiConfigError: not ``<table>|<instant>``.
    """
    table, sep, instant = key.partition(SEP)
    if not sep or not table or not instant:
        raise HudiConfigError(PARTITIONS_DEF, f"partition key {key!r}: expected <table>|<instant>")
    return table, instant


class FleetTranslator(DagsterHudiTranslator):
    """The names the shared step bodies use in the fleet model (tables have no asset of their own)."""

    observe_health = False

    def get_compaction_asset_key(self, table: HudiTableConfig) -> dg.AssetKey:
        return COMPACTION_KEY

    def get_partitions_def_name(self, table: HudiTableConfig) -> str:
        return PARTITIONS_DEF

    def get_sensor_name(self, table: HudiTableConfig, sensor: Any) -> str:
        return "fleet__compaction_sensor" if "compaction" in str(sensor) else f"fleet__{sensor}_sensor"


def fleet_tables(tables: Sequence[HudiTableConfig]) -> list[Any]:
    """The shell-independent :class:`~lake_orchestration.fleet.config.FleetTable` of each table (same names)."""
    from lake_orchestration.fleet.config import tables_from_entries

    entries = []
    for t in tables:
        entry = t.model_dump(mode="json", exclude_defaults=True) | {"name": t.name, "base_path": t.base_path}
        if t.storage is not None:  # the provider is the discriminator's default: dumped explicitly
            entry["storage"] = t.storage.model_dump(mode="json", exclude_none=True, exclude_defaults=True) | {
                "provider": t.storage.provider
            }
        entries.append(entry)
    return tables_from_entries(entries, where="fleet")


@dataclasses.dataclass(frozen=True)
class FleetDiscovery:
    """The ``discover:`` prefixes of a config file (with its ``defaults:`` and ``tables:``), searched again by the
    fleet model every ``rediscover_interval_minutes`` of each prefix (:data:`~lake_orchestration.fleet.config.
    DEFAULT_REDISCOVER_MINUTES`; 0: at load only)."""

    raw: Mapping[str, Any]
    """``{"defaults": ..., "tables": ..., "discover": [...]}`` as the file has them."""
    where: str
    """The file (errors and warnings name it)."""

    @classmethod
    def from_file(cls, path: str | Path) -> "FleetDiscovery | None":
        """The discovery of a config file, or None when it has no ``discover:`` prefix searched again."""
        import yaml

        from lake_orchestration.fleet.config import rediscover_interval_minutes

        data = yaml.load(Path(path).read_text(), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
        if not isinstance(data, Mapping) or not isinstance(data.get("discover"), list):
            return None
        raw = {k: data[k] for k in ("defaults", "tables", "discover") if k in data}
        if not any(rediscover_interval_minutes(d, where=str(path)) > 0 for d in raw["discover"]):
            return None
        return cls(raw=raw, where=str(path))

    def interval_seconds(self, index: int) -> float:
        """How often prefix ``index`` is searched again (``inf``: never)."""
        from lake_orchestration.fleet.config import rediscover_interval_minutes

        minutes = rediscover_interval_minutes(self.raw["discover"][index], where=self.where)
        return minutes * 60.0 if minutes > 0 else math.inf

    @property
    def listed(self) -> set[str]:
        """The names of the ``tables:`` entries (never dropped by a discovery)."""
        return {str(t.get("name")) for t in self.raw.get("tables") or [] if isinstance(t, Mapping)}

    def prefix_of(self, base_path: str) -> int | None:
        """The first prefix ``base_path`` is under."""
        from lake_orchestration.fleet.config import _norm_path

        p = _norm_path(base_path).rstrip("/")
        for i, d in enumerate(self.raw["discover"]):
            root = _norm_path(d["prefix"]).rstrip("/")
            if p.startswith(root + "/"):
                return i
        return None


@dataclasses.dataclass(frozen=True)
class _View:
    """The tables of the fleet at one moment (a tick works on one view, whatever a re-discovery does meanwhile)."""

    configs: Mapping[str, HudiTableConfig]
    tables: Mapping[str, Any]

    def storage(self, name: str) -> Any:
        """A :class:`~lake_orchestration.io.storage.Storage` of the table, made for one tick (no request: the probe's
        LIST is the tick's only one), so secrets are read from the environment again at each tick (a rotated
        session token is picked up)."""
        return self.tables[name].storage()

    def tags(self, name: str, service: str) -> dict[str, str]:
        pool = self.tables[name].policy.pool or service
        return {TABLE_TAG: name, SERVICE_TAG: service, POOL_TAG: pool}


class _Fleet:
    """The tables of a fleet by name, resolved for a run from its tag; with a :class:`FleetDiscovery`, the tables of
    the latest discovery (:meth:`refresh`)."""

    def __init__(self, tables: Sequence[HudiTableConfig], discovery: FleetDiscovery | None = None) -> None:
        self.configs: dict[str, HudiTableConfig] = {t.name: t for t in tables}
        """Replaced (never changed in place) by a re-discovery."""
        self.spark_keys = {"pyspark"} if any(t.engine == "spark" for t in tables) else set()
        """The execute steps need the ``pyspark`` resource when a table runs on Spark."""
        self.discovery = discovery
        self._tables: dict[str, Any] | None = None
        self._lock = threading.Lock()
        self._prefix_names: list[list[str]] = []
        self._next: list[float] = []
        self._pinned = set(self.configs)
        """The tables no re-discovery drops: the ``tables:`` entries (and any table under no prefix)."""
        if discovery is not None:
            now = _monotonic()
            n = len(discovery.raw["discover"])
            self._prefix_names = [[] for _ in range(n)]
            listed = discovery.listed
            for name, cfg in self.configs.items():
                i = None if name in listed else discovery.prefix_of(cfg.base_path)
                if i is not None:
                    self._prefix_names[i].append(name)
                    self._pinned.discard(name)
            self._next = [now + discovery.interval_seconds(i) for i in range(n)]

    @property
    def tables(self) -> dict[str, Any]:
        """The :class:`~lake_orchestration.fleet.config.FleetTable` of each table, made at the first tick or run (not
        when the code location loads: the configs are validated already)."""
        tables = self._tables
        if tables is None:
            tables = self._tables = {t.name: t for t in fleet_tables(list(self.configs.values()))}
        return tables

    def view(self) -> _View:
        return _View(configs=self.configs, tables=self.tables)

    def storage(self, name: str) -> Any:
        return self.tables[name].storage()

    def refresh(self, *, force: bool = False, log: Any = None) -> None:
        """Search again the ``discover:`` prefixes whose interval has passed (``force``: every prefix searched again
        at all): tables found are added, tables gone from storage dropped (logged), ``tables:`` entries kept. A
        prefix whose search fails keeps its tables (a warning) and is searched again after its interval. Does
        nothing without a discovery or before the first prefix is due; one re-discovery at a time (the fleet's
        sensors, schedules and runs share it)."""
        d = self.discovery
        if d is None:
            return
        now = _monotonic()
        if not force and all(now < t for t in self._next):
            return
        log = log or _log
        with self._lock:
            due = [i for i, t in enumerate(self._next) if now >= t or (force and t < math.inf)]
            if not due:
                return
            self._rediscover(d, due, now, log)

    def _rediscover(self, d: FleetDiscovery, due: list[int], now: float, log: Any) -> None:
        from lake_orchestration.fleet.config import _norm_path, discover_prefix

        old = self.configs
        configs = {n: c for n, c in old.items() if n in self._pinned}
        paths = {_norm_path(c.base_path).rstrip("/") for c in configs.values()}
        prefix_names: list[list[str]] = []
        for i, names in enumerate(self._prefix_names):
            kept = [old[n] for n in names if n in old]
            found = kept
            if i in due:
                started = time.perf_counter()
                try:
                    entries = discover_prefix(
                        d.raw, i, where=d.where, listed={n: c.base_path for n, c in configs.items()}
                    )
                    found = validate_tables(entries, where=d.where) if entries else []
                except Exception as err:  # a storage error: the previous tables of the prefix, searched again later
                    log.warning(
                        f"fleet: discover[{i}] ({d.raw['discover'][i]['prefix']}) failed, keeping its "
                        f"{len(kept)} table(s) of the previous discovery: {type(err).__name__}: {err}"
                    )
                else:
                    log.info(
                        f"fleet: discover[{i}] ({d.raw['discover'][i]['prefix']}): {len(found)} table(s) in "
                        f"{time.perf_counter() - started:.2f}s"
                    )
                self._next[i] = now + d.interval_seconds(i)
            mine = []
            for c in found:
                p = _norm_path(c.base_path).rstrip("/")
                if p in paths:
                    continue  # found under an earlier prefix: the first one wins
                if c.name in configs:
                    log.warning(
                        f"fleet: discover[{i}]: {c.base_path} is named {c.name!r}, as {configs[c.name].base_path}: "
                        "not served (exclude one of them, or list it under tables: with its own name)"
                    )
                    continue
                configs[c.name] = c
                paths.add(p)
                mine.append(c.name)
            prefix_names.append(mine)
        added = sorted(set(configs) - set(old))
        removed = sorted(set(old) - set(configs))
        tables = {n: t for n, t in self.tables.items() if n in configs}
        if added:
            tables |= {t.name: t for t in fleet_tables([configs[n] for n in added])}
        self._prefix_names = prefix_names
        self._tables, self.configs = tables, configs
        if added or removed:
            log.info(
                f"fleet: re-discovery: {len(configs)} table(s); added {added[:20]}; dropped (gone from storage) "
                f"{removed[:20]}"
            )

    def config(self, name: str) -> HudiTableConfig:
        cfg = self.configs.get(name)
        if cfg is None and self.discovery is not None:
            self.refresh(force=True)  # a table discovered after this process's last discovery
            cfg = self.configs.get(name)
        if cfg is None:
            known = sorted(self.configs)
            raise dg.Failure(
                f"No table {name!r} in the fleet: expected one of {known[:20]}{' ...' if len(known) > 20 else ''}",
                allow_retries=False,
            )
        return cfg

    def of_run(self, context: dg.OpExecutionContext, fmt: str = "hudi") -> HudiTableConfig:
        """The table the run's tag names, of format ``fmt``."""
        name = context.run.tags.get(TABLE_TAG)
        if not name:
            raise dg.Failure(
                f"This fleet run names no table: launch it with the tag {TABLE_TAG}=<table name> (the fleet's "
                "sensors and schedules set it)",
                allow_retries=False,
            )
        cfg = self.config(name)
        if cfg.format != fmt:
            raise dg.Failure(
                f"Table {name!r} is a {cfg.format} table: {context.job_name} runs on {fmt} tables only",
                allow_retries=False,
            )
        return cfg

    def hudi_config(self, name: str) -> HudiTableConfig:
        """The config of the Hudi table ``name`` (a partition of ``fleet/compaction_plans`` names one)."""
        cfg = self.config(name)
        if cfg.format != "hudi":
            raise dg.Failure(f"Table {name!r} is a {cfg.format} table, not a Hudi table", allow_retries=False)
        return cfg

    def tags(self, name: str, service: str) -> dict[str, str]:
        pool = self.tables[name].policy.pool or service
        return {TABLE_TAG: name, SERVICE_TAG: service, POOL_TAG: pool}


def _retry(tables: Sequence[HudiTableConfig]) -> dg.RetryPolicy:
    """The retry policy of the shared ops: the most patient of the tables' (a table is one of many)."""
    return max((t.retry_policy() for t in tables), key=lambda p: (p.max_retries, p.delay or 0))


# -- jobs ----------------------------------------------------------------------------------------------------------
def _fleet_op(name: str, service: str, retry: dg.RetryPolicy, **kw: Any) -> Any:
    return dg.op(name=f"fleet__{name}_op", retry_policy=retry, tags={SERVICE_TAG: service}, **kw)


def _build_jobs(fleet: _Fleet, retry: dg.RetryPolicy) -> dict[str, Any]:
    from lake_orchestration.hudi.services.clean import CleanExecutions, CleanPlans

    tr = FleetTranslator()
    asset = COMPACTION_KEY.to_user_string()

    @_fleet_op("schedule_compaction", "compaction", retry)
    def schedule_op(context: dg.OpExecutionContext) -> None:
        cfg = fleet.of_run(context)
        schedule_compaction_step(
            context,
            cfg,
            tr,
            partitions_def=PARTITIONS_DEF,
            partition_key=lambda i: partition_key(cfg.name, i),
            asset=asset,
        )

    @dg.job(
        name="fleet__schedule_compaction",
        executor_def=LIGHT_EXECUTOR,
        description=(
            "Schedule a compaction plan of the run's table (tag lake_orchestration/table) if Hudi's trigger fires; "
            "register it as a partition of fleet/compaction_plans"
        ),
    )
    def schedule_job() -> None:
        schedule_op()

    @_fleet_op("rollback", "rollback", retry)
    def rollback_op(context: dg.OpExecutionContext, config: RollbackConfig) -> None:
        rollback_step(context, fleet.of_run(context), tr, config)

    @dg.job(
        name="fleet__rollback",
        executor_def=LIGHT_EXECUTOR,
        description="Roll back one pending write of the run's table (run config instant_time), or every stale one",
    )
    def rollback_job() -> None:
        rollback_op()

    @_fleet_op("clean_plan", "clean", retry)
    def clean_plan_op(context: dg.OpExecutionContext, config: MaintenanceRunConfig) -> CleanPlans:
        return clean_plan_step(context, fleet.of_run(context), config)

    @_fleet_op("clean_execute", "clean", retry, required_resource_keys=fleet.spark_keys)
    def clean_execute_op(context: dg.OpExecutionContext, planned: CleanPlans) -> CleanExecutions:
        return clean_execute_step(context, fleet.of_run(context), planned)

    @_fleet_op("clean_commit", "clean", retry)
    def clean_commit_op(context: dg.OpExecutionContext, executed: CleanExecutions) -> None:
        clean_commit_step(context, fleet.of_run(context), tr, executed)

    @dg.job(
        name="fleet__clean",
        executor_def=LIGHT_EXECUTOR,
        description="Clean the run's table: plan, execute (delete), commit",
    )
    def clean_job() -> None:
        clean_commit_op(clean_execute_op(clean_plan_op()))

    @_fleet_op("archive", "archive", retry)
    def archive_op(context: dg.OpExecutionContext, config: MaintenanceRunConfig) -> bool:
        return archive_step(context, fleet.of_run(context), config)

    @_fleet_op("merge_archive_files", "archive", retry)
    def merge_op(context: dg.OpExecutionContext, dry: bool) -> None:
        merge_archive_files_step(context, fleet.of_run(context), tr, dry)

    @dg.job(
        name="fleet__archive",
        executor_def=LIGHT_EXECUTOR,
        description="Archive the run's table, then merge small archive files",
    )
    def archive_job() -> None:
        merge_op(archive_op())

    out = {"schedule_compaction": schedule_job, "rollback": rollback_job, "clean": clean_job, "archive": archive_job}
    if _clustering_tables(fleet.configs.values()):
        out["clustering"] = _build_clustering_job(fleet, retry, tr)
    if any(c.format == "paimon" for c in fleet.configs.values()) or _may_find_paimon(fleet.discovery):
        out["paimon_compaction"] = _build_paimon_job(fleet, retry)
    return out


def _clustering_tables(configs: Any) -> list[str]:
    """The Hudi tables that opt into clustering (``hoodie.clustering.async.enabled`` in ``clustering_options``)."""
    return [c.name for c in configs if c.format == "hudi" and c.clustering_enabled]


def _build_clustering_job(fleet: "_Fleet", retry: dg.RetryPolicy, tr: DagsterHudiTranslator) -> Any:
    """``fleet__clustering``: schedule a clustering plan of the run's table, then execute and commit its pending
    plans (one op; the fleet has no clustering asset)."""
    from lake_orchestration.dagster.clustering import clustering_run_step

    @_fleet_op("clustering", "clustering", retry, required_resource_keys=fleet.spark_keys)
    def clustering_op(context: dg.OpExecutionContext) -> None:
        cfg = fleet.of_run(context)
        if not cfg.clustering_enabled:
            raise dg.Failure(
                f"Table {cfg.name!r} does not enable clustering: expected hoodie.clustering.async.enabled: true in "
                "its clustering_options",
                allow_retries=False,
            )
        clustering_run_step(context, cfg, tr)

    @dg.job(
        name="fleet__clustering",
        executor_def=LIGHT_EXECUTOR,
        description=(
            "Cluster the run's table: schedule a plan if Hudi's trigger fires, execute and commit pending plans"
        ),
    )
    def clustering_job() -> None:
        clustering_op()

    return clustering_job


def _may_find_paimon(discovery: FleetDiscovery | None) -> bool:
    """Whether a re-discovery may add a Paimon table (a prefix searched again for ``auto`` or ``paimon``)."""
    if discovery is None:
        return False
    return any(
        d.get("format", "auto") != "hudi" and discovery.interval_seconds(i) < math.inf
        for i, d in enumerate(discovery.raw["discover"])
    )


def _build_paimon_job(fleet: _Fleet, retry: dg.RetryPolicy) -> dg.JobDefinition:
    """``fleet__paimon_compaction``: the Paimon tables' compaction (execute, then commit a COMPACT snapshot), the
    table from the run's tag; the same step bodies as a Paimon table's own job."""
    from lake_orchestration.dagster.paimon import (
        ExecutedCompaction,
        PaimonCompactionRunConfig,
        paimon_commit_step,
        paimon_execute_step,
    )

    @_fleet_op(
        "paimon_compaction_execute", "compaction", retry, pool=COMPACTION_POOL, required_resource_keys=fleet.spark_keys
    )
    def execute_op(context: dg.OpExecutionContext, config: PaimonCompactionRunConfig) -> ExecutedCompaction:
        return paimon_execute_step(context, fleet.of_run(context, "paimon"), config)

    @_fleet_op("paimon_compaction_commit", "compaction", retry)
    def commit_op(context: dg.OpExecutionContext, executed: ExecutedCompaction) -> dg.Output[None]:
        return paimon_commit_step(context, fleet.of_run(context, "paimon"), executed)

    @dg.job(
        name="fleet__paimon_compaction",
        executor_def=LIGHT_EXECUTOR if all(c.engine == "local" for c in fleet.configs.values()) else None,
        description=(
            "Compact the run's Paimon table: plan the latest snapshot and execute, then commit a COMPACT snapshot"
        ),
    )
    def job() -> None:
        commit_op(execute_op())

    return job


def _build_compaction_asset(fleet: _Fleet, retry: dg.RetryPolicy) -> dg.AssetsDefinition:
    tr = FleetTranslator()

    @dg.op(
        name="fleet__compaction_execute_plan_op",
        retry_policy=retry,
        pool=COMPACTION_POOL,
        tags={SERVICE_TAG: "compaction"},
        required_resource_keys=fleet.spark_keys,
    )
    def execute_plan_op(context: dg.OpExecutionContext) -> Any:
        table, instant = split_partition_key(context.partition_key)
        return execute_plan_step(context, fleet.hudi_config(table), tr, instant)

    @dg.op(name="fleet__compaction_commit_op", retry_policy=retry, tags={SERVICE_TAG: "compaction"})
    def commit_op(context: dg.OpExecutionContext, executed: Any) -> dg.Output[None]:
        table, _ = split_partition_key(context.partition_key)
        return commit_plan_step(context, fleet.hudi_config(table), tr, executed)

    @dg.graph_asset(
        key=COMPACTION_KEY,
        group_name="fleet",
        kinds={"hudi"},
        partitions_def=dg.DynamicPartitionsDefinition(name=PARTITIONS_DEF),
        description="Compaction plans of every table of the fleet: one partition <table>|<instant> per plan",
    )
    def _asset() -> Any:
        return commit_op(execute_plan_op())

    return _asset


# -- fleet health --------------------------------------------------------------------------------------------------
def health_metadata(health: Any) -> dict[str, dg.MetadataValue]:
    """The fleet health asset's metadata: a row per table (Dagster table metadata, ``tables_health``), the names of
    the tables in breach, and the fleet-wide figures of :meth:`~lake_orchestration.fleet.health.FleetHealth.
    aggregates` as numbers, which Dagster plots over time (``tables_breaching``, ``total_pending_compactions``,
    ``max_max_log_files_per_slice`` ...)."""
    records = health.as_records()
    columns: list[str] = ["name", "breaches"]  # first: what the UI shows without scrolling
    for r in records:
        columns += [k for k in r if k not in columns]

    def cell(v: Any) -> Any:
        if isinstance(v, list | tuple):
            return "; ".join(str(x) for x in v)
        if isinstance(v, dict):
            return json.dumps(v, sort_keys=True)
        return v

    def col_type(name: str) -> str:
        vals = [r.get(name) for r in records if r.get(name) is not None]
        if vals and all(isinstance(v, bool) for v in vals):
            return "bool"
        if vals and all(isinstance(v, int) and not isinstance(v, bool) for v in vals):
            return "int"
        if vals and all(isinstance(v, int | float) and not isinstance(v, bool) for v in vals):
            return "float"
        return "string"

    schema = dg.TableSchema(columns=[dg.TableColumn(c, col_type(c)) for c in columns])
    rows = [dg.TableRecord({c: cell(r.get(c)) for c in columns}) for r in records]
    breaching = sorted(r.name for r in health.rows if r.breaches)
    md: dict[str, dg.MetadataValue] = {
        "tables_health": dg.MetadataValue.table(records=rows, schema=schema),
        "breaching_tables": dg.MetadataValue.json(breaching),
    }
    for k, v in health.aggregates().items():  # tables_breaching, total_pending_compactions, max_... (plotted)
        md[k] = dg.MetadataValue.float(float(v)) if isinstance(v, float) else dg.MetadataValue.int(int(v))
    return md


def _build_health_asset(fleet: _Fleet) -> dg.AssetsDefinition:
    @dg.asset(
        key=HEALTH_KEY,
        group_name="fleet",
        kinds={"hudi"},
        description=(
            "Health of every table of the fleet: compaction backlog, cleaner lag, archival lag, metadata-table lag, "
            "small files and the breaches of each table's policy (a row per table), with fleet-wide totals"
        ),
        check_specs=[
            dg.AssetCheckSpec(
                HEALTH_CHECK, asset=HEALTH_KEY, description="No table breaches its policy (the failure names them)"
            )
        ],
    )
    def _asset(context: dg.AssetExecutionContext) -> Iterator[Any]:
        from lake_orchestration.fleet.health import fleet_health

        started = time.perf_counter()
        fleet.refresh(log=context.log)  # the tables of the latest discovery, as the sensors see them
        health = fleet_health(list(fleet.tables.values()))
        breaching = {r.name: list(r.breaches) for r in health.rows if r.breaches}
        md = health_metadata(health)
        md["seconds"] = dg.MetadataValue.float(round(time.perf_counter() - started, 3))
        context.log.info(
            f"fleet: {len(health.rows)} table(s), {len(breaching)} in breach"
            + (f": {', '.join(sorted(breaching))}" if breaching else "")
        )
        yield dg.MaterializeResult(metadata=md)
        yield dg.AssetCheckResult(
            check_name=HEALTH_CHECK,
            asset_key=HEALTH_KEY,
            passed=not breaching,
            description=(
                f"{len(breaching)} table(s) breach their policy: {', '.join(sorted(breaching))}"
                if breaching
                else "every table within its policy"
            ),
            metadata={
                "tables_in_breach": dg.MetadataValue.int(len(breaching)),
                "breaching_tables": dg.MetadataValue.json(sorted(breaching)),
                "breaches": dg.MetadataValue.json(dict(sorted(breaching.items()))),
            },
        )

    return _asset


# -- sensors and schedules -----------------------------------------------------------------------------------------
def decode_cursor(cursor: str | None, *, sensor: str) -> dict[str, str]:
    """The per-table fingerprints of a fleet sensor's cursor (empty on the first tick).

    Raises:
        SensorCursorError: not ``{"fingerprints": {table: fingerprint}}``.
    """
    from lake_orchestration.dagster.errors import SensorCursorError

    if not cursor:
        return {}
    try:
        data = json.loads(cursor)
        fps = data["fingerprints"]
        if not isinstance(fps, dict) or not all(isinstance(v, str) for v in fps.values()):
            raise TypeError("fingerprints is not a mapping of strings")
        return dict(fps)
    except (ValueError, KeyError, TypeError) as err:
        raise SensorCursorError(
            table="fleet", sensor=sensor, cursor=cursor, expected=_CURSOR_EXPECTED, detail=str(err)
        ) from err


@dataclasses.dataclass
class Tick:
    """What one evaluation of a fleet sensor (or schedule) decided."""

    run_requests: list[dg.RunRequest] = dataclasses.field(default_factory=list)
    add_partitions: list[str] = dataclasses.field(default_factory=list)
    delete_partitions: list[str] = dataclasses.field(default_factory=list)
    fingerprints: dict[str, str] = dataclasses.field(default_factory=dict)
    probed: int = 0
    changed: int = 0
    errors: dict[str, str] = dataclasses.field(default_factory=dict)


def evaluate(
    fleet: "_Fleet | _View",
    service: str,
    names: Sequence[str],
    *,
    previous: Mapping[str, str] | None,
    budget: int,
    instance: dg.DagsterInstance | None,
    run_plans: bool = True,
    paimon_job: bool = True,
) -> Tick:
    """One tick of ``service`` over the tables ``names``: a probe each (skipped when its fingerprint equals
    ``previous[name]``), then at most ``budget`` run requests, most overdue x weight first (``run_plans=False``: pending
    compaction plans are registered as partitions, not run)."""
    from lake_orchestration.fleet.probe import NOT_DUE, order, probe

    view = fleet.view() if isinstance(fleet, _Fleet) else fleet  # one table list for the whole tick
    fleet = view
    names = [n for n in names if n in view.tables]  # a table dropped by a re-discovery meanwhile
    tick = Tick(fingerprints={n: f for n, f in (previous or {}).items() if n in view.tables})
    last = previous or {}

    judge = _pending_writes_probe if service == "stale_inflight" else probe

    def one(name: str) -> Any:
        try:
            storage = fleet.storage(name)
        except Exception as err:  # a secret not set, an unknown endpoint: this table only
            return name, f"{type(err).__name__}: {err}"
        return name, judge(fleet.tables[name], previous=last.get(name), storage=storage)

    formats = ("hudi", "paimon") if service == "compaction" else ("hudi",)
    probed = [n for n in names if fleet.tables[n].format in formats]
    with ThreadPoolExecutor(max_workers=PROBE_THREADS) as pool:  # object stores: listings overlap
        results = list(pool.map(one, probed))
    probes = []
    for name, p in results:
        if isinstance(p, str):
            tick.errors[name] = p
            continue
        tick.probed += 1
        if p.error:
            tick.errors[name] = p.error
            continue
        if not p.changed:
            continue
        tick.changed += 1
        probes.append(p)
    if service == "stale_inflight":
        return _stale_tick(fleet, probes, tick, budget)
    if service == "compaction":
        return _compaction_tick(fleet, probes, tick, budget, instance, run_plans=run_plans, paimon_job=paimon_job)
    mine = [dataclasses.replace(p, due={s: d for s, d in p.due.items() if s == service}) for p in probes]
    chosen = {n for n, _ in order(mine, list(fleet.tables.values()), budget=budget)}
    for p in mine:
        if p.name in chosen:
            tick.run_requests.append(
                dg.RunRequest(
                    run_key=f"{service}:{p.name}:{p.fingerprint}",
                    job_name=f"fleet__{service}",
                    tags=fleet.tags(p.name, service) | {"lake_orchestration/reason": p.due[service].reason[:200]},
                )
            )
        if p.name in chosen or not p.due.get(service, NOT_DUE).needed:
            tick.fingerprints[p.name] = p.fingerprint  # served, or nothing to do: skip until it changes
    return tick


def _compaction_tick(
    fleet: _View,
    probes: list[Any],
    tick: Tick,
    budget: int,
    instance: Any,
    *,
    run_plans: bool = True,
    paimon_job: bool = True,
) -> Tick:
    """Compaction: a table with pending plans gets a partition per plan (registered, as any plan made elsewhere)
    and a run per plan; a table whose trigger fired without a plan gets a ``fleet__schedule_compaction`` run (its
    plan becomes a partition at once, and runs at the next tick)."""
    from lake_orchestration.fleet.probe import order

    mine = [dataclasses.replace(p, due={s: d for s, d in p.due.items() if s == "compaction"}) for p in probes]
    chosen = {n for n, _ in order(mine, list(fleet.tables.values()), budget=budget)}
    known = set(instance.get_dynamic_partitions(PARTITIONS_DEF)) if instance is not None else set()
    for p in mine:
        due = p.due.get("compaction")
        if p.name not in chosen:
            if due is None or not due.needed:
                tick.fingerprints[p.name] = p.fingerprint
            continue
        cfg = fleet.configs[p.name]
        if cfg.format == "paimon" and not paimon_job:
            tick.errors[p.name] = "a Paimon table found by a re-discovery: fleet__paimon_compaction needs a reload"
            continue
        if cfg.format == "paimon":  # its compaction is the run (plan, execute, commit)
            tick.run_requests.append(
                dg.RunRequest(
                    run_key=f"paimon_compaction:{p.name}:{p.fingerprint}",
                    job_name="fleet__paimon_compaction",
                    tags=fleet.tags(p.name, "compaction") | {"lake_orchestration/reason": due.reason[:200]},
                )
            )
            tick.fingerprints[p.name] = p.fingerprint
            continue
        try:
            table = cfg.open_table()  # a changed table with compaction due: its plans (one more listing)
            pending = [str(i.time) for i in table.timeline.pending_compactions()]
        except Exception as err:  # one table's failure is not the tick's
            tick.errors[p.name] = f"{type(err).__name__}: {err}"
            continue
        tags = fleet.tags(p.name, "compaction")
        if pending:
            keys = [partition_key(p.name, i) for i in pending]
            tick.add_partitions += [k for k in keys if k not in known]
            for k, i in zip(keys, pending if run_plans else [], strict=False):
                tick.run_requests.append(
                    dg.RunRequest(
                        run_key=k, job_name="fleet__compaction", partition_key=k, tags=tags | {"hudi/instant": i}
                    )
                )
        else:
            tick.run_requests.append(
                dg.RunRequest(
                    run_key=f"schedule_compaction:{p.name}:{p.fingerprint}",
                    job_name="fleet__schedule_compaction",
                    tags=fleet.tags(p.name, "schedule_compaction") | {"lake_orchestration/reason": due.reason[:200]},
                )
            )
        tick.fingerprints[p.name] = p.fingerprint
    return tick


_STALE_CANDIDATES = ("commit", "deltacommit", "replacecommit", "rollback")
"""Pending actions the stale-inflight sensor judges (the rollback planner's ``stale_writes``: writes, and rollbacks
interrupted after their write's files were gone)."""


def _pending_writes_probe(table: Any, *, previous: str | None, storage: Any) -> Any:
    """The stale-inflight sensor's probe: the one listing of ``.hoodie/`` and its fingerprint (as
    :func:`lake_orchestration.fleet.probe.probe`), and whether it shows a pending write (``due["pending_writes"]``),
    from the file names alone: a table without one is not opened."""
    from lake_orchestration.errors import LakeOrchestrationError
    from lake_orchestration.fleet.probe import Due, TableProbe, fingerprint, list_timeline
    from lake_orchestration.hudi.model.timeline import Timeline

    try:
        entries = list_timeline(table, storage)
        fp = fingerprint((e.name, 0 if e.is_dir else e.size) for e in entries)
        if previous is not None and fp == previous:
            return TableProbe(name=table.name, fingerprint=fp, changed=False)
        tl = Timeline.from_file_names([e.name for e in entries if not e.is_dir], where=".hoodie")
        writes = [str(i.time) for i in tl.pending() if i.action.value in _STALE_CANDIDATES]
    except (LakeOrchestrationError, OSError, ValueError) as err:
        return TableProbe(name=table.name, fingerprint="", changed=True, error=str(err))
    due = Due(bool(writes), float(len(writes)), f"pending writes {writes[:5]}")
    return TableProbe(name=table.name, fingerprint=fp, changed=True, due={"pending_writes": due})


def _stale_tick(fleet: _View, probes: list[Any], tick: Tick, budget: int) -> Tick:
    """Stale inflight writes: a changed table whose listing shows a pending write is opened and judged by its
    heartbeat settings. Such a table keeps no fingerprint (a write becomes stale with time, not with a change); a
    table without a pending write costs its listing only."""
    from lake_orchestration.hudi.services.rollback import stale_writes

    for p in probes:
        if len(tick.run_requests) >= budget:
            break
        if not p.due["pending_writes"].needed:
            tick.fingerprints[p.name] = p.fingerprint
            continue
        cfg = fleet.configs[p.name]
        try:
            table = cfg.open_table()
            heartbeat = cfg.heartbeat_config()
            stale = stale_writes(
                table,
                interval_ms=heartbeat.interval_ms,
                tolerable_misses=heartbeat.tolerable_misses,
                timeout_s=cfg.inflight_timeout_seconds,
            )
        except Exception as err:
            tick.errors[p.name] = f"{type(err).__name__}: {err}"
            continue
        for s in stale:
            tick.run_requests.append(
                dg.RunRequest(
                    run_key=f"rollback:{p.name}:{s.instant.time}",
                    job_name="fleet__rollback",
                    run_config={"ops": {"fleet__rollback_op": {"config": {"instant_time": str(s.instant.time)}}}},
                    tags=fleet.tags(p.name, "rollback")
                    | {"hudi/instant": str(s.instant.time), "hudi/reason": s.reason},
                )
            )
        tick.fingerprints.pop(p.name, None)
    return tick


def _sensor_jobs(service: str, jobs: Mapping[str, Any], compaction_job: Any) -> list[Any]:
    if service == "compaction":
        return [
            compaction_job,
            jobs["schedule_compaction"],
            *([jobs["paimon_compaction"]] if "paimon_compaction" in jobs else []),
        ]
    if service == "stale_inflight":
        return [jobs["rollback"]]
    return [jobs[service]]


def _build_sensor(fleet: _Fleet, service: str, jobs: list[Any], budget: int) -> dg.SensorDefinition:
    name = f"fleet__{service}_sensor"
    names = sorted(fleet.configs)
    paimon_job = any(j.name == "fleet__paimon_compaction" for j in jobs)

    @dg.sensor(
        name=name,
        jobs=jobs,
        minimum_interval_seconds=60 if service == "stale_inflight" else 30,
        description=(
            f"Walks every table of the fleet ({len(names)} at load"
            + (", re-discovered" if fleet.discovery is not None else "")
            + f") with one listing of .hoodie/ each, skipping the tables "
            f"whose listing did not change since the last tick, and requests at most {budget} {service} run(s) per "
            "tick, most overdue x weight first"
        ),
    )
    def _sensor(context: dg.SensorEvaluationContext) -> dg.SensorResult:
        previous = decode_cursor(context.cursor, sensor=name)
        started = time.perf_counter()
        fleet.refresh(log=context.log)  # when a discover: prefix is due: the tables of the latest discovery
        view = fleet.view()
        tick = evaluate(
            view,
            service,
            sorted(view.configs),
            previous=previous,
            budget=budget,
            instance=context.instance,
            paimon_job=paimon_job,
        )
        context.log.info(
            f"{name}: {tick.probed} table(s) listed, {tick.changed} changed, {len(tick.run_requests)} run(s) "
            f"requested in {time.perf_counter() - started:.2f}s"
            + (f"; errors: {dict(list(tick.errors.items())[:5])}" if tick.errors else "")
        )
        partitions: list[Any] = []
        if tick.add_partitions:
            partitions.append(dg.AddDynamicPartitionsRequest(PARTITIONS_DEF, sorted(set(tick.add_partitions))))
        cursor = json.dumps({"fingerprints": dict(sorted(tick.fingerprints.items()))})
        if not tick.run_requests and not partitions:
            return dg.SensorResult(
                skip_reason=f"nothing due on {tick.changed} changed of {tick.probed} table(s)", cursor=cursor
            )
        return dg.SensorResult(run_requests=tick.run_requests, dynamic_partitions_requests=partitions, cursor=cursor)

    return _sensor


def cron_slug(cron: str) -> str:
    """A cron expression as a Dagster name part (``0 * * * *`` -> ``0_x_x_x_x``, ``*/15 * * * *`` ->
    ``every_15_x_x_x_x``)."""
    s = re.sub(r"\*/(\d+)", r"every_\1", cron.strip())
    s = s.replace("*", "x").replace("/", "_every_").replace(",", "_and_").replace("-", "_to_")
    return re.sub(r"[^A-Za-z0-9]+", "_", s).strip("_")


def _build_schedules(fleet: _Fleet, jobs: Mapping[str, Any], budget: int) -> list[Any]:
    out: list[Any] = []
    kinds = (
        ("compaction", "hudi", "schedule_cron", "schedule_compaction"),
        ("clean", "hudi", "clean_cron", "clean"),
        ("archive", "hudi", "archive_cron", "archive"),
        ("paimon_compaction", "paimon", "schedule_cron", "paimon_compaction"),
        ("clustering", "hudi", "clustering_cron", "clustering"),
    )
    for service, fmt, attr, job_key in kinds:
        if job_key not in jobs:
            continue  # clustering: no table opts in
        by_cron: dict[str, list[str]] = {}
        for name, cfg in sorted(fleet.configs.items()):
            if cfg.format == fmt and getattr(cfg, attr) and (service != "clustering" or cfg.clustering_enabled):
                by_cron.setdefault(getattr(cfg, attr), []).append(name)
        for cron, names in sorted(by_cron.items()):
            out.append(_schedule(fleet, service, cron, (fmt, attr), names, jobs[job_key], budget))
    return out


def _schedule(
    fleet: _Fleet, service: str, cron: str, kind: tuple[str, str], names: list[str], job: Any, budget: int
) -> Any:
    @dg.schedule(
        name=f"fleet__{service}__{cron_slug(cron)}_schedule",
        cron_schedule=cron,
        job=job,
        description=(
            f"At {cron}: a full sweep of the {len(names)} table(s) whose {service} cron is {cron!r} (no cursor), at "
            f"most {budget} {job.name} run(s), most overdue x weight first"
            + (
                " (pending plans become partitions of fleet/compaction_plans; the sensor or a backfill runs them)"
                if service == "compaction"
                else ""
            )
        ),
    )
    def _sched(context: dg.ScheduleEvaluationContext) -> Any:
        fleet.refresh(log=context.log)  # the tables of the latest discovery whose cron is this one
        view = fleet.view()
        fmt, attr = kind
        names = sorted(
            n
            for n, c in view.configs.items()
            if c.format == fmt and getattr(c, attr) == cron and (service != "clustering" or c.clustering_enabled)
        )
        tick = evaluate(
            view,
            "compaction" if service == "paimon_compaction" else service,
            names,
            previous=None,
            budget=budget,
            instance=context.instance,
            run_plans=False,
        )
        if tick.add_partitions and context.instance is not None:
            context.instance.add_dynamic_partitions(PARTITIONS_DEF, sorted(set(tick.add_partitions)))
        if not tick.run_requests:
            return dg.SkipReason(f"nothing due on {len(names)} table(s)")
        return tick.run_requests

    return _sched


# -- the definitions -----------------------------------------------------------------------------------------------
def build_fleet_definitions(
    *,
    tables: Sequence[HudiTableConfig],
    spark_config: Mapping[str, Any] | None = None,
    budget_per_tick: int = DEFAULT_BUDGET,
    translator: DagsterHudiTranslator | None = None,
    discovery: FleetDiscovery | None = None,
) -> dg.Definitions:
    """The fleet model's definitions for ``tables`` (see the module docstring): a fixed set of assets, jobs and
    sensors whatever the number of tables; schedules per distinct cron.

    Args:
        tables: the tables (names unique).
        spark_config: ``spark.*`` configuration of the ``pyspark`` resource.
        budget_per_tick: runs a sensor (or schedule) requests at most per evaluation (>= 1).
        translator: unused (the fleet's names are fixed); accepted as ``build_hudi_definitions`` takes it.
        discovery: the config file's ``discover:`` prefixes (:meth:`FleetDiscovery.from_file`): each is searched
            again every ``rediscover_interval_minutes`` and the sensors, schedules, runs and health asset see the
            tables of the latest discovery.

    Raises:
        HudiConfigError: two tables share a name, or ``budget_per_tick`` < 1.
    """
    names = [t.name for t in tables]
    dupes = sorted(n for n, k in collections.Counter(names).items() if k > 1)
    if dupes:
        raise HudiConfigError("tables", f"duplicate table names {dupes}: each table needs its own name")
    if budget_per_tick < 1:
        raise HudiConfigError("fleet", f"budget_per_tick: expected >= 1, got {budget_per_tick}")
    hudi = [t for t in tables if t.format == "hudi"]
    fleet = _Fleet(tables, discovery)
    retry = _retry(tables) if tables else HudiTableConfig(name="x", base_path="/x").retry_policy()
    jobs = _build_jobs(fleet, retry)
    compaction_asset = _build_compaction_asset(fleet, retry)
    health_asset = _build_health_asset(fleet)
    compaction_job = dg.define_asset_job(
        "fleet__compaction",
        selection=dg.AssetSelection.assets(COMPACTION_KEY),
        executor_def=LIGHT_EXECUTOR if all(t.engine == "local" for t in hudi) else None,
        description=(
            "Run one compaction plan of a table of the fleet: a partition <table>|<instant> of fleet/compaction_plans"
        ),
    )
    health_job = dg.define_asset_job(
        "fleet__measure_health", selection=dg.AssetSelection.assets(HEALTH_KEY), executor_def=LIGHT_EXECUTOR
    )
    services = [*SENSOR_SERVICES, *(["clustering"] if "clustering" in jobs else [])]
    sensors = [_build_sensor(fleet, s, _sensor_jobs(s, jobs, compaction_job), budget_per_tick) for s in services]
    schedules = _build_schedules(fleet, jobs, budget_per_tick)
    assets: list[Any] = [compaction_asset, health_asset]
    all_jobs: list[Any] = [compaction_job, health_job, *jobs.values()]
    return dg.Definitions(
        assets=assets,
        jobs=all_jobs,
        schedules=schedules,
        sensors=sensors,
        resources={"pyspark": build_spark_resource(spark_config)},
        executor=definitions_executor(list(tables)),
    )
