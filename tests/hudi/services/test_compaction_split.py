"""Execute-plan and commit as two steps (the Dagster graph's two ops): execute writes only the new base files and
their markers (the plan inflight), commit writes only ``<instant>.commit`` from the typed write stats, a repeated
commit is a no-op, a failed commit is retried alone, and a commit of an attempt another process took over refuses."""

from __future__ import annotations

import pickle
from pathlib import Path

import pytest

from lake_orchestration.errors import InvalidInstantStateError
from lake_orchestration.hudi.model.instant import Action, State
from lake_orchestration.hudi.services.compaction import (
    CompactionExecution,
    commit_execution,
    execute_plan,
    executor,
    run_compaction,
    schedule_compaction,
)
from lake_orchestration.hudi.services.rollback.compaction import rollback_inflight_compaction
from lake_orchestration.hudi.table import HudiTable
from lake_orchestration.hudi.table.heartbeat import heartbeat_path
from tests.hudi.services.test_compaction import _assert_compacted
from tests.oracle import REWRITTEN_BY_SERVICES, assert_same_rows, hudi_rs_snapshot
from tests.tables import generated_table


def _executed(tmp_path: Path) -> tuple[Path, str, CompactionExecution]:
    path = generated_table(tmp_path, deltas=3)
    instant = str(schedule_compaction(HudiTable(str(path)), force=True).instant)
    return path, instant, execute_plan(HudiTable(str(path)), instant)


def _base_files(path: Path, instant: str) -> set[str]:
    return {str(p.relative_to(path)) for p in path.rglob(f"*_{instant}.parquet")}


def test_compaction_execute_plan_writes_files_and_markers_only_then_commit_completes(tmp_path: Path) -> None:
    path = generated_table(tmp_path, deltas=3)
    before = hudi_rs_snapshot(path)
    instant = str(schedule_compaction(HudiTable(str(path)), force=True).instant)
    execution = execute_plan(HudiTable(str(path)), instant)
    t = HudiTable(str(path))
    assert t.timeline.get(instant, Action.COMPACTION).state is State.INFLIGHT
    assert not (path / ".hoodie" / f"{instant}.commit").exists()
    assert execution.operations == len(execution.stats) > 0
    assert _base_files(path, instant) == {s.path for s in execution.stats}
    marker_dir = path / ".hoodie" / ".temp" / instant
    markers = {str(p.relative_to(marker_dir)).rsplit(".marker.", 1)[0] for p in marker_dir.rglob("*.marker.*")}
    assert markers == {s.path for s in execution.stats}
    assert_same_rows(hudi_rs_snapshot(path), before)  # nothing committed: readers see the table as before
    # the commit step in another "process": a fresh table and the execution as Dagster's IO manager hands it over
    result = commit_execution(HudiTable(str(path)), pickle.loads(pickle.dumps(execution)))
    assert not result.already_committed
    assert result.rows_written == execution.rows_written and result.operations == execution.operations
    assert not (path / ".hoodie" / ".temp" / instant).exists()
    assert not (path / ".hoodie" / ".heartbeat" / instant).exists()
    _assert_compacted(path, instant, before)
    assert_same_rows(hudi_rs_snapshot(path), before, ignore=REWRITTEN_BY_SERVICES)


def test_compaction_commit_twice_second_is_noop(tmp_path: Path) -> None:
    path, instant, execution = _executed(tmp_path)
    first = commit_execution(HudiTable(str(path)), execution)
    commit_file = path / ".hoodie" / f"{instant}.commit"
    written = commit_file.read_bytes()
    listing = sorted(p.name for p in (path / ".hoodie").iterdir())
    second = commit_execution(HudiTable(str(path)), execution)
    assert second.already_committed and not first.already_committed
    assert commit_file.read_bytes() == written
    assert sorted(p.name for p in (path / ".hoodie").iterdir()) == listing
    assert sorted(s.path for s in second.stats) == sorted(s.path for s in first.stats)


def test_compaction_failed_commit_retried_alone_without_executing_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path, instant, execution = _executed(tmp_path)
    before_files = _base_files(path, instant)

    def no_execution(task):  # type: ignore[no-untyped-def]
        raise AssertionError("the commit executed an operation")

    monkeypatch.setattr(executor, "execute_operation", no_execution)
    real = HudiTable.transition_to_completed

    def failing(self, inflight, content=b""):  # type: ignore[no-untyped-def]
        raise OSError("store unavailable (test)")

    monkeypatch.setattr(HudiTable, "transition_to_completed", failing)
    with pytest.raises(OSError, match="store unavailable"):
        commit_execution(HudiTable(str(path)), execution)
    assert HudiTable(str(path)).timeline.get(instant, Action.COMPACTION).state is State.INFLIGHT
    monkeypatch.setattr(HudiTable, "transition_to_completed", real)
    result = commit_execution(HudiTable(str(path)), execution)
    assert not result.already_committed
    assert _base_files(path, instant) == before_files
    done = HudiTable(str(path)).timeline.get(instant, Action.COMMIT)
    assert done is not None and done.is_completed


def test_compaction_commit_of_an_attempt_taken_over_refuses_and_commits_nothing(tmp_path: Path) -> None:
    path, instant, execution = _executed(tmp_path)
    t = HudiTable(str(path))
    # another process judged the attempt dead (its heartbeat expired) and rolled it back
    t.storage.delete_file(heartbeat_path(t.storage, instant))
    rollback_inflight_compaction(t, instant)
    with pytest.raises(InvalidInstantStateError, match="not committed by this process"):
        commit_execution(HudiTable(str(path)), execution)
    t = HudiTable(str(path))
    assert t.timeline.get(instant, Action.COMPACTION).state is State.REQUESTED
    assert not (path / ".hoodie" / f"{instant}.commit").exists()


def test_compaction_in_process_scans_each_log_side_once_snapshot_unchanged(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The check before the plan goes inflight decodes every log block; in process, the execution reuses what it
    decoded (within hoodie.memory.compaction.max.size) instead of reading and decoding the logs a second time."""
    path = generated_table(tmp_path, deltas=3)
    before = hudi_rs_snapshot(path)
    instant = str(schedule_compaction(HudiTable(str(path)), force=True).instant)
    scans: list[str] = []
    real = executor.scan_blocks

    def counting(storage, log_files, flt):  # type: ignore[no-untyped-def]
        scans.extend(lf.file_id for lf in log_files[:1])
        return real(storage, log_files, flt)

    monkeypatch.setattr(executor, "scan_blocks", counting)
    (result,) = run_compaction(HudiTable(str(path)), instant_time=instant)
    assert result.log_records > 0
    assert sorted(scans) == sorted(set(scans)), "a log side was scanned twice"
    _assert_compacted(path, instant, before)


def test_compaction_plan_verbs_are_a_noop_on_a_committed_plan(tmp_path: Path) -> None:
    """The verbs the shells call: execute then commit (pickled between them), or both at once; on a committed plan
    each is a no-op (``already_committed``) that lists nothing new and builds no engine; an unknown plan raises."""
    from lake_orchestration.errors import InstantNotFoundError
    from lake_orchestration.hudi.services.compaction import (
        commit_compaction_plan,
        execute_compaction_plan,
        run_compaction_plan,
    )

    path = generated_table(tmp_path, deltas=3)
    instant = str(schedule_compaction(HudiTable(str(path)), force=True).instant)
    executed = execute_compaction_plan(HudiTable(str(path)), instant)
    assert executed.execution is not None and not executed.already_committed
    done = commit_compaction_plan(HudiTable(str(path)), pickle.loads(pickle.dumps(executed)))
    assert done.result is not None and not done.result.already_committed
    assert done.to_json_obj()["already_committed"] is False
    listing = sorted(p.name for p in (path / ".hoodie").iterdir())

    def no_engine():  # type: ignore[no-untyped-def]
        raise AssertionError("no engine for a no-op")

    again = execute_compaction_plan(HudiTable(str(path)), instant, make_engine=no_engine)
    assert again.already_committed and again.execution is None
    assert commit_compaction_plan(HudiTable(str(path)), again) == again
    run = run_compaction_plan(HudiTable(str(path)), instant, make_engine=no_engine)
    assert run.to_json_obj() == {"instant": instant, "already_committed": True}
    assert sorted(p.name for p in (path / ".hoodie").iterdir()) == listing
    with pytest.raises(InstantNotFoundError, match="no pending compaction plan"):
        run_compaction_plan(HudiTable(str(path)), "20200101000000000")
