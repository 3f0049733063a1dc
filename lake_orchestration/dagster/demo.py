"""The demo table in Dagster: its definitions (with a demo ingest asset, job and schedule) and the end-to-end run.

``build_demo_definitions(demo_dir)`` is what the code location serves when no config file is found: the table
``demo_trips`` (MERGE_ON_READ, built by this project's writer) with every object of :func:`build_hudi_definitions`,
plus the asset ``demo/trips_ingest`` (job ``demo_trips__ingest``, schedule ``demo_trips__ingest_schedule``) that
upserts a generated batch per run, so the schedule-compaction schedule and the sensors have real work.

``python -m lake_orchestration.dagster.demo`` (``./scripts/demo.sh``) runs the main job end to end through Dagster:
create the table, ingest batches, schedule compaction, let the pending-compaction sensor request a run per plan and
execute them, then print a summary and how to open the UI.
"""

import argparse
import os
import shutil
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import dagster as dg
import pyarrow as pa

from lake_orchestration.dagster.config import HudiTableConfig
from lake_orchestration.dagster.definitions import build_hudi_definitions, compaction_partitions, table_health
from lake_orchestration.demo import create_demo_table, ingest_demo_batch

DEMO_TABLE = "demo_trips"
"""Name of the demo table (asset ``hudi/demo_trips``, jobs ``demo_trips__*``)."""
INGEST_KEY = dg.AssetKey(["demo", "trips_ingest"])
"""The demo ingest asset."""
DEFAULT_DEMO_DIR = "demo-tables"
"""Where the demo table lives unless ``LAKE_ORCH_DEMO_DIR`` says otherwise."""


def demo_table_config(demo_dir: str | Path, *, engine: str = "spark") -> HudiTableConfig:
    """The demo table's config: compaction after 3 deltacommits, fed by ``demo/trips_ingest``; clean keeps 2
    commits and archive keeps 3 to 5, both for real (not dry runs), so a short demo shows them at work."""
    return HudiTableConfig(
        name=DEMO_TABLE,
        base_path=str(Path(demo_dir).resolve() / DEMO_TABLE),
        compaction_options={"hoodie.compact.inline.max.delta.commits": "3"},
        clean_options={"hoodie.cleaner.commits.retained": "2"},
        archive_options={
            "hoodie.keep.min.commits": "3",
            "hoodie.keep.max.commits": "5",
            "hoodie.archive.merge.enable": "true",
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


def build_demo_ingest_definitions(cfg: HudiTableConfig, *, cron: str = "*/2 * * * *") -> dg.Definitions:
    """The demo ingest asset ``demo/trips_ingest``, its job ``<t>__ingest`` and schedule ``<t>__ingest_schedule``."""

    @dg.asset(
        key=INGEST_KEY,
        group_name="demo",
        kinds={"python"},
        description=f"Generated trips upserted into {cfg.name} (one batch per run; creates the table if absent)",
        pool=f"hudi_{cfg.name}",
        retry_policy=cfg.retry_policy(),
    )
    def trips_ingest(context: dg.AssetExecutionContext, config: DemoIngestConfig) -> dg.MaterializeResult:
        base = Path(cfg.base_path)
        if not (base / ".hoodie" / "hoodie.properties").exists():
            t0 = time.monotonic()
            r = create_demo_table(base, rows=config.initial_rows)
            seconds = time.monotonic() - t0
            context.log.info(f"{cfg.name}: created with bulk_insert {r.instant} ({r.inserted} rows)")
            return dg.MaterializeResult(
                metadata={
                    "instants": [r.instant],
                    "inserted": r.inserted,
                    "updated": 0,
                    "deleted": 0,
                    "records": config.initial_rows,
                    "seconds": round(seconds, 3),
                    "rows_per_second": round(config.initial_rows / seconds, 1) if seconds else 0.0,
                }
            )
        seed = config.seed if config.seed is not None else 42 + 7919 * len(cfg.open_table().timeline)
        b = ingest_demo_batch(
            base,
            seed=seed,
            new_rows=config.new_rows,
            update_fraction=config.update_fraction,
            delete_fraction=config.delete_fraction,
        )
        context.log.info(f"{cfg.name}: {b.instants}: {b.inserted} inserted, {b.updated} updated, {b.deleted} deleted")
        return dg.MaterializeResult(
            metadata={
                "instants": b.instants,
                "inserted": b.inserted,
                "updated": b.updated,
                "deleted": b.deleted,
                "records": b.records,
                "seed": seed,
                "seconds": round(b.seconds, 3),
                "rows_per_second": round(b.records / b.seconds, 1) if b.seconds else 0.0,
            }
        )

    job = dg.define_asset_job(f"{cfg.name}__ingest", selection=dg.AssetSelection.assets(INGEST_KEY))
    schedule = dg.ScheduleDefinition(name=f"{cfg.name}__ingest_schedule", job=job, cron_schedule=cron)
    return dg.Definitions(assets=[trips_ingest], jobs=[job], schedules=[schedule])


def build_demo_definitions(
    demo_dir: str | Path,
    *,
    engine: str = "spark",
    spark_config: dict[str, Any] | None = None,
    create: bool = True,
    rows: int = 1000,
) -> dg.Definitions:
    """The demo code location: ``demo_trips`` under ``demo_dir`` (created with ``rows`` trips if absent)."""
    cfg = demo_table_config(demo_dir, engine=engine)
    if create and not (Path(cfg.base_path) / ".hoodie" / "hoodie.properties").exists():
        create_demo_table(cfg.base_path, rows=rows)
    return dg.Definitions.merge(
        build_hudi_definitions(tables=[cfg], spark_config=spark_config), build_demo_ingest_definitions(cfg)
    )


# -- the end-to-end run ----------------------------------------------------------------------------------------------


@dataclass
class DemoRunSummary:
    """What the end-to-end demo did, as figures."""

    base_path: str
    """The demo table."""
    engine: str = "spark"
    """Where compaction ran."""
    ingest_runs: int = 0
    """Runs of ``demo_trips__ingest`` (the first creates the table)."""
    ingest_records: int = 0
    """Records written by those runs."""
    ingest_seconds: float = 0.0
    """Their summed write time."""
    expected_rows: int = 0
    """Live rows according to the write history (inserted - deleted)."""
    plans: list[str] = field(default_factory=list)
    """Compaction plans scheduled by ``demo_trips__schedule_compaction``."""
    compacted_rows: int = 0
    """Rows written by the compaction runs."""
    compaction_seconds: float = 0.0
    """Their summed execution time."""
    files_cleaned: int = 0
    """Files deleted by the ``<t>__clean`` run."""
    instants_archived: int = 0
    """Instants moved to the archived timeline by the ``<t>__archive`` run."""
    slices_before: dict[str, Any] = field(default_factory=dict)
    """Table health before compaction."""
    slices_after: dict[str, Any] = field(default_factory=dict)
    """Table health after compaction."""
    checks: dict[str, bool] = field(default_factory=dict)
    """Demo checks and asset checks: name -> passed."""


def _snapshot(cfg: HudiTableConfig) -> pa.Table:
    from lake_orchestration.datagen import TRIPS_SCHEMA
    from lake_orchestration.hudi.table.snapshot import read_snapshot_table

    snap = read_snapshot_table(cfg.open_table()).select(TRIPS_SCHEMA.names)
    return snap.sort_by("uuid")


_QUIET = {"loggers": {"console": {"config": {"log_level": "WARNING"}}}}
"""Run config: the demo prints its own lines; Dagster's event log stays in the instance (and the UI)."""


def _md(result: dg.ExecuteInProcessResult, node: str) -> dict[str, Any]:
    (mat,) = result.asset_materializations_for_node(node)
    return {k: v.value for k, v in mat.metadata.items()}


def _op_md(result: dg.ExecuteInProcessResult, op: str) -> dict[str, Any]:
    (event,) = [e for e in result.all_node_events if e.event_type_value == "STEP_OUTPUT" and e.step_key == op]
    return {k: v.value for k, v in event.event_specific_data.metadata.items()}  # type: ignore[union-attr]


def run_demo(
    demo_dir: str | Path,
    *,
    rows: int = 1000,
    batches: int = 2,
    rounds: int = 2,
    engine: str = "spark",
    instance: dg.DagsterInstance,
    echo: Callable[[str], None] = print,
) -> DemoRunSummary:
    """Run the demo end to end through Dagster (in-process runs recorded in ``instance``).

    1. delete any previous demo table, then ``demo_trips__ingest`` creates it (bulk_insert of ``rows``);
    2. ``rounds`` times: ``batches`` ingest runs, then ``demo_trips__schedule_compaction``;
    3. the ``demo_trips__pending_compaction_sensor`` evaluates: it adds a partition per pending plan and requests
       a run per plan; each requested run of ``demo_trips__compaction`` executes (as the daemon would launch it);
    4. ``demo_trips__clean`` deletes the file slices older than the retained commits, then ``demo_trips__archive``
       moves old instants to the archived timeline (and merges small archive files);
    5. ``hudi/demo_trips`` materializes with its asset checks; the snapshot is checked against the write history
       and against the snapshot before compaction.
    """
    cfg = demo_table_config(demo_dir, engine=engine)
    if Path(cfg.base_path).exists():
        shutil.rmtree(cfg.base_path)
    parts = compaction_partitions(cfg)
    for key in instance.get_dynamic_partitions(parts.name):  # partitions of a previous demo table's plans
        instance.delete_dynamic_partition(parts.name, key)
    defs = build_demo_definitions(demo_dir, engine=engine, create=False)
    out = DemoRunSummary(base_path=cfg.base_path, engine=engine)
    ingest = defs.resolve_job_def(f"{DEMO_TABLE}__ingest")
    node = "demo__trips_ingest"

    def ingest_once() -> None:
        r = ingest.execute_in_process(
            instance=instance, run_config={**_QUIET, "ops": {node: {"config": {"initial_rows": rows}}}}
        )
        md = _md(r, node)
        out.ingest_runs += 1
        out.ingest_records += md["records"]
        out.ingest_seconds += md["seconds"]
        out.expected_rows += md["inserted"] - md["deleted"]
        echo(
            f"  ingest   {', '.join(md['instants'])}: {md['inserted']} inserted, {md['updated']} updated, "
            f"{md['deleted']} deleted ({md['rows_per_second']:.0f} rows/s)"
        )

    echo(f"Demo table {cfg.base_path} (MERGE_ON_READ), runs through Dagster in {instance.root_directory or 'memory'}")
    ingest_once()
    schedule = defs.resolve_job_def(f"{DEMO_TABLE}__schedule_compaction")
    for _ in range(rounds):
        for _ in range(batches):
            ingest_once()
        r = schedule.execute_in_process(instance=instance, run_config=_QUIET)
        md = _op_md(r, f"{DEMO_TABLE}__schedule_compaction_op")
        echo(f"  schedule {md['instant'] or '-'}: {md['reason']}")
        if md["scheduled"]:
            out.plans.append(md["instant"])

    out.slices_before = table_health(cfg.open_table())
    before = _snapshot(cfg)
    sensor = defs.resolve_sensor_def(f"{DEMO_TABLE}__pending_compaction_sensor")
    tick = sensor(dg.build_sensor_context(instance=instance, definitions=defs))
    for req in tick.dynamic_partitions_requests or []:
        instance.add_dynamic_partitions(req.partitions_def_name, list(req.partition_keys or []))
    compaction = defs.resolve_job_def(f"{DEMO_TABLE}__compaction")
    for req in tick.run_requests or []:
        r = compaction.execute_in_process(
            instance=instance, partition_key=req.partition_key, tags=req.tags, run_config=_QUIET
        )
        md = _md(r, "hudi__demo_trips__compaction")
        out.compacted_rows += md["rows_written"]
        out.compaction_seconds += md["seconds"]
        echo(
            f"  compact  {md['instant']}: {md['operations']} file groups, {md['rows_written']} rows in "
            f"{md['seconds']:.2f}s on {engine}"
        )

    # clean first, then archive (archival keeps what the cleaner's earliest commit to retain still needs)
    r = defs.resolve_job_def(f"{DEMO_TABLE}__clean").execute_in_process(instance=instance, run_config=_QUIET)
    md = _op_md(r, f"{DEMO_TABLE}__clean_op")
    out.files_cleaned = md["files_deleted"]
    echo(
        f"  clean    {', '.join(md['instants']) or '-'}: {md['files_deleted']} old file(s) deleted "
        f"(earliest commit to retain {md['earliest_commit_to_retain'] or '-'}) {md['reason']}".rstrip()
    )
    r = defs.resolve_job_def(f"{DEMO_TABLE}__archive").execute_in_process(instance=instance, run_config=_QUIET)
    md = _op_md(r, f"{DEMO_TABLE}__archive_op")
    out.instants_archived = md["archived_instants"]
    merged = _op_md(r, f"{DEMO_TABLE}__merge_archive_files_op")["merged_file"]
    echo(
        f"  archive  {md['archived_instants']} instant(s) into {md['archive_file'] or '-'} "
        f"(keep {md['keep_min_max']}){', merged into ' + merged if merged else ''}"
    )

    out.slices_after = table_health(cfg.open_table())
    after = _snapshot(cfg)
    # what "Materialize" on the asset in the UI runs: the table asset and its checks, in Dagster's asset job
    health = defs.resolve_implicit_global_asset_job_def().execute_in_process(
        instance=instance, asset_selection=[dg.AssetKey(["hudi", DEMO_TABLE])], run_config=_QUIET
    )
    out.checks = {
        "rows == expected from the write history": after.num_rows == out.expected_rows,
        "snapshot after compaction, clean and archive == before": after.equals(before),
        "no pending compaction left": out.slices_after["pending_compactions"] == 0,
    }
    out.checks.update({f"asset check {e.check_name}": e.passed for e in health.get_asset_check_evaluations()})
    return out


def print_summary(s: DemoRunSummary, *, echo: Callable[[str], None] = print) -> None:
    """The demo's closing summary: instants, file slices before/after, rows/s, checks."""
    from lake_orchestration.hudi.table import HudiTable

    tl = HudiTable(s.base_path).timeline
    echo("")
    echo(f"Timeline ({len(tl)} instants):")
    for i in tl:
        echo(f"  {i.file_name}")
    b, a = s.slices_before, s.slices_after
    echo("File slices (latest, merged):")
    echo(
        f"  before compaction: {b['file_groups']} file groups, {b['log_files']} log files "
        f"(max {b['max_log_files_per_slice']} per slice), {b['pending_compactions']} pending plans"
    )
    echo(
        f"  after compaction:  {a['file_groups']} file groups, {a['log_files']} log files "
        f"(max {a['max_log_files_per_slice']} per slice), {a['pending_compactions']} pending plans"
    )
    ing = s.ingest_records / s.ingest_seconds if s.ingest_seconds else 0.0
    comp = s.compacted_rows / s.compaction_seconds if s.compaction_seconds else 0.0
    echo(f"Ingest:     {s.ingest_runs} runs, {s.ingest_records} records in {s.ingest_seconds:.2f}s ({ing:,.0f} rows/s)")
    echo(
        f"Compaction: {len(s.plans)} plans, {s.compacted_rows} rows in {s.compaction_seconds:.2f}s ({comp:,.0f} rows/s)"
    )
    echo(f"Clean:      {s.files_cleaned} old files deleted; archive: {s.instants_archived} instants archived")
    echo("Checks:")
    for name, ok in s.checks.items():
        echo(f"  [{'ok' if ok else 'FAILED'}] {name}")


def main(argv: list[str] | None = None) -> int:
    """``python -m lake_orchestration.dagster.demo``: the README's first command (after set-up)."""
    p = argparse.ArgumentParser(prog="lake_orchestration.dagster.demo", description=__doc__.splitlines()[0])
    p.add_argument(
        "--dir",
        default=os.environ.get("LAKE_ORCH_DEMO_DIR", DEFAULT_DEMO_DIR),
        help="demo directory (default: $LAKE_ORCH_DEMO_DIR or ./demo-tables); the table is rebuilt",
    )
    p.add_argument("--rows", type=int, default=1000, help="rows of the initial bulk_insert")
    p.add_argument("--batches", type=int, default=2, help="ingest runs before each schedule-compaction run")
    p.add_argument("--rounds", type=int, default=2, help="ingest-then-schedule rounds")
    p.add_argument("--engine", choices=["spark", "local"], default="spark", help="where compaction runs")
    args = p.parse_args(argv)
    home = os.environ.get("DAGSTER_HOME")
    if home:
        Path(home).mkdir(parents=True, exist_ok=True)
        (Path(home) / "dagster.yaml").touch()  # an empty instance config: the defaults, without the warning
        instance = dg.DagsterInstance.get()
    else:
        instance = dg.DagsterInstance.ephemeral()
    with instance:
        summary = run_demo(
            args.dir, rows=args.rows, batches=args.batches, rounds=args.rounds, engine=args.engine, instance=instance
        )
    print_summary(summary)
    env = f"DAGSTER_HOME={home} " if home else ""
    demo_env = "" if Path(args.dir).resolve() == Path(DEFAULT_DEMO_DIR).resolve() else f"LAKE_ORCH_DEMO_DIR={args.dir} "
    print("")
    print("Open the UI (the same table and, with DAGSTER_HOME, these runs):")
    print(f"  . .venv/bin/activate && {env}{demo_env}dagster dev -w workspace.yaml   # then http://127.0.0.1:3000")
    if not all(summary.checks.values()):
        print("demo checks failed", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
