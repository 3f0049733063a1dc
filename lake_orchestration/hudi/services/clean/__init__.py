"""Clean: plan (``.clean.requested``) -> execute (parallel deletes) -> commit (``.clean``), as Hudi 0.14/0.15 does.

Entry points: :func:`run_clean` (finish pending cleans, schedule a new one if the trigger says so, execute it;
``dry_run`` only reports), :func:`schedule_clean`, :func:`execute_clean`, :func:`plan_clean`.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from contextlib import nullcontext
from dataclasses import dataclass, field
from typing import Any

import pendulum

from lake_orchestration.config.options import heartbeat_options
from lake_orchestration.errors import InstantInProgressError
from lake_orchestration.hudi.model.instant import Action, Instant, State
from lake_orchestration.hudi.services.clean.config import CleanConfig, CleaningPolicy, CleaningTriggerStrategy
from lake_orchestration.hudi.services.clean.executor import execute_clean, read_plan
from lake_orchestration.hudi.services.clean.planner import (
    CleanPlanning,
    commits_since_last_clean,
    compute_plan,
    earliest_commit_to_retain,
    plan_clean,
)
from lake_orchestration.hudi.table import HudiTable
from lake_orchestration.hudi.table.lock import table_lock
from lake_orchestration.hudi.table.temp_file import remove_stale_temp_files, temp_file_expiry_ms

log = logging.getLogger(__name__)

__all__ = [
    "CleanConfig",
    "CleanPlanning",
    "CleanResult",
    "CleaningPolicy",
    "CleaningTriggerStrategy",
    "earliest_commit_to_retain",
    "execute_clean",
    "pending_cleans",
    "plan_clean",
    "read_plan",
    "run_clean",
    "schedule_clean",
]


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


def pending_cleans(table: HudiTable, *, dry_run: bool = False, refresh: bool = True) -> list[Instant]:
    """Requested or inflight clean instants with a plan, oldest first (``refresh=False``: from the timeline the
    caller has just listed).

    A pending clean whose requested file is empty deleted nothing (the plan is written before any delete); its
    files are removed, as Java's ``deleteEmptyInstantIfExists`` does (not on a dry run).
    """
    out = []
    removed = False
    pending = (table.refresh() if refresh else table).timeline.pending().with_actions(Action.CLEAN)
    names = table.timeline_file_names()  # the listing the timeline was built from
    for inst in pending:
        req = Instant(inst.time, Action.CLEAN, State.REQUESTED)
        if req.file_name in names and not table.read_instant(req):
            log.warning("Removing the empty pending clean %s of %s", inst.time, table.base_uri)
            if not dry_run:
                for state in (State.INFLIGHT, State.REQUESTED):
                    table.storage.delete_file(
                        table.instant_path(Instant(inst.time, Action.CLEAN, state)), missing_ok=True
                    )
                removed = True
            continue
        out.append(inst)
    if removed:
        table.refresh()
    return out


def schedule_clean(
    table: HudiTable,
    options: Mapping[str, str] | None = None,
    *,
    instant_time: str | None = None,
    now: pendulum.DateTime | None = None,
    dry_run: bool = False,
) -> tuple[Instant | None, CleanPlanning | None, str]:
    """Write a ``.clean.requested`` when the trigger fires and the plan deletes something.

    Returns (the requested instant or None, the planning or None, why nothing was scheduled). A dry run plans
    and writes nothing (the instant is None).
    """
    cfg = CleanConfig.from_options(options)
    # Planning runs under the table lock (not on a dry run): the plan must be made from a timeline that no writer
    # or service changes before the plan is on it.
    with nullcontext() if dry_run else table_lock(table, operation="clean schedule", config=cfg.lock):
        # The instant time first (as Java's clean() does): its listing of the timeline, as of the lock, is the one
        # the metadata-table check, the trigger and the plan read (no writer or service changes the timeline while
        # the lock is held).
        if dry_run or instant_time:
            _ = table.refresh().timeline
            t = instant_time
        else:
            t = table.new_instant_time()
        table.ensure_metadata_table_handled(options, service="clean", dry_run=dry_run)
        n = commits_since_last_clean(table)
        if n < cfg.max_commits:
            return None, None, _not_triggered(n, cfg)
        planning = compute_plan(table, cfg, now=now)
        if not planning.file_count or dry_run:
            return None, planning, planning.reason
        inst = table.create_requested(Instant(t, Action.CLEAN, State.REQUESTED), planning.plan.to_bytes())  # type: ignore[arg-type]
        return inst, planning, ""


def _not_triggered(n: int, cfg: CleanConfig) -> str:
    return f"not triggered: {n} completed commit(s) since the last clean, hoodie.clean.max.commits={cfg.max_commits}"


def _names(files: Mapping[str, list[str]]) -> dict[str, list[str]]:
    return {p: [f.rsplit("/", 1)[-1] for f in v] for p, v in files.items()}


def run_clean(
    table: HudiTable,
    options: Mapping[str, str] | None = None,
    *,
    dry_run: bool = False,
    spark: Any = None,
    now: pendulum.DateTime | None = None,
) -> CleanResult:
    """Complete pending cleans, then schedule and execute a new one (Hudi's ``clean()``); last, remove the
    ``*.<uuid>.tmp`` files a killed create-if-absent left, once older than the heartbeat expiry (reported in
    :attr:`CleanResult.temp_files`).

    ``dry_run`` writes nothing and reports what pending plans and a new plan would delete.
    """
    cfg = CleanConfig.from_options(options)
    _ = table.refresh().timeline  # one listing of .hoodie/ for the metadata-table check and the pending cleans
    table.ensure_metadata_table_handled(options, service="clean", dry_run=dry_run)
    files: dict[str, list[str]] = {}
    instants: list[str] = []
    deleted = failed = 0

    heartbeat = heartbeat_options(options, service="clean")

    def take(instant: str, planned: Mapping[str, list[str]]) -> None:
        nonlocal deleted, failed
        if not dry_run:
            try:
                # on the timeline pending_cleans / schedule_clean just listed: the execution checks it again
                # under the lock
                md = execute_clean(
                    table,
                    instant,
                    spark=spark,
                    parallelism=cfg.parallelism,
                    lock=cfg.lock,
                    heartbeat=heartbeat,
                    refresh=False,
                )
            except InstantInProgressError as err:  # another process executes this clean: leave it to it
                log.warning("Skipping clean %s: %s", instant, err.detail)
                return
        instants.append(instant)
        for p, names in planned.items():
            files.setdefault(p, []).extend(names)
        if not dry_run:
            deleted += md.total_files_deleted
            failed += sum(len(pm.failed_delete_files) for pm in md.partition_metadata.values())

    for pending in pending_cleans(table, dry_run=dry_run, refresh=False):
        plan = read_plan(table, str(pending.time))
        take(
            str(pending.time),
            {
                p: [(i.file_path or "").rsplit("/", 1)[-1] for i in infos]
                for p, infos in (plan.file_paths_to_be_deleted_per_partition or {}).items()
            },
        )
    inst, planning, reason = schedule_clean(table, options, now=now, dry_run=dry_run)
    if planning is not None and planning.file_count:
        take(str(inst.time) if inst is not None else "(new)", _names(planning.files))
    temp_files = remove_stale_temp_files(
        table, older_than_ms=temp_file_expiry_ms(options), lock=cfg.lock, dry_run=dry_run
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
