"""Paimon primary-key table commands: ``paimon compaction schedule|run|show``."""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from lake_orchestration.cli.common import cli_engine, spark_master
from lake_orchestration.cli.output import Output, json_option, table
from lake_orchestration.cli.storage_options import current_storage_options, storage_options

if TYPE_CHECKING:
    from lake_orchestration.paimon.health import PaimonTableHealth
    from lake_orchestration.paimon.services.compaction import PaimonCompactionPlan, PaimonCompactionResult
    from lake_orchestration.paimon.table import PaimonTable


def open_paimon_table(path: str) -> PaimonTable:
    """The Paimon table at ``path`` (its directory: ``<warehouse>/<db>.db/<table>``) opened with the command's
    ``--storage-option``/``--storage-options-file`` options."""
    from lake_orchestration.paimon.table import PaimonTable

    return PaimonTable.open(path, storage_options=current_storage_options())


@click.group("paimon")
def paimon_group() -> None:
    """Apache Paimon primary-key tables (filesystem catalog layout)."""


@paimon_group.group("compaction")
def paimon_compaction_group() -> None:
    """Merge-tree compaction: show the levels, plan, or run (plan, execute and commit a COMPACT snapshot)."""


_FULL_HELP = "Full compaction (Paimon's compact --full): every bucket to one sorted run at the max level."


def _partition(values: list[str | None], keys: list[str]) -> str:
    return "/".join(f"{k}={v}" for k, v in zip(keys, values, strict=True))


def _print_plan(plan: PaimonCompactionPlan) -> None:
    if plan.snapshot_id is None:
        click.echo("No compaction needed: the table has no snapshot")
        return
    if plan.is_empty:
        click.echo(f"No compaction needed at snapshot {plan.snapshot_id}" + (" (full)" if plan.full else ""))
        return
    obj = plan.to_json_obj()
    keys = list(plan.schema.partition_keys)
    click.echo(
        f"{'Full compaction' if plan.full else 'Compaction'} of snapshot {plan.snapshot_id}: "
        f"{len(plan.buckets)} bucket(s), {obj['input_files']} file(s), {obj['input_bytes']} bytes "
        "(not saved: Paimon has no plan file, 'run' plans again)"
    )
    rows = [
        (
            _partition(b["partition_values"], keys),
            b["bucket"],
            len(b["files"]),
            sum(f["file_size"] for f in b["files"]),
            ",".join(str(lv) for lv in sorted({f["level"] for f in b["files"]})),
            b["output_level"],
            b["drop_delete"],
        )
        for b in obj["buckets"]
    ]
    click.echo(table(rows, ["partition", "bucket", "files", "bytes", "from_levels", "output_level", "drop_delete"]))


@paimon_compaction_group.command("schedule")
@click.argument("path")
@click.option("--full", is_flag=True, help=_FULL_HELP)
@json_option()
@storage_options
def paimon_compaction_schedule(path: str, full: bool, out: Output) -> None:
    """Print the compaction plan of the latest snapshot: per bucket the files to compact and the output level.

    Writes nothing: Paimon keeps no plan file (Java plans inside the compaction job), so the plan is only shown;
    'run' makes it again from the then latest snapshot and commits it.
    """
    from lake_orchestration.paimon.services.compaction import plan_compaction

    out.show(plan_compaction(open_paimon_table(path), full=full), _print_plan)


def _print_run(result: PaimonCompactionResult) -> None:
    if result.commit is None or result.execution is None:
        at = result.plan.snapshot_id
        click.echo("No compaction needed" + ("" if at is None else f" at snapshot {at}"))
        return
    ex, c = result.execution, result.commit
    click.echo(
        f"Committed compaction snapshot {c.snapshot.id} ({c.snapshot.commit_kind.value}) over snapshot "
        f"{result.plan.snapshot_id}: {len(ex.results)} bucket(s), {c.deleted_files} file(s) replaced by "
        f"{c.added_files} ({sum(r.upgraded for r in ex.results)} upgraded, "
        f"{sum(r.rewritten for r in ex.results)} rewritten into {len(ex.written)} new file(s))"
        + (f"; re-planned {result.replans} time(s) after commit conflicts" if result.replans else "")
    )


@paimon_compaction_group.command("run")
@click.argument("path")
@click.option("--full", is_flag=True, help=_FULL_HELP)
@click.option("--engine", type=click.Choice(["spark", "local"]), default="local", show_default=True)
@click.option("--spark-master", default="local[*]", show_default=True, callback=spark_master)
@json_option()
@storage_options
def paimon_compaction_run(path: str, full: bool, engine: str, spark_master: str, out: Output) -> None:
    """Plan, execute (one engine task per bucket) and commit a COMPACT snapshot; on a commit conflict with another
    writer the attempt's files are deleted and the compaction planned again."""
    from lake_orchestration.paimon.services.compaction import run_compaction

    table_ = open_paimon_table(path)
    out.show(run_compaction(table_, full=full, engine=cli_engine(engine, spark_master)), _print_run)


def _print_health(health: PaimonTableHealth) -> None:
    if health.snapshot_id is None:
        click.echo(f"{health.table_uri}: no snapshot")
        return
    click.echo(
        f"Snapshot {health.snapshot_id} ({health.commit_kind}), {health.snapshots_since_compaction} write(s) since "
        f"the last compaction; {len(health.buckets)} bucket(s), {health.level0_files} level-0 file(s); most sorted "
        f"runs in a bucket {health.max_sorted_runs} (compaction trigger {health.compaction_trigger}, stop trigger "
        f"{health.stop_trigger}); pending size amplification {health.pending_size_amplification_percent} % "
        f"(max {health.max_size_amplification_percent} %)"
    )
    rows = [
        (
            b.partition_path,
            b.bucket,
            b.sorted_runs,
            b.level0_files,
            " ".join(f"L{lv}:{n}" for lv, n, _ in b.levels),
            b.bytes,
            b.size_amplification_percent,
        )
        for b in health.buckets
    ]
    click.echo(table(rows, ["partition", "bucket", "sorted_runs", "level0_files", "levels", "bytes", "size_amp_%"]))


@paimon_compaction_group.command("show")
@click.argument("path")
@json_option()
@storage_options
def paimon_compaction_show(path: str, out: Output) -> None:
    """Per bucket of the latest snapshot: files per level, sorted runs, level-0 files and the pending size
    amplification, against the table's compaction and stop triggers."""
    from lake_orchestration.paimon.health import paimon_table_health

    out.show(paimon_table_health(open_paimon_table(path)), _print_health)
