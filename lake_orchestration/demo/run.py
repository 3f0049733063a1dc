"""The demo end to end through Dagster: ``python -m lake_orchestration.demo`` (``./scripts/demo.sh``).

Create the demo table, ingest batches, schedule compaction, let the pending-compaction sensor request a run per plan
and execute them, clean and archive, then print a summary and how to open the UI. Every step is a Dagster run of the
demo code location (:mod:`lake_orchestration.demo.definitions`), recorded in the instance.
"""

import argparse
import os
import shutil
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import dagster as dg
import pyarrow as pa

from lake_orchestration.dagster import DagsterHudiTranslator, HudiTableConfig
from lake_orchestration.demo.definitions import (
    DEFAULT_DEMO_DIR,
    DEMO_INSTANCE_YAML,
    build_demo_definitions,
    demo_table_config,
)
from lake_orchestration.hudi.table.health import TableHealth, table_health


@dataclass
class DemoRunSummary:
    """What the end-to-end demo did, as figures."""

    base_path: str
    """The demo table."""
    engine: str = "local"
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
    slices_before: TableHealth | None = None
    """Table health before compaction."""
    slices_after: TableHealth | None = None
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
    engine: str = "local",
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
    tr = DagsterHudiTranslator()
    parts = tr.get_partitions_def_name(cfg)
    for key in instance.get_dynamic_partitions(parts):  # partitions of a previous demo table's plans
        instance.delete_dynamic_partition(parts, key)
    defs = build_demo_definitions(demo_dir, engine=engine, create=False)
    out = DemoRunSummary(base_path=cfg.base_path, engine=engine)
    ingest = defs.resolve_job_def(tr.get_job_name(cfg, "ingest"))
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
    schedule = defs.resolve_job_def(tr.get_job_name(cfg, "schedule_compaction"))
    for _ in range(rounds):
        for _ in range(batches):
            ingest_once()
        r = schedule.execute_in_process(instance=instance, run_config=_QUIET)
        md = _op_md(r, tr.get_op_name(cfg, "schedule_compaction"))
        echo(f"  schedule {md['instant'] or '-'}: {md['reason']}")
        if md["scheduled"]:
            out.plans.append(md["instant"])

    out.slices_before = table_health(cfg.open_table())
    before = _snapshot(cfg)
    sensor = defs.resolve_sensor_def(tr.get_sensor_name(cfg, "pending_compaction"))
    tick = sensor(dg.build_sensor_context(instance=instance, definitions=defs))
    for req in tick.dynamic_partitions_requests or []:
        instance.add_dynamic_partitions(req.partitions_def_name, list(req.partition_keys or []))
    compaction = defs.resolve_job_def(tr.get_job_name(cfg, "compaction"))
    for req in tick.run_requests or []:
        r = compaction.execute_in_process(
            instance=instance, partition_key=req.partition_key, tags=req.tags, run_config=_QUIET
        )
        md = _md(r, tr.get_compaction_asset_key(cfg).to_python_identifier())
        out.compacted_rows += md["rows_written"]
        out.compaction_seconds += md["seconds"]
        echo(
            f"  compact  {md['instant']}: {md['operations']} file groups, {md['rows_written']} rows in "
            f"{md['seconds']:.2f}s on {engine}"
        )

    # clean first, then archive (archival keeps what the cleaner's earliest commit to retain still needs)
    r = defs.resolve_job_def(tr.get_job_name(cfg, "clean")).execute_in_process(instance=instance, run_config=_QUIET)
    md = _op_md(r, tr.get_op_name(cfg, "clean_commit"))
    out.files_cleaned = md["files_deleted"]
    echo(
        f"  clean    {', '.join(md['instants']) or '-'}: {md['files_deleted']} old file(s) deleted "
        f"(earliest commit to retain {md['earliest_commit_to_retain'] or '-'}) {md['reason']}".rstrip()
    )
    r = defs.resolve_job_def(tr.get_job_name(cfg, "archive")).execute_in_process(instance=instance, run_config=_QUIET)
    md = _op_md(r, tr.get_op_name(cfg, "archive"))
    out.instants_archived = md["archived_instants"]
    merged = _op_md(r, tr.get_op_name(cfg, "merge_archive_files"))["merged_file"]
    echo(
        f"  archive  {md['archived_instants']} instant(s) into {md['archive_file'] or '-'} "
        f"(keep {md['keep_min_max']}){', merged into ' + merged if merged else ''}"
    )

    out.slices_after = table_health(cfg.open_table())
    after = _snapshot(cfg)
    # what "Materialize" on the asset in the UI runs: the table asset and its checks, in Dagster's asset job
    health = defs.resolve_implicit_global_asset_job_def().execute_in_process(
        instance=instance, asset_selection=[tr.get_asset_key(cfg)], run_config=_QUIET
    )
    out.checks = {
        "rows == expected from the write history": after.num_rows == out.expected_rows,
        "snapshot after compaction, clean and archive == before": after.equals(before),
        "no pending compaction left": out.slices_after.pending_compactions == 0,
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
    echo("File slices (latest, merged):")
    for when, h in (("before compaction:", s.slices_before), ("after compaction: ", s.slices_after)):
        if h is not None:
            echo(
                f"  {when} {h.file_groups} file groups, {h.log_files} log files "
                f"(max {h.max_log_files_per_slice} per slice), {h.pending_compactions} pending plans"
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
    """``python -m lake_orchestration.demo``: the README's first command (after set-up)."""
    p = argparse.ArgumentParser(prog="lake_orchestration.demo", description=__doc__.splitlines()[0])
    p.add_argument(
        "--dir",
        default=os.environ.get("LAKE_ORCH_DEMO_DIR", DEFAULT_DEMO_DIR),
        help="demo directory (default: $LAKE_ORCH_DEMO_DIR or ./demo-tables); the table is rebuilt",
    )
    p.add_argument("--rows", type=int, default=1000, help="rows of the initial bulk_insert")
    p.add_argument("--batches", type=int, default=2, help="ingest runs before each schedule-compaction run")
    p.add_argument("--rounds", type=int, default=2, help="ingest-then-schedule rounds")
    p.add_argument("--engine", choices=["spark", "local"], default="local", help="where compaction runs")
    args = p.parse_args(argv)
    home = os.environ.get("DAGSTER_HOME")
    if home:
        Path(home).mkdir(parents=True, exist_ok=True)
        config = Path(home) / "dagster.yaml"
        if not config.exists() or not config.read_text().strip():  # a user's own instance config stays as it is
            config.write_text(DEMO_INSTANCE_YAML)  # the per-table pool limit (one step per table at a time)
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
