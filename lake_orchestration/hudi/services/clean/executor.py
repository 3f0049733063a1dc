"""Clean execution: requested -> inflight (the plan's bytes) -> delete the planned files; returns the clean metadata
to commit (:mod:`.committer` writes the completed ``<ts>.clean``).

Mirrors Hudi 0.14/0.15 ``CleanActionExecutor``: a pending clean is re-executed from its plan (a file already gone
counts as deleted, so a crashed clean converges). Deletes run in parallel: on Spark (one task per batch of files) or
in a local thread pool.
"""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from lake_orchestration.engines.base import Engine
from lake_orchestration.engines.local import or_local
from lake_orchestration.errors import InvalidInstantStateError, PlanError, StorageError
from lake_orchestration.hudi.model.avro import CleanerPlan, CleanMetadata, CleanPartitionMetadata
from lake_orchestration.hudi.model.file_group import is_base_file_name, is_log_file_name
from lake_orchestration.hudi.model.instant import Action, Instant, InstantTime, State
from lake_orchestration.hudi.services.attempt import InstantAttempt
from lake_orchestration.hudi.services.clean.config import CleanConfig
from lake_orchestration.hudi.services.clean.planner import planned_file_names
from lake_orchestration.hudi.table import HudiTable
from lake_orchestration.hudi.table.lock import table_lock
from lake_orchestration.io.storage import Storage

CLEAN_METADATA_VERSION = 2
_FILES_PER_TASK = 500
_LOCAL_THREADS = 8


@dataclass(frozen=True)
class DeleteResult:
    partition: str
    name: str
    deleted: bool


def planned_files(table: HudiTable, plan: CleanerPlan, *, where: str) -> list[tuple[str, str]]:
    """(partition, storage path) of every file of the plan, each checked to be a data file of that partition.

    Raises:
        PlanError: a path outside the table, outside its partition, or not a base/log file name — nothing is
            deleted then.
    """
    out: list[tuple[str, str]] = []
    st = table.storage
    for partition, infos in (plan.file_paths_to_be_deleted_per_partition or {}).items():
        for info in infos:
            full = info.file_path or ""
            rel = _relative_to_table(st, full)
            parent, _, name = rel.rpartition("/")
            if not rel or parent != partition.strip("/") or not (is_base_file_name(name) or is_log_file_name(name)):
                raise PlanError(
                    f"{where}: planned path {full!r} of partition {partition!r} is not a base or log file of that "
                    f"partition under {table.base_uri}; refusing to clean"
                )
            out.append((partition, st.join(rel)))
    return out


def _relative_to_table(st: Storage, full: str) -> str:
    """``full`` (a path or URI as Hudi writes it) relative to the table base path, or ``""`` if outside."""
    path = full
    for prefix in ("file://", "file:"):
        if st.is_local and path.startswith(prefix):
            path = path[len(prefix) :]
            break
    candidates = [path]
    if "://" in path:
        rest = path.split("://", 1)[1]
        # s3://bucket/key -> bucket/key; hdfs://namenode:8020/path -> /path (the authority is not in the path)
        candidates = [rest, "/" + rest.partition("/")[2]]
    base = st.base_path.rstrip("/") + "/"
    for c in candidates:
        if c.startswith(base):
            return c[len(base) :]
    return ""


def _delete(st: Storage, partition: str, path: str) -> DeleteResult:
    name = path.rsplit("/", 1)[-1]
    try:
        st.delete_file(path, missing_ok=True)  # already gone (a resumed clean) counts as deleted
        return DeleteResult(partition, name, True)
    except StorageError:
        return DeleteResult(partition, name, not st.exists(path))


@dataclass(frozen=True, kw_only=True)
class DeleteTask:
    """A batch of files of one table to delete: a typed engine task (see :mod:`lake_orchestration.engines.base`)."""

    base_uri: str
    storage_options: dict[str, Any] = field(default_factory=dict, repr=False)
    """Storage options (secrets: never shown in a repr, never encoded as data)."""
    files: tuple[tuple[str, str], ...]
    """``(partition, path)`` of each file."""


def delete_batch(task: DeleteTask) -> list[DeleteResult]:
    """Engine task: delete a batch of files; one result per file."""
    st = Storage(task.base_uri, options=task.storage_options)
    return [_delete(st, part, path) for part, path in task.files]


def delete_files(
    table: HudiTable, files: list[tuple[str, str]], *, engine: Engine | None = None, parallelism: int = 200
) -> list[DeleteResult]:
    """Delete ``(partition, path)`` files in parallel: on a thread pool in this process when ``engine`` is in-process
    (the default; deletes wait on storage, not on the CPU), else engine tasks of up to 500 files."""
    if not files:
        return []
    engine = or_local(engine)
    if engine.in_process:
        with ThreadPoolExecutor(max_workers=min(_LOCAL_THREADS, parallelism, len(files))) as pool:
            return list(pool.map(lambda f: _delete(table.storage, *f), files))
    per_task = max(_FILES_PER_TASK, -(-len(files) // parallelism))
    tasks = [
        DeleteTask(base_uri=table.base_uri, storage_options=table.storage.options, files=tuple(files[i : i + per_task]))
        for i in range(0, len(files), per_task)
    ]
    return engine.map_tasks(delete_batch, tasks, description=f"clean of {table.base_uri}: delete files")


def clean_metadata(
    instant_time: str, plan: CleanerPlan, results: Iterable[DeleteResult], *, took_ms: int
) -> CleanMetadata:
    """``CleanerUtils.convertCleanMetadata``: one partition entry per planned partition."""
    ok: dict[str, list[str]] = defaultdict(list)
    failed: dict[str, list[str]] = defaultdict(list)
    for r in results:
        (ok if r.deleted else failed)[r.partition].append(r.name)
    parts = {
        p: CleanPartitionMetadata(
            partition_path=p,
            policy=plan.policy,
            delete_path_patterns=tuple(names),
            success_delete_files=tuple(sorted(ok.get(p, ()))),
            failed_delete_files=tuple(sorted(failed.get(p, ()))),
            is_partition_deleted=p in (plan.partitions_to_be_deleted or ()),
        )
        for p, names in sorted(planned_file_names(plan).items())
    }
    ectr = plan.earliest_instant_to_retain
    return CleanMetadata(
        start_clean_time=instant_time,
        time_taken_in_millis=took_ms,
        total_files_deleted=sum(len(v) for v in ok.values()),
        earliest_commit_to_retain=ectr.timestamp if ectr is not None else "",
        last_completed_commit_timestamp=plan.last_completed_commit_timestamp or "",
        partition_metadata=parts,
        version=CLEAN_METADATA_VERSION,
        bootstrap_partition_metadata={},
        extra_metadata=dict(plan.extra_metadata) if plan.extra_metadata else None,
    )


@dataclass(frozen=True, kw_only=True)
class CleanExecution:
    """What executing a clean plan did: the metadata to commit and the attempt that did it (plain values: it
    pickles, so the commit may run in another process)."""

    instant: InstantTime
    """The clean instant."""
    metadata: CleanMetadata
    """``HoodieCleanMetadata`` of the deletes (written by the commit)."""
    attempt: bytes
    """Content of the heartbeat ``.hoodie/.heartbeat/<instant>`` this attempt wrote: the commit checks that the
    heartbeat is still this attempt's."""

    @property
    def deleted(self) -> int:
        """Files deleted (or already gone)."""
        return self.metadata.total_files_deleted

    @property
    def failed(self) -> int:
        """Files that could not be deleted."""
        return failed_deletes(self.metadata)

    def to_json_obj(self) -> dict[str, Any]:
        """The execution as JSON (e.g. the metadata of a Dagster clean-execute step); the attempt token stays out."""
        return {"instant": self.instant, "deleted": self.deleted, "failed": self.failed}


def failed_deletes(metadata: CleanMetadata) -> int:
    """Files a clean could not delete (its metadata's ``failedDeleteFiles``)."""
    return sum(len(pm.failed_delete_files) for pm in metadata.partition_metadata.values())


def execute_clean_plan(
    table: HudiTable,
    instant_time: InstantTime | str,
    *,
    engine: Engine | None = None,
    config: CleanConfig | None = None,
    refresh: bool = True,
) -> CleanExecution:
    """Execute the pending clean ``instant_time``: delete its planned files; the instant is left inflight for
    :func:`~lake_orchestration.hudi.services.clean.committer.commit_clean`.

    The heartbeat is no longer refreshed once this returns (the commit checks it is still this attempt's, then
    deletes it); :func:`execute_clean_attempt` keeps it beating for a commit in the same process.

    Raises:
        As :func:`execute_clean_attempt`.
    """
    instant_time = InstantTime(instant_time, where=table.base_uri)
    execution, attempt = execute_clean_attempt(table, instant_time, engine=engine, config=config, refresh=refresh)
    attempt.give_up()
    return execution


def execute_clean_attempt(
    table: HudiTable,
    instant_time: InstantTime | str,
    *,
    engine: Engine | None = None,
    config: CleanConfig | None = None,
    refresh: bool = True,
) -> tuple[CleanExecution, InstantAttempt]:
    """:func:`execute_clean_plan`, returning the attempt (:class:`InstantAttempt`) with its heartbeat still beating:
    the caller commits (passing it to :func:`~lake_orchestration.hudi.services.clean.committer.commit_clean`, which
    stops it).

    ``config`` (default: Hudi's): ``parallelism`` (delete tasks), ``lock`` and ``heartbeat``. The deletes run without
    the table lock; the decision to execute (with the requested -> inflight transition) holds it. From that decision
    the clean keeps a heartbeat ``.hoodie/.heartbeat/<instant>`` holding a token of this attempt, so a second run of
    the same pending clean refuses while it is fresh instead of executing it twice at once. On failure it is deleted,
    so a retry may start at once (deletes are idempotent). ``refresh=False`` keeps the timeline the table holds (a
    caller that has just listed it): the checks before the lock read it, and everything is checked again on a fresh
    listing under the lock.

    Raises:
        InstantInProgressError: another process is executing this clean (fresh heartbeat); nothing was deleted.
        InvalidInstantStateError: no pending clean at that time, or another process completed it meanwhile.
        PlanError: the plan names a file outside its partition (nothing deleted).
        TableLockedError: another process holds the table lock past ``hoodie.write.lock.wait_time_ms``.
        InvalidInstantTimeError: ``instant_time`` is not an instant time (nothing is read or written).
    """
    instant_time = InstantTime(instant_time, where=table.base_uri)
    cfg = config or CleanConfig()
    if refresh:
        table.refresh()
    table.ensure_metadata_table_handled(None, service="clean")
    cur = table.timeline.get(instant_time, Action.CLEAN)
    if cur is None or cur.action is not Action.CLEAN:
        raise InvalidInstantStateError(table.base_uri, instant_time, "is not a clean instant on the active timeline")
    if cur.is_completed:
        raise InvalidInstantStateError(table.base_uri, instant_time, "is a completed clean")
    req = Instant(cur.time, Action.CLEAN, State.REQUESTED)
    raw = table.read_instant(req)
    plan = table.read_model(req, CleanerPlan)
    files = planned_files(table, plan, where=table.storage.uri(table.instant_path(req)))
    start = time.monotonic()
    attempt = clean_attempt(table, cur.time, cfg)
    with table_lock(table, operation=f"clean {cur.time}", config=cfg.lock):
        cur = table.refresh().timeline.get(instant_time, Action.CLEAN)
        if cur is None or cur.is_completed:
            raise InvalidInstantStateError(table.base_uri, instant_time, "was completed by another process meanwhile")
        attempt.claim(cur, raw)  # a live attempt refused; the inflight clean of a dead one is executed again
    try:
        results = delete_files(table, files, engine=engine, parallelism=cfg.parallelism)
        md = clean_metadata(str(cur.time), plan, results, took_ms=int((time.monotonic() - start) * 1000))
    except BaseException:
        attempt.give_up(release=True)  # deletes are idempotent: a retry may start at once
        raise
    return CleanExecution(instant=cur.time, metadata=md, attempt=attempt.token), attempt


def clean_attempt(
    table: HudiTable, instant: InstantTime, cfg: CleanConfig, token: bytes | None = None
) -> InstantAttempt:
    """The attempt at clean ``instant`` (``token``: an executed one's, to commit it)."""
    return InstantAttempt(
        table,
        instant,
        action=Action.CLEAN,
        what="clean",
        interval_ms=cfg.heartbeat.interval_ms,
        tolerable_misses=cfg.heartbeat.tolerable_misses,
        lock=cfg.lock,
        token=token,
    )
