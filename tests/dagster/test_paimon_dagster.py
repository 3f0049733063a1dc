"""Dagster definitions of a ``format: paimon`` table on tables pypaimon writes (the oracle: tests/paimon/conftest.py):
names, the health metadata against pypaimon's scan, compaction execute -> commit with pypaimon reading equal, the
new-snapshots sensor, the stop-trigger check, and a commit retried after it landed."""

from __future__ import annotations

import pickle
from pathlib import Path
from typing import Any

import dagster as dg
import pytest

from lake_orchestration.dagster import DagsterHudiError, HudiConfigError, HudiTableConfig, build_hudi_definitions
from lake_orchestration.dagster.config import validate_tables
from lake_orchestration.dagster.paimon import ExecutedCompaction, NewSnapshotsCursor
from lake_orchestration.paimon.model import CommitKind
from lake_orchestration.paimon.services.compaction import execute_compaction, plan_compaction, run_compaction
from lake_orchestration.paimon.table import PaimonTable
from tests.paimon.tables import Pypaimon, read_rows, table_path, table_spec, write_table

pytestmark = pytest.mark.slow

BUCKETS = 1


def _commits(n: int) -> list[list[list[Any]]]:
    first = [[dt, i, f"v0-{i}", "+I"] for dt in ("a", "b") for i in range(40)]
    later = [[["a", i, f"v{c}-{i}", "+I"] for i in range(c, 40, 3)] for c in range(1, n)]
    return [first, *later[:-1], [*later[-1], *[["b", i, None, "-D"] for i in range(5)]]] if n > 1 else [first]


def _write(pypaimon: Pypaimon, tmp_path: Path, commits: int, **options: str) -> tuple[Path, str]:
    warehouse = write_table(pypaimon, tmp_path, _commits(commits), buckets=BUCKETS, **options)
    return warehouse, table_path(warehouse)


def _sorted_runs(pypaimon: Pypaimon, warehouse: Path) -> dict[tuple[str, int], int]:
    """Sorted runs per (partition, bucket) from pypaimon's scan: each level-0 file plus each level above."""
    files: dict[tuple[str, int], list[int]] = {}
    for split in pypaimon("scan", str(warehouse), "default.t")["splits"]:
        files.setdefault((split["partition"][0], split["bucket"]), []).extend(f["level"] for f in split["files"])
    return {k: lv.count(0) + len({x for x in lv if x > 0}) for k, lv in files.items()}


def _defs(path: str, **kw: Any) -> dg.Definitions:
    return build_hudi_definitions(
        tables=[
            HudiTableConfig(name="t", base_path=path, format="paimon", engine="local", retry_max_retries=0, **kw),
            HudiTableConfig(name="h", base_path="/data/h"),
        ]
    )


def test_paimon_definitions_named_under_paimon_prefix_hudi_names_unchanged() -> None:
    defs = _defs("/data/t")
    keys = {k.to_user_string() for k in defs.resolve_asset_graph().get_all_asset_keys()}
    assert keys == {"paimon/t", "paimon/t/compaction", "hudi/h", "hudi/h/compaction"}
    assert {j.name for j in defs.jobs if j.name.startswith("t__")} == {"t__compaction"}
    assert {s.name for s in defs.schedules if s.name.startswith("t__")} == {"t__compaction_schedule"}
    assert {s.name for s in defs.sensors if s.name.startswith("t__")} == {"t__new_snapshots_sensor"}
    compaction = defs.resolve_assets_def(dg.AssetKey(["paimon", "t", "compaction"]))
    assert [n.name for n in compaction.node_def.node_defs] == ["t__compaction_execute_op", "t__compaction_commit_op"]
    assert {n.pool for n in compaction.node_def.node_defs} == {"paimon_t"}
    table = defs.resolve_assets_def(dg.AssetKey(["paimon", "t"]))
    assert table.group_names_by_key[dg.AssetKey(["paimon", "t"])] == "paimon"
    checks = {(c.asset_key.to_user_string(), c.name) for cd in defs.asset_checks for c in cd.check_keys}
    assert ("paimon/t", "sorted_runs_within_stop_trigger") in checks
    assert {n for a, n in checks if a == "hudi/h"} == {
        "oldest_pending_compaction_age",
        "log_files_per_slice",
        "active_timeline_length",
        "small_archive_files",
    }
    assert {j.name for j in defs.jobs if j.name.startswith("h__")} == {
        "h__compaction",
        "h__schedule_compaction",
        "h__rollback",
        "h__clean",
        "h__archive",
    }


def test_paimon_table_config_with_hudi_options_refused_naming_the_field() -> None:
    entry = {"name": "t", "base_path": "/data/t", "format": "paimon", "clean_options": {"hoodie.cleaner.policy": "x"}}
    with pytest.raises(HudiConfigError, match=r"tables\[0\] \('t'\): .*clean_options: Hudi options"):
        validate_tables([entry], where="lake.yaml")


def test_paimon_materialize_health_then_compaction_commits_compact_snapshot_pypaimon_reads_equal(
    tmp_path: Path, pypaimon: Pypaimon
) -> None:
    warehouse, path = _write(
        pypaimon, tmp_path, 5, **{"num-sorted-run.compaction-trigger": "2", "num-sorted-run.stop-trigger": "3"}
    )
    before = read_rows(pypaimon, warehouse)
    runs = _sorted_runs(pypaimon, warehouse)
    defs = _defs(path)
    table_asset = defs.resolve_assets_def(dg.AssetKey(["paimon", "t"]))
    compaction = defs.resolve_assets_def(dg.AssetKey(["paimon", "t", "compaction"]))
    with dg.instance_for_test() as instance:
        result = dg.materialize([table_asset, *defs.asset_checks], instance=instance, selection=[table_asset.key])
        assert result.success
        (mat,) = result.asset_materializations_for_node("paimon__t")
        md = mat.metadata
        assert md["snapshot_id"].value == 5 and md["commit_kind"].value == "APPEND"
        assert md["max_sorted_runs"].value == max(runs.values()) == 5  # bucket dt=a: five level-0 files
        assert md["level0_files"].value == sum(runs.values())
        assert isinstance(md["pending_size_amplification_percent"].value, float)
        assert isinstance(md["snapshot_time"], dg.TimestampMetadataValue)
        (check,) = [e for e in result.get_asset_check_evaluations() if e.asset_key == table_asset.key]
        assert check.check_name == "sorted_runs_within_stop_trigger" and check.passed is False
        assert check.metadata["buckets_over_stop_trigger"].value == 1

        result = dg.materialize([table_asset, compaction], instance=instance)
        assert result.success
        (mat,) = result.asset_materializations_for_node("paimon__t__compaction")
        snap = PaimonTable.open(path).latest_snapshot()
        assert snap is not None and snap.commit_kind is CommitKind.COMPACT
        assert mat.metadata["compact_snapshot_id"].value == snap.id == 6
        assert mat.metadata["files_before"].value == mat.metadata["deleted_files"].value >= 5
        result = dg.materialize([table_asset, *defs.asset_checks], instance=instance, selection=[table_asset.key])
        (check,) = [e for e in result.get_asset_check_evaluations() if e.asset_key == table_asset.key]
        assert check.passed is True  # after the universal compaction dt=a is within the stop trigger
    assert read_rows(pypaimon, warehouse) == before
    assert max(_sorted_runs(pypaimon, warehouse).values()) <= 3


def _sensor_tick(defs: dg.Definitions, cursor: str | None) -> dg.SensorResult:
    sensor = defs.resolve_sensor_def("t__new_snapshots_sensor")
    with dg.instance_for_test() as instance:
        return sensor(dg.build_sensor_context(instance=instance, cursor=cursor))


def test_paimon_new_snapshots_sensor_requests_compaction_on_new_appends_only(
    tmp_path: Path, pypaimon: Pypaimon
) -> None:
    warehouse, path = _write(pypaimon, tmp_path, 3)
    defs = _defs(path)
    first = _sensor_tick(defs, None)
    assert [r.run_key for r in first.run_requests or []] == ["snapshot-3"]
    assert NewSnapshotsCursor.from_json(first.cursor, table="t", sensor="s").snapshot_id == 3
    assert not (_sensor_tick(defs, first.cursor).run_requests or [])  # nothing new

    run_compaction(PaimonTable.open(path), full=True)  # snapshot 4: COMPACT, not a write
    after_compact = _sensor_tick(defs, first.cursor)
    assert not (after_compact.run_requests or [])
    assert NewSnapshotsCursor.from_json(after_compact.cursor, table="t", sensor="s").snapshot_id == 4

    pypaimon(
        "append", table_spec(warehouse, [[["a", 100, "new", "+I"]], [["b", 101, "new", "+I"]]], buckets=BUCKETS)
    )  # 5, 6
    appended = _sensor_tick(defs, after_compact.cursor)
    assert [r.run_key for r in appended.run_requests or []] == ["snapshot-6"]
    assert (appended.run_requests or [])[0].tags["paimon/new_appends"] == "2"

    with pytest.raises(DagsterHudiError, match="Cannot decode the cursor"):
        _sensor_tick(defs, '{"seen": []}')


def _commit_op(defs: dg.Definitions) -> Any:
    compaction = defs.resolve_assets_def(dg.AssetKey(["paimon", "t", "compaction"]))
    (op,) = [n for n in compaction.node_def.node_defs if n.name == "t__compaction_commit_op"]
    return op


def test_paimon_commit_op_retried_after_landing_writes_nothing_conflict_deletes_files_no_retry(
    tmp_path: Path, pypaimon: Pypaimon
) -> None:
    warehouse, path = _write(pypaimon, tmp_path, 4)
    before = read_rows(pypaimon, warehouse)
    table = PaimonTable.open(path)
    defs = _defs(path)
    commit = _commit_op(defs)
    plan = plan_compaction(table, full=True)
    executed = ExecutedCompaction(
        snapshot_id=plan.snapshot_id,
        execution=execute_compaction(plan, storage=table.storage),
        commit_user="dagster-test-user",
    )
    executed = pickle.loads(pickle.dumps(executed))  # what the IO manager hands a retried op

    first = commit(dg.build_op_context(), executed)
    assert first.metadata["compact_snapshot_id"].value == 5
    again = commit(dg.build_op_context(), executed)  # the retry of a commit that landed
    assert again.metadata["already_committed"].value is True
    assert table.latest_snapshot_id() == 5
    assert read_rows(pypaimon, warehouse) == before

    # a stale execution (planned from snapshot 4, whose files snapshot 5 replaced) conflicts: its files go, no retry
    stale = ExecutedCompaction(
        snapshot_id=plan.snapshot_id,
        execution=execute_compaction(plan, storage=table.storage),
        commit_user="another-user",
    )
    assert stale.execution is not None and stale.execution.written
    with pytest.raises(DagsterHudiError, match="PaimonCommitConflictError") as err:
        commit(dg.build_op_context(), stale)
    assert err.value.allow_retries is False
    assert not any((Path(path) / rel).exists() for rel in stale.execution.written)
    assert table.latest_snapshot_id() == 5
    assert read_rows(pypaimon, warehouse) == before
