"""Table maintenance commands: ``rollback`` (of failed writes), ``clean``, ``savepoint create|delete|show`` and
``archive``."""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from lake_orchestration.cli.common import (
    cli_engine,
    duration_seconds,
    engine_options,
    open_table,
    option_passthrough,
    parse_options,
)
from lake_orchestration.cli.output import Output, json_option, table
from lake_orchestration.cli.storage_options import storage_options
from lake_orchestration.config.keys import HoodieKey

if TYPE_CHECKING:
    from lake_orchestration.hudi.services.archive import ArchiveResult
    from lake_orchestration.hudi.services.clean import CleanResult
    from lake_orchestration.hudi.services.rollback import RemovedRollback, RollbackResult
    from lake_orchestration.hudi.services.savepoint import SavepointInfo, SavepointResult


# -- rollback -------------------------------------------------------------------------------------------------------
def _print_rollbacks(results: list[RollbackResult]) -> None:
    if not results:
        click.echo("Nothing to roll back")
    for r in results:
        if r.dry_run:
            click.echo(
                f"Would roll back {r.instant} ({r.reason}): delete {len(r.files_to_delete)} file(s), add rollback "
                f"blocks for {len(r.log_files_with_blocks)} log file(s)"
            )
        else:
            click.echo(f"Rolled back {r.instant} ({r.reason}) with rollback {r.rollback_instant.time}")


def _print_removed_rollback(r: RemovedRollback, path: str) -> None:
    click.echo(
        f"{'Would remove' if r.dry_run else 'Removed'} the pending rollback {r.instant} whose plan does not decode: "
        f"{', '.join(r.files)}. Roll back its failed write again (lake-orch rollback {path} --stale)"
    )


@click.command("rollback")
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
    help=f"{HoodieKey.HEARTBEAT_INTERVAL_MS.key} / {HoodieKey.HEARTBEAT_TOLERABLE_MISSES.key} / "
    f"{HoodieKey.METADATA_ENABLE.key}=false",
)
@option_passthrough
@click.option("--dry-run", is_flag=True, help="Only print the plan.")
@json_option()
@storage_options
def rollback_cmd(
    path: str,
    instant_time: str | None,
    stale: bool,
    timeout: str | None,
    options: tuple[str, ...],
    dry_run: bool,
    out: Output,
) -> None:
    """Roll back a failed write: delete its files, add rollback command blocks (MOR), remove its instant."""
    from lake_orchestration.hudi.services.rollback import (
        RemovedRollback,
        RollbackResult,
        rollback_instant,
        rollback_stale_writes,
    )
    from lake_orchestration.hudi.services.rollback.config import RollbackConfig

    if bool(instant_time) == stale:
        raise ValueError("give exactly one of --instant-time T or --stale")
    cfg = RollbackConfig.from_options(parse_options(options))
    t = open_table(path)
    if instant_time:
        done = rollback_instant(t, instant_time, dry_run=dry_run, config=cfg)
        if isinstance(done, RemovedRollback):
            out.show(done, lambda r: _print_removed_rollback(r, path))
            return
        results = [done]
    else:
        results = [
            RollbackResult.of(str(s.instant.time), s.reason, r)
            for s, r in rollback_stale_writes(
                t, timeout_s=duration_seconds(timeout) if timeout else None, dry_run=dry_run, config=cfg
            )
        ]
    out.show(results, _print_rollbacks)


# -- clean / savepoint -------------------------------------------------------------------------------------------
def _print_clean(res: CleanResult) -> None:
    for tmp in res.temp_files:
        click.echo(f"{'Would remove' if res.dry_run else 'Removed'} abandoned temporary file {tmp}")
    ectr = res.earliest_commit_to_retain or "none"
    if res.dry_run:
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


@click.command("clean")
@click.argument("path")
@click.option("--dry-run", is_flag=True, help="Only print what would be deleted (nothing is written).")
@click.option(
    "--option",
    "options",
    multiple=True,
    help=f"{HoodieKey.CLEANER_POLICY.key}, {HoodieKey.CLEANER_COMMITS_RETAINED.key}, "
    f"{HoodieKey.CLEANER_FILEVERSIONS_RETAINED.key}, {HoodieKey.CLEANER_HOURS_RETAINED.key}, "
    f"{HoodieKey.CLEAN_MAX_COMMITS.key}, ... as key=value (repeatable).",
)
@option_passthrough
@engine_options(
    default="local", choices=("spark", "local"), help="Where the deletes run: Spark tasks or a local thread pool."
)
@json_option()
@storage_options
def clean_cmd(path: str, dry_run: bool, options: tuple[str, ...], engine: str, spark_master: str, out: Output) -> None:
    """Delete file slices no retained commit, savepoint or pending compaction needs (pending cleans first)."""
    from lake_orchestration.hudi.services.clean import CleanConfig, run_clean

    res = run_clean(
        open_table(path),
        CleanConfig.from_options(parse_options(options)),
        dry_run=dry_run,
        # Spark starts only when there are files to delete: a clean with nothing to do answers at once
        engine=cli_engine("local" if dry_run else engine, spark_master),
    )
    out.show(res, _print_clean)


@click.group("savepoint")
def savepoint_group() -> None:
    """Savepoints: keep the files of a commit from clean and archive."""


def _print_savepoint(r: SavepointResult) -> None:
    click.echo(f"{'Would savepoint' if r.dry_run else 'Savepointed'} {r.instant}: {r.file_count} file(s) kept")


@savepoint_group.command("create")
@click.argument("path")
@click.option("--instant-time", required=True, help="The completed commit to savepoint.")
@click.option("--user", default=None, help="savepointedBy (default: the OS user).")
@click.option("--comments", default="", help="Free text stored with the savepoint.")
@click.option("--dry-run", is_flag=True, help="Only print what the savepoint would list.")
@click.option("--option", "options", multiple=True, help="e.g. hoodie.write.lock.wait_time_ms=120000 (repeatable).")
@option_passthrough
@json_option()
@storage_options
def savepoint_create(
    path: str,
    instant_time: str,
    user: str | None,
    comments: str,
    dry_run: bool,
    options: tuple[str, ...],
    out: Output,
) -> None:
    """Savepoint a completed commit."""
    from lake_orchestration.hudi.services.savepoint import SavepointResult, create_savepoint
    from lake_orchestration.hudi.table.lock import LockConfig

    lock = LockConfig.from_options(parse_options(options))
    md = create_savepoint(open_table(path), instant_time, user=user, comments=comments, dry_run=dry_run, lock=lock)
    out.show(SavepointResult(instant=instant_time, dry_run=dry_run, metadata=md), _print_savepoint)


@savepoint_group.command("delete")
@click.argument("path")
@click.option("--instant-time", required=True, help="The savepoint to delete.")
@click.option("--dry-run", is_flag=True, help="Only say whether it exists.")
@click.option("--option", "options", multiple=True, help="e.g. hoodie.write.lock.wait_time_ms=120000 (repeatable).")
@option_passthrough
@storage_options
def savepoint_delete(path: str, instant_time: str, dry_run: bool, options: tuple[str, ...]) -> None:
    """Delete a savepoint (its files become cleanable again)."""
    from lake_orchestration.hudi.services.savepoint import delete_savepoint
    from lake_orchestration.hudi.table.lock import LockConfig

    lock = LockConfig.from_options(parse_options(options))
    if not delete_savepoint(open_table(path), instant_time, dry_run=dry_run, lock=lock):
        raise ValueError(f"No savepoint at {instant_time} in {path}")
    click.echo(f"{'Would delete' if dry_run else 'Deleted'} savepoint {instant_time}")


def _print_savepoints(rows: list[SavepointInfo]) -> None:
    if not rows:
        click.echo("No savepoint")
        return
    click.echo(
        table(
            [(r.instant_time, r.savepointed_by, r.files, r.comments) for r in rows],
            ["instant", "by", "files", "comments"],
        )
    )


@savepoint_group.command("show")
@click.argument("path")
@json_option()
@storage_options
def savepoint_show(path: str, out: Output) -> None:
    """Savepoints on the active timeline."""
    from lake_orchestration.hudi.services.savepoint import list_savepoints

    out.show(list(list_savepoints(open_table(path))), _print_savepoints)


# -- archive --------------------------------------------------------------------------------------------------------
def _print_archive(r: ArchiveResult) -> None:
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


@click.command("archive")
@click.argument("path")
@click.option("--dry-run", is_flag=True, help="Only show what would be archived, repaired and merged.")
@click.option(
    "--option",
    "options",
    multiple=True,
    help=f"{HoodieKey.KEEP_MIN_COMMITS.key}, {HoodieKey.KEEP_MAX_COMMITS.key}, {HoodieKey.ARCHIVE_MERGE_ENABLE.key}, "
    "... as key=value.",
)
@option_passthrough
@json_option()
@storage_options
def archive_cmd(path: str, dry_run: bool, options: tuple[str, ...], out: Output) -> None:
    """Move old instants to the archived timeline (.hoodie/archived), then merge small archive files if enabled."""
    from lake_orchestration.hudi.services.archive import ArchiveConfig, run_archive

    t = open_table(path)
    config = ArchiveConfig.from_options(parse_options(options), table_properties=t.config.raw)
    out.show(run_archive(t, config, dry_run=dry_run), _print_archive)
