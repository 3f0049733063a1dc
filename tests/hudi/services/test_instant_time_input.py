"""A malformed instant given to a public service verb (``instant`` / ``--instant-time``) is refused with
:class:`InvalidInstantTimeError` naming the value and the table, before anything is written: the table's files
(every byte, the timeline, markers, heartbeats and lock files included) are the same before and after.

The verbs convert the caller's string once (``InstantTime(instant, where=<table>)``); the modules behind them take
an :class:`InstantTime`.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from lake_orchestration.datagen import generate_trips, generate_updates
from lake_orchestration.errors import InvalidInstantTimeError
from lake_orchestration.hudi.model.commit_metadata import CommitMetadata
from lake_orchestration.hudi.model.instant import Action
from lake_orchestration.hudi.services.clean import execute_clean_plan, read_plan, schedule_clean
from lake_orchestration.hudi.services.compaction import (
    commit_compaction,
    execute_compaction,
    execute_plan,
    files_to_roll_back,
    is_compaction_committed,
    load_plan,
    rollback_inflight_compaction,
    schedule_compaction,
)
from lake_orchestration.hudi.services.log_compaction import (
    execute_log_compaction,
    read_log_compaction_plan,
    rollback_log_compaction_attempt,
    run_log_compaction,
    schedule_log_compaction,
)
from lake_orchestration.hudi.services.rollback import (
    pending_rollback_of,
    plan_rollback,
    remove_unreadable_rollback,
    rollback_inflight_log_compaction,
    rollback_write,
)
from lake_orchestration.hudi.services.savepoint import create_savepoint, delete_savepoint
from lake_orchestration.hudi.table import HudiTable
from lake_orchestration.hudi.write import write_table
from tests.trips import trips_options

ROWS = generate_trips(60, partitions=2, seed=24)

# not digits; a 17-digit value that is not a calendar time (month 13); too short
MALFORMED = ["not-an-instant", "20241399120000000", "2024010112"]

Verb = Callable[[HudiTable, str], Any]

VERBS: dict[str, Verb] = {
    "compaction.schedule_compaction": lambda t, i: schedule_compaction(t, instant_time=i, force=True),
    "compaction.execute_plan": lambda t, i: execute_plan(t, i),
    "compaction.execute_compaction": lambda t, i: execute_compaction(t, i),
    "compaction.commit_compaction": lambda t, i: commit_compaction(t, i, CommitMetadata()),
    "compaction.load_plan": load_plan,
    "compaction.is_compaction_committed": is_compaction_committed,
    "compaction.files_to_roll_back": files_to_roll_back,
    "compaction.rollback_inflight_compaction": lambda t, i: rollback_inflight_compaction(t, i),
    "log_compaction.schedule_log_compaction": lambda t, i: schedule_log_compaction(t, instant_time=i),
    "log_compaction.execute_log_compaction": lambda t, i: execute_log_compaction(t, i),
    "log_compaction.run_log_compaction": lambda t, i: run_log_compaction(t, i),
    "log_compaction.read_log_compaction_plan": read_log_compaction_plan,
    "log_compaction.rollback_log_compaction_attempt": lambda t, i: rollback_log_compaction_attempt(t, i),
    "clean.schedule_clean": lambda t, i: schedule_clean(t, instant_time=i),
    "clean.execute_clean_plan": lambda t, i: execute_clean_plan(t, i),
    "clean.read_plan": read_plan,
    "rollback.rollback_write": lambda t, i: rollback_write(t, i),
    "rollback.plan_rollback": lambda t, i: plan_rollback(t, i, Action.DELTA_COMMIT),
    "rollback.pending_rollback_of": pending_rollback_of,
    "rollback.remove_unreadable_rollback": lambda t, i: remove_unreadable_rollback(t, i),
    "rollback.rollback_inflight_log_compaction": lambda t, i: rollback_inflight_log_compaction(t, i),
    "savepoint.create_savepoint": lambda t, i: create_savepoint(t, i),
    "savepoint.delete_savepoint": lambda t, i: delete_savepoint(t, i),
}


def _tree(base: Path) -> dict[str, bytes]:
    """Every file under ``base`` (relative path -> bytes)."""
    return {str(p.relative_to(base)): p.read_bytes() for p in sorted(base.rglob("*")) if p.is_file()}


@pytest.fixture(scope="module")
def mor_table(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A MERGE_ON_READ table: a bulk insert and an upsert (log files), written once for every verb."""
    path = tmp_path_factory.mktemp("instant_input") / "t"
    write_table(str(path), ROWS, operation="bulk_insert", options=trips_options(table_name="t"))
    write_table(str(path), generate_updates(ROWS, fraction=0.3, seed=7, ts_offset=1), operation="upsert")
    return path


@pytest.mark.parametrize("value", MALFORMED)
@pytest.mark.parametrize("verb", sorted(VERBS))
def test_service_verb_malformed_instant_raises_before_writing(mor_table: Path, verb: str, value: str) -> None:
    before = _tree(mor_table)
    with pytest.raises(InvalidInstantTimeError) as err:
        VERBS[verb](HudiTable(str(mor_table)), value)
    assert err.value.value == value
    assert repr(value) in str(err.value)
    assert _tree(mor_table) == before
