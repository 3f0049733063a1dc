"""Clean end to end (Hudi's ``clean()``): finish pending cleans, schedule a new one if the trigger says so, execute
and commit it, then remove abandoned temporary files; ``dry_run`` only reports.

Each step is a function of its own module: :func:`.planner.schedule_clean` -> :func:`.executor.execute_clean_plan` ->
:func:`.committer.commit_clean` (:mod:`.recovery`: how a failed attempt is finished). The verbs every shell calls:
:func:`plan_cleans` (the one policy: pending cleans first, then a new one) -> :func:`execute_cleans` ->
:func:`commit_cleans`; :func:`run_clean` is the three.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pendulum

from lake_orchestration.engines.base import Engine
from lake_orchestration.errors import InstantInProgressError
from lake_orchestration.hudi.model.avro import CleanMetadata
from lake_orchestration.hudi.model.instant import InstantTime
from lake_orchestration.hudi.services.clean.committer import commit_clean
from lake_orchestration.hudi.services.clean.config import CleanConfig, CleaningPolicy
from lake_orchestration.hudi.services.clean.executor import (
    CleanExecution,
    execute_clean_attempt,
    execute_clean_plan,
    failed_deletes,
)
from lake_orchestration.hudi.services.clean.planner import planned_file_names, read_plan, schedule_clean
from lake_orchestration.hudi.services.clean.recovery import pending_cleans
from lake_orchestration.hudi.table import HudiTable
from lake_orchestration.hudi.table.temp_file import remove_stale_temp_files, temp_file_expiry_ms

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class CleanResult:
    """What one clean run did (or, on a dry run, would do)."""

    instants: tuple[str, ...] = ()
    """Clean instants executed (pending ones first, then the new one); on a dry run, those that would be."""
    earliest_commit_to_retain: str | None = None
    """ECTR of the new plan (None: none)."""
    policy: str = CleaningPolicy.KEEP_LATEST_COMMITS.value
    files: dict[str, list[str]] = field(default_factory=dict)
    """Partition -> file names planned for deletion by the new plan (and by resumed plans)."""
    deleted: int = 0
    failed: int = 0
    dry_run: bool = False
    reason: str = ""
    """Why no new clean was scheduled (empty when one was)."""
    temp_files: tuple[str, ...] = ()
    """Abandoned ``*.<uuid>.tmp`` files of a killed create-if-absent removed (on a dry run: that would be)."""

    @property
    def file_count(self) -> int:
        return sum(len(v) for v in self.files.values())

    def to_json_obj(self) -> dict[str, Any]:
        return {
            "instants": list(self.instants),
            "earliest_commit_to_retain": self.earliest_commit_to_retain,
            "policy": self.policy,
            "files": self.files,
            "file_count": self.file_count,
            "deleted": self.deleted,
            "failed": self.failed,
            "dry_run": self.dry_run,
            "reason": self.reason,
            "temp_files_removed": list(self.temp_files),
        }


def execute_clean(
    table: HudiTable,
    instant_time: InstantTime | str,
    *,
    engine: Engine | None = None,
    config: CleanConfig | None = None,
    refresh: bool = True,
) -> CleanMetadata:
    """Execute the pending clean ``instant_time`` and commit it (:func:`execute_clean_plan` then
    :func:`commit_clean`, ``config``: default Hudi's); returns its metadata. A failed commit deletes the attempt's
    heartbeat, so a retry of the whole clean may start at once (deletes are idempotent).

    Raises:
        InstantInProgressError: another process is executing this clean (fresh heartbeat); nothing was deleted.
        InvalidInstantStateError: no pending clean at that time, another process completed it meanwhile, or took it
            over (not committed).
        PlanError: the plan names a file outside its partition (nothing deleted).
        TableLockedError: another process holds the table lock past ``hoodie.write.lock.wait_time_ms``.
    """
    instant_time = InstantTime(instant_time, where=table.base_uri)
    execution, attempt = execute_clean_attempt(table, instant_time, engine=engine, config=config, refresh=refresh)
    try:
        return commit_clean(table, execution, config=config, attempt=attempt)
    except BaseException:
        attempt.give_up(release=True)  # only if still this attempt's
        raise


@dataclass(frozen=True, kw_only=True)
class CleanPlans:
    """The cleans one clean run works on (:func:`plan_cleans`): the pending ones first, then the new one. Plain
    values: it pickles, so execution may run in another process (a Dagster op)."""

    dry_run: bool
    """Nothing is written (no ``.clean.requested``; :func:`execute_cleans` and :func:`commit_cleans` do nothing but
    report)."""
    files_by_instant: dict[str, dict[str, list[str]]]
    """Clean instant (``(new)`` on a dry run) -> partition -> file names its plan deletes; pending cleans first."""
    earliest_commit_to_retain: str | None
    """ECTR of the new plan (None: no new plan)."""
    policy: str
    """``hoodie.cleaner.policy``."""
    reason: str
    """Why no new clean was scheduled (empty when one was)."""

    @property
    def instants(self) -> tuple[str, ...]:
        return tuple(self.files_by_instant)

    @property
    def file_count(self) -> int:
        return sum(len(v) for f in self.files_by_instant.values() for v in f.values())


@dataclass(frozen=True, kw_only=True)
class CleanExecutions:
    """What :func:`execute_cleans` did (pickles: a retried commit does not delete again)."""

    plans: CleanPlans
    executions: tuple[CleanExecution, ...] = ()
    """One execution (the metadata to commit and the attempt's token) per executed clean."""
    skipped: tuple[str, ...] = ()
    """Cleans another process is executing (left to it)."""


def plan_cleans(
    table: HudiTable,
    config: CleanConfig | None = None,
    *,
    dry_run: bool = False,
    now: pendulum.DateTime | None = None,
) -> CleanPlans:
    """The cleans a clean run works on next, by the one clean policy (Hudi's ``clean()``): pending cleans are
    finished first (a failed clean is finished, not undone); with none pending, a new one is scheduled
    (``.clean.requested``) if the trigger fires and its plan deletes something. A new plan is computed only once the
    pending cleans are done (it must see their deletes): :func:`run_clean` then plans again in the same run, a
    split run (:func:`execute_cleans` and :func:`commit_cleans` in separate steps) in its next run. A dry run writes
    nothing.

    Raises:
        PlanError: the table has a metadata table and ``hoodie.metadata.enable`` is not ``false``; an invalid plan.
        TableLockedError: another process holds the table lock past ``hoodie.write.lock.wait_time_ms``.
    """
    cfg = config or CleanConfig()
    pending = _pending_plans(table, cfg, dry_run=dry_run)
    return pending if pending.files_by_instant else _new_plan(table, cfg, dry_run=dry_run, now=now)


def _pending_plans(table: HudiTable, cfg: CleanConfig, *, dry_run: bool) -> CleanPlans:
    _ = table.refresh().timeline  # one listing of .hoodie/ for the metadata-table check and the pending cleans
    table.ensure_metadata_table_handled(cfg.metadata_options(), service="clean", dry_run=dry_run)
    files = {
        str(p.time): planned_file_names(read_plan(table, str(p.time)))
        for p in pending_cleans(table, dry_run=dry_run, refresh=False)
    }
    return CleanPlans(
        dry_run=dry_run,
        files_by_instant=files,
        earliest_commit_to_retain=None,
        policy=cfg.policy.value,
        reason=f"finishing {len(files)} pending clean(s); the next run plans a new one",
    )


def _new_plan(table: HudiTable, cfg: CleanConfig, *, dry_run: bool, now: pendulum.DateTime | None = None) -> CleanPlans:
    inst, planning, reason = schedule_clean(table, cfg, now=now, dry_run=dry_run)
    files: dict[str, dict[str, list[str]]] = {}
    if planning is not None and planning.file_count:
        files[str(inst.time) if inst is not None else "(new)"] = planned_file_names(planning.plan)
    ectr = planning.earliest_commit_to_retain if planning is not None else None
    return CleanPlans(
        dry_run=dry_run,
        files_by_instant=files,
        earliest_commit_to_retain=str(ectr.time) if ectr is not None else None,
        policy=cfg.policy.value,
        reason=reason,
    )


def execute_cleans(
    table: HudiTable,
    plans: CleanPlans,
    *,
    engine: Engine | None = None,
    config: CleanConfig | None = None,
    on_instant: Callable[[str], None] | None = None,
) -> CleanExecutions:
    """Delete the files of each planned clean, leaving each inflight for :func:`commit_cleans` (nothing on a dry
    run). A clean another process is executing (fresh heartbeat) is skipped and left to it. ``on_instant`` is called
    with each instant before its deletes (e.g. to name it in an error).

    Raises:
        As :func:`~lake_orchestration.hudi.services.clean.executor.execute_clean_plan`, but
        ``InstantInProgressError``.
    """
    if plans.dry_run or not plans.files_by_instant:
        return CleanExecutions(plans=plans)
    executions: list[CleanExecution] = []
    skipped: list[str] = []
    for instant in plans.files_by_instant:
        if on_instant is not None:
            on_instant(instant)
        try:
            executions.append(execute_clean_plan(table, instant, engine=engine, config=config))
        except InstantInProgressError as err:  # another process executes this clean: leave it to it
            log.warning("Skipping clean %s: %s", instant, err.detail)
            skipped.append(instant)
    return CleanExecutions(plans=plans, executions=tuple(executions), skipped=tuple(skipped))


def commit_cleans(
    table: HudiTable,
    executed: CleanExecutions,
    *,
    config: CleanConfig | None = None,
    on_instant: Callable[[str | None], None] | None = None,
) -> CleanResult:
    """Write the completed ``.clean`` of each executed clean (a clean already committed is a no-op), then remove the
    ``*.<uuid>.tmp`` files a killed create-if-absent left, once older than the heartbeat expiry; returns what the
    run did. ``on_instant``: called with each instant before its commit, and None before the temp files.

    Raises:
        As :func:`~lake_orchestration.hudi.services.clean.committer.commit_clean`.
    """
    cfg = config or CleanConfig()
    mds = []
    for execution in executed.executions:
        if on_instant is not None:
            on_instant(execution.instant)
        mds.append(commit_clean(table, execution, config=cfg))
    if on_instant is not None:
        on_instant(None)
    return _finish(table, cfg, executed.plans, mds, skipped=executed.skipped)


def _finish(
    table: HudiTable,
    cfg: CleanConfig,
    plans: CleanPlans,
    mds: list[CleanMetadata],
    *,
    skipped: tuple[str, ...] | list[str],
) -> CleanResult:
    temp_files = remove_stale_temp_files(
        table,
        older_than_ms=temp_file_expiry_ms(heartbeat=cfg.heartbeat, lock=cfg.lock),
        lock=cfg.lock,
        dry_run=plans.dry_run,
    )
    instants = [i for i in plans.files_by_instant if i not in skipped]
    files: dict[str, list[str]] = {}
    for i in instants:
        for p, names in plans.files_by_instant[i].items():
            files.setdefault(p, []).extend(names)
    return CleanResult(
        instants=tuple(instants),
        earliest_commit_to_retain=plans.earliest_commit_to_retain,
        policy=plans.policy,
        files=files,
        deleted=sum(md.total_files_deleted for md in mds),
        failed=sum(failed_deletes(md) for md in mds),
        dry_run=plans.dry_run,
        reason=plans.reason,
        temp_files=tuple(temp_files),
    )


def run_clean(
    table: HudiTable,
    config: CleanConfig | None = None,
    *,
    dry_run: bool = False,
    engine: Engine | None = None,
    now: pendulum.DateTime | None = None,
) -> CleanResult:
    """Complete pending cleans, then schedule and execute a new one (Hudi's ``clean()``): both rounds of
    :func:`plan_cleans` in one run, each clean executed and committed in turn (its heartbeat beating until its
    commit); last, as :func:`commit_cleans`, the ``*.<uuid>.tmp`` files a killed create-if-absent left are removed
    once older than the heartbeat expiry (reported in :attr:`CleanResult.temp_files`).

    ``dry_run`` writes nothing and reports what pending plans and a new plan would delete. ``config``: the settings
    (default: Hudi's; from Hudi keys: :meth:`CleanConfig.from_options`).
    """
    cfg = config or CleanConfig()
    mds: list[CleanMetadata] = []
    skipped: list[str] = []

    def take(plans: CleanPlans) -> None:
        if dry_run:
            return
        for instant in plans.files_by_instant:
            try:
                # on the timeline the planning just listed: the execution checks it again under the lock
                mds.append(execute_clean(table, instant, engine=engine, config=cfg, refresh=False))
            except InstantInProgressError as err:  # another process executes this clean: leave it to it
                log.warning("Skipping clean %s: %s", instant, err.detail)
                skipped.append(instant)

    pending = _pending_plans(table, cfg, dry_run=dry_run)  # plan_cleans' first round
    take(pending)
    new = _new_plan(table, cfg, dry_run=dry_run, now=now)  # its second, once the pending cleans are done
    take(new)
    plans = CleanPlans(
        dry_run=dry_run,
        files_by_instant={**pending.files_by_instant, **new.files_by_instant},
        earliest_commit_to_retain=new.earliest_commit_to_retain,
        policy=new.policy,
        reason=new.reason,
    )
    return _finish(table, cfg, plans, mds, skipped=skipped)
