"""Commands that write rows: ``write`` (a parquet file's rows to a table, one commit) and ``generate`` (test rows)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from lake_orchestration.cli.common import cli_engine, engine_options, option_passthrough, table_options
from lake_orchestration.cli.output import Output, json_option
from lake_orchestration.cli.storage_options import current_storage_options, storage_options
from lake_orchestration.config.keys import HoodieKey

if TYPE_CHECKING:
    from lake_orchestration.hudi.write import WriteResult


def _print_write(result: WriteResult) -> None:
    click.echo(
        f"Committed {result.action} {result.instant}: {result.inserted} inserted, "
        f"{result.updated} updated, {result.deleted} deleted, {len(result.files_written)} files written"
    )


@click.command("write")
@click.argument("path")
@click.option(
    "--input",
    "input_path",
    required=True,
    type=click.Path(exists=True, dir_okay=False),
    help="Parquet file with the rows to write.",
)
@click.option(
    "--operation", type=click.Choice(["bulk_insert", "insert", "upsert", "delete"]), default="upsert", show_default=True
)
@click.option("--table-name", default=None, help=f"{HoodieKey.TABLE_NAME.key} (to create the table).")
@click.option(
    "--table-type",
    type=click.Choice(["MERGE_ON_READ", "COPY_ON_WRITE"]),
    default=None,
    help=f"{HoodieKey.WRITE_TABLE_TYPE.key} (to create the table; default MERGE_ON_READ).",
)
@click.option("--record-key", "record_keys", multiple=True, help="Record key field (repeat for a composite key).")
@click.option("--precombine-field", default=None, help=f"{HoodieKey.WRITE_PRECOMBINE_FIELD.key}.")
@click.option(
    "--partition-field",
    "partition_fields",
    multiple=True,
    help="Partition field (repeatable; omit for a non-partitioned table).",
)
@click.option(
    "--hive-style-partitioning/--no-hive-style-partitioning",
    default=None,
    help=f"{HoodieKey.HIVE_STYLE_PARTITIONING.key}.",
)
@click.option("--option", "options", multiple=True, help="Any Hudi option as key=value (repeatable).")
@option_passthrough
@engine_options(default="local", help="Where the file-group tasks run.")
@json_option("Print the result as JSON.")
@storage_options
def write_cmd(
    path: str,
    input_path: str,
    operation: str,
    table_name: str | None,
    table_type: str | None,
    record_keys: tuple[str, ...],
    precombine_field: str | None,
    partition_fields: tuple[str, ...],
    hive_style_partitioning: bool | None,
    options: tuple[str, ...],
    engine: str,
    spark_master: str,
    out: Output,
) -> None:
    """Write a parquet file's rows to a Hudi table (created when absent) as one commit."""
    import pyarrow.parquet as pq

    from lake_orchestration.hudi.write import WriteOptions, write_table

    hudi_opts = table_options(
        options,
        table_name=table_name,
        table_type=table_type,
        record_keys=record_keys,
        precombine_field=precombine_field,
        partition_fields=partition_fields,
    )
    if hive_style_partitioning is not None:
        hudi_opts.setdefault(HoodieKey.HIVE_STYLE_PARTITIONING.key, str(hive_style_partitioning).lower())
    from lake_orchestration.hudi.services.rollback import rollback_write
    from lake_orchestration.hudi.services.rollback.config import RollbackConfig

    on = cli_engine(engine, spark_master)
    write_options = WriteOptions.from_hudi_options(hudi_opts)
    rollback = RollbackConfig.from_options(hudi_opts, lock=write_options.lock)
    result = write_table(
        path,
        pq.read_table(input_path),
        operation=operation,
        options=write_options,
        engine=on,
        storage_options=current_storage_options(),
        # a write that loses to a concurrent writer on the same file groups is rolled back at once
        on_conflict=lambda table, instant: rollback_write(table, instant, config=rollback),
    )
    out.show(result, _print_write)


@click.command("generate")
@click.argument("output", type=click.Path(dir_okay=False))
@click.option("--rows", default=0, show_default=True, type=click.IntRange(min=0), help="New trips to generate.")
@click.option(
    "--partitions",
    default=3,
    show_default=True,
    type=click.IntRange(1, 8),
    help="Cities (partitions) for new trips, 1..8.",
)
@click.option(
    "--from",
    "from_path",
    type=click.Path(exists=True, dir_okay=False),
    default=None,
    help="Existing rows to derive updates/deletes from.",
)
@click.option(
    "--update-fraction",
    default=0.0,
    show_default=True,
    type=click.FloatRange(0.0, 1.0),
    help="Share of --from rows to update.",
)
@click.option(
    "--delete-fraction",
    default=0.0,
    show_default=True,
    type=click.FloatRange(0.0, 1.0),
    help="Share of --from rows to delete (rows with _hoodie_is_deleted=true, applied by an upsert).",
)
@click.option("--seed", default=42, show_default=True)
def generate_cmd(
    output: str,
    rows: int,
    partitions: int,
    from_path: str | None,
    update_fraction: float,
    delete_fraction: float,
    seed: int,
) -> None:
    """Generate reproducible trips-like rows (uuid key, ts ordering field, city partition) to a parquet file."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from lake_orchestration.datagen import generate_trips, generate_updates, pick_deletes, with_delete_flags

    parts = []
    if (update_fraction or delete_fraction) and not from_path:
        raise ValueError("--update-fraction/--delete-fraction need --from FILE.parquet (the rows to change)")
    if from_path:
        src = pq.read_table(from_path).select(generate_trips(0).column_names)
        if update_fraction:
            parts.append(generate_updates(src, fraction=update_fraction, seed=seed))
        if delete_fraction:
            # delete rows that are not also updated in this batch (an update would win the precombine)
            updated = set(parts[0].column("uuid").to_pylist()) if update_fraction else set()
            pool = src.filter(pa.array([u not in updated for u in src.column("uuid").to_pylist()]))
            n = round(src.num_rows * delete_fraction)
            parts.append(pick_deletes(pool, fraction=min(1.0, n / max(pool.num_rows, 1)), seed=seed + 1))
    if rows:
        # new trips must not reuse the keys of --from rows generated with the same seed
        parts.append(generate_trips(rows, partitions=partitions, seed=seed + 1000 if from_path else seed))
    if not parts:
        raise ValueError("nothing to generate: give --rows N and/or --from FILE with a fraction")
    out = with_delete_flags(parts, deleted_index=(1 if update_fraction else 0) if delete_fraction else None)
    pq.write_table(out, output)
    click.echo(f"Wrote {out.num_rows} rows to {output}")
