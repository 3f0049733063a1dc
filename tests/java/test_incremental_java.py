"""Java 0.15's incremental query is the oracle of ours: on a Java-written COW and MOR history (insert, upsert,
delete, upsert with new keys) every range returns the same records at the same versions, and on the MOR table
after our compaction a range covering only the compaction is empty for both."""

from __future__ import annotations

from pathlib import Path

import pytest

from lake_orchestration.hudi.model.properties import TableType
from lake_orchestration.hudi.services.compaction import CompactionConfig, run_compaction
from lake_orchestration.hudi.table.hudi_table import HudiTable
from lake_orchestration.hudi.table.incremental import read_incremental
from tests.java.harness import JavaHudi
from tests.java.interop import PARTITIONED, JavaTable, assert_rows_equal, instant_time, java_read, keyed_meta

pytestmark = [pytest.mark.java]


def _java_incremental(java: JavaHudi, path: Path, begin: str, end: str | None):  # type: ignore[no-untyped-def]
    opts = {"hoodie.datasource.read.begin.instanttime": begin}
    if end is not None:
        opts["hoodie.datasource.read.end.instanttime"] = end
    return java_read(java, path, "incremental", **opts)


def _ranges(times: list[str]) -> list[tuple[str, str | None]]:
    """First commit only (begin 0), a middle commit alone (the delete: deleted keys must not show), from the first
    commit to the latest (end left open)."""
    return [("0", times[0]), (times[1], times[2]), (times[0], None)]


def _compare(java: JavaHudi, path: Path, begin: str, end: str | None) -> int:
    theirs = _java_incremental(java, path, begin, end)
    ours = read_incremental(HudiTable(str(path)), begin_instant_time=begin, end_instant_time=end).table
    what = f"incremental ({begin}, {end or 'latest'}]"
    assert keyed_meta(ours) == keyed_meta(theirs), f"{what}: (partition, key, commit time) differ"
    assert_rows_equal(ours, theirs, what)
    return ours.num_rows


@pytest.mark.interop(
    direction="Java writes → our reader, Java reads",
    table="partitioned",
    service="incremental query (ours)",
    checks="ranges (first commit, a middle commit, first to latest): same records, versions and commit times as "
    "Java's incremental query",
)
@pytest.mark.parametrize("table_type", [TableType.COPY_ON_WRITE, TableType.MERGE_ON_READ], ids=["COW", "MOR"])
def test_incremental_equals_javas(java_hudi: JavaHudi, java_histories, table_type: TableType) -> None:  # type: ignore[no-untyped-def]
    t: JavaTable = java_histories(PARTITIONED, table_type)
    times = sorted({instant_time(n) for n in t.instants if n.endswith(("commit", "deltacommit"))})
    assert len(times) == 4, t.instants
    counts = [_compare(java_hudi, t.path, b, e) for b, e in _ranges(times)]
    assert counts[0] > 0 and counts[-1] > 0, counts


@pytest.mark.interop(
    direction="Java writes → our service → Java reads",
    table="MOR partitioned",
    service="compaction (ours) → incremental query",
    checks="a range covering only our compaction is empty for Java and us; a range across it equals Java's",
)
def test_incremental_across_our_compaction_equals_javas(java_hudi: JavaHudi, java_histories, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    t = java_histories(PARTITIONED, TableType.MERGE_ON_READ).copy(tmp_path / "t")
    table = HudiTable(str(t.path))
    before = {str(i.time) for i in table.timeline.completed_commits()}
    run_compaction(
        table, schedule=True, config=CompactionConfig.from_options({"hoodie.compact.inline.max.delta.commits": "1"})
    )
    after = sorted(str(i.time) for i in HudiTable(str(t.path)).timeline.completed_commits())
    (compaction,) = [x for x in after if x not in before]
    previous = max(before)
    assert _compare(java_hudi, t.path, previous, compaction) == 0
    assert _compare(java_hudi, t.path, min(before), None) > 0


@pytest.mark.interop(
    direction="Java writes → our reader, Java reads",
    table="partitioned COPY_ON_WRITE, a commit left inflight before the last one",
    service="incremental query (ours), hollow commit",
    checks="default policy FAIL: Java and we refuse ('Found hollow commit'); BLOCK: the same rows, up to the hollow "
    "commit",
)
def test_hollow_commit_policy_equals_javas(java_hudi: JavaHudi, java_histories, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    from lake_orchestration.hudi.model.instant import Action, Instant, InstantTime, State
    from lake_orchestration.hudi.table.incremental import HollowCommitError
    from tests.java.harness import JavaHudiError

    t = java_histories(PARTITIONED, TableType.COPY_ON_WRITE).copy(tmp_path / "t")
    table = HudiTable(str(t.path))
    times = sorted(str(i.time) for i in table.timeline.completed_commits())
    hole = InstantTime(str(int(times[1]) + 1))  # a concurrent writer's commit, requested before times[2]
    table.transition_to_inflight(table.create_requested(Instant(hole, Action.COMMIT, State.REQUESTED)), b"")
    with pytest.raises(JavaHudiError, match="hollow commit"):
        _java_incremental(java_hudi, t.path, "0", None)
    with pytest.raises(HollowCommitError, match=hole):
        read_incremental(HudiTable(str(t.path)), begin_instant_time="0")
    block = {"hoodie.read.timeline.holes.resolution.policy": "BLOCK"}
    theirs = java_read(java_hudi, t.path, "incremental", **{"hoodie.datasource.read.begin.instanttime": "0"}, **block)
    ours = read_incremental(HudiTable(str(t.path)), begin_instant_time="0", options=block)
    assert ours.checkpoint == times[1]
    assert keyed_meta(ours.table) == keyed_meta(theirs)
    assert_rows_equal(ours.table, theirs, "incremental (0, latest] with BLOCK")
