"""``lake-orch fleet status|run``: the health of every table of a fleet config, and their due services in one run.

Exit status: ``fleet status`` exits 0 when no table breaches its policy and 2 when one does (a table that cannot be
read breaches), so a cron job or a CI step can alert on it; ``fleet run`` exits 1 when a service failed on any table.
Both exit 1 on an invalid config file (the message names the file, the entry and what was expected).
"""

from __future__ import annotations

import difflib
import sys
import threading
from typing import TYPE_CHECKING

import click

from lake_orchestration.cli.output import Output, json_option, table

if TYPE_CHECKING:
    from lake_orchestration.fleet.config import FleetTable
    from lake_orchestration.fleet.health import FleetHealth
    from lake_orchestration.fleet.runner import FleetRunResult

BREACH_EXIT_CODE = 2
"""``fleet status``'s exit status when a table breaches its policy."""

SERVICES = ("compaction", "log_compaction", "clustering", "clean", "archive")


@click.group("fleet")
def fleet_group() -> None:
    """A fleet of tables from one config file (defaults:, tables:, discover:): health and services."""


def _select(tables: list[FleetTable], names: tuple[str, ...], config: str) -> list[FleetTable]:
    if not names:
        return tables
    by_name = {t.name: t for t in tables}
    for n in names:
        if n not in by_name:
            hint = difflib.get_close_matches(n, list(by_name), n=1)
            raise click.UsageError(
                f"--table {n!r}: no such table in {config}"
                + (f" (did you mean {hint[0]!r}?)" if hint else f"; expected one of {', '.join(sorted(by_name))}")
            )
    return [by_name[n] for n in dict.fromkeys(names)]


def _services(text: str) -> list[str]:
    out = [s.strip().replace("-", "_") for s in text.split(",") if s.strip()]
    for s in out:
        if s not in SERVICES:
            hint = difflib.get_close_matches(s, SERVICES, n=1)
            raise click.BadParameter(
                f"{s!r}" + (f" (did you mean {hint[0]!r}?)" if hint else "") + f"; expected {', '.join(SERVICES)}",
                param_hint="--services",
            )
    if not out:
        raise click.BadParameter(f"expected a comma-separated list of {', '.join(SERVICES)}", param_hint="--services")
    return out


_config_option = click.option(
    "--config", "config", required=True, type=click.Path(dir_okay=False), help="The fleet's YAML file."
)
_table_option = click.option("--table", "names", multiple=True, help="Only this table (repeatable).")


def _age(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    if seconds < 3600:
        return f"{seconds / 60:.0f}m"
    if seconds < 86400:
        return f"{seconds / 3600:.1f}h"
    return f"{seconds / 86400:.1f}d"


def _print_status(health: FleetHealth) -> None:
    rows = [
        [
            ("! " if r.breaches else "  ") + r.name,
            r.format,
            r.max_log_files_per_slice,
            r.pending_compactions,
            _age(r.oldest_pending_compaction_age_s),
            r.cleaner_lag_commits,
            r.active_instants,
            r.metadata_table_lag,
            r.small_files,
            "; ".join(r.breaches) or "ok",
        ]
        for r in health.rows
    ]
    headers = [
        "  table",
        "format",
        "logs/slice",
        "pending",
        "oldest",
        "clean lag",
        "active",
        "mdt lag",
        "small",
        "policy",
    ]
    click.echo(table(rows, headers))
    a = health.aggregates()
    click.echo(f"\n{a['tables']} table(s), {a['tables_breaching']} in breach of their policy (marked !)")


def _print_tables(tables: list[dict]) -> None:
    rows = [
        [t["name"], t["format"], t["base_path"], f"{t['policy']['weight']:g}", t["policy"]["pool"] or "-"]
        for t in tables
    ]
    click.echo(table(rows, ["table", "format", "base_path", "weight", "pool"]))
    click.echo(f"\n{len(tables)} table(s)")


@fleet_group.command("tables")
@_config_option
@json_option("Print each table's name, format, base path, policy and hoodie.* options as JSON.")
def fleet_tables(config: str, out: Output) -> None:
    """The tables of the config file after defaults and discovery: what status and run will serve (secrets are
    never shown: the storage options listed are the non-secret ones)."""
    from lake_orchestration.fleet.config import load_fleet

    out.show(
        [
            {
                "name": t.name,
                "format": t.format,
                "base_path": t.base_path,
                "policy": t.policy.to_json_obj(),
                "options": dict(t.options),
                "storage_options": {k: str(v) for k, v in t.storage_options.items()},
                "secret_env": dict(t.secret_env),
            }
            for t in load_fleet(config)
        ],
        _print_tables,
    )


@fleet_group.command("status")
@_config_option
@_table_option
@click.option("--parallelism", type=click.IntRange(min=1), default=8, show_default=True, help="Tables read at once.")
@json_option("Print the health rows and aggregates as JSON.")
def fleet_status(config: str, names: tuple[str, ...], parallelism: int, out: Output) -> None:
    """The health of every table: compaction backlog, cleaner, archival and metadata-table lag, small files, and the
    breaches of each table's policy. Exit status 2 when a table breaches its policy."""
    from lake_orchestration.fleet.config import load_fleet
    from lake_orchestration.fleet.health import fleet_health

    tables = _select(load_fleet(config), names, config)
    health = fleet_health(tables, parallelism=parallelism)
    out.show(health, _print_status)
    if health.breaching:
        sys.exit(BREACH_EXIT_CODE)


def _print_run(result: FleetRunResult) -> None:
    if not result.outcomes:
        click.echo("Nothing due on any table")
        return
    rows = [[o.table, o.service, o.status, f"{o.seconds:.1f}s", o.detail] for o in result.outcomes]
    click.echo(table(rows, ["table", "service", "status", "time", "detail"]))
    counts: dict[str, int] = {}
    for o in result.outcomes:
        counts[o.status] = counts.get(o.status, 0) + 1
    summary = ", ".join(f"{n} {s}" for s, n in sorted(counts.items()))
    click.echo(f"\n{len(result.outcomes)} service run(s) in {result.seconds:.1f}s: {summary}")


@fleet_group.command("run")
@_config_option
@click.option(
    "--services",
    "services_text",
    default="compaction,clean,archive",
    show_default=True,
    help=f"Services to run where due, comma-separated ({', '.join(SERVICES)}), in this order per table.",
)
@click.option("--parallelism", type=click.IntRange(min=1), default=4, show_default=True, help="Tables served at once.")
@click.option(
    "--retry",
    type=click.IntRange(min=0),
    default=1,
    show_default=True,
    help="Attempts after a service's first failure on a table (Hudi's HoodieMultiTableServicesMain --retry).",
)
@click.option("--dry-run", is_flag=True, help="Only list the services due (each table's probe), run nothing.")
@_table_option
@json_option("Print the outcomes as JSON.")
def fleet_run(
    config: str,
    services_text: str,
    parallelism: int,
    retry: int,
    dry_run: bool,
    names: tuple[str, ...],
    out: Output,
) -> None:
    """Run the due services of every table (Hudi's HoodieMultiTableServicesMain): per table its due services in
    order, tables in parallel; a failure in one table stops no other. A progress bar on stderr, a summary at the
    end; exit status 1 if any service failed."""
    from lake_orchestration.fleet.config import load_fleet
    from lake_orchestration.fleet.runner import due_count, run_fleet

    services = _services(services_text)
    tables = _select(load_fleet(config), names, config)
    lock = threading.Lock()
    bar: list = []

    def on_probed(probes: list) -> None:
        total = due_count(probes, tables, services)
        label = f"{len(tables)} table(s), {total} service(s) due"
        b = click.progressbar(length=max(total, 1), label=label, file=sys.stderr, show_pos=True)
        b.__enter__()
        bar.append(b)
        if total == 0:
            b.update(1)

    def on_outcome(_o: object) -> None:
        with lock:
            if bar:
                bar[0].update(1)

    try:
        result = run_fleet(
            tables,
            services=services,
            parallelism=parallelism,
            retry=retry,
            dry_run=dry_run,
            on_probed=on_probed,
            on_outcome=on_outcome,
        )
    finally:
        if bar:
            bar[0].__exit__(None, None, None)
    out.show(result, _print_run)
    if result.failed:
        sys.exit(1)
