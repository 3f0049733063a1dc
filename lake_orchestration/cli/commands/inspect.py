"""Read-only commands: ``table show``, ``timeline show``, ``fsview show`` and ``read``."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import click

from lake_orchestration.cli.common import open_table, option_passthrough, parse_options
from lake_orchestration.cli.output import Output, json_option, table
from lake_orchestration.cli.storage_options import storage_options
from lake_orchestration.config.keys import HoodieKey


# -- table --------------------------------------------------------------------------------------------------------
@click.group("table")
def table_group() -> None:
    """Table configuration."""


if TYPE_CHECKING:
    from lake_orchestration.hudi.table import HudiTable


def table_summary(t: HudiTable) -> dict[str, Any]:
    """The table's configuration (hoodie.properties) and the number of instants on its active timeline."""
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


def print_table_summary(summary: dict[str, Any]) -> None:
    click.echo(table([(k, v) for k, v in summary.items()], ["property", "value"]))


@table_group.command("show")
@click.argument("path")
@json_option()
@storage_options
def table_show(path: str, out: Output) -> None:
    """Show the table's configuration (hoodie.properties)."""
    out.show(table_summary(open_table(path)), print_table_summary)


# -- timeline -----------------------------------------------------------------------------------------------------
@click.group("timeline")
def timeline_group() -> None:
    """The active timeline."""


def timeline_rows(t: HudiTable) -> list[dict[str, Any]]:
    """The active timeline's instants (the latest state of each)."""
    return [
        {"instant": str(i.time), "action": i.action.value, "state": i.state.name, "file": i.file_name}
        for i in t.timeline
    ]


def archived_timeline_rows(t: HudiTable) -> list[dict[str, Any]]:
    """Every archived instant state (``.hoodie/archived/.commits_.archive.*``), sorted."""
    from lake_orchestration.hudi.table.archived_timeline import ArchivedTimeline

    out = []
    for e in ArchivedTimeline.load(t.storage, t.config.archivelog_folder):
        i = e.instant
        out.append({"instant": str(i.time), "action": i.action.value, "state": i.state.name, "file": e.file})
    return out


def _print_timeline(rows: list[dict[str, Any]]) -> None:
    if not rows:
        click.echo("(empty timeline)")
        return
    click.echo(
        table(
            [(r["instant"], r["action"], r["state"], r["file"]) for r in rows], ["instant", "action", "state", "file"]
        )
    )


@timeline_group.command("show")
@click.argument("path")
@click.option("--archived", is_flag=True, help="Show the archived timeline (.hoodie/archived) instead.")
@json_option()
@storage_options
def timeline_show(path: str, archived: bool, out: Output) -> None:
    """List the instants of the active timeline (latest state of each), or with --archived every archived state."""
    rows = archived_timeline_rows(open_table(path)) if archived else timeline_rows(open_table(path))
    out.show(rows, _print_timeline)


# -- fsview -------------------------------------------------------------------------------------------------------
@click.group("fsview")
def fsview_group() -> None:
    """The file-system view: file groups and file slices."""


def fsview_rows(t: HudiTable, *, all_slices: bool = False) -> list[dict[str, Any]]:
    """One row per file slice: the latest of each file group (``all_slices``: every committed one)."""
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


def _print_fsview(rows: list[dict[str, Any]]) -> None:
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


@fsview_group.command("show")
@click.argument("path")
@click.option("--all-slices", is_flag=True, help="Show every committed slice, not only the latest.")
@json_option()
@storage_options
def fsview_show(path: str, all_slices: bool, out: Output) -> None:
    """List file groups and their latest (or all) file slices."""
    out.show(fsview_rows(open_table(path), all_slices=all_slices), _print_fsview)


# -- read ---------------------------------------------------------------------------------------------------------
def _print_read(summary: dict[str, Any]) -> None:
    click.echo(f"Wrote {summary['rows']} rows from {summary['file_slices']} file slices to {summary['output']}")
    if summary.get("query_type") == "incremental":
        how = " (full table scan)" if summary["full_table_scan"] else ""
        click.echo(
            f"Incremental ({summary['begin_instant_time']}, {summary['end_instant_time'] or 'latest'}]: "
            f"{len(summary['instants'])} instant(s){how}; checkpoint {summary['checkpoint']}"
        )
    if summary["corrupt_blocks"]:
        click.echo(f"Warning: skipped {summary['corrupt_blocks']} corrupt log block(s)", err=True)


@click.command("read")
@click.argument("path")
@click.option("--output", "-o", required=True, type=click.Path(dir_okay=False), help="Parquet file to write.")
@click.option("--as-of", default=None, help="Read as of this completed instant (default: latest).")
@click.option(
    "--query-type",
    type=click.Choice(["snapshot", "incremental"]),
    default=None,
    help=f"{HoodieKey.QUERY_TYPE.key} (default: snapshot). incremental: the records written in "
    "(--begin-instant-time, --end-instant-time], each at its latest version in the range.",
)
@click.option(
    "--incremental-format",
    type=click.Choice(["latest_state", "cdc"]),
    default=None,
    help=f"{HoodieKey.QUERY_INCREMENTAL_FORMAT.key} (default: latest_state). cdc: the change records (op, ts_ms, "
    "before, after) of a CDC table, as hudi_table_changes(..., 'cdc', ...).",
)
@click.option(
    "--begin-instant-time",
    default=None,
    help=f"{HoodieKey.READ_BEGIN_INSTANTTIME.key}: exclusive lower bound of an incremental query (0: from the start).",
)
@click.option(
    "--end-instant-time",
    default=None,
    help=f"{HoodieKey.READ_END_INSTANTTIME.key}: inclusive upper bound (default: the latest completed commit).",
)
@click.option(
    "--option",
    "options",
    multiple=True,
    help="A Hudi read option as key=value (repeatable), e.g. "
    f"{HoodieKey.READ_TIMELINE_HOLES_RESOLUTION_POLICY.key}=BLOCK.",
)
@option_passthrough
@json_option("Print the read summary as JSON.")
@storage_options
def read_cmd(
    path: str,
    output: str,
    as_of: str | None,
    query_type: str | None,
    incremental_format: str | None,
    begin_instant_time: str | None,
    end_instant_time: str | None,
    options: tuple[str, ...],
    out: Output,
) -> None:
    """Write the merged snapshot (all columns, meta columns included) to a parquet file, or with
    ``--query-type incremental`` the records a range of commits wrote (docs/incremental.md).

    The rows go to a temporary file next to OUTPUT, renamed to OUTPUT once the whole snapshot is read: a read that
    fails (a log block that does not decode, ...) leaves no partial OUTPUT and an existing OUTPUT untouched.
    """
    opts = parse_options(options)
    if incremental_format is not None:
        opts[HoodieKey.QUERY_INCREMENTAL_FORMAT.key] = incremental_format
    query = (query_type or opts.get(HoodieKey.QUERY_TYPE.key) or "snapshot").strip().lower()
    begin = begin_instant_time or opts.get(HoodieKey.READ_BEGIN_INSTANTTIME.key)
    end = end_instant_time or opts.get(HoodieKey.READ_END_INSTANTTIME.key)
    if query == "incremental":
        if begin is None:
            raise click.UsageError(
                f"--query-type incremental needs --begin-instant-time ({HoodieKey.READ_BEGIN_INSTANTTIME.key}): the "
                "exclusive lower bound, e.g. 0 for every commit or the checkpoint of the previous read"
            )
        if as_of is not None:
            raise click.UsageError("--as-of is a snapshot option; an incremental query takes --end-instant-time")
        _read_incremental_cmd(path, output, begin, end, opts, out)
        return
    if query != "snapshot":
        raise click.UsageError(f"{HoodieKey.QUERY_TYPE.key}={query!r}: expected snapshot or incremental")
    if begin is not None or end is not None or incremental_format is not None:
        raise click.UsageError(
            "--begin-instant-time / --end-instant-time / --incremental-format need --query-type incremental"
        )
    _read_snapshot_cmd(path, output, as_of, opts, out)


def _read_incremental_cmd(
    path: str, output: str, begin: str, end: str | None, opts: dict[str, str], out: Output
) -> None:
    import contextlib
    import os

    import pyarrow.parquet as pq

    from lake_orchestration.hudi.table.incremental import read_incremental

    result = read_incremental(open_table(path), begin_instant_time=begin, end_instant_time=end, options=opts)
    tmp = os.path.join(os.path.dirname(output), f".{os.path.basename(output)}.{os.getpid()}.tmp")
    try:
        pq.write_table(result.table, tmp)
        os.replace(tmp, output)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
    stats = result.stats
    summary = {
        "output": output,
        "query_type": "incremental",
        "incremental_format": opts.get(HoodieKey.QUERY_INCREMENTAL_FORMAT.key) or "latest_state",
        "begin_instant_time": begin,
        "end_instant_time": end,
        "instants": [str(i.time) for i in result.instants],
        "checkpoint": result.checkpoint,
        "full_table_scan": result.full_table_scan,
        "rows": result.num_rows,
        "file_slices": stats.file_slices,
        "base_files": stats.base_files,
        "log_files": stats.log_files,
        "log_blocks": stats.log_blocks,
        "log_records": stats.log_records,
        "corrupt_blocks": stats.corrupt_blocks,
        "rollback_blocks": stats.rollback_blocks,
    }
    out.show(summary, _print_read)


def _read_snapshot_cmd(path: str, output: str, as_of: str | None, opts: dict[str, str], out: Output) -> None:
    import contextlib
    import os

    import pyarrow.parquet as pq

    from lake_orchestration.hudi.table.snapshot import ReadStats, read_snapshot, table_arrow_schema

    t = open_table(path)
    stats = ReadStats()
    writer = None
    schema = None
    tmp = os.path.join(os.path.dirname(output), f".{os.path.basename(output)}.{os.getpid()}.tmp")
    try:
        try:
            for part in read_snapshot(t, as_of=as_of, stats=stats, options=opts or None):
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
    out.show(summary, _print_read)
