"""A log compaction overtaken by a write while it executes: nothing committed, the next run leaves those slices out.

The executor leaves out the file groups a write reached after the plan was made; a write that lands between that
check and the merged file (here: the check made blind, the write done before execution) is caught by the commit,
which refuses; rolled back and executed again, the plan leaves the overtaken slices out and deletes stay deleted.
(Java as the oracle for the same story: tests/java/test_format_findings.py.)
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pytest

from lake_orchestration.errors import InvalidInstantStateError
from lake_orchestration.hudi.model.properties import TableType
from lake_orchestration.hudi.services.compaction import CompactionConfig
from lake_orchestration.hudi.services.log_compaction import (
    commit_log_compaction,
    execute_log_compaction,
    executor,
    run_log_compaction,
    schedule_log_compaction,
)
from lake_orchestration.hudi.table import HudiTable, read_snapshot_table
from lake_orchestration.hudi.write import WriteOptions, write_table
from tests.oracle import assert_same_rows, hudi_rs_snapshot
from tests.tables import generated_table

CFG = CompactionConfig(log_compaction_blocks_threshold=2)


def test_commit_refuses_a_log_compaction_overtaken_while_it_executed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = generated_table(tmp_path, deltas=3)
    sched = schedule_log_compaction(HudiTable(str(path)), config=CFG)
    assert sched.scheduled, sched.reason
    instant = str(sched.instant)
    fids = {op.file_id for op in sched.plan.operations}
    snap = read_snapshot_table(HudiTable(str(path)))
    in_plan = snap.filter(
        pc.is_in(pc.utf8_slice_codeunits(snap.column("_hoodie_file_name"), 0, 38), pa.array(sorted(fids)))
    )
    first = min(in_plan.column("_hoodie_commit_time").to_pylist())  # the bulk insert: rows updated since are in logs
    victims = in_plan.filter(pc.greater(in_plan.column("_hoodie_commit_time"), first))
    victims = victims.slice(0, 5)
    assert victims.num_rows == 5
    opts = WriteOptions(
        table_name="t",
        table_type=TableType.MERGE_ON_READ,
        record_key_fields=("uuid",),
        partition_fields=("city",),
        precombine_field="ts",
        hive_style_partitioning=True,
    )
    write_table(str(path), victims.select(["uuid", "city", "ts"]), operation="delete", options=opts)
    expected = read_snapshot_table(HudiTable(str(path)))
    assert expected.num_rows == snap.num_rows - 5

    with monkeypatch.context() as m:  # the executor's check ran before the delete landed
        m.setattr(executor, "overtaking_log_files", lambda table, plan: {})
        execution = execute_log_compaction(HudiTable(str(path)), instant, config=CFG)
    with pytest.raises(InvalidInstantStateError, match="another write added log files"):
        commit_log_compaction(HudiTable(str(path)), execution, config=CFG)

    heartbeat = path / ".hoodie" / ".heartbeat" / instant  # the refused attempt is dead: no need to wait
    if heartbeat.exists():
        old = time.time() - 3600
        os.utime(heartbeat, (old, old))
    md = run_log_compaction(HudiTable(str(path)), instant, config=CFG)
    hit = set(pc.utf8_slice_codeunits(victims.column("_hoodie_file_name"), 0, 38).to_pylist())
    assert not ({s.fileId for s in md.write_stats()} & hit)
    assert_same_rows(read_snapshot_table(HudiTable(str(path))), expected)
    assert_same_rows(hudi_rs_snapshot(path), expected)
