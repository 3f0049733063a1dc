"""Our writes and services keep a Java table's metadata table (MDT), with Java Hudi 0.15 as the oracle.

Java writes a partitioned MERGE_ON_READ table with its defaults (metadata table on, ``files`` partition only). Then,
without disabling the MDT, our upsert, compaction, log compaction, clean, a write killed after its MDT deltacommit
and before its commit point, the rollback of that write, and archive run on it. After each: Java's
``validate_metadata_table_files`` (verbose) lists through the MDT exactly the files and sizes of a storage listing,
the latest base files and latest file slices through the MDT are a storage listing's (``HoodieMetadataTableValidator``'s
checks, :mod:`tests.java.mdt_validate`),
Java reads the expected rows with ``hoodie.metadata.enable=true``, and our MDT reader lists the same files. At the
end Java writes on top with its own services (inline compaction, MDT compaction, clean) and validates again.

A table whose MDT also has ``column_stats`` is refused with the two ways out, and nothing changes.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from lake_orchestration.datagen import generate_updates
from lake_orchestration.errors import MetadataTableError
from lake_orchestration.hudi.metadata.writer import metadata_table
from lake_orchestration.hudi.model.instant import Action, State
from lake_orchestration.hudi.model.properties import TableType
from lake_orchestration.hudi.services.archive import ArchiveConfig, run_archive
from lake_orchestration.hudi.services.clean import CleanConfig, run_clean
from lake_orchestration.hudi.services.compaction import CompactionConfig, run_compaction
from lake_orchestration.hudi.services.log_compaction import run_log_compaction, schedule_log_compaction
from lake_orchestration.hudi.services.rollback import rollback_write
from lake_orchestration.hudi.table.hudi_table import HudiTable
from lake_orchestration.hudi.write import write_table
from tests.conftest import REPO_ROOT
from tests.java.harness import JavaHudi
from tests.java.interop import (
    PARTITIONED,
    JavaTable,
    Model,
    assert_rows_equal,
    data_files,
    java_read,
    java_write,
    trips,
)
from tests.java.mdt_validate import MDT_DEFAULTS, READ_MDT, storage_listing
from tests.java.mdt_validate import check_metadata_table as _check
from tests.java.mdt_validate import our_listing as _our_listing

pytestmark = [pytest.mark.java]

MOR = TableType.MERGE_ON_READ


def _files(path: Path) -> dict[Path, tuple[int, int]]:
    """Every file under ``path`` (the table, its timeline, its metadata table) with its size and mtime."""
    return {p: (p.stat().st_size, p.stat().st_mtime_ns) for p in path.rglob("*") if p.is_file()}


def _mdt_deltacommit(path: Path, instant: str) -> State | None:
    inst = metadata_table(HudiTable(str(path))).timeline.get(instant, Action.DELTA_COMMIT)
    return inst.state if inst is not None else None


# Our upsert in a subprocess that dies (os._exit, as a SIGKILL) right when the data instant would complete: after
# its MDT deltacommit, before its commit point.
_KILLED_WRITE = textwrap.dedent(
    """
    import os, sys
    import pyarrow.parquet as pq
    from lake_orchestration.hudi.table.hudi_table import HudiTable
    from lake_orchestration.hudi.write import write_table
    from tests.java.interop import PARTITIONED
    from lake_orchestration.hudi.model.properties import TableType

    orig = HudiTable.transition_to_completed
    def dying(self, inflight, content):
        if not self.base_uri.rstrip("/").endswith(".hoodie/metadata"):
            print(f"KILLED {inflight.time}", flush=True)
            os._exit(137)
        return orig(self, inflight, content)
    HudiTable.transition_to_completed = dying
    write_table(sys.argv[1], pq.read_table(sys.argv[2]), operation="upsert",
                options=PARTITIONED.write_options(TableType.MERGE_ON_READ))
    """
)


def _killed_write(table: JavaTable, data_path: Path) -> str:
    proc = subprocess.run(
        [sys.executable, "-c", _KILLED_WRITE, str(table.path), str(data_path)],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 137, proc.stdout + proc.stderr
    return proc.stdout.split("KILLED ", 1)[1].split()[0]


@pytest.mark.interop(
    direction="Java writes with its metadata table on → our writes and services keep it → Java validates",
    table="MOR partitioned, metadata table on",
    service="upsert, compaction, log compaction, clean, killed write + rollback, archive (MDT kept)",
    checks="after each: validate_metadata_table_files = storage listing + latest base files and file slices "
    "validated, Java reads through the MDT, our reader agrees; Java writes and compacts on top",
)
def test_our_services_keep_javas_metadata_table(java_hudi: JavaHudi, tmp_path: Path) -> None:
    import pyarrow.parquet as pq

    base = trips(300, seed=1)
    table = JavaTable(tmp_path / "t", PARTITIONED, MOR, Model(("city", "uuid")), base.schema, [], tmp_path)
    java_write(java_hudi, table, base, "insert", **MDT_DEFAULTS)
    java_write(
        java_hudi, table, generate_updates(base, fraction=0.3, seed=2, ts_offset=10**6), "upsert", **MDT_DEFAULTS
    )
    assert HudiTable(str(table.path)).metadata_partitions() == ["files"]
    _check(java_hudi, table, "Java's table")
    options = PARTITIONED.write_options(MOR)

    # our upsert: log files of every touched file group
    update = generate_updates(table.expected(), fraction=0.3, seed=3, ts_offset=2 * 10**6)
    ours = write_table(str(table.path), update, operation="upsert", options=options)
    table.model.upsert(update)
    assert _mdt_deltacommit(table.path, str(ours.instant)) is State.COMPLETED
    _check(java_hudi, table, "after our upsert")

    # our compaction of every slice with log files
    done = run_compaction(
        HudiTable(str(table.path)),
        schedule=True,
        config=CompactionConfig.from_options({"hoodie.compact.inline.max.delta.commits": "1"}),
    )
    assert done, "nothing compacted"
    assert _mdt_deltacommit(table.path, str(done[0].instant)) is State.COMPLETED
    _check(java_hudi, table, "after our compaction")

    # two upserts of ours, then our log compaction of their blocks
    for seed in (4, 5):
        more = generate_updates(table.expected(), fraction=0.3, seed=seed, ts_offset=seed * 10**6)
        write_table(str(table.path), more, operation="upsert", options=options)
        table.model.upsert(more)
    config = CompactionConfig.from_options({"hoodie.log.compaction.blocks.threshold": "2"})
    scheduled = schedule_log_compaction(HudiTable(str(table.path)), config=config)
    assert scheduled.scheduled, scheduled.reason
    run_log_compaction(HudiTable(str(table.path)), str(scheduled.instant), config=config)
    assert _mdt_deltacommit(table.path, str(scheduled.instant)) is State.COMPLETED
    _check(java_hudi, table, "after our log compaction")

    # our clean: the slices the compaction replaced
    files = data_files(table.path)
    cleaned = run_clean(
        HudiTable(str(table.path)),
        CleanConfig.from_options(
            {"hoodie.cleaner.policy": "KEEP_LATEST_FILE_VERSIONS", "hoodie.cleaner.fileversions.retained": "1"}
        ),
    )
    assert cleaned.deleted > 0 and data_files(table.path) < files
    _check(java_hudi, table, "after our clean")

    # a write of ours killed after its MDT deltacommit, before its commit point: readers ignore its block
    failed_rows = generate_updates(table.expected(), fraction=0.3, seed=6, ts_offset=6 * 10**6)
    src = tmp_path / "failed.parquet"
    pq.write_table(failed_rows, src)
    failed = _killed_write(table, src)
    assert _mdt_deltacommit(table.path, failed) is State.COMPLETED, "the MDT step ran before the kill"
    assert_rows_equal(java_read(java_hudi, table, **READ_MDT), table.expected(), "Java's read after the kill")
    assert set(_our_listing(table.path)) <= set(storage_listing(table.path))
    assert not {f for _, f in _our_listing(table.path) if failed in f}, "our reader lists the killed write's files"

    # our rollback of it: the rollback's own MDT deltacommit, the killed write's MDT deltacommit rolled back
    rb = rollback_write(HudiTable(str(table.path)), failed)
    rb_time = str(rb.time)  # type: ignore[union-attr]
    mdt = metadata_table(HudiTable(str(table.path)))
    assert mdt.timeline.get(failed, Action.DELTA_COMMIT) is None, "the killed write's MDT deltacommit remains"
    assert _mdt_deltacommit(table.path, rb_time) is State.COMPLETED
    assert [str(i.time) for i in mdt.timeline.completed() if i.action is Action.ROLLBACK][-1] == f"{rb_time}006"
    _check(java_hudi, table, "after our rollback of the killed write")

    # our archive (it stops at the MDT's latest compaction, as Java's)
    run_archive(
        HudiTable(str(table.path)),
        ArchiveConfig.from_options(
            {"hoodie.keep.min.commits": "2", "hoodie.keep.max.commits": "3", "hoodie.cleaner.commits.retained": "1"},
            table_properties=HudiTable(str(table.path)).config.raw,
        ),
    )
    _check(java_hudi, table, "after our archive")

    # Java continues with its own services: inline compaction of the data table, MDT compaction, a clean
    java_services = {
        **MDT_DEFAULTS,
        "hoodie.compact.inline": "true",
        "hoodie.compact.inline.max.delta.commits": "1",
        "hoodie.metadata.compact.max.delta.commits": "2",
        "hoodie.clean.automatic": "true",
        "hoodie.cleaner.policy": "KEEP_LATEST_FILE_VERSIONS",
        "hoodie.cleaner.fileversions.retained": "1",
    }
    java_write(
        java_hudi,
        table,
        generate_updates(table.expected(), fraction=0.2, seed=7, ts_offset=7 * 10**6),
        "upsert",
        **java_services,
    )
    mdt = metadata_table(HudiTable(str(table.path)))
    assert [i for i in mdt.timeline.completed() if i.action is Action.COMMIT], "Java compacted the MDT"
    _check(java_hudi, table, "after Java's write and services on top of ours")


@pytest.mark.interop(
    direction="Java writes with its metadata table on → our writes and services keep it → Java validates",
    table="MOR partitioned, MDT with column_stats",
    service="refusal",
    checks="MetadataTableError naming column_stats; no file changed",
)
def test_a_metadata_table_with_column_stats_is_refused(java_hudi: JavaHudi, tmp_path: Path) -> None:
    base = trips(120, seed=11)
    table = JavaTable(tmp_path / "t", PARTITIONED, MOR, Model(("city", "uuid")), base.schema, [], tmp_path)
    stats = {**MDT_DEFAULTS, "hoodie.metadata.index.column.stats.enable": "true"}
    java_write(java_hudi, table, base, "insert", **stats)
    java_write(java_hudi, table, generate_updates(base, fraction=0.5, seed=12, ts_offset=10**6), "upsert", **stats)
    assert "column_stats" in HudiTable(str(table.path)).metadata_partitions()
    before = _files(table.path)
    update = generate_updates(table.expected(), fraction=0.2, seed=13, ts_offset=2 * 10**6)
    with pytest.raises(MetadataTableError, match=r"column_stats.*hoodie\.metadata\.enable=false.*Java Hudi"):
        write_table(str(table.path), update, operation="upsert", options=PARTITIONED.write_options(MOR))
    with pytest.raises(MetadataTableError, match=r"column_stats"):
        run_compaction(
            HudiTable(str(table.path)),
            schedule=True,
            config=CompactionConfig.from_options({"hoodie.compact.inline.max.delta.commits": "1"}),
        )
    assert _files(table.path) == before, "a refused action changed files"
