"""The demo table in Dagster: its definitions, with a demo ingest asset, job and schedule.

``build_demo_definitions(demo_dir)`` is what the code location serves when no config file is found
(:func:`demo_location`): the table ``demo_trips`` (MERGE_ON_READ, built by this project's writer) with every object
of :func:`~lake_orchestration.dagster.build_hudi_definitions`, plus the asset ``demo/trips_ingest`` (job
``demo_trips__ingest``, schedule ``demo_trips__ingest_schedule``) that upserts a generated batch per run, so the
schedule-compaction schedule and the sensors have real work.
"""

import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import dagster as dg

from lake_orchestration.config.keys import PROPERTIES_FILE, HoodieKey
from lake_orchestration.dagster import DagsterHudiTranslator, HudiTableConfig, build_hudi_definitions
from lake_orchestration.demo.table import DemoBatch, create_demo_table, ingest_demo_batch

DEMO_TABLE = "demo_trips"
"""Name of the demo table (asset ``hudi/demo_trips``, jobs ``demo_trips__*``)."""
INGEST_KEY = dg.AssetKey(["demo", "trips_ingest"])
"""The demo ingest asset."""
DEFAULT_DEMO_DIR = "demo-tables"
"""Where the demo table lives unless ``LAKE_ORCH_DEMO_DIR`` says otherwise."""
DEMO_DIR_ENV_VAR = "LAKE_ORCH_DEMO_DIR"
"""Environment variable naming the demo directory."""
DEMO_INSTANCE_YAML = """\
# The demo's Dagster instance (DAGSTER_HOME). Each table's service steps share the pool hudi_<table>: at most one
# step per table at a time (two compactions of one table, or a clean during a compaction, wait for each other).
concurrency:
  pools:
    default_limit: 1
"""
"""``dagster.yaml`` of the demo instance (written by ``python -m lake_orchestration.demo`` when absent): every pool,
so every table's ``hudi_<t>``, limited to one step at a time."""


def demo_table_config(demo_dir: str | Path, *, engine: str = "local") -> HudiTableConfig:
    """The demo table's config: compaction after 3 deltacommits, fed by ``demo/trips_ingest``; clean keeps 2
    commits and archive keeps 3 to 5, both for real (not dry runs), so a short demo shows them at work."""
    return HudiTableConfig(
        name=DEMO_TABLE,
        base_path=str(Path(demo_dir).resolve() / DEMO_TABLE),
        compaction_options={HoodieKey.COMPACT_MAX_DELTA_COMMITS.key: "3"},
        clean_options={HoodieKey.CLEANER_COMMITS_RETAINED.key: "2"},
        archive_options={
            HoodieKey.KEEP_MIN_COMMITS.key: "3",
            HoodieKey.KEEP_MAX_COMMITS.key: "5",
            HoodieKey.ARCHIVE_MERGE_ENABLE.key: "true",
        },
        clean_dry_run=False,
        archive_dry_run=False,
        upstream_assets=[INGEST_KEY.to_user_string()],
        engine=engine,  # type: ignore[arg-type]
        schedule_cron="*/5 * * * *",
        retry_delay_seconds=2.0,
    )


class DemoIngestConfig(dg.Config):
    """Run config of ``demo/trips_ingest``."""

    seed: int | None = None
    """Seed of the generated batch; default: derived from the table's timeline length (a new batch each run)."""
    new_rows: int = 50
    """New trips per batch."""
    update_fraction: float = 0.1
    """Fraction of the live trips updated per batch."""
    delete_fraction: float = 0.02
    """Fraction of the live trips deleted per batch."""
    initial_rows: int = 1000
    """Rows of the bulk_insert that creates the table when it does not exist."""


def _batch_metadata(b: DemoBatch, *, seed: int | None = None) -> dict[str, Any]:
    """The materialization metadata of one run of ``demo/trips_ingest`` (``seed``: absent for the creating run)."""
    md: dict[str, Any] = {
        "instants": b.instants,
        "inserted": dg.MetadataValue.int(b.inserted),
        "updated": dg.MetadataValue.int(b.updated),
        "deleted": dg.MetadataValue.int(b.deleted),
        "records": dg.MetadataValue.int(b.records),
    }
    if seed is not None:
        md["seed"] = dg.MetadataValue.int(seed)
    md["seconds"] = dg.MetadataValue.float(round(b.seconds, 3))
    md["rows_per_second"] = dg.MetadataValue.float(round(b.records / b.seconds, 1) if b.seconds else 0.0)
    return md


def build_demo_ingest_definitions(
    cfg: HudiTableConfig, *, cron: str = "*/2 * * * *", translator: DagsterHudiTranslator | None = None
) -> dg.Definitions:
    """The demo ingest asset ``demo/trips_ingest``, its job ``<t>__ingest`` and schedule ``<t>__ingest_schedule``."""
    tr = translator or DagsterHudiTranslator()

    @dg.asset(
        key=INGEST_KEY,
        group_name="demo",
        kinds={"python"},
        description=f"Generated trips upserted into {cfg.name} (one batch per run; creates the table if absent)",
        pool=tr.get_pool(cfg),
        retry_policy=cfg.retry_policy(),
    )
    def trips_ingest(context: dg.AssetExecutionContext, config: DemoIngestConfig) -> dg.MaterializeResult:
        base = Path(cfg.base_path)
        if not (base / ".hoodie" / PROPERTIES_FILE).exists():
            t0 = time.monotonic()
            r = create_demo_table(base, rows=config.initial_rows)
            seconds = time.monotonic() - t0
            context.log.info(f"{cfg.name}: created with bulk_insert {r.instant} ({r.inserted} rows)")
            created = DemoBatch(instants=[r.instant], inserted=r.inserted, records=config.initial_rows, seconds=seconds)
            return dg.MaterializeResult(metadata=_batch_metadata(created))
        seed = config.seed if config.seed is not None else 42 + 7919 * len(cfg.open_table().timeline)
        b = ingest_demo_batch(
            base,
            seed=seed,
            new_rows=config.new_rows,
            update_fraction=config.update_fraction,
            delete_fraction=config.delete_fraction,
        )
        context.log.info(f"{cfg.name}: {b.instants}: {b.inserted} inserted, {b.updated} updated, {b.deleted} deleted")
        return dg.MaterializeResult(metadata=_batch_metadata(b, seed=seed))

    job = dg.define_asset_job(
        tr.get_job_name(cfg, "ingest"),
        selection=dg.AssetSelection.assets(INGEST_KEY),
        description=f"Write one demo batch (inserts, updates, deletes) into {cfg.name}",
    )
    schedule = dg.ScheduleDefinition(
        name=tr.get_schedule_name(cfg, "ingest"), job=job, cron_schedule=cron, description=f"Runs {job.name} ({cron})"
    )
    return dg.Definitions(assets=[trips_ingest], jobs=[job], schedules=[schedule])


def build_demo_definitions(
    demo_dir: str | Path,
    *,
    engine: str = "local",
    spark_config: dict[str, Any] | None = None,
    create: bool = True,
    rows: int = 1000,
) -> dg.Definitions:
    """The demo code location: ``demo_trips`` under ``demo_dir`` (created with ``rows`` trips if absent)."""
    cfg = demo_table_config(demo_dir, engine=engine)
    if create and not (Path(cfg.base_path) / ".hoodie" / PROPERTIES_FILE).exists():
        create_demo_table(cfg.base_path, rows=rows)
    return dg.Definitions.merge(
        build_hudi_definitions(tables=[cfg], spark_config=spark_config), build_demo_ingest_definitions(cfg)
    )


def demo_location(environ: Mapping[str, str]) -> dg.Definitions:
    """The code location without a config file: the demo table under ``$LAKE_ORCH_DEMO_DIR`` (default
    ``./demo-tables``), created if absent (the ``fallback`` of
    :func:`~lake_orchestration.dagster.location.load_code_location` in ``definitions/``)."""
    return build_demo_definitions(Path(environ.get(DEMO_DIR_ENV_VAR) or DEFAULT_DEMO_DIR))
