"""Clean planning: which file slices no retained instant, savepoint or pending compaction needs any more.

Mirrors Hudi 0.14/0.15 ``CleanPlanner`` / ``CleanPlanActionExecutor`` / ``CleanerUtils.getEarliestCommitToRetain``:

* the earliest commit to retain (ECTR): KEEP_LATEST_COMMITS — the ``commits.retained``-th completed commit from the
  end, but never later than the earliest pending write; KEEP_LATEST_BY_HOURS — the first completed commit at or
  after now - ``hours.retained``; KEEP_LATEST_FILE_VERSIONS — none;
* partitions: with ``hoodie.cleaner.incremental.mode`` and a previous clean, only those written by completed
  commits in [previous ECTR, new ECTR); else every partition;
* per file group (slices newest first): KEEP_LATEST_COMMITS / BY_HOURS keep the latest slice and the newest slice
  older than the ECTR, and delete every other slice older than the ECTR; KEEP_LATEST_FILE_VERSIONS keeps the newest
  ``fileversions.retained`` slices; both never delete a slice a savepoint lists or a pending (log) compaction reads
  (base instant >= the operation's base instant); replaced file groups go entirely once their replacecommit is
  older than the ECTR (immediately under FILE_VERSIONS).

The plan is Hudi's ``HoodieCleanerPlan`` (version 2, full file paths per partition); :func:`schedule_clean` writes
it as ``<ts>.clean.requested`` (the only file planning writes).
"""

from __future__ import annotations

from collections import defaultdict
from contextlib import nullcontext
from dataclasses import dataclass
from typing import Any

import pendulum

from lake_orchestration.hudi.model.avro import (
    ActionInstant,
    CleanerPlan,
    CleanFileInfo,
    CleanMetadata,
    SavepointMetadata,
)
from lake_orchestration.hudi.model.file_group import FileGroupId, FileSlice
from lake_orchestration.hudi.model.fs_view import FileSystemView
from lake_orchestration.hudi.model.instant import Action, Instant, InstantTime, State
from lake_orchestration.hudi.model.timeline import Timeline
from lake_orchestration.hudi.services.clean.config import CleanConfig, CleaningPolicy
from lake_orchestration.hudi.table import HudiTable
from lake_orchestration.hudi.table.lock import table_lock
from lake_orchestration.io.hadoop_paths import qualified_path
from lake_orchestration.io.storage import FileInfo

CLEAN_PLAN_VERSION = 2
SAVEPOINTED_TIMESTAMPS = "savepointed_timestamps"
"""Extra-metadata key of the plan listing the savepoints it honoured (``CleanPlanner.SAVEPOINTED_TIMESTAMPS``)."""


@dataclass(frozen=True)
class CleanPlanning:
    """A computed clean plan and why it looks the way it does."""

    plan: CleanerPlan
    earliest_commit_to_retain: Instant | None
    partitions_scanned: tuple[str, ...]
    incremental: bool
    savepoints: tuple[str, ...]
    reason: str = ""
    """Why nothing is to be deleted (empty when the plan has work)."""

    @property
    def files(self) -> dict[str, list[str]]:
        """Partition -> full paths planned for deletion."""
        return {
            p: [f.file_path or "" for f in infos]
            for p, infos in (self.plan.file_paths_to_be_deleted_per_partition or {}).items()
        }

    @property
    def file_count(self) -> int:
        return sum(len(v) for v in self.files.values())

    def to_json_obj(self) -> dict[str, Any]:
        """The planning as JSON (e.g. the metadata of a Dagster clean-plan step)."""
        ectr = self.earliest_commit_to_retain
        return {
            "earliest_commit_to_retain": str(ectr.time) if ectr is not None else None,
            "policy": self.plan.policy,
            "files": self.files,
            "file_count": self.file_count,
            "partitions_scanned": list(self.partitions_scanned),
            "incremental": self.incremental,
            "savepoints": list(self.savepoints),
            "reason": self.reason,
        }


def cleaner_earliest_commit_to_retain(
    commits: Timeline,
    policy: CleaningPolicy,
    *,
    commits_retained: int,
    hours_retained: int,
    latest: pendulum.DateTime,
) -> Instant | None:
    """``CleanerUtils.getEarliestCommitToRetain``, shared by the cleaner and archival (``ArchivalUtils``).

    ``commits`` is the caller's commits timeline (all states); ``latest`` the moment ``KEEP_LATEST_BY_HOURS`` counts
    back from, in the table's timeline timezone.
    """
    completed = commits.completed()
    if policy is CleaningPolicy.KEEP_LATEST_COMMITS and 0 < commits_retained < len(completed):
        nth = completed.instants[len(completed) - commits_retained]
        pending = commits.pending().first
        if pending is not None and pending < nth:
            # never later than the earliest pending write: its files must stay readable once it completes
            return completed.filter(lambda i: i.time < pending.time).last
        return nth
    if policy is CleaningPolicy.KEEP_LATEST_BY_HOURS:
        cutoff = InstantTime.from_datetime(latest.subtract(hours=hours_retained))
        for inst in completed:
            if inst.time >= cutoff:
                return inst
    return None


def earliest_commit_to_retain(
    timeline: Timeline, cfg: CleanConfig, *, now: pendulum.DateTime | None = None, timezone: str = "LOCAL"
) -> Instant | None:
    """The cleaner's ECTR (``CleanPlanner.getEarliestCommitToRetain``): over the commits-and-compaction timeline,
    by hours counted back from now."""
    tz = "UTC" if timezone.upper() == "UTC" else pendulum.local_timezone()
    return cleaner_earliest_commit_to_retain(
        timeline.commits(),
        cfg.policy,
        commits_retained=cfg.commits_retained,
        hours_retained=cfg.hours_retained,
        latest=(now or pendulum.now(tz)).in_timezone(tz),
    )


def last_clean_metadata(table: HudiTable) -> tuple[Instant, CleanMetadata] | None:
    """The latest completed clean and its metadata (None if there is none, or its file is empty)."""
    last = table.timeline.completed().with_actions(Action.CLEAN).last
    if last is None:
        return None
    if not table.read_instant(last):
        return None
    return last, table.read_model(last, CleanMetadata)


def commits_since_last_clean(table: HudiTable) -> int:
    """``CleanPlanActionExecutor.getCommitsSinceLastCleaning``: completed commits after the last clean's view."""
    done = table.timeline.completed_commits()
    last = last_clean_metadata(table)
    if last is not None and last[1].last_completed_commit_timestamp:
        return len(done.after(last[1].last_completed_commit_timestamp))
    return len(done)


def savepoint_files(table: HudiTable) -> tuple[tuple[str, ...], set[str]]:
    """Completed savepoints on the active timeline and every file name they list."""
    times: list[str] = []
    names: set[str] = set()
    for sp in table.timeline.completed().with_actions(Action.SAVEPOINT):
        md = table.read_model(sp, SavepointMetadata)
        times.append(str(sp.time))
        for pm in md.partition_metadata.values():
            names.update(pm.savepoint_data_file)
    return tuple(times), names


def pending_compaction_bases(table: HudiTable) -> dict[FileGroupId, str]:
    """File group -> base instant of the slice a pending compaction or log compaction reads."""
    out: dict[FileGroupId, str] = {}
    for action in (Action.COMPACTION, Action.LOG_COMPACTION):
        # the plans the file-system view decoded (each decoded once)
        for plan in table.pending_compaction_plans(action).values():
            for op in plan.operations:
                fg = FileGroupId(op.partition_path or "", op.file_id or "")
                base = op.base_instant_time or ""
                out[fg] = min(out.get(fg, base), base)
    return out


def _partitions_of(table: HudiTable, inst: Instant) -> set[str]:
    md = table.commit_metadata(inst)
    return set(md.partition_to_write_stats) | set(md.partition_to_replace_file_ids or {})


def _previous_clean(table: HudiTable) -> tuple[CleanMetadata | None, CleanerPlan | None]:
    last = last_clean_metadata(table)
    if last is None:
        return None, None
    inst, md = last
    req = Instant(inst.time, Action.CLEAN, State.REQUESTED)
    plan = None
    if req.file_name in table.timeline_file_names():  # the listing the timeline was built from: no HEAD
        plan = table.read_model(req, CleanerPlan) if table.read_instant(req) else None
    return md, plan


def partition_listing_to_clean(
    table: HudiTable, cfg: CleanConfig, ectr: Instant | None, savepoints: tuple[str, ...]
) -> tuple[dict[str, list[FileInfo]], bool]:
    """The partitions to scan with their file listings (:meth:`HudiTable.partition_listing`, each directory listed
    once), and whether the incremental mode chose them: then only the partitions the commits in [previous ECTR,
    new ECTR) wrote are listed, as Hudi's ``getPartitionPathsForIncrementalCleaning`` does."""
    if cfg.policy is CleaningPolicy.KEEP_LATEST_FILE_VERSIONS:
        return table.partition_listing(), False
    if ectr is None:
        return {}, False
    tl = table.timeline
    if cfg.incremental_mode:
        md, prev_plan = _previous_clean(table)
        prev = md.earliest_commit_to_retain if md is not None else ""
        if prev and not tl.commits().is_before_start(prev):
            extra = (md.extra_metadata if md is not None else None) or (
                (prev_plan.extra_metadata or {}) if prev_plan is not None else {}
            )
            honoured = set(filter(None, extra.get(SAVEPOINTED_TIMESTAMPS, "").split(",")))
            if honoured - set(savepoints):
                # a savepoint was deleted since the previous clean: its files may be anywhere
                return table.partition_listing(), False
            parts: set[str] = set()
            for inst in tl.completed_commits():
                if prev <= inst.time < ectr.time:
                    parts |= _partitions_of(table, inst)
            # only those that still exist (a partition directory with its metafile)
            return table.partition_listing(parts), True
    return table.partition_listing(), False


def _slice_files(s: FileSlice) -> list[str]:
    out = []
    if s.base_file is not None:
        out.append(s.base_file.relative_path)
    out.extend(lf.relative_path for lf in s.log_files)
    return out


def _slice_names(s: FileSlice) -> set[str]:
    names = {lf.name for lf in s.log_files}
    if s.base_file is not None:
        names.add(s.base_file.name)
    return names


def files_to_clean(
    view: FileSystemView,
    partition: str,
    cfg: CleanConfig,
    ectr: Instant | None,
    *,
    completed_commits: int,
    savepointed: set[str],
    pending_bases: dict[FileGroupId, str],
) -> list[str]:
    """Relative paths of the files to delete in ``partition`` (``CleanPlanner.getDeletePaths``)."""

    def needed_by_pending(s: FileSlice) -> bool:
        base = pending_bases.get(s.file_group_id)
        return base is not None and s.base_instant >= base

    def saved(s: FileSlice) -> bool:
        return bool(_slice_names(s) & savepointed)

    out: list[str] = []
    groups = view.all_file_groups(partition, include_replaced=True)
    replaced = [g for g in groups if g.id in view.replaced]
    active = [g for g in groups if g.id not in view.replaced]
    if cfg.policy is CleaningPolicy.KEEP_LATEST_FILE_VERSIONS:
        for g in replaced:
            out += [f for s in g.slices if not saved(s) for f in _slice_files(s)]
        for g in active:
            keep = cfg.file_versions_retained - (1 if g.id in pending_bases else 0)
            candidates = [s for s in g.slices if not needed_by_pending(s)]
            for s in candidates[max(keep, 0) :]:
                if not saved(s):
                    out += _slice_files(s)
        return out
    retained = cfg.commits_retained if cfg.policy is CleaningPolicy.KEEP_LATEST_COMMITS else 0
    if ectr is None or completed_commits <= retained:
        return out
    for g in replaced:
        if view.replaced[g.id] < ectr.time:
            out += [f for s in g.slices if not saved(s) for f in _slice_files(s)]
    for g in active:
        if not g.slices:
            continue
        last_version = g.slices[0].base_instant
        before = next((s.base_instant for s in g.slices if s.base_instant < ectr.time), None)
        for s in g.slices:
            if saved(s) or s.base_instant in (last_version, before):
                continue
            if not needed_by_pending(s) and s.base_instant < ectr.time:
                out += _slice_files(s)
    return out


def plan_clean(table: HudiTable, cfg: CleanConfig, *, now: pendulum.DateTime | None = None) -> CleanPlanning:
    """Compute the clean plan of the table as it is now (nothing is written)."""
    return compute_plan(table.refresh(), cfg, now=now)


def compute_plan(table: HudiTable, cfg: CleanConfig, *, now: pendulum.DateTime | None = None) -> CleanPlanning:
    """:func:`plan_clean` on the timeline the table holds (the caller has just refreshed it, e.g. under the lock)."""
    tl = table.timeline
    ectr = earliest_commit_to_retain(tl, cfg, now=now, timezone=table.config.timeline_timezone.value)
    savepoints, savepointed = savepoint_files(table)
    listing, incremental = partition_listing_to_clean(table, cfg, ectr, savepoints)
    partitions = sorted(listing)
    per_partition: dict[str, list[CleanFileInfo]] = defaultdict(list)
    if partitions:
        view = table.fs_view(listing)
        pending_bases = pending_compaction_bases(table)
        n_completed = len(tl.completed_commits())
        for p in partitions:
            for rel in files_to_clean(
                view, p, cfg, ectr, completed_commits=n_completed, savepointed=savepointed, pending_bases=pending_bases
            ):
                per_partition[p].append(
                    CleanFileInfo(
                        # qualified like the listed paths Java writes (file:/…, s3a://…); the executor reads both
                        file_path=qualified_path(table.storage, table.storage.join(rel)),
                        is_bootstrap_base_file=False,
                    )
                )
    last_done = tl.latest_completed_commit_time()
    plan = CleanerPlan(
        earliest_instant_to_retain=(
            ActionInstant(timestamp=str(ectr.time), action=ectr.action.value, state=State.COMPLETED.name)
            if ectr is not None
            else None
        ),
        last_completed_commit_timestamp=str(last_done or ""),
        policy=cfg.policy.value,
        files_to_be_deleted_per_partition={},
        version=CLEAN_PLAN_VERSION,
        file_paths_to_be_deleted_per_partition={p: tuple(v) for p, v in sorted(per_partition.items())},
        partitions_to_be_deleted=(),
        # as Java: recorded for partitioned tables only (the next clean compares it to find deleted savepoints)
        extra_metadata=(
            {SAVEPOINTED_TIMESTAMPS: ",".join(savepoints)} if savepoints and table.config.is_partitioned else {}
        ),
    )
    reason = ""
    if not per_partition:
        if cfg.policy is not CleaningPolicy.KEEP_LATEST_FILE_VERSIONS and ectr is None:
            n = len(tl.completed_commits())
            reason = (
                f"nothing to clean: {n} completed commit(s), {cfg.commits_retained} retained "
                f"(hoodie.cleaner.commits.retained)"
                if cfg.policy is CleaningPolicy.KEEP_LATEST_COMMITS
                else f"nothing to clean: no completed commit in the last {cfg.hours_retained} h "
                "(hoodie.cleaner.hours.retained)"
            )
        else:
            reason = f"nothing to clean: no file slice is older than what {cfg.policy.value} retains"
    return CleanPlanning(
        plan=plan,
        earliest_commit_to_retain=ectr,
        partitions_scanned=tuple(partitions),
        incremental=incremental,
        savepoints=savepoints,
        reason=reason,
    )


def planned_file_names(plan: CleanerPlan) -> dict[str, list[str]]:
    """Partition -> names of the files a cleaner plan deletes (what a clean run reports)."""
    return {
        p: [(i.file_path or "").rsplit("/", 1)[-1] for i in infos]
        for p, infos in (plan.file_paths_to_be_deleted_per_partition or {}).items()
    }


def read_plan(table: HudiTable, instant_time: InstantTime | str) -> CleanerPlan:
    """The cleaner plan of a clean instant (from ``.clean.requested``, as Hudi reads it)."""
    return table.read_model(
        Instant(InstantTime(instant_time, where=table.base_uri), Action.CLEAN, State.REQUESTED), CleanerPlan
    )


def schedule_clean(
    table: HudiTable,
    config: CleanConfig | None = None,
    *,
    instant_time: InstantTime | str | None = None,
    now: pendulum.DateTime | None = None,
    dry_run: bool = False,
) -> tuple[Instant | None, CleanPlanning | None, str]:
    """Write a ``.clean.requested`` when the trigger fires and the plan deletes something.

    Returns (the requested instant or None, the planning or None, why nothing was scheduled). A dry run plans
    and writes nothing (the instant is None). ``config``: the settings (default: Hudi's; from Hudi keys:
    :meth:`CleanConfig.from_options`).
    """
    cfg = config or CleanConfig()
    # a malformed instant fails here, before the lock or any file is written
    given = InstantTime(instant_time, where=table.base_uri) if instant_time else None
    # Planning runs under the table lock (not on a dry run): the plan must be made from a timeline that no writer
    # or service changes before the plan is on it.
    with nullcontext() if dry_run else table_lock(table, operation="clean schedule", config=cfg.lock):
        # The instant time first (as Java's clean() does): its listing of the timeline, as of the lock, is the one
        # the metadata-table check, the trigger and the plan read (no writer or service changes the timeline while
        # the lock is held).
        if dry_run or given:
            _ = table.refresh().timeline
            t = given
        else:
            t = table.new_instant_time()
        table.ensure_metadata_table_handled(cfg.metadata_options(), service="clean", dry_run=dry_run)
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
