"""``demo``: build the demo MERGE_ON_READ table with this project's writer, then show and check it."""

from __future__ import annotations

import click

from lake_orchestration.cli.commands.inspect import fsview_rows, print_table_summary, table_summary, timeline_rows
from lake_orchestration.cli.common import cli_engine, engine_options
from lake_orchestration.cli.output import table


@click.command("demo")
@click.option("--path", default="./demo-tables/demo_trips", show_default=True, help="Where to build the demo table.")
@click.option(
    "--rows", default=3000, show_default=True, type=click.IntRange(min=1), help="Rows of the initial bulk insert."
)
@engine_options(
    default="local",
    choices=("spark", "local"),
    help="Engine for the snapshot read.",
    master_help="spark.master for --engine spark.",
)
def demo_cmd(path: str, rows: int, engine: str, spark_master: str) -> None:
    """Build the demo MOR table with this project's writer, then show its timeline, slices and snapshot."""
    from lake_orchestration.demo.table import build_demo_table, local_snapshot, snapshot_summary

    click.echo(f"Building demo MERGE_ON_READ table at {path}")
    result = build_demo_table(path, rows=rows, echo=click.echo)
    from lake_orchestration.hudi.table import HudiTable

    t = HudiTable(path)
    click.echo("\nTable")
    print_table_summary(table_summary(t))
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
        from lake_orchestration.hudi.table.engine_read import read_snapshot_on

        snap = read_snapshot_on(cli_engine(engine, spark_master), t)
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
