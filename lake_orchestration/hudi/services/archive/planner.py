"""Which instants archival moves off the active timeline. Mirrors ``HoodieTimelineArchiver.getInstantsToArchive``
(0.14/0.15) with ``ArchivalUtils.getMinAndMaxInstantsToKeep``, ``CleanerUtils.getEarliestCommitToRetain``,
``CompactionUtils.getOldestInstantToRetainForCompaction`` and ``ClusteringUtils.getOldestInstantToRetainForClustering``.

The plan is pure: it reads the timeline (and the latest clean's plan, the metadata table's timeline; for a metadata
table, its data table's timeline: ``TimelineUtils.getEarliestInstantForMetadataArchival``) and writes nothing.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import pendulum

from lake_orchestration.config.keys import PROPERTIES_FILE
from lake_orchestration.errors import CorruptFileError, StorageError, TableNotFoundError
from lake_orchestration.hudi.model.avro import CleanerPlan, CleanMetadata
from lake_orchestration.hudi.model.instant import (
    WRITE_ACTIONS,
    Action,
    Instant,
    InstantTime,
    State,
    is_instant_file_suffix,
)
from lake_orchestration.hudi.model.properties import TableType
from lake_orchestration.hudi.model.timeline import Timeline
from lake_orchestration.hudi.services.archive.config import ArchiveConfig
from lake_orchestration.hudi.services.clean.planner import cleaner_earliest_commit_to_retain
from lake_orchestration.hudi.services.compaction.config import TriggerStrategy
from lake_orchestration.hudi.table import HudiTable

log = logging.getLogger(__name__)

#: ``getCommitsTimeline``: the actions whose completed instants count as "commits" for archival.
COMMIT_ACTIONS = (Action.COMMIT, Action.DELTA_COMMIT, Action.REPLACE_COMMIT)
METADATA_TABLE_DIR = "metadata"


@dataclass(frozen=True, kw_only=True)
class ArchivePlan:
    """What one archival run moves to the archived timeline."""

    instants: tuple[Instant, ...]
    """Chosen instants (latest state of each): cleans and rollbacks first, then commits, oldest first."""
    files: tuple[Instant, ...]
    """Every timeline state file of the chosen instants, in the order they are archived."""
    min_instants_to_keep: int
    """``hoodie.keep.min.commits`` after the cleaner adjustment."""
    max_instants_to_keep: int
    """``hoodie.keep.max.commits`` after the cleaner adjustment."""
    earliest_commit_to_retain: InstantTime | None
    """The cleaner's earliest commit to retain under the configured policy (drives the adjustment), if any."""

    def __bool__(self) -> bool:
        return bool(self.files)

    def to_json_obj(self) -> dict[str, Any]:
        """The plan as JSON: the fields ``lake-orch archive --json`` prints for it."""
        return {
            "archived_instants": [str(i) for i in self.instants],
            "archived_files": [f.file_name for f in self.files],
            "min_instants_to_keep": self.min_instants_to_keep,
            "max_instants_to_keep": self.max_instants_to_keep,
            "earliest_commit_to_retain": (
                str(self.earliest_commit_to_retain) if self.earliest_commit_to_retain is not None else None
            ),
        }


def raw_instants(table: HudiTable) -> list[Instant]:
    """Every timeline state file of ``.hoodie/`` (requested, inflight and completed), sorted, from the listing the
    table's timeline was built from (refresh the table first for a new one)."""
    out = []
    for name in table.timeline_file_names():
        if name.startswith("."):
            continue
        if is_instant_file_suffix(name.partition(".")[2]):
            out.append(Instant.from_file_name(name, where=table.storage.uri(table.hoodie_dir)))
    return sorted(out)


def earliest_commit_to_retain(timeline: Timeline, config: ArchiveConfig) -> InstantTime | None:
    """``ArchivalUtils.getEarliestCommitToRetain``: the cleaner's rule on the commits timeline (commit, deltacommit,
    replacecommit), by hours counted back from the latest completed commit."""
    commits = timeline.with_actions(*COMMIT_ACTIONS)
    latest = commits.completed().last
    ectr = cleaner_earliest_commit_to_retain(
        commits,
        config.cleaner_policy,
        commits_retained=config.cleaner_commits_retained,
        hours_retained=config.cleaner_hours_retained,
        latest=latest.time.to_datetime() if latest is not None else pendulum.now("UTC"),
    )
    return ectr.time if ectr is not None else None


def min_and_max_to_keep(timeline: Timeline, config: ArchiveConfig) -> tuple[int, int, InstantTime | None]:
    """``ArchivalUtils.getMinAndMaxInstantsToKeep``: never archive a commit the cleaner still retains."""
    ectr = earliest_commit_to_retain(timeline, config)
    lo, hi = config.min_commits, config.max_commits
    if ectr is not None:
        completed = timeline.with_actions(*COMMIT_ACTIONS).completed()
        based_on_cleaning = sum(1 for i in completed if i.time > ectr) + 2
        if lo < based_on_cleaning:
            log.warning(
                "The archival configs (min %d, max %d) are more aggressive than cleaning (earliest commit to "
                "retain %s): keeping min %d, max %d",
                lo,
                hi,
                ectr,
                based_on_cleaning,
                based_on_cleaning + hi - lo,
            )
            return based_on_cleaning, based_on_cleaning + hi - lo, ectr
    return lo, hi, ectr


def oldest_instant_to_retain_for_compaction(timeline: Timeline, max_delta_commits: int) -> Instant | None:
    """``CompactionUtils.getOldestInstantToRetainForCompaction``: keep enough deltacommits to trigger compaction."""
    last_compaction = timeline.with_actions(Action.COMMIT, Action.REPLACE_COMMIT).completed().last
    deltas = timeline.with_actions(Action.DELTA_COMMIT)  # every state, as getDeltaCommitTimeline
    if last_compaction is not None:
        since = [i for i in deltas if i.time > last_compaction.time]
        anchor: Instant = last_compaction
    elif deltas:
        since = list(deltas)
        anchor = since[0]
    else:
        return None
    if len(since) < max_delta_commits:
        return anchor
    return since[len(since) - max_delta_commits]


def _latest_clean_retain_bound(table: HudiTable, timeline: Timeline) -> str | None:
    """Lower bound of ``getOldestInstantToRetainForClustering``: the latest completed clean's plan
    ``earliestInstantToRetain`` (its ``.clean.requested``), else its metadata's ``earliestCommitToRetain``, else the
    clean instant itself (KEEP_LATEST_FILE_VERSIONS plans have none). None if there is no completed clean."""
    clean = timeline.with_actions(Action.CLEAN).completed().last
    if clean is None:
        return None
    requested = Instant(clean.time, Action.CLEAN, State.REQUESTED)
    ts: str | None = None
    if requested.file_name in table.timeline_file_names():  # the timeline's listing: no HEAD
        plan = table.read_model(requested, CleanerPlan)
        ts = plan.earliest_instant_to_retain.timestamp if plan.earliest_instant_to_retain else None
    else:
        md = table.read_model(clean, CleanMetadata)
        ts = md.earliest_commit_to_retain
    return ts or str(clean.time)


def oldest_instant_to_retain_for_clustering(table: HudiTable, timeline: Timeline) -> Instant | None:
    """``ClusteringUtils.getOldestInstantToRetainForClustering``: a replacecommit stays until the cleaner has
    passed it (its replaced file groups are deleted), and the oldest pending one keeps the commit before it."""
    replaces = timeline.with_actions(Action.REPLACE_COMMIT)
    if not replaces:
        return None
    bound = _latest_clean_retain_bound(table, timeline)
    oldest: Instant | None
    if bound is not None:
        oldest = next((i for i in replaces if i.time >= bound), None)
    else:
        oldest = replaces.first
    pending = replaces.pending().first
    if pending is not None:
        before = [i for i in timeline.with_actions(*COMMIT_ACTIONS).completed() if i.time < pending.time]
        if before and (oldest is None or oldest > before[-1]):
            oldest = before[-1]
    return oldest


def metadata_table_compaction_bound(table: HudiTable) -> tuple[bool, str | None]:
    """``(exists, latest compaction)`` of the metadata table: archival never passes the MDT's last compaction.

    Raises:
        CorruptFileError: The metadata table exists but its properties cannot be read.
    """
    mdt_props = table.storage.join(".hoodie", METADATA_TABLE_DIR, ".hoodie", PROPERTIES_FILE)
    if not table.metadata_table_exists():
        return False, None
    try:
        mdt = HudiTable(
            table.storage.uri(table.storage.join(".hoodie", METADATA_TABLE_DIR)), storage_options=table.storage.options
        )
    except (TableNotFoundError, StorageError) as err:
        raise CorruptFileError(table.storage.uri(mdt_props), f"metadata table unreadable: {err}") from err
    last = mdt.timeline.with_actions(Action.COMMIT).completed().last
    return True, (str(last.time) if last else None)


def data_table_of(table: HudiTable) -> HudiTable | None:
    """The data table when ``table`` is a metadata table (``<base>/.hoodie/metadata``), else None."""
    suffix = f"/.hoodie/{METADATA_TABLE_DIR}"
    uri = table.base_uri.rstrip("/")
    if not uri.endswith(suffix):
        return None
    return HudiTable(uri[: -len(suffix)], storage_options=table.storage.options)


def metadata_archival_bound(data: HudiTable, *, archive_beyond_savepoint: bool) -> InstantTime | None:
    """``TimelineUtils.getEarliestInstantForMetadataArchival``: the metadata table archives nothing at or after the
    data table's first active commit (commit, deltacommit, replacecommit, any state; with
    ``hoodie.archive.beyond.savepoint`` the first one not savepointed) nor its first pending instant (any action):
    the MDT's rollback of a data instant needs that instant's MDT deltacommit active."""
    timeline = data.refresh().timeline
    commits = timeline.with_actions(*COMMIT_ACTIONS)
    if archive_beyond_savepoint:
        saved = timeline.with_actions(Action.SAVEPOINT).times()
        earliest_commit = next((i for i in commits if i.time not in saved), None)
    else:
        earliest_commit = commits.first
    earliest_pending = timeline.pending().first
    candidates = [i.time for i in (earliest_commit, earliest_pending) if i is not None]
    return min(candidates) if candidates else None


def _clean_and_rollback_to_archive(timeline: Timeline, lo: int, hi: int) -> list[Instant]:
    out: list[Instant] = []
    for action in (Action.CLEAN, Action.ROLLBACK):
        done = timeline.with_actions(action).completed().instants
        if len(done) > hi:
            out.extend(done[: len(done) - lo])
    return out


def _commits_to_archive(table: HudiTable, timeline: Timeline, config: ArchiveConfig, lo: int, hi: int) -> list[Instant]:
    commits = timeline.with_actions(*COMMIT_ACTIONS).completed().instants
    if not commits or len(commits) <= hi:
        return []
    oldest_pending = timeline.filter(lambda i: i.action in WRITE_ACTIONS and not i.is_completed).first
    oldest_commit_to_retain: Instant | None = None
    if oldest_pending is not None:
        before = [i for i in commits if i.time < oldest_pending.time]
        oldest_commit_to_retain = before[-1] if before else oldest_pending
    savepoints = timeline.with_actions(Action.SAVEPOINT).completed()
    first_savepoint = savepoints.first
    savepoint_times = savepoints.times()
    for_compaction = None
    if table.config.table_type is TableType.MERGE_ON_READ and config.compaction_trigger in (
        TriggerStrategy.NUM_COMMITS,
        TriggerStrategy.NUM_AND_TIME,
    ):
        for_compaction = oldest_instant_to_retain_for_compaction(timeline, config.max_delta_commits)
    for_clustering = oldest_instant_to_retain_for_clustering(table, timeline)

    chosen = []
    for s in commits:
        if config.archive_beyond_savepoint:
            if s.time in savepoint_times:
                continue
        elif first_savepoint is not None and first_savepoint.time <= s.time:
            continue
        if oldest_commit_to_retain is not None and not s.time < oldest_commit_to_retain.time:
            continue
        if for_compaction is not None and not s.time < for_compaction.time:
            continue
        if for_clustering is not None and not s.time < for_clustering.time:
            continue
        chosen.append(s)
    return chosen[: max(0, len(commits) - lo)]


def plan_archive(table: HudiTable, config: ArchiveConfig, *, refresh: bool = True) -> ArchivePlan:
    """Choose the instants to archive (empty plan if none).

    Args:
        table: The table.
        config: Archival settings (validated by the caller).
        refresh: List the timeline first (False: the caller has just listed it).

    Returns:
        The plan; ``files`` lists each chosen instant's requested, inflight and completed files.

    Raises:
        CorruptFileError: A clean plan or metadata-table file that the rules need cannot be read.
    """
    timeline = (table.refresh() if refresh else table).timeline
    lo, hi, ectr = min_and_max_to_keep(timeline, config)
    chosen = _clean_and_rollback_to_archive(timeline, lo, hi) + _commits_to_archive(table, timeline, config, lo, hi)
    has_mdt, mdt_compaction = metadata_table_compaction_bound(table)
    if has_mdt:
        if mdt_compaction is None:
            log.info("Not archiving: the metadata table of %s has no compaction yet", table.base_uri)
            chosen = []
        else:
            chosen = [i for i in chosen if i.time < mdt_compaction]
    data = data_table_of(table)
    if data is not None and chosen:
        bound = metadata_archival_bound(data, archive_beyond_savepoint=config.archive_beyond_savepoint)
        if bound is not None:
            chosen = [i for i in chosen if i.time < bound]
    files = expand_state_files(chosen, raw_instants(table))
    return ArchivePlan(
        instants=tuple(chosen),
        files=tuple(files),
        min_instants_to_keep=lo,
        max_instants_to_keep=hi,
        earliest_commit_to_retain=ectr,
    )


def expand_state_files(chosen: Iterable[Instant], raw: Iterable[Instant]) -> list[Instant]:
    """All state files of each chosen (time, action), grouped like ``getComparableAction`` (a compaction's
    requested/inflight go with its ``.commit``), in the chosen order, states ascending."""
    groups: dict[tuple[str, str], list[Instant]] = {}
    for r in raw:
        groups.setdefault((str(r.time), r.action.comparable.value), []).append(r)
    out: list[Instant] = []
    for c in chosen:
        out.extend(sorted(groups.get((str(c.time), c.action.comparable.value), [])))
    return out
