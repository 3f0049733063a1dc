"""Rolling back an inflight clustering attempt: delete the new base files the attempt wrote, revert the plan to
requested, so it is executed again (the clustering service calls this for a crashed attempt; nothing here imports
that service).

Java 0.15 does the same before executing a clustering plan found inflight (``rollbackInflightClustering``: a
rollback instant whose ``instantToRollback`` is the replacecommit, the files of the attempt deleted, then
``<instant>.replacecommit.inflight`` deleted and ``.requested`` kept); a pending clustering is otherwise never rolled
back by a writer's rollback of failed writes. The attempt's files are new file groups: they are found by their
markers (``.hoodie/.temp/<instant>``, created before each file) and by listing the plan's partitions for base files
of the clustering instant (no other writer writes at that instant). An attempt whose heartbeat is fresh is live and
never rolled back.
"""

from __future__ import annotations

import time
from contextlib import nullcontext

from lake_orchestration.errors import InstantInProgressError, InvalidInstantStateError
from lake_orchestration.hudi.model.avro import InstantInfo, RollbackPlan, RollbackRequest
from lake_orchestration.hudi.model.file_group import BaseFile, is_base_file_name
from lake_orchestration.hudi.model.instant import Action, Instant, InstantTime, State
from lake_orchestration.hudi.services.rollback.committer import commit_rollback, rollback_metadata
from lake_orchestration.hudi.services.rollback.config import RollbackConfig
from lake_orchestration.hudi.services.rollback.planner import pending_rollback_of
from lake_orchestration.hudi.table.clustering import requested_replace
from lake_orchestration.hudi.table.heartbeat import attempt_liveness
from lake_orchestration.hudi.table.hudi_table import HudiTable
from lake_orchestration.hudi.table.lock import table_lock
from lake_orchestration.hudi.table.marker import delete_markers, list_markers
from lake_orchestration.io.hadoop_paths import base_path_form, storage_path_of


def clustering_attempt_files(table: HudiTable, instant: InstantTime | str) -> dict[str, list[str]]:
    """Partition -> storage paths of the base files the clustering attempt ``instant`` wrote (markers and a listing
    of the plan's partitions)."""
    instant = InstantTime(instant, where=table.base_uri)
    st = table.storage
    out: dict[str, set[str]] = {}
    for m in list_markers(st, instant):
        if is_base_file_name(m.name):
            path = st.join(m.partition, m.name)
            if st.exists(path):
                out.setdefault(m.partition, set()).add(path)
    partitions: set[str] = set(out)
    md = requested_replace(table, Instant(instant, Action.REPLACE_COMMIT, State.REQUESTED))
    plan = md.clustering_plan if md is not None else None
    for g in (plan.input_groups or ()) if plan is not None else ():
        partitions.update(s.partition_path or "" for s in g.slices or ())
    for p in partitions:
        for f in st.list_dir(st.join(p)):
            if (
                not f.is_dir
                and is_base_file_name(f.name)
                and BaseFile.parse(f.name, partition_path=p).instant == instant
            ):
                out.setdefault(p, set()).add(st.join(p, f.name))
    return {p: sorted(v) for p, v in sorted(out.items())}


def rollback_inflight_clustering(
    table: HudiTable,
    instant: InstantTime | str,
    *,
    dry_run: bool = False,
    config: RollbackConfig | None = None,
    check_liveness: bool = True,
) -> Instant | None:
    """Roll back the inflight attempt of clustering ``instant``; returns the completed rollback instant (None for a
    dry run, which writes and deletes nothing).

    Args:
        config: the table lock, the heartbeats, ``hoodie.metadata.enable`` (Hudi's defaults).
        check_liveness: refuse an attempt whose heartbeat is fresh; ``False`` only for a caller that judged it under
            the table lock it holds.

    Raises:
        InvalidInstantStateError: the clustering is not inflight.
        InstantInProgressError: its heartbeat is fresh: another process is executing it.
        TableLockedError: another process holds the table lock (``config.lock``).
    """
    instant = InstantTime(instant, where=table.base_uri)
    cfg = config or RollbackConfig()
    with (
        nullcontext() if dry_run else table_lock(table, operation=f"rollback of clustering {instant}", config=cfg.lock)
    ):
        table.refresh()
        cur = table.timeline.get(instant, Action.REPLACE_COMMIT)
        if cur is None or cur.action is not Action.REPLACE_COMMIT or cur.state is not State.INFLIGHT:
            raise InvalidInstantStateError(
                table.base_uri, instant, "is not an inflight clustering; nothing to roll back"
            )
        if check_liveness:
            hb = cfg.heartbeat
            liveness = attempt_liveness(
                table.storage,
                instant,
                inflight_path=table.instant_path(cur),
                interval_ms=hb.interval_ms,
                tolerable_misses=hb.tolerable_misses,
            )
            if liveness.alive:
                raise InstantInProgressError(
                    table.base_uri,
                    instant,
                    f"clustering {instant} is being executed by another process: {liveness.describe()}; it is rolled "
                    "back only once the heartbeat expired",
                )
        table.ensure_metadata_table_handled(
            cfg.metadata_options(), service="rollback", dry_run=dry_run, keeps_change_log=True
        )
        files = clustering_attempt_files(table, instant)
        if dry_run:
            return None
        return _roll_back(table, cur, files)


def _roll_back(table: HudiTable, inflight: Instant, files: dict[str, list[str]]) -> Instant:
    st = table.storage
    instant = inflight.time
    resumed = pending_rollback_of(table, instant)  # a rollback of this attempt that crashed half-way
    start = time.monotonic()
    if resumed is None:
        rplan = RollbackPlan(
            instant_to_rollback=InstantInfo(commit_time=instant, action=Action.REPLACE_COMMIT.value),
            rollback_requests=tuple(
                RollbackRequest(
                    partition_path=p,
                    file_id="",
                    latest_base_instant="",
                    files_to_be_deleted=tuple(base_path_form(st, f) for f in fs),
                    log_blocks_to_be_deleted={},
                )
                for p, fs in sorted(files.items())
            ),
            version=1,
        )
        rb_req = table.create_requested(
            Instant(table.new_instant_time(), Action.ROLLBACK, State.REQUESTED), rplan.to_bytes()
        )
    else:
        rb_req = resumed[0]
        for req in resumed[1].rollback_requests or ():
            for full in req.files_to_be_deleted:
                path = storage_path_of(st, full)
                if path is not None and path not in files.get(req.partition_path, []):
                    files.setdefault(req.partition_path, []).append(path)
    rb_inflight = (
        table.transition_to_inflight(Instant(rb_req.time, Action.ROLLBACK, State.REQUESTED))
        if rb_req.state is State.REQUESTED
        else rb_req
    )
    deleted: dict[str, list[str]] = {}
    for p, paths in files.items():
        for path in paths:
            st.delete_file(path, missing_ok=True)
            deleted.setdefault(p, []).append(base_path_form(st, path))
    delete_markers(st, instant)
    meta = rollback_metadata(str(rb_inflight.time), start, instant, Action.REPLACE_COMMIT.value, deleted=deleted)
    done = commit_rollback(table, rb_inflight, meta)
    # last, back to requested (Java's order): a crash before this leaves it inflight, rolled back again next time
    st.delete_file(table.instant_path(inflight), missing_ok=True)
    table.refresh()
    return done
