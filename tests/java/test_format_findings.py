"""Format-review findings on log compaction, each proven against Java Hudi 0.15 (the oracle).

One Java-written MOR history (partitioned; insert, upsert, delete, upsert) is log-compacted by us once per module;
each cell takes a private copy of the state it needs:

* Java reads our log-compacted table (snapshot = the model); each merged log file has one data and at most one
  delete block, as ``HoodieAppendHandle`` writes them.
* We do not plan a compacted slice again where Java would not: on the same table state, our plan lists exactly the
  slices Java's inline log compaction (``hoodie.log.compaction.inline``) plans, with the same operation fields
  (``bootstrapFilePath`` null for a slice that is not a bootstrap skeleton, as Java writes it).
* A plan overtaken by a later Java delete: executed after the delete, nothing the delete removed comes back, for
  Java, our reader and hudi-rs (the overtaken slices are left out of the log compaction).
* The layout Java's own log compaction leaves when overtaken (the merged block in a log file after the delete's):
  our reader and hudi-rs apply the merged block in instant order; Java's Spark snapshot reader, which reads blocks
  in file order (``scanInternalV1``), brings the deleted rows back -- pinned here as Java 0.15's behaviour.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pytest

from lake_orchestration.hudi.log.log_format import LogBlockType, iter_blocks
from lake_orchestration.hudi.model.avro import CompactionPlan
from lake_orchestration.hudi.model.commit_metadata import CommitMetadata
from lake_orchestration.hudi.model.instant import Action, Instant, InstantTime, State
from lake_orchestration.hudi.model.properties import TableType
from lake_orchestration.hudi.services.compaction import CompactionConfig
from lake_orchestration.hudi.services.log_compaction import committer as lc_committer
from lake_orchestration.hudi.services.log_compaction import (
    executor,
    read_log_compaction_plan,
    run_log_compaction,
    schedule_log_compaction,
)
from lake_orchestration.hudi.table.hudi_table import HudiTable
from lake_orchestration.hudi.table.snapshot import read_snapshot_table
from tests.java.harness import JavaHudi
from tests.java.interop import PARTITIONED, JavaTable, assert_rows_equal, java_read, java_write, trips
from tests.oracle import hudi_rs_snapshot

pytestmark = [pytest.mark.java]

MOR = TableType.MERGE_ON_READ
THRESHOLD = 3
"""``hoodie.log.compaction.blocks.threshold``: the history gives most file groups three log blocks."""
CONFIG = CompactionConfig.from_options({"hoodie.log.compaction.blocks.threshold": str(THRESHOLD)})


@dataclass
class Compacted:
    """The Java history after our log compaction: the table (read-only) and the log compaction's metadata."""

    table: JavaTable
    instant: str
    plan: CompactionPlan
    metadata: CommitMetadata


@pytest.fixture(scope="module")
def planned(java_histories, tmp_path_factory: pytest.TempPathFactory) -> tuple[JavaTable, str, CompactionPlan]:  # type: ignore[no-untyped-def]
    """The Java history with our log compaction plan (requested, not executed; read-only: copy it)."""
    t = java_histories(PARTITIONED, MOR).copy(tmp_path_factory.mktemp("lc-planned") / "t")
    result = schedule_log_compaction(HudiTable(str(t.path)), config=CONFIG)
    assert result.instant is not None and result.plan is not None, result
    return t, str(result.instant), result.plan


@pytest.fixture(scope="module")
def compacted(planned, tmp_path_factory: pytest.TempPathFactory) -> Compacted:  # type: ignore[no-untyped-def]
    """The planned table with the plan executed and committed by us (read-only: copy it)."""
    t, instant, plan = planned
    t = t.copy(tmp_path_factory.mktemp("lc-done") / "t")
    md = run_log_compaction(HudiTable(str(t.path)), instant, config=CONFIG)
    return Compacted(t, instant, plan, md)


def _copy(t: JavaTable, dest: Path) -> JavaTable:
    return t.copy(dest)


def _block_types(path: Path) -> list[LogBlockType]:
    return [b.block_type for b in iter_blocks(path.read_bytes())]


def _ops(plan: CompactionPlan) -> dict[tuple[str, str], tuple[object, ...]]:
    """Operation fields per file group that Java and we must agree on (metrics aside)."""
    return {
        (op.partition_path or "", op.file_id or ""): (
            op.base_instant_time,
            op.data_file_path,
            tuple(op.delta_file_paths or ()),
            op.bootstrap_file_path,
        )
        for op in plan.operations or ()
    }


def _assert_all_read(java: JavaHudi, t: JavaTable, what: str) -> None:
    """Java's snapshot, our reader and hudi-rs all equal the model."""
    assert_rows_equal(java_read(java, t), t.expected(), f"Java's snapshot {what}")
    assert_rows_equal(read_snapshot_table(HudiTable(str(t.path))), t.expected(), f"our snapshot {what}")
    rs = hudi_rs_snapshot(t.path)
    assert rs is not None
    assert_rows_equal(rs, t.expected(), f"hudi-rs {what}")


@pytest.mark.interop(
    direction="Java writes → our service → Java reads",
    table="MOR partitioned",
    service="log compaction",
    checks="snapshot = model; one data + at most one delete block per merged file (HoodieAppendHandle)",
)
def test_java_reads_our_log_compaction_one_delete_block(java_hudi: JavaHudi, compacted: Compacted) -> None:
    c = compacted
    stats = c.metadata.write_stats()
    assert stats and len(stats) == len(c.plan.operations or ()), "every planned slice is merged"
    assert any(s.numDeletes for s in stats), "the history's deletes reach the merged blocks"
    for s in stats:
        kinds = _block_types(c.table.path / s.path)
        assert kinds.count(LogBlockType.AVRO_DATA_BLOCK) <= 1 and kinds.count(LogBlockType.DELETE_BLOCK) <= 1, (
            s.path,
            kinds,
        )
        assert kinds.count(LogBlockType.DELETE_BLOCK) == (1 if s.numDeletes else 0), (s.path, kinds)
    _assert_all_read(java_hudi, c.table, "after our log compaction")


@pytest.mark.interop(
    direction="Java writes → our service → Java reads",
    table="MOR partitioned",
    service="log compaction (plan)",
    checks="after our log compaction we plan no slice again; on the next state our plan = Java's inline plan "
    "(same slices, files, bootstrapFilePath null)",
)
def test_log_compaction_plan_equals_javas(java_hudi: JavaHudi, compacted: Compacted, tmp_path: Path) -> None:
    # 1. right after our log compaction: every slice has at most its merged blocks (1-2) below the threshold
    again = _copy(compacted.table, tmp_path / "again")
    result = schedule_log_compaction(HudiTable(str(again.path)), config=CONFIG)
    assert result.instant is None, f"a log-compacted slice planned again: {result.plan}"

    # 2. Java writes on top with inline log compaction: it plans (and runs) the slices it finds eligible
    t = _copy(compacted.table, tmp_path / "java")
    base = java_read(java_hudi, t)
    some = base.filter(pc.is_in(base.column("uuid"), pa.array(base.column("uuid").to_pylist()[::7])))
    update = some.select(list(t.schema.names)).cast(t.schema)
    update = update.set_column(
        update.schema.get_field_index("ts"), "ts", pc.add(update.column("ts"), pa.scalar(10**7, pa.int64()))
    )
    java_write(
        java_hudi,
        t,
        update,
        "upsert",
        **{"hoodie.log.compaction.inline": "true", "hoodie.log.compaction.blocks.threshold": str(THRESHOLD)},
    )
    hoodie = t.path / ".hoodie"
    java_lc = sorted(p.name.split(".")[0] for p in hoodie.glob("*.logcompaction.requested"))
    java_lc = [i for i in java_lc if i != compacted.instant]
    assert len(java_lc) == 1, f"Java planned no log compaction of its own: {sorted(p.name for p in hoodie.iterdir())}"
    lc = java_lc[0]
    java_plan = read_log_compaction_plan(HudiTable(str(t.path)), lc)
    _assert_all_read(java_hudi, t, "after Java's log compaction on top of ours")

    # 3. the state Java planned on: its log compaction's files removed from a copy; our plan on it = Java's
    pre = tmp_path / "pre"
    shutil.copytree(t.path, pre)
    done = HudiTable(str(t.path)).read_model(
        Instant(InstantTime(lc), Action.DELTA_COMMIT, State.COMPLETED), CommitMetadata
    )
    for s in done.write_stats():
        (pre / s.path).unlink()
    for name in (f"{lc}.logcompaction.requested", f"{lc}.logcompaction.inflight", f"{lc}.deltacommit"):
        (pre / ".hoodie" / name).unlink()
    ours = schedule_log_compaction(HudiTable(str(pre)), config=CONFIG)
    assert ours.plan is not None, f"we plan nothing where Java planned {_ops(java_plan)}"
    assert _ops(ours.plan) == _ops(java_plan)
    assert all(op.bootstrap_file_path is None for op in ours.plan.operations or ())


@pytest.mark.interop(
    direction="Java writes → our service → Java reads",
    table="MOR partitioned",
    service="log compaction (plan overtaken)",
    checks="plan made, Java deletes rows of its slices, plan executed: no deleted row comes back "
    "(Java snapshot, our reader, hudi-rs)",
)
def test_log_compaction_overtaken_by_a_java_delete(java_hudi: JavaHudi, planned, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    t0, instant, plan = planned
    t = _copy(t0, tmp_path / "t")
    planned_ids = {op.file_id for op in plan.operations or ()}
    snap = read_snapshot_table(HudiTable(str(t.path)))
    fids = pc.utf8_slice_codeunits(snap.column("_hoodie_file_name"), 0, 38)
    # rows whose latest version is in the merged log blocks (updated after the insert): the ones the merged block
    # would bring back if it were applied after their delete
    first = t.instants[0].split(".")[0]
    in_plan = snap.filter(
        pc.and_(pc.is_in(fids, pa.array(sorted(planned_ids))), pc.greater(snap.column("_hoodie_commit_time"), first))
    ).slice(0, 12)
    assert in_plan.num_rows == 12
    victims = in_plan.select(list(t.schema.names)).cast(t.schema)
    hit = set(pc.utf8_slice_codeunits(in_plan.column("_hoodie_file_name"), 0, 38).to_pylist())
    java_write(java_hudi, t, victims, "delete")
    java_write(java_hudi, t, trips(10, seed=77), "upsert")  # a later write elsewhere too

    md = run_log_compaction(HudiTable(str(t.path)), instant, config=CONFIG)
    merged = {s.fileId for s in md.write_stats()}
    assert not (merged & hit), f"slices overtaken by the delete were merged after it: {sorted(merged & hit)}"
    assert merged, "the slices no later write touched are still merged"
    _assert_all_read(java_hudi, t, "after a log compaction overtaken by a delete")
    # the left-out slices are planned again, with every block
    again = schedule_log_compaction(HudiTable(str(t.path)), config=CONFIG)
    assert again.plan is not None and hit <= {op.file_id for op in again.plan.operations or ()}


@pytest.mark.interop(
    direction="Java writes → our service → Java reads",
    table="MOR partitioned",
    service="log compaction (merged block after a later delete)",
    checks="the file layout Java's own log compaction leaves when overtaken: our reader and hudi-rs apply the merged "
    "block where its instants were (= model); Java's Spark snapshot (scanInternalV1) brings the deleted rows back",
)
def test_merged_block_after_a_later_delete_read_in_instant_order(
    java_hudi: JavaHudi,
    planned,  # type: ignore[no-untyped-def]
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    t0, instant, plan = planned
    t = _copy(t0, tmp_path / "t")
    planned_ids = {op.file_id for op in plan.operations or ()}
    snap = read_snapshot_table(HudiTable(str(t.path)))
    fids = pc.utf8_slice_codeunits(snap.column("_hoodie_file_name"), 0, 38)
    first = t.instants[0].split(".")[0]
    updated = snap.filter(
        pc.and_(pc.is_in(fids, pa.array(sorted(planned_ids))), pc.greater(snap.column("_hoodie_commit_time"), first))
    ).slice(0, 12)
    java_write(java_hudi, t, updated.select(list(t.schema.names)).cast(t.schema), "delete")
    # Java's LogCompactionExecutionHelper executes an overtaken plan as it is: the merged block (bounded by the plan
    # instant) goes into a new log file, after the delete's. Our executor without its guard writes the same layout.
    monkeypatch.setattr(executor, "overtaking_log_files", lambda table, plan: {})
    monkeypatch.setattr(lc_committer, "overtaking_log_files", lambda table, plan: {})  # and its commit-time twin
    run_log_compaction(HudiTable(str(t.path)), instant, config=CONFIG)

    assert_rows_equal(read_snapshot_table(HudiTable(str(t.path))), t.expected(), "our snapshot")
    rs = hudi_rs_snapshot(t.path)
    assert rs is not None
    assert_rows_equal(rs, t.expected(), "hudi-rs")
    java = java_read(java_hudi, t)
    back = set(java.column("uuid").to_pylist()) & set(updated.column("uuid").to_pylist())
    assert java.num_rows == len(t.expected()) + updated.num_rows and len(back) == updated.num_rows, (
        "Java 0.15's snapshot reader no longer reads a merged block after a later delete in file order: "
        f"{java.num_rows} rows, {len(back)} deleted ones back"
    )
