"""Run the due services of many tables (Hudi's ``HoodieMultiTableServicesMain``), one failure stopping no other table.

Each table is probed (:func:`~lake_orchestration.fleet.probe.probe`); its due services among those asked for run in
the table's order (compaction, log compaction, clustering, clean, archive: Hudi's
``MultiTableServiceUtils.buildTableServicePipeline`` order), one at a time on that table (at most one service per
table at once), the table probed again after a service that wrote (a compaction commit can make archival due, as
Hudi's multi-table runner, which asks each service in turn, would find); ``parallelism`` tables run at the same
time. A service that fails ends its table's turn (the
services after it are ``skipped``, as Hudi's per-table ``TableServicePipeline`` stops at its first failing task); the
other tables go on. Each service calls the core verbs (:func:`~lake_orchestration.hudi.services.compaction
.schedule_compaction` + :func:`~lake_orchestration.hudi.services.compaction.run_compaction`,
:func:`~lake_orchestration.hudi.services.log_compaction.run_log_compactions`,
:func:`~lake_orchestration.hudi.services.clean.run_clean`, :func:`~lake_orchestration.hudi.services.archive
.run_archive`, Paimon's :func:`~lake_orchestration.paimon.services.compaction.run_compaction`) with the table's
options (:meth:`~lake_orchestration.fleet.config.FleetTable.service_options`).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from lake_orchestration.fleet.config import FleetTable
from lake_orchestration.fleet.probe import TableProbe, probe

log = logging.getLogger(__name__)

DONE = "done"
"""The service ran and wrote (a compaction commit, a clean, archived instants ...)."""
NOTHING = "nothing to do"
"""The service ran and its planner found nothing (no instant written)."""
FAILED = "failed"
SKIPPED = "skipped"
"""Not run: an earlier service of the table failed."""
WOULD_RUN = "would run"
"""``dry_run``: due, not run."""


@dataclass(frozen=True, kw_only=True)
class ServiceOutcome:
    """One service on one table."""

    table: str
    service: str
    status: str
    """:data:`DONE`, :data:`NOTHING`, :data:`FAILED`, :data:`SKIPPED` or :data:`WOULD_RUN`."""
    detail: str = ""
    """What it did (``committed compaction 20250101...``), why it was due, or the error."""
    seconds: float = 0.0

    def to_json_obj(self) -> dict[str, Any]:
        """Plain values."""
        return {
            "table": self.table,
            "service": self.service,
            "status": self.status,
            "detail": self.detail,
            "seconds": round(self.seconds, 3),
        }


@dataclass(frozen=True, kw_only=True)
class FleetRunResult:
    """The outcomes of a fleet run, table by table, most overdue x weight first."""

    outcomes: list[ServiceOutcome] = field(default_factory=list)
    probes: list[TableProbe] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def failed(self) -> list[ServiceOutcome]:
        """The failed services (and unreadable tables, as service ``probe``)."""
        return [o for o in self.outcomes if o.status == FAILED]

    def to_json_obj(self) -> dict[str, Any]:
        """Plain values."""
        return {
            "seconds": round(self.seconds, 3),
            "failed": len(self.failed),
            "outcomes": [o.to_json_obj() for o in self.outcomes],
        }


def run_service(table: FleetTable, service: str, *, engine: Any = None) -> tuple[str, str]:
    """Run ``service`` on ``table`` with its options: ``(status, detail)`` (:data:`DONE` or :data:`NOTHING`).

    Raises:
        LakeOrchestrationError (or any error of the service): the caller records it.
    """
    opts = table.service_options(service)
    if table.format == "paimon":
        from lake_orchestration.paimon.services.compaction import run_compaction as paimon_compaction

        if service != "compaction":
            raise ValueError(f"table {table.name!r} (paimon): expected service compaction, got {service!r}")
        r = paimon_compaction(table.open(), engine=engine)
        if r.commit is None:
            return NOTHING, "no compaction needed"
        return DONE, f"compaction snapshot {r.commit.snapshot.id}"
    t = table.open()
    if service == "compaction":
        from lake_orchestration.hudi.services.compaction import CompactionConfig, run_compaction, schedule_compaction
        from lake_orchestration.hudi.services.compaction.planner import select_pending_plans

        cfg = CompactionConfig.from_options(opts)
        scheduled = schedule_compaction(t, config=cfg)
        pending = select_pending_plans(t.refresh(), seq="FIFO")
        if not pending:
            return NOTHING, scheduled.reason or "no plan"
        results = run_compaction(t, seq="FIFO", max_plans=len(pending), config=cfg, engine=engine)
        done = [str(r.instant) for r in results if not r.already_committed]
        return (DONE, f"committed compaction {', '.join(done)}") if done else (NOTHING, "plans already committed")
    if service == "log_compaction":
        from lake_orchestration.hudi.services.compaction import CompactionConfig
        from lake_orchestration.hudi.services.log_compaction import run_log_compactions, schedule_log_compaction

        cfg = CompactionConfig.from_options(opts)
        scheduled = schedule_log_compaction(t, config=cfg)
        runs = [r for r in run_log_compactions(t.refresh(), config=cfg) if r.metadata is not None]
        if not runs:
            return NOTHING, scheduled.reason or "no pending log-compaction plan"
        return DONE, f"committed log compaction {', '.join(r.instant for r in runs)}"
    if service == "clustering":
        from lake_orchestration.hudi.services.clustering import (
            ClusteringConfig,
            run_clustering,
            schedule_clustering,
            select_pending_plans,
        )

        ccfg = ClusteringConfig.from_options(opts)
        scheduled_c = schedule_clustering(t, config=ccfg)
        plans = select_pending_plans(t, seq="FIFO")
        if not plans:
            return NOTHING, scheduled_c.reason or "no clustering plan"
        ran = run_clustering(t, max_plans=len(plans), config=ccfg, engine=engine)
        committed = [str(r.instant) for r in ran if not r.already_committed]
        return (DONE, f"committed clustering {', '.join(committed)}") if committed else (NOTHING, "plans committed")
    if service == "clean":
        from lake_orchestration.hudi.services.clean import CleanConfig, run_clean

        res = run_clean(t, CleanConfig.from_options(opts), engine=engine)
        if not res.instants:
            return NOTHING, res.reason or "nothing to clean"
        return DONE, f"clean {', '.join(res.instants)}: {res.deleted} file(s) deleted"
    if service == "archive":
        from lake_orchestration.hudi.services.archive import ArchiveConfig, run_archive

        ar = run_archive(t, ArchiveConfig.from_options(opts, table_properties=t.config.raw))
        if not ar.archived_instants and not ar.merge.candidates:
            return NOTHING, "nothing to archive"
        return DONE, f"archived {len(ar.archived_instants)} instant(s)"
    raise ValueError(f"table {table.name!r}: unknown service {service!r}; expected one of {', '.join(table.services)}")


ProgressCallback = Callable[[ServiceOutcome], None]


def _run_table(
    table: FleetTable,
    p: TableProbe,
    services: Sequence[str],
    *,
    dry_run: bool,
    engine: Any,
    on_outcome: ProgressCallback | None,
    retry: int = 0,
) -> list[ServiceOutcome]:
    out: list[ServiceOutcome] = []

    def record(o: ServiceOutcome) -> None:
        out.append(o)
        if on_outcome is not None:
            on_outcome(o)

    if p.error is not None:
        record(ServiceOutcome(table=table.name, service="probe", status=FAILED, detail=p.error))
        return out
    failed = False
    current = p
    for s in [s for s in table.services if s in services]:
        d = current.due.get(s)
        if d is None or not d.needed:
            continue
        if failed:
            record(ServiceOutcome(table=table.name, service=s, status=SKIPPED, detail="an earlier service failed"))
            continue
        if dry_run:
            record(ServiceOutcome(table=table.name, service=s, status=WOULD_RUN, detail=d.reason))
            continue
        start = time.monotonic()
        attempts = 0
        while True:
            attempts += 1
            try:
                status, detail = run_service(table, s, engine=engine)
                break
            except Exception as err:  # one table's failure stops no other table
                if attempts <= retry:  # a failed attempt is rolled back by the next one (the services' recovery)
                    log.warning("%s on %s failed (attempt %d of %d): %s", s, table.name, attempts, retry + 1, err)
                    continue
                status, detail = (
                    FAILED,
                    f"{type(err).__name__}: {err}" + (f" ({attempts} attempts)" if attempts > 1 else ""),
                )
                break
        if status == FAILED:
            failed = True
            record(
                ServiceOutcome(
                    table=table.name, service=s, status=FAILED, detail=detail, seconds=time.monotonic() - start
                )
            )
            continue
        record(
            ServiceOutcome(table=table.name, service=s, status=status, detail=detail, seconds=time.monotonic() - start)
        )
        if status == DONE:  # what it wrote may make the next services due (a compaction commit: archival)
            again = probe(table)
            if again.error is None:
                current = again
    return out


def priority(table: FleetTable, p: TableProbe, services: Sequence[str]) -> float:
    """The largest ``overdue x weight`` of the table's due ``services`` (0 when none is due or the probe failed)."""
    due = [d.overdue for s, d in p.due.items() if s in services and d.needed]
    return max(due, default=0.0) * table.policy.weight


def plan_fleet(tables: Iterable[FleetTable], *, parallelism: int = 8) -> list[TableProbe]:
    """A probe of every table (no previous fingerprint: every table judged), ``parallelism`` at a time."""
    tables = list(tables)
    with ThreadPoolExecutor(max_workers=max(1, min(parallelism, len(tables) or 1))) as pool:
        return list(pool.map(lambda t: probe(t), tables))


def run_fleet(
    tables: Iterable[FleetTable],
    *,
    services: Sequence[str],
    parallelism: int = 4,
    dry_run: bool = False,
    engine: Any = None,
    retry: int = 0,
    on_probed: Callable[[list[TableProbe]], None] | None = None,
    on_outcome: ProgressCallback | None = None,
) -> FleetRunResult:
    """Probe every table, then run each table's due ``services`` (see the module doc), the tables furthest past a
    trigger (``overdue x weight``, :func:`priority`) first; the outcomes come in that order.

    Args:
        tables: the fleet (or the tables chosen).
        services: the services to run where due (``compaction``, ``log_compaction``, ``clean``, ``archive``).
        parallelism: tables served at once.
        dry_run: report the due services, run nothing.
        engine: the engine of compaction and clean (None: in this process).
        retry: attempts after a service's first failure (Hudi's ``--retry``), before it is recorded ``failed``.
        on_probed: called with the probes once every table is probed (a progress bar's total).
        on_outcome: called after each service (from the worker threads).
    """
    start = time.monotonic()
    tables = list(tables)
    probes = plan_fleet(tables, parallelism=parallelism)
    if on_probed is not None:
        on_probed(probes)
    # the table furthest past a trigger (x its weight) starts first; unreadable tables last
    ranked = sorted(zip(tables, probes, strict=True), key=lambda tp: -priority(tp[0], tp[1], services))
    with ThreadPoolExecutor(max_workers=max(1, min(parallelism, len(tables) or 1))) as pool:
        per_table = list(
            pool.map(
                lambda tp: _run_table(
                    tp[0], tp[1], services, dry_run=dry_run, engine=engine, on_outcome=on_outcome, retry=retry
                ),
                ranked,
            )
        )
    outcomes = [o for outs in per_table for o in outs]
    return FleetRunResult(outcomes=outcomes, probes=probes, seconds=time.monotonic() - start)


def due_count(probes: Iterable[TableProbe], tables: Iterable[FleetTable], services: Sequence[str]) -> int:
    """How many services a run of ``services`` will run (plus one per unreadable table): a progress bar's total."""
    by_name = {t.name: t for t in tables}
    n = 0
    for p in probes:
        if p.error is not None:
            n += 1
            continue
        t = by_name[p.name]
        n += sum(1 for s in t.services if s in services and s in p.due and p.due[s].needed)
    return n
