"""Our clustering keeps a Java table's metadata table (MDT), with Java Hudi 0.15 as the oracle (issue 29).

Java writes a partitioned MERGE_ON_READ table with its defaults (metadata table on): an insert and an upsert, so
each partition has two small file groups with log files. Our clustering attempt is killed (``os._exit``, as a
SIGKILL) right when the ``replacecommit`` would complete: its MDT deltacommit is completed, the replacecommit
inflight. Our rollback of the attempt rolls that MDT deltacommit back; Java validates the MDT
(:func:`tests.java.mdt_validate.check_metadata_table`: ``validate_metadata_table_files``, partitions, latest base
files and latest file slices, the expected rows through the MDT). We execute the plan again: Java validates again --
the replaced file groups are still on storage and still listed, as Java's ``convertMetadataToFilesPartitionRecords``
adds the replacecommit's new files and deletes none (a replaced file leaves the ``files`` partition when a clean
deletes it). Java then upserts and runs its clean keeping one commit: the replaced files are deleted, from storage and
from the MDT, and Java validates once more.

Module-scoped: one Java-written table; the second test goes on from the first's clustered table.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from lake_orchestration.datagen import generate_updates
from lake_orchestration.hudi.log.log_format import HeaderKey, LogBlockType, iter_blocks
from lake_orchestration.hudi.metadata.records import FILES_PARTITION, decode_hfile
from lake_orchestration.hudi.metadata.writer import metadata_table
from lake_orchestration.hudi.model.instant import Action, State
from lake_orchestration.hudi.model.properties import TableType
from lake_orchestration.hudi.services.clustering import (
    ClusteringConfig,
    execute_clustering,
    rollback_inflight_clustering,
)
from lake_orchestration.hudi.table.hudi_table import HudiTable
from tests.conftest import REPO_ROOT
from tests.java.harness import JavaHudi
from tests.java.interop import PARTITIONED, JavaTable, Model, assert_rows_equal, java_read, java_write, procedure, trips
from tests.java.mdt_validate import MDT_DEFAULTS, READ_MDT, check_metadata_table, our_listing, storage_listing

pytestmark = [pytest.mark.java]

OPTIONS = {
    "hoodie.clustering.plan.strategy.sort.columns": "fare",
    "hoodie.client.heartbeat.interval_in_ms": "300",
    "hoodie.client.heartbeat.tolerable.misses": "1",
}

_KILLED_CLUSTERING = textwrap.dedent(
    """
    import os, sys
    from lake_orchestration.hudi.services.clustering import ClusteringConfig, run_clustering
    from lake_orchestration.hudi.table.hudi_table import HudiTable

    orig = HudiTable.transition_to_completed
    def dying(self, inflight, content):
        if not self.base_uri.rstrip("/").endswith(".hoodie/metadata"):
            print(f"KILLED {inflight.time}", flush=True)
            os._exit(137)
        return orig(self, inflight, content)
    HudiTable.transition_to_completed = dying
    run_clustering(HudiTable(sys.argv[1]), schedule=True, config=ClusteringConfig.from_options(eval(sys.argv[2])))
    """
)


@dataclass
class Shared:
    """What the first test leaves for the second: the clustering instant and the replaced files."""

    instant: str = ""
    replaced: set[tuple[str, str]] = field(default_factory=set)


@pytest.fixture(scope="module")
def mdt_table(java_hudi: JavaHudi, tmp_path_factory: pytest.TempPathFactory) -> tuple[JavaTable, Shared]:
    """Java writes a MOR table keeping its MDT: an insert split into two file groups per partition (Java's insert
    buckets hold ``max.file.size`` / 1 KB estimated per record: 64 records), an upsert (log files)."""
    root = tmp_path_factory.mktemp("clustering-mdt")
    base = trips(200, seed=61)
    table = JavaTable(root / "t", PARTITIONED, TableType.MERGE_ON_READ, Model(("city", "uuid")), base.schema, [], root)
    java_write(java_hudi, table, base, "insert", **MDT_DEFAULTS, **{"hoodie.parquet.max.file.size": str(64 * 1024)})
    ups = generate_updates(table.expected(), fraction=0.3, seed=63, ts_offset=10**6)
    java_write(java_hudi, table, ups, "upsert", **MDT_DEFAULTS)
    return table, Shared()


def _mdt_blocks_at(path: Path, instant: str) -> list[dict[str, tuple[dict[str, int], list[str]]]]:
    """Every HFile data block of the MDT's ``files`` partition written at ``instant``: record key -> (files added
    with their sizes, files deleted)."""
    mdt = metadata_table(HudiTable(str(path)))
    out = []
    for f in sorted(mdt.storage.list_dir(mdt.storage.join(FILES_PARTITION)), key=lambda f: f.name):
        if ".log." not in f.name or f.name.endswith(".crc"):
            continue
        raw = mdt.storage.read_bytes(f.path)
        for block in iter_blocks(raw, f.path):
            if (
                block.block_type is LogBlockType.HFILE_DATA_BLOCK
                and block.header_map[HeaderKey.INSTANT_TIME] == instant
            ):
                records = decode_hfile(block.content, where=f.path, schema_json=block.get(HeaderKey.SCHEMA))
                out.append({r.key: (r.file_sizes(), r.deletions()) for r in records})
    return out


def _file_groups(path: Path) -> dict[str, set[tuple[str, str]]]:
    """File id -> its (partition, file name) on storage (base and log files)."""
    out: dict[str, set[tuple[str, str]]] = {}
    for partition, name in storage_listing(path):
        fid = name[1:].split(".", 1)[0] if name.startswith(".") else name.split("_", 1)[0]
        out.setdefault(fid, set()).add((partition, name))
    return out


@pytest.mark.interop(
    direction="Java writes with its metadata table on → our writes and services keep it → Java validates",
    table="MOR partitioned, metadata table on (log files in the clustered slices)",
    service="clustering killed after its MDT step, rolled back, executed again",
    checks="the killed attempt's MDT deltacommit rolled back with it; after the rollback and after the "
    "replacecommit: validate_metadata_table_files + latest base files and file slices validated, Java reads "
    "the rows (= before the clustering) through the MDT, our MDT reader agrees; replaced files still listed",
)
def test_killed_clustering_rolled_back_then_executed(java_hudi: JavaHudi, mdt_table) -> None:  # type: ignore[no-untyped-def]
    table, state = mdt_table
    before = storage_listing(table.path)
    assert [n for n in before if ".log." in n[1]], "the Java-written table has no log files"
    bases = [p for p, n in before if n.endswith(".parquet")]
    assert all(bases.count(p) >= 2 for p in bases), f"Java wrote one file group in a partition: {sorted(before)}"
    proc = subprocess.run(
        [sys.executable, "-c", _KILLED_CLUSTERING, str(table.path), repr(OPTIONS)],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 137, proc.stdout + proc.stderr
    killed = proc.stdout.split("KILLED ", 1)[1].split()[0]
    data = HudiTable(str(table.path))
    assert data.timeline.get(killed, Action.REPLACE_COMMIT).state is State.INFLIGHT  # type: ignore[union-attr]
    mdt_instant = metadata_table(data).timeline.get(killed, Action.DELTA_COMMIT)
    assert mdt_instant is not None and mdt_instant.is_completed, "the MDT step ran before the kill"
    assert not [f for _, f in our_listing(table.path) if killed in f], "our MDT reader lists the killed attempt"
    assert_rows_equal(java_read(java_hudi, table, **READ_MDT), table.expected(), "Java's read after the kill")

    time.sleep(1.0)  # the killed attempt's heartbeat expires
    cfg = ClusteringConfig.from_options(OPTIONS)
    rollback_inflight_clustering(HudiTable(str(table.path)), killed, config=cfg.rollback_config())
    mdt = metadata_table(HudiTable(str(table.path)))
    assert mdt.timeline.get(killed, Action.DELTA_COMMIT) is None, "the killed attempt's MDT deltacommit remains"
    assert storage_listing(table.path) == before, "the rollback left files of the killed attempt"
    check_metadata_table(java_hudi, table, "after our rollback of the killed clustering")

    result = execute_clustering(HudiTable(str(table.path)), killed, config=cfg)
    assert result.file_groups_replaced >= 2
    done = HudiTable(str(table.path)).timeline.get(killed, Action.REPLACE_COMMIT)
    assert done is not None and done.is_completed
    after = storage_listing(table.path)
    assert set(before) <= set(after), "the replaced files are on storage until a clean deletes them"
    check_metadata_table(java_hudi, table, "after our replacecommit")
    # Java's convertMetadataToFilesPartitionRecords(HoodieCommitMetadata) for a replacecommit: the partitions of its
    # write stats in the partition list, each partition's new files with their sizes, no file deleted (the replaced
    # files leave the files partition when a clean deletes them)
    new = {k: size for k, size in after.items() if k not in before}
    assert new and all(killed in name for _, name in new)
    expected = {p: ({n: size for (q, n), size in new.items() if q == p}, []) for p, _ in new}
    expected["__all_partitions__"] = ({p: 0 for p, _ in new}, [])
    assert expected in _mdt_blocks_at(table.path, killed), "our MDT block for the replacecommit is not Java's records"
    state.instant = killed
    groups = _file_groups(table.path)
    state.replaced = {f for fid, files in groups.items() if not any(killed in n for _, n in files) for f in files}
    assert state.replaced == set(before)


@pytest.mark.interop(
    direction="our clustering → Java writes and cleans with the metadata table on → Java validates",
    table="MOR partitioned, metadata table on",
    service="clustering (ours) → upsert + clean (Java's, retain_commits 1)",
    checks="the replaced file groups deleted from storage and from the MDT by Java's clean; "
    "validate_metadata_table_files + latest base files and file slices validated; Java reads through the MDT",
)
def test_java_clean_drops_the_replaced_files(java_hudi: JavaHudi, mdt_table) -> None:  # type: ignore[no-untyped-def]
    table, state = mdt_table
    if not state.instant:
        pytest.fail("the clustering of test_killed_clustering_rolled_back_then_executed did not commit")
    ups = generate_updates(table.expected(), fraction=0.2, seed=64, ts_offset=2 * 10**6)
    java_write(java_hudi, table, ups, "upsert", **MDT_DEFAULTS)
    rows = procedure(java_hudi, "run_clean", table, retain_commits=1)
    assert rows, "Java's clean cleaned nothing"
    left = set(storage_listing(table.path)) & state.replaced
    assert not left, f"Java's clean kept replaced files: {sorted(left)[:5]}"
    assert not set(our_listing(table.path)) & state.replaced, "our MDT reader still lists replaced files"
    check_metadata_table(java_hudi, table, "after Java's upsert and clean")
