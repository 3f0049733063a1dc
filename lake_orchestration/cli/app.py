"""``lake-orch``: inspect and operate Hudi tables from the command line.

Every command that prints data takes ``--json``. Errors print one line (``--verbose``: the traceback) and exit 1.
"""

from __future__ import annotations

import functools
import logging
import sys
import traceback
from collections.abc import Callable
from typing import Any, TypeVar

import click
import pyarrow.parquet as pq

from lake_orchestration.cli.output import emit_json, table
from lake_orchestration.cli.storage_options import current_storage_options, redact, storage_options
from lake_orchestration.errors import EngineError, LakeOrchestrationError
from lake_orchestration.hudi.table import HudiTable
from lake_orchestration.hudi.table.snapshot import ReadStats, read_snapshot, table_arrow_schema

F = TypeVar("F", bound=Callable[..., Any])


def _errors(fn: F) -> F:
    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        ctx = click.get_current_context()
        verbose = bool((ctx.find_root().obj or {}).get("verbose"))
        try:
            return fn(*args, **kwargs)
        except BrokenPipeError:
            # the reader of stdout went away (``| head``): click exits quietly (no traceback, no message)
            raise
        except (LakeOrchestrationError, ValueError, OSError, NotImplementedError) as err:
            # a store's error may quote what it was given: mask every secret value before printing
            if verbose:
                click.echo(redact(traceback.format_exc()).rstrip("\n"), err=True)
            click.echo(redact(f"Error: {err}"), err=True)
            sys.exit(1)

    return wrapper  # type: ignore[return-value]


def _table(path: str) -> HudiTable:
    """The table at ``path`` opened with the command's ``--storage-option``/``--storage-options-file`` options."""
    return HudiTable(path, storage_options=current_storage_options())


def _spark_master(ctx: click.Context, param: click.Parameter, value: str) -> str:
    """Check ``--spark-master`` before anything runs: a bad URL is a usage error, not a JVM traceback."""
    from lake_orchestration.engines.spark_session import validate_spark_master

    try:
        return validate_spark_master(value)
    except EngineError as err:
        raise click.BadParameter(str(err), ctx=ctx, param=param) from None


@click.group()
@click.option("--verbose", is_flag=True, help="Show tracebacks and debug logging.")
@click.pass_context
def cli(ctx: click.Context, verbose: bool) -> None:
    """Run and inspect Apache Hudi table services."""
    ctx.obj = {"verbose": verbose}
    logging.basicConfig(level=logging.DEBUG if verbose else logging.WARNING, format="%(levelname)s %(message)s")


# -- table --------------------------------------------------------------------------------------------------------
@cli.group("table")
def table_group() -> None:
    """Table configuration."""


def table_summary(t: HudiTable) -> dict[str, Any]:
    c = t.config
    return {
        "base_path": t.base_uri,
        "name": c.name,
        "type": c.table_type.value,
        "version": c.version,
        "record_key_fields": list(c.record_key_fields),
        "partition_fields": list(c.partition_fields),
        "precombine_field": c.precombine_field,
        "key_generator": c.key_generator_class,
        "hive_style_partitioning": c.hive_style_partitioning,
        "url_encode_partitioning": c.url_encode_partitioning,
        "payload_class": c.payload_class,
        "merge_semantics": c.merge_semantics.value,
        "populate_meta_fields": c.populate_meta_fields,
        "base_file_format": c.base_file_format,
        "timeline_timezone": c.timeline_timezone.value,
        "instants": len(t.timeline),
    }


@table_group.command("show")
@click.argument("path")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@storage_options
@_errors
def table_show(path: str, as_json: bool) -> None:
    """Show the table's configuration (hoodie.properties)."""
    s = table_summary(_table(path))
    if as_json:
        emit_json(s)
        return
    click.echo(table([(k, v) for k, v in s.items()], ["property", "value"]))


# -- timeline -----------------------------------------------------------------------------------------------------
@cli.group("timeline")
def timeline_group() -> None:
    """The active timeline."""


def timeline_rows(t: HudiTable) -> list[dict[str, Any]]:
    out = []
    for i in t.timeline:
        out.append({"instant": str(i.time), "action": i.action.value, "state": i.state.name, "file": i.file_name})
    return out


def archived_timeline_rows(t: HudiTable) -> list[dict[str, Any]]:
    """Every archived instant state (``.hoodie/archived/.commits_.archive.*``), sorted."""
    from lake_orchestration.hudi.table.archived_timeline import ArchivedTimeline

    out = []
    for e in ArchivedTimeline.load(t.storage, t.config.archivelog_folder):
        i = e.instant
        out.append({"instant": str(i.time), "action": i.action.value, "state": i.state.name, "file": e.file})
    return out


@timeline_group.command("show")
@click.argument("path")
@click.option("--archived", is_flag=True, help="Show the archived timeline (.hoodie/archived) instead.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@storage_options
@_errors
def timeline_show(path: str, archived: bool, as_json: bool) -> None:
    """List the instants of the active timeline (latest state of each), or with --archived every archived state."""
    rows = archived_timeline_rows(_table(path)) if archived else timeline_rows(_table(path))
    if as_json:
        emit_json(rows)
        return
    if not rows:
        click.echo("(empty timeline)")
        return
    click.echo(
        table(
            [(r["instant"], r["action"], r["state"], r["file"]) for r in rows], ["instant", "action", "state", "file"]
        )
    )


# -- fsview -------------------------------------------------------------------------------------------------------
@cli.group("fsview")
def fsview_group() -> None:
    """The file-system view: file groups and file slices."""


def fsview_rows(t: HudiTable, *, all_slices: bool = False) -> list[dict[str, Any]]:
    view = t.fs_view()
    latest = {s.file_group_id: s for s in view.latest_file_slices()}
    rows = []
    for g in view.all_file_groups(include_replaced=True):
        # the latest slice as Hudi's getLatestFileSlices shows it (a pending compaction's partial base file hidden)
        slices = g.slices if all_slices else ([latest.get(g.id) or g.slices[0]] if g.slices else [])
        for s in slices:
            rows.append(
                {
                    "partition": s.partition_path,
                    "file_id": s.file_id,
                    "base_instant": str(s.base_instant),
                    "base_file": s.base_file.name if s.base_file else None,
                    "base_file_size": s.base_file.size if s.base_file else None,
                    "log_files": [lf.name for lf in s.log_files],
                    "log_files_size": sum(max(lf.size, 0) for lf in s.log_files),
                    "pending_compaction": str(view.pending_compaction[g.id])
                    if g.id in view.pending_compaction
                    else None,
                    "replaced_by": str(view.replaced[g.id]) if g.id in view.replaced else None,
                }
            )
    return rows


@fsview_group.command("show")
@click.argument("path")
@click.option("--all-slices", is_flag=True, help="Show every committed slice, not only the latest.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@storage_options
@_errors
def fsview_show(path: str, all_slices: bool, as_json: bool) -> None:
    """List file groups and their latest (or all) file slices."""
    rows = fsview_rows(_table(path), all_slices=all_slices)
    if as_json:
        emit_json(rows)
        return
    if not rows:
        click.echo("(no file groups)")
        return
    click.echo(
        table(
            [
                (
                    r["partition"] or "(root)",
                    r["file_id"],
                    r["base_instant"],
                    r["base_file"] or "-",
                    len(r["log_files"]),
                    (r["pending_compaction"] or r["replaced_by"] or ""),
                )
                for r in rows
            ],
            ["partition", "file_id", "base_instant", "base_file", "logs", "pending/replaced"],
        )
    )


# -- read ---------------------------------------------------------------------------------------------------------
@cli.command("read")
@click.argument("path")
@click.option("--output", "-o", required=True, type=click.Path(dir_okay=False), help="Parquet file to write.")
@click.option("--as-of", default=None, help="Read as of this completed instant (default: latest).")
@click.option("--json", "as_json", is_flag=True, help="Print the read summary as JSON.")
@storage_options
@_errors
def read_cmd(path: str, output: str, as_of: str | None, as_json: bool) -> None:
    """Write the merged snapshot (all columns, meta columns included) to a parquet file.

    The rows go to a temporary file next to OUTPUT, renamed to OUTPUT once the whole snapshot is read: a read that
    fails (a log block that does not decode, ...) leaves no partial OUTPUT and an existing OUTPUT untouched.
    """
    import contextlib
    import os

    t = _table(path)
    stats = ReadStats()
    writer = None
    schema = None
    tmp = os.path.join(os.path.dirname(output), f".{os.path.basename(output)}.{os.getpid()}.tmp")
    try:
        try:
            for part in read_snapshot(t, as_of=as_of, stats=stats):
                if writer is None:
                    schema = part.schema
                    writer = pq.ParquetWriter(tmp, schema)
                writer.write_table(part if part.schema.equals(schema) else part.cast(schema))
            if writer is None:
                empty = table_arrow_schema(t)
                if empty is None:
                    import pyarrow as pa

                    empty = pa.schema([])
                pq.write_table(empty.empty_table(), tmp)
        finally:
            if writer is not None:
                writer.close()
        os.replace(tmp, output)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
    summary = {
        "output": output,
        "rows": stats.rows,
        "file_slices": stats.file_slices,
        "base_files": stats.base_files,
        "log_files": stats.log_files,
        "log_blocks": stats.log_blocks,
        "log_records": stats.log_records,
        "corrupt_blocks": stats.corrupt_blocks,
        "rollback_blocks": stats.rollback_blocks,
    }
    if as_json:
        emit_json(summary)
    else:
        click.echo(f"Wrote {stats.rows} rows from {stats.file_slices} file slices to {output}")
        if stats.corrupt_blocks:
            click.echo(f"Warning: skipped {stats.corrupt_blocks} corrupt log block(s)", err=True)


# -- write / generate ---------------------------------------------------------------------------------------------
def _parse_options(pairs: tuple[str, ...]) -> dict[str, str]:
    out = {}
    for p in pairs:
        key, sep, value = p.partition("=")
        if not sep or not key.strip():
            raise ValueError(f"--option {p!r}: expected key=value, e.g. hoodie.parquet.compression.codec=snappy")
        out[key.strip()] = value
    return out


@cli.command("write")
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
@click.option("--table-name", default=None, help="hoodie.table.name (to create the table).")
@click.option(
    "--table-type",
    type=click.Choice(["MERGE_ON_READ", "COPY_ON_WRITE"]),
    default=None,
    help="hoodie.datasource.write.table.type (to create the table; default MERGE_ON_READ).",
)
@click.option("--record-key", "record_keys", multiple=True, help="Record key field (repeat for a composite key).")
@click.option("--precombine-field", default=None, help="hoodie.datasource.write.precombine.field.")
@click.option(
    "--partition-field",
    "partition_fields",
    multiple=True,
    help="Partition field (repeatable; omit for a non-partitioned table).",
)
@click.option(
    "--hive-style-partitioning/--no-hive-style-partitioning",
    default=None,
    help="hoodie.datasource.write.hive_style_partitioning.",
)
@click.option("--option", "options", multiple=True, help="Any Hudi option as key=value (repeatable).")
@click.option(
    "--engine",
    type=click.Choice(["local", "spark"]),
    default="local",
    show_default=True,
    help="Where the file-group tasks run.",
)
@click.option("--spark-master", default="local[*]", show_default=True, callback=_spark_master)
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
@storage_options
@_errors
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
    as_json: bool,
) -> None:
    """Write a parquet file's rows to a Hudi table (created when absent) as one commit."""
    from lake_orchestration.hudi.write import WriteOptions, write_table

    hudi_opts = _parse_options(options)
    if table_name:
        hudi_opts.setdefault("hoodie.table.name", table_name)
    if table_type:
        hudi_opts.setdefault("hoodie.datasource.write.table.type", table_type)
    if record_keys:
        hudi_opts.setdefault("hoodie.datasource.write.recordkey.field", ",".join(record_keys))
    if precombine_field:
        hudi_opts.setdefault("hoodie.datasource.write.precombine.field", precombine_field)
    if partition_fields:
        hudi_opts.setdefault("hoodie.datasource.write.partitionpath.field", ",".join(partition_fields))
    if hive_style_partitioning is not None:
        hudi_opts.setdefault("hoodie.datasource.write.hive_style_partitioning", str(hive_style_partitioning).lower())
    spark = None
    if engine == "spark":
        from lake_orchestration.engines.spark_session import local_spark_session

        spark = local_spark_session(master=spark_master)
    result = write_table(
        path,
        pq.read_table(input_path),
        operation=operation,
        options=WriteOptions.from_hudi_options(hudi_opts),
        spark=spark,
        storage_options=current_storage_options(),
    )
    summary = {
        "instant": result.instant,
        "action": result.action,
        "operation": operation,
        "inserted": result.inserted,
        "updated": result.updated,
        "deleted": result.deleted,
        "files_written": len(result.files_written),
        "index_seconds": round(result.index_seconds, 3),
        "write_seconds": round(result.write_seconds, 3),
    }
    if as_json:
        emit_json(summary)
    else:
        click.echo(
            f"Committed {result.action} {result.instant}: {result.inserted} inserted, {result.updated} updated, "
            f"{result.deleted} deleted, {len(result.files_written)} files written"
        )


@cli.command("generate")
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
@_errors
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


# -- compaction -----------------------------------------------------------------------------------------------------
@cli.group("compaction")
def compaction_group() -> None:
    """MERGE_ON_READ compaction: schedule a plan, run plans, show, roll back an inflight attempt."""


def _spark_or_none(engine: str, master: str) -> Any:
    if engine != "spark":
        return None
    from lake_orchestration.engines.spark_session import local_spark_session

    return local_spark_session(master=master)


@compaction_group.command("schedule")
@click.argument("path")
@click.option("--instant-time", default=None, help="Instant of the new plan (default: now).")
@click.option("--strategy", default=None, help="hoodie.compaction.strategy, e.g. LogFileSizeBasedCompactionStrategy.")
@click.option("--option", "options", multiple=True, help="Any Hudi compaction option as key=value (repeatable).")
@click.option("--force", is_flag=True, help="Ignore the trigger strategy (hoodie.compact.inline.trigger.strategy).")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@storage_options
@_errors
def compaction_schedule(
    path: str, instant_time: str | None, strategy: str | None, options: tuple[str, ...], force: bool, as_json: bool
) -> None:
    """Schedule a compaction plan (<instant>.compaction.requested), or say why none was needed."""
    from lake_orchestration.hudi.services.compaction import CompactionConfig, schedule_compaction

    opts = _parse_options(options)
    if strategy:
        opts["hoodie.compaction.strategy"] = strategy
    r = schedule_compaction(
        _table(path), config=CompactionConfig.from_options(opts), instant_time=instant_time, force=force
    )
    ops = len(r.plan.operations or ()) if r.plan is not None else 0
    if as_json:
        emit_json({"scheduled": r.scheduled, "instant": r.instant, "operations": ops, "reason": r.reason})
    elif r.scheduled:
        click.echo(f"Scheduled compaction {r.instant} with {ops} operation(s)")
    else:
        click.echo(f"No compaction scheduled: {r.reason}")


@compaction_group.command("run")
@click.argument("path")
@click.option("--instant-time", default=None, help="Run exactly this pending plan.")
@click.option(
    "--seq",
    type=click.Choice(["FIFO", "LIFO"], case_sensitive=False),
    default="FIFO",
    show_default=True,
    help="Order of pending plans.",
)
@click.option(
    "--max-plans", default=1, show_default=True, type=click.IntRange(min=1), help="Run at most this many plans."
)
@click.option("--schedule", is_flag=True, help="Schedule a plan first (the trigger strategy applies).")
@click.option("--option", "options", multiple=True, help="Any Hudi compaction option as key=value (repeatable).")
@click.option("--engine", type=click.Choice(["spark", "local"]), default="spark", show_default=True)
@click.option("--spark-master", default="local[*]", show_default=True, callback=_spark_master)
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@storage_options
@_errors
def compaction_run(
    path: str,
    instant_time: str | None,
    seq: str,
    max_plans: int,
    schedule: bool,
    options: tuple[str, ...],
    engine: str,
    spark_master: str,
    as_json: bool,
) -> None:
    """Execute and commit pending compaction plans (an inflight attempt is rolled back first)."""
    from lake_orchestration.hudi.services.compaction import CompactionConfig, run_compaction

    cfg = CompactionConfig.from_options(_parse_options(options))
    results = run_compaction(
        _table(path),
        instant_time=instant_time,
        seq=seq.upper(),
        max_plans=max_plans,
        schedule=schedule,
        config=cfg,
        spark=_spark_or_none(engine, spark_master),
    )
    rows = [
        {
            "instant": r.instant,
            "operations": r.operations,
            "rows_written": r.rows_written,
            "bytes_written": r.bytes_written,
            "log_records": r.log_records,
            "seconds": round(r.seconds, 3),
            "rolled_back_attempt": r.rolled_back_attempt,
        }
        for r in results
    ]
    if as_json:
        emit_json(rows)
    elif not rows:
        click.echo("No pending compaction plan")
    else:
        for r in rows:
            click.echo(
                f"Committed compaction {r['instant']}: {r['operations']} file group(s), {r['rows_written']} rows, "
                f"{r['log_records']} log records merged in {r['seconds']} s"
                + (f" (rolled back attempt via {r['rolled_back_attempt']})" if r["rolled_back_attempt"] else "")
            )


@compaction_group.command("show")
@click.argument("path")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@storage_options
@_errors
def compaction_show(path: str, as_json: bool) -> None:
    """Pending and completed compaction plans with their operations."""
    from lake_orchestration.hudi.model.avro import CompactionPlan
    from lake_orchestration.hudi.model.instant import Action, Instant

    t = _table(path)
    out = []
    for name in sorted(f.name for f in t.storage.list_dir(t.hoodie_dir) if f.name.endswith(".compaction.requested")):
        ts = name.split(".", 1)[0]
        req = Instant.from_file_name(name)
        plan = CompactionPlan.from_bytes(t.read_instant(req), path=t.storage.uri(t.instant_path(req)))
        done = t.timeline.get(ts, Action.COMMIT)
        cur = t.timeline.get(ts, Action.COMPACTION)
        state = "COMPLETED" if done is not None and done.is_completed else (cur.state.name if cur else "UNKNOWN")
        out.append(
            {
                "instant": ts,
                "state": state,
                "operations": [
                    {
                        "partition": op.partition_path,
                        "file_id": op.file_id,
                        "base_instant": op.base_instant_time,
                        "base_file": op.data_file_path,
                        "log_files": list(op.delta_file_paths or ()),
                        "metrics": op.metrics,
                    }
                    for op in plan.operations or ()
                ],
            }
        )
    if as_json:
        emit_json(out)
        return
    if not out:
        click.echo("(no compaction plans on the active timeline)")
        return
    for p in out:
        click.echo(f"{p['instant']}  {p['state']}  {len(p['operations'])} operation(s)")
        click.echo(
            table(
                [
                    (
                        o["partition"],
                        o["file_id"],
                        o["base_instant"],
                        len(o["log_files"]),
                        int((o["metrics"] or {}).get("TOTAL_LOG_FILES_SIZE", 0)),
                    )
                    for o in p["operations"]
                ],
                ["partition", "file_id", "base_instant", "log_files", "log_bytes"],
            )
        )


@compaction_group.command("rollback")
@click.argument("path")
@click.option("--instant-time", required=True, help="The inflight compaction to roll back.")
@click.option("--dry-run", is_flag=True, help="Only say what would be deleted.")
@click.option("--option", "options", multiple=True, help="e.g. hoodie.metadata.enable=false (repeatable).")
@storage_options
@_errors
def compaction_rollback(path: str, instant_time: str, dry_run: bool, options: tuple[str, ...]) -> None:
    """Roll back an inflight compaction attempt: its base files are deleted, the plan is requested again."""
    from lake_orchestration.hudi.services.rollback.compaction import files_to_roll_back, rollback_inflight_compaction

    t = _table(path)
    r = rollback_inflight_compaction(t, instant_time, dry_run=dry_run, options=_parse_options(options))
    if dry_run:
        files = [f for fs in files_to_roll_back(t, instant_time).values() for f in fs]
        click.echo(
            f"Dry run: compaction {instant_time} is inflight and would be rolled back; {len(files)} file(s) "
            "would be deleted:"
        )
        for f in files:
            click.echo(f"  {t.storage.uri(f)}")
    else:
        gone = t.refresh().timeline.get(instant_time) is None
        click.echo(
            f"Rolled back compaction {instant_time} (rollback instant {r.time if r else '?'})"
            + (
                "; its plan was missing, so the compaction is removed from the timeline (schedule a new one)"
                if gone
                else ""
            )
        )


@cli.group("log-compaction")
def log_compaction_group() -> None:
    """Log compaction: merge a slice's log blocks into one log file (no base file rewrite)."""


@log_compaction_group.command("schedule")
@click.argument("path")
@click.option("--instant-time", default=None)
@click.option("--option", "options", multiple=True, help="e.g. hoodie.log.compaction.blocks.threshold=5")
@storage_options
@_errors
def log_compaction_schedule(path: str, instant_time: str | None, options: tuple[str, ...]) -> None:
    """Schedule <instant>.logcompaction.requested for slices with enough log blocks."""
    from lake_orchestration.hudi.services.compaction import CompactionConfig
    from lake_orchestration.hudi.services.compaction.log_compaction import schedule_log_compaction

    r = schedule_log_compaction(
        _table(path), config=CompactionConfig.from_options(_parse_options(options)), instant_time=instant_time
    )
    click.echo(f"Scheduled log compaction {r.instant}" if r.scheduled else f"No log compaction scheduled: {r.reason}")


@log_compaction_group.command("run")
@click.argument("path")
@click.option("--instant-time", default=None, help="Default: every pending log compaction, oldest first.")
@click.option("--option", "options", multiple=True, help="Any Hudi compaction option as key=value (repeatable).")
@storage_options
@_errors
def log_compaction_run(path: str, instant_time: str | None, options: tuple[str, ...]) -> None:
    """Execute and commit pending log compaction plans (completed as deltacommits, LOG_COMPACT)."""
    from lake_orchestration.errors import InstantInProgressError
    from lake_orchestration.hudi.services.compaction import CompactionConfig
    from lake_orchestration.hudi.services.compaction.log_compaction import run_log_compaction

    cfg = CompactionConfig.from_options(_parse_options(options))
    t = _table(path)
    targets = [instant_time] if instant_time else [str(i.time) for i in t.timeline.pending_log_compactions()]
    if not targets:
        click.echo("No pending log compaction plan")
    for ts in targets:
        try:
            md = run_log_compaction(t, ts, config=cfg)
        except InstantInProgressError as err:
            if instant_time:
                raise
            click.echo(f"Skipped log compaction {ts}: {err.detail}")  # another process executes it
            continue
        click.echo(f"Committed log compaction {ts}: {len(md.write_stats())} file slice(s)")


# -- rollback -------------------------------------------------------------------------------------------------------
def _duration_seconds(text: str) -> float:
    """``90``, ``90s``, ``15m``, ``2h``, ``1d`` -> seconds."""
    units = {"s": 1, "m": 60, "h": 3600, "d": 86400}
    t = text.strip().lower()
    try:
        seconds = float(t[:-1]) * units[t[-1]] if t and t[-1] in units else float(t)
    except ValueError as err:
        raise ValueError(f"--timeout {text!r}: expected a duration like 90s, 15m, 2h or 1d") from err
    if not seconds > 0:  # a negative (or nan) timeout would judge every pending write without a heartbeat stale
        raise ValueError(f"--timeout {text!r}: expected a positive duration like 90s, 15m, 2h or 1d")
    return seconds


@cli.command("rollback")
@click.argument("path")
@click.option(
    "--instant-time",
    default=None,
    help="Roll back this pending write (or inflight compaction); or remove this pending rollback whose plan does "
    "not decode.",
)
@click.option("--stale", is_flag=True, help="Roll back every stale pending write (expired heartbeat / timeout).")
@click.option(
    "--timeout", default=None, help="With --stale: also writes without a heartbeat older than this (15m, 2h)."
)
@click.option(
    "--option",
    "options",
    multiple=True,
    help="hoodie.client.heartbeat.interval_in_ms / hoodie.client.heartbeat.tolerable.misses / "
    "hoodie.metadata.enable=false",
)
@click.option("--dry-run", is_flag=True, help="Only print the plan.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@storage_options
@_errors
def rollback_cmd(
    path: str,
    instant_time: str | None,
    stale: bool,
    timeout: str | None,
    options: tuple[str, ...],
    dry_run: bool,
    as_json: bool,
) -> None:
    """Roll back a failed write: delete its files, add rollback command blocks (MOR), remove its instant."""
    from lake_orchestration.config.options import heartbeat_options
    from lake_orchestration.hudi.model.avro import RollbackPlan
    from lake_orchestration.hudi.services.rollback.write import rollback_stale_writes, rollback_write

    if bool(instant_time) == stale:
        raise ValueError("give exactly one of --instant-time T or --stale")
    opts = _parse_options(options)
    interval, misses = heartbeat_options(opts, service="rollback")
    t = _table(path)
    if instant_time and _is_pending_rollback(t, instant_time):
        from lake_orchestration.hudi.services.rollback.repair import remove_unreadable_rollback

        removed = remove_unreadable_rollback(t, instant_time, dry_run=dry_run, options=opts)
        if as_json:
            emit_json({"removed_pending_rollback": instant_time, "dry_run": dry_run, "files": removed})
            return
        click.echo(
            f"{'Would remove' if dry_run else 'Removed'} the pending rollback {instant_time} whose plan does not "
            f"decode: {', '.join(removed)}. Roll back its failed write again (lake-orch rollback {path} --stale)"
        )
        return
    if instant_time:
        results = [(instant_time, "requested", rollback_write(t, instant_time, dry_run=dry_run, options=opts))]
    else:
        results = [
            (str(s.instant.time), s.reason, r)
            for s, r in rollback_stale_writes(
                t,
                interval_ms=interval,
                tolerable_misses=misses,
                timeout_s=_duration_seconds(timeout) if timeout else None,
                dry_run=dry_run,
                options=opts,
            )
        ]
    rows = []
    for inst, why, r in results:
        if isinstance(r, RollbackPlan):
            files = [f for req in r.rollback_requests or () for f in req.files_to_be_deleted]
            logs = [f for req in r.rollback_requests or () for f in (req.log_blocks_to_be_deleted or {})]
            rows.append(
                {
                    "instant": inst,
                    "reason": why,
                    "dry_run": True,
                    "files_to_delete": files,
                    "log_files_with_blocks": logs,
                }
            )
        else:
            rows.append({"instant": inst, "reason": why, "rollback_instant": str(r.time)})
    if as_json:
        emit_json(rows)
    elif not rows:
        click.echo("Nothing to roll back")
    else:
        for row in rows:
            if row.get("dry_run"):
                click.echo(
                    f"Would roll back {row['instant']} ({row['reason']}): delete {len(row['files_to_delete'])} "
                    f"file(s), add rollback blocks for {len(row['log_files_with_blocks'])} log file(s)"
                )
            else:
                click.echo(f"Rolled back {row['instant']} ({row['reason']}) with rollback {row['rollback_instant']}")


def _is_pending_rollback(t: HudiTable, instant_time: str) -> bool:
    from lake_orchestration.hudi.model.instant import Action

    inst = t.timeline.get(instant_time, Action.ROLLBACK)
    return inst is not None and inst.action is Action.ROLLBACK and not inst.is_completed


# -- clean / savepoint -------------------------------------------------------------------------------------------
@cli.command("clean")
@click.argument("path")
@click.option("--dry-run", is_flag=True, help="Only print what would be deleted (nothing is written).")
@click.option(
    "--option",
    "options",
    multiple=True,
    help="hoodie.cleaner.policy, hoodie.cleaner.commits.retained, hoodie.cleaner.fileversions.retained, "
    "hoodie.cleaner.hours.retained, hoodie.clean.max.commits, ... as key=value (repeatable).",
)
@click.option(
    "--engine",
    type=click.Choice(["spark", "local"]),
    default="local",
    show_default=True,
    help="Where the deletes run: Spark tasks or a local thread pool.",
)
@click.option("--spark-master", default="local[*]", show_default=True, callback=_spark_master)
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@storage_options
@_errors
def clean_cmd(
    path: str, dry_run: bool, options: tuple[str, ...], engine: str, spark_master: str, as_json: bool
) -> None:
    """Delete file slices no retained commit, savepoint or pending compaction needs (pending cleans first)."""
    from lake_orchestration.hudi.services.clean import run_clean

    res = run_clean(
        _table(path),
        _parse_options(options),
        dry_run=dry_run,
        spark=None if dry_run else _spark_or_none(engine, spark_master),
    )
    if as_json:
        emit_json(res.to_json_obj())
        return
    for tmp in res.temp_files:
        click.echo(f"{'Would remove' if dry_run else 'Removed'} abandoned temporary file {tmp}")
    ectr = res.earliest_commit_to_retain or "none"
    if dry_run:
        if not res.file_count:
            click.echo(f"Nothing would be deleted ({res.reason or 'no pending clean'})")
            return
        click.echo(f"Would delete {res.file_count} file(s) ({res.policy}, earliest commit to retain {ectr}):")
        for p, names in sorted(res.files.items()):
            for n in names:
                click.echo(f"  {p + '/' if p else ''}{n}")
        return
    if not res.instants:
        click.echo(f"No clean: {res.reason}")
        return
    click.echo(
        f"Completed clean {', '.join(res.instants)}: deleted {res.deleted} file(s)"
        + (f", {res.failed} failed" if res.failed else "")
        + f" ({res.policy}, earliest commit to retain {ectr})"
    )


@cli.group("savepoint")
def savepoint_group() -> None:
    """Savepoints: keep the files of a commit from clean and archive."""


@savepoint_group.command("create")
@click.argument("path")
@click.option("--instant-time", required=True, help="The completed commit to savepoint.")
@click.option("--user", default=None, help="savepointedBy (default: the OS user).")
@click.option("--comments", default="", help="Free text stored with the savepoint.")
@click.option("--dry-run", is_flag=True, help="Only print what the savepoint would list.")
@click.option("--option", "options", multiple=True, help="e.g. hoodie.write.lock.wait_time_ms=120000 (repeatable).")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@storage_options
@_errors
def savepoint_create(
    path: str,
    instant_time: str,
    user: str | None,
    comments: str,
    dry_run: bool,
    options: tuple[str, ...],
    as_json: bool,
) -> None:
    """Savepoint a completed commit."""
    from lake_orchestration.hudi.services.savepoint import create_savepoint
    from lake_orchestration.hudi.table.lock import LockConfig

    lock = LockConfig.from_options(_parse_options(options))
    md = create_savepoint(_table(path), instant_time, user=user, comments=comments, dry_run=dry_run, lock=lock)
    files = {p: list(pm.savepoint_data_file) for p, pm in md.partition_metadata.items()}
    n = sum(len(v) for v in files.values())
    if as_json:
        emit_json({"instant": instant_time, "dry_run": dry_run, "savepointed_by": md.savepointed_by, "files": files})
    else:
        click.echo(f"{'Would savepoint' if dry_run else 'Savepointed'} {instant_time}: {n} file(s) kept")


@savepoint_group.command("delete")
@click.argument("path")
@click.option("--instant-time", required=True, help="The savepoint to delete.")
@click.option("--dry-run", is_flag=True, help="Only say whether it exists.")
@click.option("--option", "options", multiple=True, help="e.g. hoodie.write.lock.wait_time_ms=120000 (repeatable).")
@storage_options
@_errors
def savepoint_delete(path: str, instant_time: str, dry_run: bool, options: tuple[str, ...]) -> None:
    """Delete a savepoint (its files become cleanable again)."""
    from lake_orchestration.hudi.services.savepoint import delete_savepoint
    from lake_orchestration.hudi.table.lock import LockConfig

    lock = LockConfig.from_options(_parse_options(options))
    if not delete_savepoint(_table(path), instant_time, dry_run=dry_run, lock=lock):
        raise ValueError(f"No savepoint at {instant_time} in {path}")
    click.echo(f"{'Would delete' if dry_run else 'Deleted'} savepoint {instant_time}")


@savepoint_group.command("show")
@click.argument("path")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@storage_options
@_errors
def savepoint_show(path: str, as_json: bool) -> None:
    """Savepoints on the active timeline."""
    from dataclasses import asdict

    from lake_orchestration.hudi.services.savepoint import list_savepoints

    rows = list_savepoints(_table(path))
    if as_json:
        emit_json([asdict(r) for r in rows])
    elif not rows:
        click.echo("No savepoint")
    else:
        click.echo(
            table(
                [(r.instant_time, r.savepointed_by, r.files, r.comments) for r in rows],
                ["instant", "by", "files", "comments"],
            )
        )


# -- archive --------------------------------------------------------------------------------------------------------
@cli.command("archive")
@click.argument("path")
@click.option("--dry-run", is_flag=True, help="Only show what would be archived, repaired and merged.")
@click.option(
    "--option",
    "options",
    multiple=True,
    help="hoodie.keep.min.commits, hoodie.keep.max.commits, hoodie.archive.merge.enable, ... as key=value.",
)
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@storage_options
@_errors
def archive_cmd(path: str, dry_run: bool, options: tuple[str, ...], as_json: bool) -> None:
    """Move old instants to the archived timeline (.hoodie/archived), then merge small archive files if enabled."""
    from lake_orchestration.hudi.services.archive import run_archive

    r = run_archive(_table(path), _parse_options(options), dry_run=dry_run)
    row = {
        "dry_run": r.dry_run,
        "archived_instants": [str(i) for i in r.archived_instants],
        "archived_files": list(r.archived_files),
        "archive_file": r.archive_file,
        "deleted_files": list(r.deleted_files),
        "repaired_files": list(r.repaired_files),
        "markers_deleted": list(r.markers_deleted),
        "merge": {
            "recovered": r.merge.recovered,
            "candidates": list(r.merge.candidates),
            "merged_file": r.merge.merged_file,
            "deleted": list(r.merge.deleted),
            "skipped": list(r.merge.skipped),
        },
        "min_instants_to_keep": r.min_instants_to_keep,
        "max_instants_to_keep": r.max_instants_to_keep,
    }
    if as_json:
        emit_json(row)
        return
    verb = "Would archive" if r.dry_run else "Archived"
    if r.repaired_files:
        click.echo(f"{'Would finish' if r.dry_run else 'Finished'} a crashed run: {len(r.repaired_files)} file(s)")
    if r.archived_instants:
        where = f" into {r.archive_file}" if r.archive_file else ""
        click.echo(f"{verb} {len(r.archived_instants)} instant(s) ({len(r.archived_files)} file(s)){where}")
        for i in r.archived_instants:
            click.echo(f"  {i.time}  {i.action.value}")
    else:
        click.echo(f"Nothing to archive (keeping {r.min_instants_to_keep}..{r.max_instants_to_keep} commits active)")
    if r.merge.recovered:
        click.echo(f"Recovered an interrupted merge: {r.merge.recovered}")
    if r.merge.candidates:
        click.echo(
            f"{'Would merge' if r.dry_run else 'Merged'} {len(r.merge.candidates)} small archive file(s) "
            f"into {r.merge.merged_file}"
        )
    for name in r.merge.skipped:
        click.echo(f"Not merged: {name} does not read completely (kept as it is; see the warning)", err=True)


# -- demo ---------------------------------------------------------------------------------------------------------
@cli.command("demo")
@click.option("--path", default="./demo-tables/demo_trips", show_default=True, help="Where to build the demo table.")
@click.option(
    "--rows", default=3000, show_default=True, type=click.IntRange(min=1), help="Rows of the initial bulk insert."
)
@click.option(
    "--engine",
    type=click.Choice(["spark", "local"]),
    default="spark",
    show_default=True,
    help="Engine for the snapshot read.",
)
@click.option(
    "--spark-master",
    default="local[*]",
    show_default=True,
    callback=_spark_master,
    help="spark.master for --engine spark.",
)
@_errors
def demo_cmd(path: str, rows: int, engine: str, spark_master: str) -> None:
    """Build the demo MOR table with this project's writer, then show its timeline, slices and snapshot."""
    from lake_orchestration.demo import build_demo_table, local_snapshot, snapshot_summary

    click.echo(f"Building demo MERGE_ON_READ table at {path}")
    result = build_demo_table(path, rows=rows, echo=click.echo)
    t = HudiTable(path)
    click.echo("\nTable")
    click.echo(table([(k, v) for k, v in table_summary(t).items()], ["property", "value"]))
    click.echo("\nTimeline")
    click.echo(
        table([(r["instant"], r["action"], r["state"]) for r in timeline_rows(t)], ["instant", "action", "state"])
    )
    click.echo("\nFile slices")
    slices = fsview_rows(t)
    click.echo(
        table(
            [
                (r["partition"], r["file_id"], r["base_instant"], len(r["log_files"]), r["log_files_size"])
                for r in slices
            ],
            ["partition", "file_id", "base_instant", "log_files", "log_bytes"],
        )
    )
    local = local_snapshot(path)
    if engine == "spark":
        from lake_orchestration.engines.spark import SparkEngine
        from lake_orchestration.engines.spark_session import local_spark_session

        spark = local_spark_session(master=spark_master)
        snap = SparkEngine(spark).read_snapshot(t)
    else:
        snap = local
    summary = snapshot_summary(snap)
    click.echo(f"\nSnapshot ({engine} engine)")
    click.echo(table([(k, v) for k, v in summary.items()], ["metric", "value"]))
    checks = {
        "rows == expected from the write history": summary["rows"] == result.expected_rows,
        "keys are unique": summary["distinct_keys"] == summary["rows"],
        f"{engine} read == in-process read": snapshot_summary(local) == summary,
    }
    click.echo("")
    for name, ok in checks.items():
        click.echo(f"[{'ok' if ok else 'FAILED'}] {name}")
    if not all(checks.values()):
        raise click.ClickException("demo checks failed")


def main() -> None:
    cli(prog_name="lake-orch")


if __name__ == "__main__":
    main()
