"""Clean end to end (Hudi's ``clean()``): finish pending cleans, schedule a new one if the trigger says so, execute
and commit it, then remove abandoned temporary files; ``dry_run`` only reports.

Each step is a function of its own module: :func:`.planner.schedule_clean` -> :func:`.executor.execute_clean_plan` ->
:func:`.committer.commit_clean` (:mod:`.recovery`: how a failed attempt is finished).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import pendulum

from lake_orchestration.engines.base import Engine
from lake_orchestration.errors import InstantInProgressError
from lake_orchestration.hudi.model.avro import CleanMetadata
from lake_orchestration.hudi.services.clean.committer import commit_clean
from lake_orchestration.hudi.services.clean.config import CleanConfig, CleaningPolicy
from lake_orchestration.hudi.services.clean.executor import execute_clean_attempt, failed_deletes
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
    instant_time: str,
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
    execution, attempt = execute_clean_attempt(table, instant_time, engine=engine, config=config, refresh=refresh)
    try:
        return commit_clean(table, execution, config=config, attempt=attempt)
    except BaseException:
        attempt.give_up(release=True)  # only if still this attempt's
        raise


def run_clean(
    table: HudiTable,
    config: CleanConfig | None = None,
    *,
    dry_run: bool = False,
    engine: Engine | None = None,
    now: pendulum.DateTime | None = None,
) -> CleanResult:
    """Complete pending cleans, then schedule and execute a new one (Hudi's ``clean()``); last, remove the
    ``*.<uuid>.tmp`` files a killed create-if-absent left, once older than the heartbeat expiry (reported in
    :attr:`CleanResult.temp_files`).

    ``dry_run`` writes nothing and reports what pending plans and a new plan would delete. ``config``: the settings
    (default: Hudi's; from Hudi keys: :meth:`CleanConfig.from_options`).
    """
    cfg = config or CleanConfig()
    _ = table.refresh().timeline  # one listing of .hoodie/ for the metadata-table check and the pending cleans
    table.ensure_metadata_table_handled(cfg.metadata_options(), service="clean", dry_run=dry_run)
    files: dict[str, list[str]] = {}
    instants: list[str] = []
    deleted = failed = 0

    def take(instant: str, planned: Mapping[str, list[str]]) -> None:
        nonlocal deleted, failed
        if not dry_run:
            try:
                # on the timeline pending_cleans / schedule_clean just listed: the execution checks it again
                # under the lock
                md = execute_clean(table, instant, engine=engine, config=cfg, refresh=False)
            except InstantInProgressError as err:  # another process executes this clean: leave it to it
                log.warning("Skipping clean %s: %s", instant, err.detail)
                return
        instants.append(instant)
        for p, names in planned.items():
            files.setdefault(p, []).extend(names)
        if not dry_run:
            deleted += md.total_files_deleted
            failed += failed_deletes(md)

    for pending in pending_cleans(table, dry_run=dry_run, refresh=False):
        take(str(pending.time), planned_file_names(read_plan(table, str(pending.time))))
    inst, planning, reason = schedule_clean(table, cfg, now=now, dry_run=dry_run)
    if planning is not None and planning.file_count:
        take(str(inst.time) if inst is not None else "(new)", planned_file_names(planning.plan))
    temp_files = remove_stale_temp_files(
        table, older_than_ms=temp_file_expiry_ms(heartbeat=cfg.heartbeat, lock=cfg.lock), lock=cfg.lock, dry_run=dry_run
    )
    ectr = planning.earliest_commit_to_retain if planning is not None else None
    return CleanResult(
        instants=tuple(instants),
        earliest_commit_to_retain=str(ectr.time) if ectr is not None else None,
        policy=cfg.policy.value,
        files=files,
        deleted=deleted,
        failed=failed,
        dry_run=dry_run,
        reason=reason,
        temp_files=tuple(temp_files),
    )
