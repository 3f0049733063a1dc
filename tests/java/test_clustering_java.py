"""Clustering with Java Hudi 0.15 in the loop: Java schedules a plan (``run_clustering(op => 'schedule')``) and we
execute it; our plan for the same table has Java's structure; Java reads our clustered table equal to the model,
then writes and runs its own clustering and compaction after ours; we cluster after
Java's clustering. Module-scoped: one Java-written MOR table per direction."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from lake_orchestration.datagen import generate_updates
from lake_orchestration.hudi.model.avro import RequestedReplaceMetadata
from lake_orchestration.hudi.model.properties import TableType
from lake_orchestration.hudi.services.clustering import ClusteringConfig, execute_clustering, schedule_clustering
from lake_orchestration.hudi.table.hudi_table import HudiTable
from lake_orchestration.hudi.table.snapshot import read_snapshot_table
from tests.java.harness import JavaHudi
from tests.java.interop import (
    PARTITIONED,
    JavaTable,
    assert_rows_equal,
    java_read,
    java_write,
    keyed_meta,
    procedure,
)
from tests.oracle import hudi_rs_snapshot

pytestmark = [pytest.mark.java]

MOR = TableType.MERGE_ON_READ
SORT = {"hoodie.clustering.plan.strategy.sort.columns": "fare"}


def timeline_names(t: JavaTable) -> list[str]:
    return sorted(p.name for p in (t.path / ".hoodie").iterdir() if p.is_file() and p.name[:1].isdigit())


def assert_reads_agree(java: JavaHudi, t: JavaTable, what: str) -> pa.Table:
    """Java's snapshot equals the model; ours and hudi-rs equal Java's (ours also in the meta columns)."""
    theirs = java_read(java, t)
    assert_rows_equal(theirs, t.expected(), f"Java's snapshot {what} vs the model")
    ours = read_snapshot_table(HudiTable(str(t.path)))
    assert_rows_equal(ours, theirs, f"our snapshot {what} vs Java's")
    assert keyed_meta(ours) == keyed_meta(theirs), f"meta columns {what}: ours vs Java's"
    rs = hudi_rs_snapshot(t.path)
    assert rs is not None, f"hudi-rs read nothing {what}"
    assert_rows_equal(rs, theirs, f"hudi-rs {what} vs Java's")
    return theirs


def _plan_shape(md: RequestedReplaceMetadata) -> dict:
    """What two plans for the same table must share: groups by partition and file ids, output groups, metrics,
    strategy, flags; the slice paths' forms (full paths: ``file:`` or bare, log files by name or path)."""
    plan = md.clustering_plan
    assert plan is not None
    groups = sorted(
        (
            g.slices[0].partition_path,
            tuple(sorted(s.file_id for s in g.slices)),
            g.num_output_file_groups,
            tuple(sorted((g.metrics or {}).items())),
        )
        for g in plan.input_groups
    )
    slices = [s for g in plan.input_groups for s in g.slices]
    forms = {("base", s.data_file_path.split("/", 1)[0] if s.data_file_path else "") for s in slices} | {
        ("log", "/" in f) for s in slices for f in s.delta_file_paths or ()
    }
    return {
        "operationType": md.operation_type,
        "version": md.version,
        "extraMetadata": md.extra_metadata,
        "groups": groups,
        "strategy": (plan.strategy.strategy_class_name, plan.strategy.strategy_params),
        "planVersion": plan.version,
        "preserve": plan.preserve_hoodie_metadata,
        "planExtra": plan.extra_metadata,
        "bootstrap": {s.bootstrap_file_path for s in slices},
        "forms": forms,
    }


@pytest.mark.interop(
    direction="Java writes → our service → Java reads",
    table="MOR partitioned",
    service="clustering (Java schedules the plan, we execute and commit it; our plan for the table compared)",
    checks="our plan = Java's (groups, metrics, strategy, path forms); snapshot Java = ours = hudi-rs = model; "
    "Java's inline clustering + compaction after ours",
)
def test_java_plan_executed_by_us_then_java_services(java_hudi: JavaHudi, java_table) -> None:  # type: ignore[no-untyped-def]
    t = java_table(PARTITIONED, MOR)
    ours = schedule_clustering(HudiTable(str(t.path)), config=ClusteringConfig.from_options(SORT), dry_run=True)
    assert ours.plan is not None, ours.reason
    procedure(java_hudi, "run_clustering", t, op="schedule", order="fare")
    requested = [n for n in timeline_names(t) if n.endswith(".replacecommit.requested")]
    assert len(requested) == 1, f"Java scheduled no clustering: {timeline_names(t)}"
    instant = requested[0].split(".", 1)[0]
    java_md = RequestedReplaceMetadata.from_bytes((t.path / ".hoodie" / requested[0]).read_bytes(), path=requested[0])
    our_md = RequestedReplaceMetadata(operation_type="CLUSTER", clustering_plan=ours.plan, extra_metadata={}, version=1)
    assert _plan_shape(our_md) == _plan_shape(java_md)

    result = execute_clustering(HudiTable(str(t.path)), instant)
    assert result.file_groups_replaced == sum(len(g.slices) for g in java_md.clustering_plan.input_groups)
    assert f"{instant}.replacecommit" in timeline_names(t)
    assert_reads_agree(java_hudi, t, "after our execution of Java's clustering plan")

    services = {
        "hoodie.clustering.inline": "true",
        "hoodie.clustering.inline.max.commits": "1",
        "hoodie.compact.inline": "true",
        "hoodie.compact.inline.max.delta.commits": "1",
    }
    java_write(
        java_hudi, t, generate_updates(t.expected(), fraction=0.3, seed=31, ts_offset=5 * 10**6), "upsert", **services
    )
    completed = [n.split(".")[0] for n in timeline_names(t) if n.endswith(".replacecommit")]
    assert len(completed) >= 2, f"Java ran no clustering after ours: {timeline_names(t)}"
    assert_reads_agree(java_hudi, t, "after Java's clustering and compaction after ours")


@pytest.mark.interop(
    direction="Java service → our reader + services → Java reads",
    table="MOR partitioned",
    service="clustering (Java's replacecommit) → clustering (ours, sorted by fare)",
    checks="snapshot Java = ours = hudi-rs = model (meta columns too); our new files sorted by fare",
)
def test_we_cluster_after_java(java_hudi: JavaHudi, java_table) -> None:  # type: ignore[no-untyped-def]
    t = java_table(PARTITIONED, MOR)
    procedure(java_hudi, "run_clustering", t, order="rider")  # scheduleAndExecute
    java_write(java_hudi, t, generate_updates(t.expected(), fraction=0.2, seed=41, ts_offset=6 * 10**6), "upsert")
    assert [n for n in timeline_names(t) if n.endswith(".replacecommit")], f"Java did not cluster: {timeline_names(t)}"
    table = HudiTable(str(t.path))
    scheduled = schedule_clustering(table, config=ClusteringConfig.from_options(SORT))
    assert scheduled.scheduled, scheduled.reason
    result = execute_clustering(HudiTable(str(t.path)), scheduled.instant, config=ClusteringConfig.from_options(SORT))
    for s in result.stats:
        fares = pq.read_table(Path(t.path) / s.path, columns=["fare"]).column("fare").to_pylist()
        assert fares == sorted(fares)
    assert_reads_agree(java_hudi, t, "after our clustering after Java's")
