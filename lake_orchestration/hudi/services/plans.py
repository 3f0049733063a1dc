"""The verbs the shells call on one plan of a table service (plan -> execute -> commit), the same for every
service: :func:`execute_one_plan` (execute only; Paimon's ``execute``) then :func:`commit_one_plan` (two steps,
e.g. two Dagster ops), or :func:`run_one_plan` (both in this process, the heartbeat kept until the commit). Each is
a no-op on a plan already committed (:class:`PlanRun`, its ``already_committed``), so no shell checks it first.

A service takes part with a :class:`PlanService` (its name in messages and logs, how its timeline says a plan is
committed or pending, and its execute / commit / execute-and-commit steps); its own module keeps its public verbs
(e.g. :func:`~lake_orchestration.hudi.services.compaction.service.execute_compaction_plan`) as thin definitions over
these."""

from __future__ import annotations

import json
import logging
import time
from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from typing import Any, Generic, Protocol, TypeVar

from lake_orchestration.engines.base import Engine
from lake_orchestration.errors import InstantInProgressError, InstantNotFoundError
from lake_orchestration.hudi.model.commit_metadata import CommitMetadata, WriteStat
from lake_orchestration.hudi.model.instant import Instant, InstantTime
from lake_orchestration.hudi.model.schema import META_FIELDS
from lake_orchestration.hudi.services.attempt import InstantAttempt
from lake_orchestration.hudi.table.commit import after_commit, commit_section
from lake_orchestration.hudi.table.hudi_table import HudiTable
from lake_orchestration.hudi.table.lock import LockConfig
from lake_orchestration.hudi.table.marker import delete_markers, reconcile_markers


class _Json(Protocol):
    def to_json_obj(self) -> dict[str, Any]: ...


class _Result(_Json, Protocol):
    already_committed: bool


class _Pending(Protocol):
    time: Any


C = TypeVar("C")
"""The service's config (e.g. ``CompactionConfig``)."""
E = TypeVar("E", bound=_Json)
"""The service's execution: the write stats to commit (e.g. ``CompactionExecution``)."""
R = TypeVar("R", bound=_Result)
"""The service's committed result (e.g. ``CompactionResult``)."""


@dataclass(frozen=True, kw_only=True)
class PlanService(Generic[C, E, R]):
    """What the plan verbs need of one table service."""

    name: str
    """The service's name in messages and logs (``compaction``, ``clustering``)."""
    log: logging.Logger
    """The logger the verbs log to (the service module's, so log records keep their logger name)."""
    is_committed: Callable[[HudiTable, InstantTime], bool]
    """Whether the plan ``instant`` is committed on the timeline the table holds."""
    pending_instants: Callable[[HudiTable], Iterable[_Pending]]
    """The service's pending plans (requested or inflight) on the timeline the table holds."""
    execute_plan: Callable[..., E]
    """Execute-plan only: ``(table, instant, *, config, engine) -> execution``."""
    commit_execution: Callable[..., R]
    """Commit an execution: ``(table, execution, *, config) -> result``."""
    execute_and_commit: Callable[..., R]
    """Both steps in this process, the heartbeat kept until the commit: ``(table, instant, *, config, engine)``."""


@dataclass(frozen=True, kw_only=True)
class PlanRun:
    """What a verb on one plan did (plain values: it pickles, so the commit may run in another process, e.g. a
    Dagster op). Exactly one of: ``execution`` (executed, to commit), ``result`` (committed here),
    ``already_committed`` (committed before this call: nothing done), ``skipped`` (another process executes it)."""

    instant: str
    """The plan's instant."""
    execution: Any | None = None
    """The write stats of the new files, to commit (:func:`commit_one_plan`)."""
    result: Any | None = None
    """The committed plan (its ``already_committed``: an earlier try committed it, its answer lost)."""
    already_committed: bool = False
    """The plan was committed before this call: nothing was done."""
    skipped: str = ""
    """Why the plan was not executed (another process executes it: its heartbeat is fresh), or empty."""

    def to_json_obj(self) -> dict[str, Any]:
        """The committed result's JSON plus ``already_committed``; an execution not committed yet: its JSON plus
        ``committed: false``; for a no-op, the instant and why."""
        if self.result is not None:
            return {**self.result.to_json_obj(), "already_committed": self.result.already_committed}
        if self.execution is not None:
            return {**self.execution.to_json_obj(), "committed": False}
        if self.already_committed:
            return {"instant": self.instant, "already_committed": True}
        return {"instant": self.instant, "skipped": self.skipped}


def execute_and_commit_here(
    execute: Callable[[], tuple[Any, InstantAttempt]], commit: Callable[[Any, Callable[[], None]], R]
) -> R:
    """Execute-plan then commit in this process, the plan's heartbeat kept from before the requested -> inflight
    transition until the commit: ``execute()`` claims the plan and returns its execution and the attempt (its
    heartbeat beating); ``commit(execution, verify)`` commits it (``verify``: the attempt's check, in the commit
    section, that the plan is still this process's and every written file exists). The heartbeat is deleted once
    the commit is written, else left to expire. The result's ``seconds``: the wall time of both steps."""
    t0 = time.monotonic()
    execution, attempt = execute()
    committed = False
    try:
        result = commit(execution, attempt.verify(list(execution.stats)))
        committed = True
    finally:
        attempt.heartbeat.stop(delete=committed)
    result.seconds = time.monotonic() - t0  # type: ignore[attr-defined]
    return result


def _noop(service: PlanService[Any, Any, Any], table: HudiTable, instant: InstantTime) -> PlanRun | None:
    """The no-op of a plan already committed on the timeline the table holds (a table just opened), or None.

    Raises:
        InstantNotFoundError: neither committed nor pending (rolled back, or never scheduled).
    """
    if service.is_committed(table, instant):
        service.log.info(
            "%s %s of %s is already committed: nothing to do", service.name.capitalize(), instant, table.base_uri
        )
        return PlanRun(instant=str(instant), already_committed=True)
    if str(instant) not in {str(i.time) for i in service.pending_instants(table)}:
        raise InstantNotFoundError(table.base_uri, instant, f"no pending {service.name} plan")
    return None


def _engine(engine: Engine | None, make_engine: Callable[[], Engine] | None) -> Engine | None:
    return make_engine() if make_engine is not None else engine


def _one_plan(
    service: PlanService[C, E, R],
    table: HudiTable,
    instant: InstantTime | str,
    step: Callable[[InstantTime], PlanRun],
) -> PlanRun:
    """``step`` on the plan ``instant`` unless it is a no-op: committed before (or meanwhile, by another process),
    or executed by another process (``skipped``)."""
    t = InstantTime(instant, where=f"{table.base_uri}: {service.name} instant")
    noop = _noop(service, table, t)
    if noop is not None:
        return noop
    try:
        return step(t)
    except InstantInProgressError as err:
        service.log.warning("Skipping %s %s: %s", service.name, t, err.detail)
        return PlanRun(instant=str(t), skipped=err.detail)
    except InstantNotFoundError:
        if service.is_committed(table.refresh(), t):  # committed by another process meanwhile: a no-op
            return PlanRun(instant=str(t), already_committed=True)
        raise


def execute_one_plan(
    service: PlanService[C, E, R],
    table: HudiTable,
    instant: InstantTime | str,
    *,
    config: C | None = None,
    engine: Engine | None = None,
    make_engine: Callable[[], Engine] | None = None,
) -> PlanRun:
    """Execute-plan only: a plan already committed is a no-op (``already_committed``), a plan another process
    executes is ``skipped``; else the :class:`PlanRun` holds the execution for :func:`commit_one_plan`.
    ``make_engine``: builds the engine when the plan is executed (so no Spark session starts for a no-op); else
    ``engine``.

    Raises:
        InstantNotFoundError: no pending plan ``instant`` and no commit of it.
    """
    return _one_plan(
        service,
        table,
        instant,
        lambda t: PlanRun(
            instant=str(t),
            execution=service.execute_plan(table, t, config=config, engine=_engine(engine, make_engine)),
        ),
    )


def commit_one_plan(
    service: PlanService[C, E, R], table: HudiTable, executed: PlanRun, *, config: C | None = None
) -> PlanRun:
    """Commit the execution of :func:`execute_one_plan`; a no-op run (already committed, skipped) is returned as it
    is."""
    if executed.execution is None:
        return executed
    return replace(executed, result=service.commit_execution(table, executed.execution, config=config))


def run_one_plan(
    service: PlanService[C, E, R],
    table: HudiTable,
    instant: InstantTime | str,
    *,
    config: C | None = None,
    engine: Engine | None = None,
    make_engine: Callable[[], Engine] | None = None,
) -> PlanRun:
    """Execute and commit the plan ``instant`` in this process, a no-op on a plan already committed
    (``already_committed``) and on one another process executes (``skipped``). ``make_engine``: as
    :func:`execute_one_plan`.

    Raises:
        InstantNotFoundError: no pending plan ``instant`` and no commit of it.
    """
    return _one_plan(
        service,
        table,
        instant,
        lambda t: PlanRun(
            instant=str(t),
            result=service.execute_and_commit(table, t, config=config, engine=_engine(engine, make_engine)),
        ),
    )


# -- committing what a plan wrote -----------------------------------------------------------------------------------
def plan_commit_metadata(
    stats: list[WriteStat], extra_metadata: dict[str, str] | None, writer_schema: dict[str, Any], **fields: Any
) -> CommitMetadata:
    """The completed instant's commit metadata of a plan that rewrote file groups (compaction, clustering): the write
    stats by partition, the plan's extra metadata plus ``schema`` (the writer schema without the meta fields, as
    Java records it), and the service's own ``fields`` (``compacted``, ``operation_type``,
    ``partition_to_replace_file_ids``)."""
    by_partition: dict[str, list[WriteStat]] = defaultdict(list)
    for s in stats:
        by_partition[s.partitionPath or ""].append(s)
    user = dict(writer_schema)
    user["fields"] = [f for f in writer_schema["fields"] if f["name"] not in META_FIELDS]
    extra = dict(extra_metadata or {})
    extra["schema"] = json.dumps(user, separators=(",", ":"))
    return CommitMetadata(partition_to_write_stats=dict(by_partition), extra_metadata=extra, **fields)


def commit_plan_files(
    table: HudiTable,
    inflight: Instant,
    metadata: CommitMetadata,
    *,
    service: str,
    lock: LockConfig | None = None,
    verify: Callable[[], None] | None = None,
) -> Instant:
    """Complete ``inflight`` with ``metadata`` under the table lock: ``verify`` (e.g. the attempt is still this
    process's; raises, nothing written), files with a marker but no write stat (failed task attempts) deleted, the
    completed file written through the commit path (the ambiguous-write rule), the markers removed after. Once the
    completed file exists the instant is committed: a failure of what follows is a warning (commit_section), never
    an error inviting a second execution."""
    instant = inflight.time
    with commit_section(table, operation=f"{service} commit {instant}", lock=lock) as section:
        if verify is not None:
            verify()
        reconcile_markers(table.storage, instant, {s.path for s in metadata.write_stats() if s.path})
        section.complete(inflight, metadata.to_bytes(), what=f"{service} {instant}")
        after_commit(section.completed, "deleting the markers", lambda: delete_markers(table.storage, instant))
    assert section.completed is not None
    return section.completed
