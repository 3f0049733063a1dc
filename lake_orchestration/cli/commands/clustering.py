"""Clustering commands: ``clustering schedule|run|show`` (Hudi's ``HoodieClusteringJob`` modes: schedule, execute,
scheduleAndExecute; its ``--instant-time`` and ``--hoodie-conf``)."""

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
    from lake_orchestration.hudi.services.clustering import ClusteringResult, ScheduleResult

_CONF_HELP = (
    "Any Hudi clustering option as key=value (repeatable), e.g. hoodie.clustering.plan.strategy.sort.columns=a,b."
)


def _conf_option(fn: Any) -> Any:
    return click.option("--hoodie-conf", "--option", "options", multiple=True, metavar="KEY=VALUE", help=_CONF_HELP)(fn)


@click.group("clustering")
def clustering_group() -> None:
    """Clustering: schedule a plan (replacecommit.requested), run plans, show them."""


def _print_schedule(r: ScheduleResult) -> None:
    if r.scheduled:
        click.echo(f"Scheduled clustering {r.instant}: {r.groups} group(s) of {r.file_groups} file group(s)")
    elif r.plan is not None:
        click.echo(f"Dry run: would schedule {r.groups} group(s) of {r.file_groups} file group(s)")
    else:
        click.echo(f"No clustering scheduled: {r.reason}")


@clustering_group.command("schedule")
@click.argument("path")
@click.option("--instant-time", default=None, help="Instant of the new plan (default: now).")
@_conf_option
@option_passthrough
@click.option("--force", is_flag=True, help="Ignore the inline/async max.commits triggers.")
@click.option("--dry-run", is_flag=True, help="Compute the plan, write nothing.")
@json_option()
@storage_options
def clustering_schedule(
    path: str, instant_time: str | None, options: tuple[str, ...], force: bool, dry_run: bool, out: Output
) -> None:
    """Schedule a clustering plan (<instant>.replacecommit.requested), or say why none was made."""
    from lake_orchestration.hudi.services.clustering import ClusteringConfig, schedule_clustering

    r = schedule_clustering(
        open_table(path),
        config=ClusteringConfig.from_options(parse_options(options)),
        instant_time=instant_time,
        force=force,
        dry_run=dry_run,
    )
    out.show(r, _print_schedule)


def _print_runs(results: list[ClusteringResult]) -> None:
    if not results:
        click.echo("No pending clustering plan")
    for r in results:
        click.echo(
            f"Committed clustering {r.instant}: {r.file_groups_replaced} file group(s) replaced by "
            f"{r.files_written} file(s), {r.rows_written} rows in {round(r.seconds, 3)} s"
            + (f" (rolled back attempt via {r.rolled_back_attempt})" if r.rolled_back_attempt else "")
        )


@clustering_group.command("run")
@click.argument("path")
@plan_selection_options(schedule_help="Schedule a plan first and run it (scheduleAndExecute).")
@_conf_option
@option_passthrough
@engine_options(default="local", choices=("spark", "local"))
@json_option()
@storage_options
def clustering_run(
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
    """Execute and commit pending clustering plans (a crashed inflight attempt is rolled back first). With nothing
    pending, the answer comes without starting an engine."""
    from lake_orchestration.cli.progress import progress_on_stderr, spark_task_progress
    from lake_orchestration.hudi.services.clustering import ClusteringConfig, run_clustering, schedule_clustering
    from lake_orchestration.hudi.services.clustering.planner import select_pending_plans

    cfg = ClusteringConfig.from_options(parse_options(options))
    t = open_table(path)
    if schedule:
        scheduled = schedule_clustering(t, config=cfg, force=True)
        if scheduled.instant is not None and instant_time is None:
            instant_time = str(scheduled.instant)
    pending = select_pending_plans(t, seq=seq.upper())
    if instant_time is None and not pending:
        out.show([], _print_runs)
        return
    runs = instant_time is None or instant_time in pending
    on = cli_engine(engine, spark_master) if runs else None
    with progress_on_stderr(), spark_task_progress(on, "clustering"):
        results = run_clustering(
            t, instant_time=instant_time, seq=seq.upper(), max_plans=max_plans, config=cfg, engine=on
        )
    out.show(list(results), _print_runs)


def _print_plans(plans: list[dict[str, Any]]) -> None:
    if not plans:
        click.echo("(no clustering plans on the active timeline)")
        return
    for p in plans:
        click.echo(f"{p['instant']}  {p['state']}  {len(p['groups'])} group(s)  sort: {p['sort_columns'] or '-'}")
        click.echo(
            table(
                [
                    (
                        g["partition"],
                        len(g["file_ids"]),
                        g["output_file_groups"],
                        int(g["metrics"].get("TOTAL_IO_MB", 0)),
                    )
                    for g in p["groups"]
                ],
                ["partition", "file_groups", "output_file_groups", "io_mb"],
            )
        )


@clustering_group.command("show")
@click.argument("path")
@json_option()
@storage_options
def clustering_show(path: str, out: Output) -> None:
    """Clustering plans on the active timeline (pending and completed) with their groups."""
    from lake_orchestration.hudi.model.instant import Action
    from lake_orchestration.hudi.services.clustering.planner import CLUSTER, requested_replace

    t = open_table(path)
    plans = []
    for inst in t.timeline.with_actions(Action.REPLACE_COMMIT):
        md = requested_replace(t, inst)
        if md is None or md.operation_type != CLUSTER or md.clustering_plan is None:
            continue
        plan = md.clustering_plan
        params = (plan.strategy.strategy_params or {}) if plan.strategy is not None else {}
        plans.append(
            {
                "instant": str(inst.time),
                "state": inst.state.name,
                "sort_columns": params.get(HoodieKey.CLUSTERING_SORT_COLUMNS.key, ""),
                "groups": [
                    {
                        "partition": (g.slices[0].partition_path or "") if g.slices else "",
                        "file_ids": [s.file_id for s in g.slices or ()],
                        "output_file_groups": g.num_output_file_groups,
                        "metrics": dict(g.metrics or {}),
                    }
                    for g in plan.input_groups or ()
                ],
            }
        )
    out.show(plans, _print_plans)
