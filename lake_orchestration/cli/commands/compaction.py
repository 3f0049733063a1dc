"""MERGE_ON_READ compaction commands: ``compaction schedule|run|show|rollback`` and ``log-compaction schedule|run``."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import click

from lake_orchestration.cli.common import (
    cli_engine,
    engine_options,
    open_table,
    option_passthrough,
    parse_options,
    plan_selection_options,
)
from lake_orchestration.cli.output import Output, json_option, table
from lake_orchestration.cli.storage_options import storage_options
from lake_orchestration.config.keys import HoodieKey

if TYPE_CHECKING:
    from lake_orchestration.hudi.services.compaction import CompactionResult, ScheduleResult


@click.group("compaction")
def compaction_group() -> None:
    """MERGE_ON_READ compaction: schedule a plan, run plans, show, roll back an inflight attempt."""


def _print_schedule(r: ScheduleResult) -> None:
    if r.scheduled:
        click.echo(f"Scheduled compaction {r.instant} with {r.operations} operation(s)")
    else:
        click.echo(f"No compaction scheduled: {r.reason}")


@compaction_group.command("schedule")
@click.argument("path")
@click.option("--instant-time", default=None, help="Instant of the new plan (default: now).")
@click.option(
    "--strategy", default=None, help=f"{HoodieKey.COMPACTION_STRATEGY.key}, e.g. LogFileSizeBasedCompactionStrategy."
)
@click.option("--option", "options", multiple=True, help="Any Hudi compaction option as key=value (repeatable).")
@option_passthrough
@click.option("--force", is_flag=True, help="Ignore the trigger strategy (hoodie.compact.inline.trigger.strategy).")
@json_option()
@storage_options
def compaction_schedule(
    path: str, instant_time: str | None, strategy: str | None, options: tuple[str, ...], force: bool, out: Output
) -> None:
    """Schedule a compaction plan (<instant>.compaction.requested), or say why none was needed."""
    from lake_orchestration.hudi.services.compaction import CompactionConfig, schedule_compaction

    opts = parse_options(options)
    if strategy:
        opts[HoodieKey.COMPACTION_STRATEGY.key] = strategy
    r = schedule_compaction(
        open_table(path), config=CompactionConfig.from_options(opts), instant_time=instant_time, force=force
    )
    out.show(r, _print_schedule)


def _print_runs(results: list[CompactionResult]) -> None:
    if not results:
        click.echo("No pending compaction plan")
    for r in results:
        click.echo(
            f"Committed compaction {r.instant}: {r.operations} file group(s), {r.rows_written} rows, "
            f"{r.log_records} log records merged in {round(r.seconds, 3)} s"
            + (f" (rolled back attempt via {r.rolled_back_attempt})" if r.rolled_back_attempt else "")
        )


@compaction_group.command("run")
@click.argument("path")
@plan_selection_options(schedule_help="Schedule a plan first (the trigger strategy applies).")
@click.option("--option", "options", multiple=True, help="Any Hudi compaction option as key=value (repeatable).")
@option_passthrough
@engine_options(default="local", choices=("spark", "local"))
@json_option()
@storage_options
def compaction_run(
    path: str,
    instant_time: str | None,
    seq: str,
    max_plans: int,
    schedule: bool,
    options: tuple[str, ...],
    engine: str,
    spark_master: str,
    out: Output,
) -> None:
    """Execute and commit pending compaction plans (an inflight attempt is rolled back first).

    The timeline is read before any engine starts: with nothing pending the answer comes without a Spark JVM, and a
    COPY_ON_WRITE table is refused as ``compaction schedule`` refuses it. Progress (a start line per plan, the file
    groups done) goes to stderr; stdout keeps the result."""
    from lake_orchestration.cli.progress import progress_on_stderr, spark_task_progress
    from lake_orchestration.hudi.services.compaction import CompactionConfig, run_compaction, schedule_compaction
    from lake_orchestration.hudi.services.compaction.planner import require_mor, select_pending_plans

    cfg = CompactionConfig.from_options(parse_options(options))
    t = open_table(path)
    require_mor(t)
    if schedule:
        schedule_compaction(t, config=cfg)
    pending = select_pending_plans(t, seq=seq.upper())
    if instant_time is None and not pending:
        out.show([], _print_runs)
        return
    # a plan that is not pending fails (InstantNotFoundError) before any work: no engine needed for that answer
    runs = instant_time is None or instant_time in pending
    on = cli_engine(engine, spark_master) if runs else None
    with progress_on_stderr(), spark_task_progress(on, "compaction"):
        results = run_compaction(
            t, instant_time=instant_time, seq=seq.upper(), max_plans=max_plans, config=cfg, engine=on
        )
    out.show(list(results), _print_runs)


def _print_plans(plans: list[dict[str, Any]]) -> None:
    if not plans:
        click.echo("(no compaction plans on the active timeline)")
        return
    for p in plans:
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


@compaction_group.command("show")
@click.argument("path")
@json_option()
@storage_options
def compaction_show(path: str, out: Output) -> None:
    """Pending and completed compaction plans with their operations."""
    from lake_orchestration.hudi.model.avro import CompactionPlan
    from lake_orchestration.hudi.model.instant import Action, Instant

    t = open_table(path)
    plans = []
    for name in sorted(f.name for f in t.storage.list_dir(t.hoodie_dir) if f.name.endswith(".compaction.requested")):
        ts = name.split(".", 1)[0]
        plan = t.read_model(Instant.from_file_name(name), CompactionPlan)
        done = t.timeline.get(ts, Action.COMMIT)
        cur = t.timeline.get(ts, Action.COMPACTION)
        state = "COMPLETED" if done is not None and done.is_completed else (cur.state.name if cur else "UNKNOWN")
        plans.append(
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
    out.show(plans, _print_plans)


@compaction_group.command("rollback")
@click.argument("path")
@click.option("--instant-time", required=True, help="The inflight compaction to roll back.")
@click.option("--dry-run", is_flag=True, help="Only say what would be deleted.")
@click.option("--option", "options", multiple=True, help="e.g. hoodie.metadata.enable=false (repeatable).")
@option_passthrough
@storage_options
def compaction_rollback(path: str, instant_time: str, dry_run: bool, options: tuple[str, ...]) -> None:
    """Roll back an inflight compaction attempt: its base files are deleted, the plan is requested again."""
    from lake_orchestration.hudi.services.rollback.compaction import files_to_roll_back, rollback_inflight_compaction
    from lake_orchestration.hudi.services.rollback.config import RollbackConfig

    t = open_table(path)
    r = rollback_inflight_compaction(
        t, instant_time, dry_run=dry_run, config=RollbackConfig.from_options(parse_options(options))
    )
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


@click.group("log-compaction")
def log_compaction_group() -> None:
    """Log compaction: merge a slice's log blocks into one log file (no base file rewrite)."""


@log_compaction_group.command("schedule")
@click.argument("path")
@click.option("--instant-time", default=None)
@click.option("--option", "options", multiple=True, help="e.g. hoodie.log.compaction.blocks.threshold=5")
@option_passthrough
@storage_options
def log_compaction_schedule(path: str, instant_time: str | None, options: tuple[str, ...]) -> None:
    """Schedule <instant>.logcompaction.requested for slices with enough log blocks."""
    from lake_orchestration.hudi.services.compaction import CompactionConfig
    from lake_orchestration.hudi.services.log_compaction import schedule_log_compaction

    r = schedule_log_compaction(
        open_table(path), config=CompactionConfig.from_options(parse_options(options)), instant_time=instant_time
    )
    click.echo(f"Scheduled log compaction {r.instant}" if r.scheduled else f"No log compaction scheduled: {r.reason}")


@log_compaction_group.command("run")
@click.argument("path")
@click.option("--instant-time", default=None, help="Default: every pending log compaction, oldest first.")
@click.option("--option", "options", multiple=True, help="Any Hudi compaction option as key=value (repeatable).")
@option_passthrough
@storage_options
def log_compaction_run(path: str, instant_time: str | None, options: tuple[str, ...]) -> None:
    """Execute and commit pending log compaction plans (completed as deltacommits, LOG_COMPACT)."""
    from lake_orchestration.hudi.services.compaction import CompactionConfig
    from lake_orchestration.hudi.services.log_compaction import run_log_compactions

    cfg = CompactionConfig.from_options(parse_options(options))
    ran = 0
    for run in run_log_compactions(open_table(path), instant_time, config=cfg):
        ran += 1
        if run.metadata is None:
            click.echo(f"Skipped log compaction {run.instant}: {run.skipped}")  # another process executes it
        else:
            click.echo(f"Committed log compaction {run.instant}: {len(run.metadata.write_stats())} file slice(s)")
    if not ran:
        click.echo("No pending log compaction plan")
