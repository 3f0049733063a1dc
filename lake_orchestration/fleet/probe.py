"""Cheap ticks: one listing per table tells whether anything changed, and what is due.

:func:`probe` lists ``.hoodie/`` once (a Paimon table: ``snapshot/``), non-recursively: on S3 one delimiter LIST.
The fingerprint is a hash of the names and sizes listed; when it equals the previous tick's, the probe stops there
(``changed=False``: one request for the table). Otherwise it judges each service from those names alone (a Paimon
table: by its compaction planner on the latest snapshot), with cheap versions of the services' own triggers:

- ``compaction`` (MERGE_ON_READ): pending plans to execute, or ``hoodie.compact.inline.trigger.strategy`` over the
  deltacommits since the last compaction (``hoodie.compact.inline.max.delta.commits``, ``...max.delta.seconds``),
  as Hudi's ``ScheduleCompactionActionExecutor.needCompact``. A copy-on-write table (no deltacommit) never is.
- ``log_compaction``: pending log-compaction plans, or up to ``hoodie.log.compaction.blocks.threshold`` log blocks
  in a slice: one per deltacommit since the last compaction (since the first write: that one wrote the base files;
  after a log compaction: its merged block plus one per deltacommit since). The scheduler counts the real blocks.
- ``clustering`` (only with ``hoodie.clustering.async.enabled: true``): pending replacecommits (requested or
  inflight: clustering plans, the runner runs those that are), or ``hoodie.clustering.async.max.commits`` completed
  commits since the last completed replacecommit, as ``ClusteringPlanActionExecutor``'s async trigger (the scheduler
  reads the plans, so it tells a clustering from an insert_overwrite and may find no file slice to cluster).
- ``clean``: ``hoodie.clean.trigger.strategy`` NUM_COMMITS (``hoodie.clean.max.commits`` commits since the last
  clean, as ``CleanPlanActionExecutor.needsCleaning``), and, for ``KEEP_LATEST_COMMITS``, more completed commits than
  ``hoodie.cleaner.commits.retained`` (else the planner has no earliest commit to retain and nothing to clean);
  ``KEEP_LATEST_BY_HOURS``: a commit older than ``hoodie.cleaner.hours.retained``. Pending cleans are due too.
- ``archive``: more completed write commits on the active timeline than ``hoodie.keep.max.commits`` (the
  archiver's ``HoodieTimelineArchiver.getInstantsToArchive`` trigger).

The planners may still find nothing to do (a clean with no file to delete writes no instant): then the service's
run is a no-op. ``overdue``: the trigger's measure over its threshold (1.0 = at the trigger).
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from lake_orchestration.fleet.config import FleetTable

HOODIE_DIR = ".hoodie"
PAIMON_SNAPSHOT_DIR = "snapshot"


@dataclass(frozen=True)
class Due:
    """Whether a service is due on a table."""

    needed: bool
    """The service has work (as far as the cheap trigger can tell)."""
    overdue: float = 0.0
    """How far past its trigger, >= 0 (1.0: at the trigger; 2.0: twice the threshold)."""
    reason: str = ""
    """Why, for humans (``7 deltacommits since the last compaction >= 5``)."""


NOT_DUE = Due(False, 0.0, "")


@dataclass(frozen=True, kw_only=True)
class TableProbe:
    """One tick's view of a table."""

    name: str
    """The table."""
    fingerprint: str
    """Hash of the listed names and sizes (pass it as ``previous`` next tick)."""
    changed: bool
    """False: the fingerprint equals ``previous`` and ``due`` is empty (nothing was judged)."""
    due: Mapping[str, Due] = field(default_factory=dict)
    """Service -> :class:`Due` (only when ``changed``)."""
    error: str | None = None
    """The listing failed (the table is skipped this tick, its fingerprint is empty)."""

    def due_services(self) -> list[str]:
        """The services with ``needed``, in the table's service order."""
        return [s for s, d in self.due.items() if d.needed]

    def to_json_obj(self) -> dict[str, Any]:
        """Plain values."""
        return {
            "name": self.name,
            "fingerprint": self.fingerprint,
            "changed": self.changed,
            "error": self.error,
            "due": {s: {"needed": d.needed, "overdue": d.overdue, "reason": d.reason} for s, d in self.due.items()},
        }


def fingerprint(entries: Iterable[tuple[str, int]]) -> str:
    """SHA-1 of ``name:size`` lines, sorted."""
    h = hashlib.sha1(usedforsecurity=False)
    for name, size in sorted(entries):
        h.update(f"{name}:{size}\n".encode())
    return h.hexdigest()


def list_timeline(table: FleetTable, storage: Any = None) -> list[Any]:
    """The one listing a probe makes: ``.hoodie/`` (Paimon: ``snapshot/``), non-recursive."""
    storage = storage if storage is not None else table.storage()
    sub = PAIMON_SNAPSHOT_DIR if table.format == "paimon" else HOODIE_DIR
    return storage.list_dir(storage.join(sub))


def probe(
    table: FleetTable, *, previous: str | None = None, now: float | None = None, storage: Any = None
) -> TableProbe:
    """One listing of the table's timeline; the services due when it changed since ``previous``.

    Args:
        table: the table.
        previous: the fingerprint of the table's previous probe (None: judge anyway).
        now: epoch seconds for time-based triggers (default: now).
        storage: a :class:`~lake_orchestration.io.storage.Storage` of the table to reuse (default: a new one).

    A failing listing does not raise: the probe carries ``error`` and no due service.
    """
    from lake_orchestration.errors import LakeOrchestrationError

    try:
        if storage is None:
            storage = table.storage()
        entries = list_timeline(table, storage)
    except (LakeOrchestrationError, OSError) as err:
        return TableProbe(name=table.name, fingerprint="", changed=True, error=str(err))
    fp = fingerprint((e.name, 0 if e.is_dir else e.size) for e in entries)
    if previous is not None and fp == previous:
        return TableProbe(name=table.name, fingerprint=fp, changed=False)
    now = time.time() if now is None else now
    try:
        if table.format == "paimon":
            due = _paimon_due(table)
        else:
            due = hudi_due([e.name for e in entries if not e.is_dir], table.options, now=now)
    except (LakeOrchestrationError, OSError, ValueError) as err:
        return TableProbe(name=table.name, fingerprint=fp, changed=True, error=str(err))
    return TableProbe(name=table.name, fingerprint=fp, changed=True, due=due)


def _instant_seconds(time_str: str) -> float:
    from lake_orchestration.hudi.model.instant import InstantTime

    # the instants' digits read as UTC (a LOCAL timeline is off by the UTC offset: a cheap trigger, not a clock)
    return InstantTime(time_str).to_datetime("UTC").timestamp()


def hudi_due(names: Sequence[str], options: Mapping[str, str], *, now: float) -> dict[str, Due]:
    """The services due on a Hudi table from the file names of its ``.hoodie/`` and its options."""
    from lake_orchestration.hudi.model.instant import Action
    from lake_orchestration.hudi.model.timeline import Timeline
    from lake_orchestration.hudi.services.archive.config import ArchiveConfig
    from lake_orchestration.hudi.services.clean.config import CleanConfig, CleaningPolicy, CleaningTriggerStrategy
    from lake_orchestration.hudi.services.compaction.config import CompactionConfig, TriggerStrategy

    tl = Timeline.from_file_names(names, where=HOODIE_DIR)
    completed = tl.completed()
    due: dict[str, Due] = {}

    # compaction
    comp = CompactionConfig.from_options(dict(options))
    pending_plans = list(tl.pending_compactions())
    is_mor = bool(tl.with_actions(Action.DELTA_COMMIT)) or bool(tl.with_actions(Action.COMPACTION))
    if pending_plans:
        due["compaction"] = Due(True, float(len(pending_plans)), f"{len(pending_plans)} pending compaction plan(s)")
    elif is_mor:
        last = None
        for i in tl:  # the latest compaction (completed as a commit on MOR, or requested/inflight)
            if i.action in (Action.COMMIT, Action.COMPACTION) and (i.is_completed or i.action is Action.COMPACTION):
                last = i.time
        deltas = [i for i in completed.with_actions(Action.DELTA_COMMIT) if last is None or str(i.time) > str(last)]
        n = len(deltas)
        first = deltas[0].time if deltas else None
        elapsed = (now - _instant_seconds(str(first))) if first else 0.0
        by_num = n / comp.max_delta_commits if comp.max_delta_commits else (1.0 if n else 0.0)
        by_time = elapsed / comp.max_delta_seconds if comp.max_delta_seconds else (1.0 if n else 0.0)
        strategy = comp.trigger_strategy
        if strategy is TriggerStrategy.TIME_ELAPSED:
            overdue, why = by_time, f"{elapsed:.0f}s since the first deltacommit after the last compaction"
        elif strategy is TriggerStrategy.NUM_OR_TIME:
            overdue, why = max(by_num, by_time), f"{n} deltacommits or {elapsed:.0f}s since the last compaction"
        elif strategy is TriggerStrategy.NUM_AND_TIME:
            overdue, why = min(by_num, by_time), f"{n} deltacommits and {elapsed:.0f}s since the last compaction"
        else:
            overdue, why = by_num, f"{n} deltacommits since the last compaction (trigger {comp.max_delta_commits})"
        due["compaction"] = Due(n > 0 and overdue >= 1.0, round(overdue, 3), why)
    else:
        due["compaction"] = Due(False, 0.0, "copy-on-write: no deltacommits")

    # log compaction: pending plans, or enough deltacommits that a slice may hold hoodie.log.compaction.blocks.threshold
    # log blocks: a deltacommit adds at most one block to a slice
    pending_log = list(tl.pending_log_compactions())
    if pending_log:
        due["log_compaction"] = Due(True, float(len(pending_log)), f"{len(pending_log)} pending log-compaction plan(s)")
    elif is_mor:
        log_compactions = {n.split(".", 1)[0] for n in names if n.endswith(".logcompaction.requested")}
        writes = [
            str(i.time) for i in completed.with_actions(Action.DELTA_COMMIT) if str(i.time) not in log_compactions
        ]
        last_compaction = max((str(i.time) for i in tl if i.action in (Action.COMMIT, Action.COMPACTION)), default="")
        last_log = max(log_compactions, default="")
        if last_log > last_compaction:  # the blocks it merged are one block now
            n_blocks, since = 1 + sum(1 for w in writes if w > last_log), "the last log compaction"
        elif last_compaction:  # its slices start with no block
            n_blocks, since = sum(1 for w in writes if w > last_compaction), "the last compaction"
        else:  # the first deltacommit wrote the base files
            n_blocks, since = max(0, len(writes) - 1), "the first write"
        threshold = comp.log_compaction_blocks_threshold
        overdue = n_blocks / threshold if threshold else 0.0
        due["log_compaction"] = Due(
            n_blocks >= threshold > 0,
            round(overdue, 3),
            f"up to {n_blocks} log blocks per slice since {since} (hoodie.log.compaction.blocks.threshold {threshold})",
        )
    else:
        due["log_compaction"] = Due(False, 0.0, "copy-on-write: no log files")

    due["clustering"] = _clustering_due(tl, options)

    # clean
    clean = CleanConfig.from_options(dict(options))
    pending_cleans = [i for i in tl.with_actions(Action.CLEAN) if not i.is_completed]
    commits = list(completed.with_actions(Action.COMMIT, Action.DELTA_COMMIT, Action.REPLACE_COMMIT))
    last_clean = completed.with_actions(Action.CLEAN).last
    since = [c for c in commits if last_clean is None or str(c.time) > str(last_clean.time)]
    if pending_cleans:
        due["clean"] = Due(True, float(len(pending_cleans)), f"{len(pending_cleans)} pending clean(s) to finish")
    else:
        by_trigger = len(since) / clean.max_commits
        if clean.trigger_strategy is not CleaningTriggerStrategy.NUM_COMMITS:  # pragma: no cover - one strategy
            by_trigger = 1.0 if since else 0.0
        if clean.policy in (CleaningPolicy.KEEP_LATEST_COMMITS, CleaningPolicy.KEEP_LATEST_BY_HOURS):
            eligible, why = _keep_latest_commits_work(tl, clean, last_clean, len(since), now=now)
        else:  # KEEP_LATEST_FILE_VERSIONS: a file group with more versions than retained
            eligible, why = _keep_latest_file_versions_work(tl, clean, last_clean, is_mor=is_mor)
        due["clean"] = Due(eligible and by_trigger >= 1.0, round(by_trigger if eligible else 0.0, 3), why)

    # archive
    due["archive"] = _archive_due(tl, ArchiveConfig.from_options(dict(options)), is_mor=is_mor)
    return due


def _clustering_due(tl: Any, options: Mapping[str, str]) -> Due:
    """Clustering: off unless ``hoodie.clustering.async.enabled``; then pending replacecommits, or the async trigger
    (``hoodie.clustering.async.max.commits`` completed commits since the last completed replacecommit)."""
    from lake_orchestration.hudi.model.instant import Action
    from lake_orchestration.hudi.services.clustering.config import ClusteringConfig

    cfg = ClusteringConfig.from_options(dict(options))
    if not cfg.async_enabled:
        return Due(False, 0.0, "clustering off (hoodie.clustering.async.enabled is not true)")
    pending = [i for i in tl.with_actions(Action.REPLACE_COMMIT) if not i.is_completed]
    if pending:
        return Due(True, float(len(pending)), f"{len(pending)} pending replacecommit(s) (clustering plans)")
    completed = tl.completed()
    last = completed.with_actions(Action.REPLACE_COMMIT).last
    n = sum(
        1
        for i in completed.with_actions(Action.COMMIT, Action.DELTA_COMMIT)
        if last is None or str(i.time) > str(last.time)
    )
    threshold = cfg.async_max_commits
    overdue = n / threshold if threshold else float(n > 0)
    since = f"since replacecommit {last.time}" if last is not None else "(no clustering yet)"
    return Due(
        n > 0 and overdue >= 1.0,
        round(overdue, 3),
        f"{n} commit(s) {since} (hoodie.clustering.async.max.commits {threshold})",
    )


def _archive_due(tl: Any, arch: Any, *, is_mor: bool) -> Due:
    """Archival from the timeline, with the archiver's own timeline rules (``HoodieTimelineArchiver
    .getCommitInstantsToArchive`` as :mod:`lake_orchestration.hudi.services.archive.planner` has them): more completed
    commits than ``hoodie.keep.max.commits`` (raised to what the cleaner retains), and at least one of them archivable:
    before the oldest pending write, the first savepoint and, on merge-on-read, the deltacommits a compaction still
    needs. Not judged here (they need file reads): the clustering bound of the last clean's plan and the metadata
    table's compaction bound; when they hold everything back, the archive run is a no-op."""
    from lake_orchestration.hudi.model.instant import WRITE_ACTIONS, Action
    from lake_orchestration.hudi.services.archive.planner import (
        COMMIT_ACTIONS,
        min_and_max_to_keep,
        oldest_instant_to_retain_for_compaction,
    )
    from lake_orchestration.hudi.services.compaction.config import TriggerStrategy

    commits = list(tl.with_actions(*COMMIT_ACTIONS).completed())
    lo, hi, _ectr = min_and_max_to_keep(tl, arch)
    n = len(commits)
    overdue = round(n / hi, 3) if hi else 0.0
    if n <= hi:
        return Due(False, overdue, f"{n} completed commits <= hoodie.keep.max.commits {hi}")
    bounds = []
    pending = tl.filter(lambda i: i.action in WRITE_ACTIONS and not i.is_completed).first
    if pending is not None:
        bounds.append(str(pending.time))
    savepoint = tl.with_actions(Action.SAVEPOINT).completed().first
    if savepoint is not None and not arch.archive_beyond_savepoint:
        bounds.append(str(savepoint.time))
    if is_mor and arch.compaction_trigger in (TriggerStrategy.NUM_COMMITS, TriggerStrategy.NUM_AND_TIME):
        keep = oldest_instant_to_retain_for_compaction(tl, arch.max_delta_commits)
        if keep is not None:
            bounds.append(str(keep.time))
    limit = min(bounds, default=None)
    archivable = [c for c in commits if limit is None or str(c.time) < limit][: max(0, n - lo)]
    if not archivable:
        return Due(
            False,
            0.0,
            f"{n} completed commits > {hi}, none archivable yet (pending work, a savepoint or a "
            "compaction still needs them)",
        )
    return Due(True, overdue, f"{n} completed commits on the active timeline > hoodie.keep.max.commits {hi}")


def _keep_latest_file_versions_work(tl: Any, clean: Any, last_clean: Any, *, is_mor: bool) -> tuple[bool, str]:
    """Whether a ``KEEP_LATEST_FILE_VERSIONS`` clean has a slice to delete, from the timeline alone: a file group
    gets a version from the write that creates it and one per ``commit``/``replacecommit`` that rewrites it (a
    merge-on-read deltacommit only adds log files). After a clean every group holds at most
    ``hoodie.cleaner.fileversions.retained`` versions, so one such commit since then may make one more; without a
    clean, the versions can exceed it only when there are more such commits (+1 on merge-on-read: the first
    deltacommit's base files) than retained."""
    from lake_orchestration.hudi.model.instant import Action

    rewrites = [str(i.time) for i in tl.completed().with_actions(Action.COMMIT, Action.REPLACE_COMMIT)]
    if last_clean is not None:
        new = [t for t in rewrites if t > str(last_clean.time)]
        return bool(new), f"{len(new)} commit(s) wrote new file versions since the last clean"
    versions = len(rewrites) + (1 if is_mor else 0)
    keep = clean.file_versions_retained
    return versions > keep, f"up to {versions} versions of a file group (hoodie.cleaner.fileversions.retained {keep})"


def _keep_latest_commits_work(
    tl: Any, clean: Any, last_clean: Any, since: int, *, now: float | None = None
) -> tuple[bool, str]:
    """Whether a ``KEEP_LATEST_COMMITS`` (or ``KEEP_LATEST_BY_HOURS``) clean has a file slice to delete, from the
    timeline alone.

    The cleaner deletes a slice when a newer slice of its file group has a base instant before the earliest commit
    to retain (ECTR; Hudi's ``CleanPlanner.getFilesToCleanKeepingLatestCommits`` keeps every slice at or after the
    ECTR and the last one before it). New slices of existing file groups come from ``commit`` and ``replacecommit``
    instants (a copy-on-write write, a compaction, a clustering); a merge-on-read deltacommit only adds log files.
    So there is work when such an instant lies between the ECTR of the last clean (computed as the cleaner did, over
    the instants before it) and today's ECTR (the cleaner's own ``earliest_commit_to_retain``);
    without a clean, any such instant but the table's first write.
    """
    import pendulum

    from lake_orchestration.hudi.model.instant import Action
    from lake_orchestration.hudi.model.timeline import Timeline
    from lake_orchestration.hudi.services.clean import earliest_commit_to_retain

    # by hours: counted back from now, and from the last clean's instant for the ECTR it had (timeline timezone LOCAL,
    # Hudi's default and the writers'; the cleaner reads hoodie.table.timeline.timezone: a cheap trigger reads no file)
    local = str(pendulum.local_timezone().name)
    at = pendulum.from_timestamp(now, tz=local) if now is not None else None
    ectr = earliest_commit_to_retain(tl, clean, now=at)
    if ectr is None:
        return False, (
            f"{len(tl.completed_commits())} completed commits: none older than the {clean.commits_retained} retained"
            if clean.policy.value == "KEEP_LATEST_COMMITS"
            else f"no commit in the last {clean.hours_retained}h to retain from"
        )
    if last_clean is not None:
        before = Timeline.of(i for i in tl if str(i.time) < str(last_clean.time))
        prev = earliest_commit_to_retain(before, clean, now=last_clean.time.to_datetime(local))
        low = str(prev.time) if prev is not None else ""
    else:
        first = tl.completed_commits().first
        low = str(first.time) + "~" if first is not None else ""  # after the first write (it supersedes nothing)
    slices = [
        i
        for i in tl.completed().with_actions(Action.COMMIT, Action.REPLACE_COMMIT)
        if low <= str(i.time) < str(ectr.time)
    ]
    if not slices:
        return (
            False,
            f"no new file slice before the earliest commit to retain {ectr.time} "
            f"({since} commits since the last clean)",
        )
    return True, f"{len(slices)} commit(s) wrote newer file slices before the earliest commit to retain {ectr.time}"


def _paimon_due(table: FleetTable) -> dict[str, Due]:
    """Paimon compaction: the planner's own answer on the latest snapshot (Java ``UniversalCompaction.pick`` per
    bucket: :func:`~lake_orchestration.paimon.services.compaction.plan_compaction`; it reads the snapshot and its
    manifests), measured by the most sorted runs of a bucket over ``num-sorted-run.compaction-trigger``."""
    from lake_orchestration.paimon.health import paimon_table_health
    from lake_orchestration.paimon.services.compaction import plan_compaction

    t = table.open()
    h = paimon_table_health(t)
    plan = plan_compaction(t)
    runs = h.max_sorted_runs
    by_runs = runs / h.compaction_trigger if h.compaction_trigger else 0.0
    why = (
        f"{runs} sorted runs in a bucket (num-sorted-run.compaction-trigger {h.compaction_trigger}), size "
        f"amplification {h.pending_size_amplification_percent}% (max {h.max_size_amplification_percent}%)"
    )
    if plan.is_empty:
        return {"compaction": Due(False, round(by_runs, 3), f"no bucket to compact: {why}")}
    return {"compaction": Due(True, round(max(by_runs, 1.0), 3), f"{len(plan.buckets)} bucket(s) to compact: {why}")}


def order(
    probes: Iterable[TableProbe], tables: Iterable[FleetTable], *, budget: int, busy: Iterable[str] = ()
) -> list[tuple[str, str]]:
    """``(table name, service)`` pairs to run now: the needed services by ``overdue x weight``, largest first (ties:
    the table's service order, then the name), at most one per table (none for the tables in ``busy``), at most
    ``budget`` pairs."""
    weights = {t.name: t.policy.weight for t in tables}
    services = {t.name: t.services for t in tables}
    busy_set = set(busy)
    cands: list[tuple[float, int, str, str]] = []
    for p in probes:
        if p.name in busy_set or p.name not in weights:
            continue
        for s, d in p.due.items():
            if d.needed:
                rank = services[p.name].index(s) if s in services[p.name] else 99
                cands.append((-d.overdue * weights[p.name], rank, p.name, s))
    cands.sort()
    out: list[tuple[str, str]] = []
    taken: set[str] = set()
    for _score, _rank, name, service in cands:
        if len(out) >= budget:
            break
        if name in taken:
            continue
        taken.add(name)
        out.append((name, service))
    return out
