"""Compaction scheduling beside writers in multi-writer mode: Java's ``ScheduleCompactionActionExecutor`` refuses a
plan while a write is pending before its instant only for a single writer; with
``hoodie.write.concurrency.mode=OPTIMISTIC_CONCURRENCY_CONTROL`` (or the LAZY failed-writes policy) it schedules, and
the pending write fails its own conflict check if it touched a planned file group."""

from __future__ import annotations

from pathlib import Path

import pytest

from lake_orchestration.errors import PlanError
from lake_orchestration.hudi.model.instant import Action, Instant, State
from lake_orchestration.hudi.services.compaction import CompactionConfig, run_compaction, schedule_compaction
from lake_orchestration.hudi.table import HudiTable
from tests.oracle import REWRITTEN_BY_SERVICES, assert_same_rows, hudi_rs_snapshot
from tests.trips import trips_options, write_trips_history


@pytest.mark.parametrize(
    "writers",
    [
        {"hoodie.write.concurrency.mode": "optimistic_concurrency_control"},
        {"hoodie.cleaner.policy.failed.writes": "LAZY"},
    ],
    ids=["occ", "lazy"],
)
def test_schedule_beside_a_pending_write_only_in_multi_writer_mode(tmp_path: Path, writers: dict[str, str]) -> None:
    path = tmp_path / "t"
    write_trips_history(path, trips_options(), rows=200, upserts=2, fraction=0.3)
    before = hudi_rs_snapshot(path)
    t = HudiTable(str(path))
    pending = t.create_requested(Instant(t.new_instant_time(), Action.DELTA_COMMIT, State.REQUESTED))
    single = CompactionConfig.from_options({"hoodie.compact.inline.max.delta.commits": "1"})
    with pytest.raises(PlanError, match="OPTIMISTIC_CONCURRENCY_CONTROL") as err:
        schedule_compaction(HudiTable(str(path)), config=single)
    assert str(pending.time) in str(err.value)
    assert not HudiTable(str(path)).timeline.pending_compactions()

    multi = CompactionConfig.from_options({"hoodie.compact.inline.max.delta.commits": "1", **writers})
    assert multi.multi_writer
    scheduled = schedule_compaction(HudiTable(str(path)), config=multi)
    assert scheduled.instant is not None and scheduled.instant > str(pending.time)
    (result,) = run_compaction(HudiTable(str(path)), instant_time=str(scheduled.instant), config=multi)
    assert result.operations > 0
    tl = HudiTable(str(path)).timeline
    assert tl.get(str(pending.time)) is not None, "the pending write is left to its writer"
    assert_same_rows(hudi_rs_snapshot(path), before, ignore=REWRITTEN_BY_SERVICES)
