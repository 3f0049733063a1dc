"""``bootstrap``: turn an existing parquet dataset into a Hudi table (METADATA_ONLY skeletons and/or a FULL_RECORD
bulk insert), or with ``--dry-run`` print the per-partition plan."""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from lake_orchestration.cli.common import cli_engine, engine_options, option_passthrough, table_options
from lake_orchestration.cli.output import Output, json_option, table
from lake_orchestration.cli.storage_options import current_storage_options, storage_options
from lake_orchestration.config.keys import HoodieKey

if TYPE_CHECKING:
    from lake_orchestration.hudi.services.bootstrap import BootstrapResult


def _print_bootstrap(result: BootstrapResult) -> None:
    plan = result.plan
    click.echo(f"Bootstrap of {plan.source_path} into {plan.table_uri}:")
    rows = [
        (p.partition_path or "(top level)", p.mode.value, len(p.files), sum(f.size for f in p.files))
        for p in plan.partitions
    ]
    click.echo(table(rows, ["partition", "mode", "files", "bytes"]))
    if result.dry_run:
        click.echo("Dry run: nothing written.")
        return
    if result.resumed:
        click.echo("Resumed: 00000000000001 (METADATA_ONLY) was committed by an earlier run; its skeletons are kept")
    if result.metadata_only_instant:
        click.echo(
            f"Committed {result.metadata_only_instant} (METADATA_ONLY): {result.skeleton_files} skeleton files, "
            "bootstrap index written"
        )
    if result.full_record_instant:
        click.echo(
            f"Committed {result.full_record_instant} (FULL_RECORD): {result.full_record_rows} rows in "
            f"{result.full_record_base_files} base files"
        )


@click.command("bootstrap")
@click.argument("path")
@click.option("--source-path", required=True, help=f"{HoodieKey.BOOTSTRAP_BASE_PATH.key}: the parquet dataset.")
@click.option("--table-name", default=None, help=f"{HoodieKey.TABLE_NAME.key}.")
@click.option("--record-key", "record_keys", multiple=True, help="Record key field (repeat for a composite key).")
@click.option("--precombine-field", default=None, help=f"{HoodieKey.WRITE_PRECOMBINE_FIELD.key}.")
@click.option(
    "--partition-field",
    "partition_fields",
    multiple=True,
    help="Partition field (repeatable; omit for a non-partitioned dataset).",
)
@click.option(
    "--mode",
    type=click.Choice(["METADATA_ONLY", "FULL_RECORD"]),
    default=None,
    help=f"Every partition in this mode (else {HoodieKey.BOOTSTRAP_MODE_SELECTOR.key}, default METADATA_ONLY).",
)
@click.option(
    "--table-type",
    type=click.Choice(["MERGE_ON_READ", "COPY_ON_WRITE"]),
    default=None,
    help=f"{HoodieKey.WRITE_TABLE_TYPE.key} (default MERGE_ON_READ).",
)
@click.option(
    "--hive-style-partitioning/--no-hive-style-partitioning",
    default=None,
    help=f"{HoodieKey.HIVE_STYLE_PARTITIONING.key} (default: true when the source folders are <field>=<value>).",
)
@click.option("--option", "options", multiple=True, help="Any Hudi option as key=value (repeatable).")
@option_passthrough
@engine_options(default="local", help="Where the skeleton and bulk-insert tasks run.")
@click.option("--dry-run", is_flag=True, help="Print the per-partition plan; write nothing.")
@json_option("Print the plan and result as JSON.")
@storage_options
def bootstrap_cmd(
    path: str,
    source_path: str,
    table_name: str | None,
    record_keys: tuple[str, ...],
    precombine_field: str | None,
    partition_fields: tuple[str, ...],
    mode: str | None,
    table_type: str | None,
    hive_style_partitioning: bool | None,
    options: tuple[str, ...],
    engine: str,
    spark_master: str,
    dry_run: bool,
    out: Output,
) -> None:
    """Bootstrap the parquet dataset at --source-path into a new Hudi table at PATH (Hudi's bootstrap)."""
    from lake_orchestration.hudi.services.bootstrap import BootstrapConfig, ModeSelector, bootstrap
    from lake_orchestration.hudi.services.bootstrap.planner import hive_style_folders

    hudi_opts = table_options(
        options,
        table_name=table_name,
        table_type=table_type,
        record_keys=record_keys,
        precombine_field=precombine_field,
        partition_fields=partition_fields,
    )
    hudi_opts[HoodieKey.BOOTSTRAP_BASE_PATH.key] = source_path
    if mode is not None:
        hudi_opts[HoodieKey.BOOTSTRAP_MODE_SELECTOR.key] = ModeSelector[mode].value
    storage = current_storage_options()
    if hive_style_partitioning is None and HoodieKey.HIVE_STYLE_PARTITIONING.key not in hudi_opts:
        hive_style_partitioning = hive_style_folders(source_path, partition_fields, storage_options=storage)
    if hive_style_partitioning is not None:
        hudi_opts.setdefault(HoodieKey.HIVE_STYLE_PARTITIONING.key, str(hive_style_partitioning).lower())
    result = bootstrap(
        path,
        BootstrapConfig.from_options(hudi_opts),
        storage_options=storage,
        engine=cli_engine("local" if dry_run else engine, spark_master),
        dry_run=dry_run,
    )
    out.show(result, _print_bootstrap)
