"""Java-written service instants → our reader and our services honour them.

Java writes a MERGE_ON_READ table (the shared partitioned history, :func:`tests.java.interop.java_history`) and runs
one of its services on it: log compaction (a ``logcompaction`` plan completed as a ``deltacommit``), clustering (a
``replacecommit`` replacing every file group), a savepoint, or a rollback of its latest deltacommit. Our snapshot read
then equals Java's (and the model); our compaction, clean and archive run on the table without resurrecting replaced
file groups, deleting savepointed files or treating rolled-back data as live; Java reads the model afterwards.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import fastavro
import pyarrow as pa
import pytest

from lake_orchestration.datagen import generate_updates
from lake_orchestration.hudi.model.properties import TableType
from lake_orchestration.hudi.services.archive import ArchiveConfig, ArchiveResult, run_archive
from lake_orchestration.hudi.services.clean import CleanConfig, CleanResult, run_clean
from lake_orchestration.hudi.services.compaction import CompactionConfig, CompactionResult, run_compaction
from lake_orchestration.hudi.table.hudi_table import HudiTable
from lake_orchestration.hudi.table.snapshot import read_snapshot_table
from tests.java.harness import JavaHudi
from tests.java.interop import (
    PARTITIONED,
    JavaTable,
    Model,
    assert_rows_equal,
    java_read,
    java_write,
    keyed_meta,
    procedure,
    trips,
)
from tests.oracle import hudi_rs_snapshot

pytestmark = [pytest.mark.java]

MOR = TableType.MERGE_ON_READ
RETAINED = "1"
"""``hoodie.cleaner.commits.retained`` of our clean and archive: as aggressive as Hudi allows, so every older slice,
replaced file group and archivable instant is a candidate."""


def timeline_files(t: JavaTable) -> list[str]:
    """The names in ``.hoodie/`` that are instant files (what Java wrote, read without our timeline code)."""
    return sorted(p.name for p in (t.path / ".hoodie").iterdir() if p.is_file() and p.name[:1].isdigit())


def data_files(t: JavaTable) -> set[str]:
    """Every base and log file of the table, relative to its base path (not Hadoop's ``.crc`` side files)."""
    return {
        str(p.relative_to(t.path))
        for p in t.path.rglob("*")
        if p.is_file()
        and ".hoodie" not in p.parts
        and not p.name.endswith(".crc")
        and (p.suffix == ".parquet" or ".log." in p.name)
    }


def file_id(name: str) -> str:
    """The file group id in a base or log file name."""
    return Path(name).name.lstrip(".").split("_")[0]


def savepointed_files(t: JavaTable, instant: str) -> set[str]:
    """The files Java's savepoint ``instant`` lists (``partition/name``), read with fastavro from the Avro file Java
    wrote (not with our timeline code)."""
    with open(t.path / ".hoodie" / f"{instant}.savepoint", "rb") as f:
        (md,) = list(fastavro.reader(f))
    return {f"{p['partitionPath']}/{n}" for p in md["partitionMetadata"].values() for n in p["savepointDataFile"]}


def assert_reads_agree(java: JavaHudi, t: JavaTable, what: str) -> pa.Table:
    """Java's snapshot equals the model; our snapshot and hudi-rs equal Java's (rows; ours also the meta columns)."""
    theirs = java_read(java, t)
    assert_rows_equal(theirs, t.expected(), f"Java's snapshot {what} vs the model")
    ours = read_snapshot_table(HudiTable(str(t.path)))
    assert_rows_equal(ours, theirs, f"our snapshot {what} vs Java's")
    assert keyed_meta(ours) == keyed_meta(theirs), f"meta columns {what}: ours vs Java's"
    rs = hudi_rs_snapshot(t.path)
    assert rs is not None, f"hudi-rs read nothing {what}"
    assert_rows_equal(rs, theirs, f"hudi-rs {what} vs Java's")
    return theirs


def our_services(t: JavaTable) -> tuple[list[CompactionResult], CleanResult, ArchiveResult]:
    """Our compaction (scheduled on demand), clean and archive with the tightest retention, in Hudi's order.

    ``hoodie.metadata.enable=false``: Java's procedures (``create_savepoint``, ``rollback_to_instant``) run a write
    client with Hudi's default, which builds the metadata table; our services drop it as a Java writer with that
    setting does."""
    no_mdt = {"hoodie.metadata.enable": "false"}
    compaction = CompactionConfig.from_options({"hoodie.compact.inline.max.delta.commits": "1", **no_mdt})
    compacted = run_compaction(HudiTable(str(t.path)), schedule=True, config=compaction)
    clean = CleanConfig.from_options({"hoodie.cleaner.commits.retained": RETAINED, **no_mdt})
    cleaned = run_clean(HudiTable(str(t.path)), clean)
    table = HudiTable(str(t.path))
    archive = ArchiveConfig.from_options(
        {"hoodie.keep.min.commits": "2", "hoodie.keep.max.commits": "3", "hoodie.cleaner.commits.retained": RETAINED},
        table_properties=table.config.raw,
    )
    return compacted, cleaned, run_archive(table, archive)


def updates(t: JavaTable, fraction: float, seed: int, offset: int) -> pa.Table:
    """Updates of ``fraction`` of the live rows, ``offset`` added to their ``ts``."""
    return generate_updates(t.expected(), fraction=fraction, seed=seed, ts_offset=offset * 10**6)


@pytest.mark.interop(
    direction="Java service → our reader + services → Java reads",
    table="MOR partitioned",
    service="log compaction (Java) → compaction, clean, archive (ours)",
    checks="logcompaction instant; snapshot: Java = ours = hudi-rs = model before and after our services",
)
def test_java_log_compaction_honoured(java_hudi: JavaHudi, java_table) -> None:  # type: ignore[no-untyped-def]
    t = java_table(PARTITIONED, MOR)
    log_compaction = {
        "hoodie.log.compaction.enable": "true",
        "hoodie.log.compaction.inline": "true",
        "hoodie.log.compaction.blocks.threshold": "2",
    }
    java_write(java_hudi, t, updates(t, 0.4, seed=21, offset=5), "upsert", **log_compaction)
    planned = [n for n in timeline_files(t) if n.endswith(".logcompaction.requested")]
    assert planned, f"Java ran no log compaction: {timeline_files(t)}"
    done = {n.split(".")[0] for n in timeline_files(t) if n.endswith(".deltacommit")}
    assert {n.split(".")[0] for n in planned} <= done, f"Java's log compaction did not complete: {timeline_files(t)}"
    assert_reads_agree(java_hudi, t, "after Java's log compaction")

    compacted, _, _ = our_services(t)
    assert compacted, "our compaction found nothing to compact after Java's log compaction"
    assert_reads_agree(java_hudi, t, "after our compaction, clean and archive")
    ro = java_read(java_hudi, t, "read_optimized")
    assert_rows_equal(ro, t.expected(), "Java's read-optimized query after our compaction of log-compacted slices")


@pytest.mark.interop(
    direction="Java service → our reader + services → Java reads",
    table="MOR partitioned",
    service="clustering (Java replacecommit) → compaction, clean, archive (ours)",
    checks="replaced file groups neither read, compacted nor resurrected; cleaned; snapshot Java = ours = model",
)
def test_java_clustering_honoured(java_hudi: JavaHudi, java_table) -> None:  # type: ignore[no-untyped-def]
    t = java_table(PARTITIONED, MOR)
    before = data_files(t)
    clustering = {"hoodie.clustering.inline": "true", "hoodie.clustering.inline.max.commits": "1"}
    java_write(java_hudi, t, updates(t, 0.3, seed=22, offset=5), "upsert", **clustering)
    replaces = [n for n in timeline_files(t) if n.endswith(".replacecommit")]
    assert replaces, f"Java ran no clustering: {timeline_files(t)}"
    # logs on the clustered file groups, for our compaction to compact
    java_write(java_hudi, t, updates(t, 0.3, seed=23, offset=6), "upsert")
    assert_reads_agree(java_hudi, t, "after Java's clustering")

    replaced = {file_id(f) for f in before}  # every file group the history had
    compacted, cleaned, archived = our_services(t)
    assert compacted, "our compaction found nothing to compact on the clustered file groups"
    planned_groups = {s.fileId for r in compacted for s in r.stats}
    assert not planned_groups & replaced, f"our compaction compacted replaced file groups {planned_groups & replaced}"
    cleaned_names = {Path(n).name for names in cleaned.files.values() for n in names}
    left = {f for f in data_files(t) if file_id(f) in replaced}
    assert not left, f"our clean left files of replaced file groups: {sorted(left)} (cleaned {sorted(cleaned_names)})"
    assert_reads_agree(java_hudi, t, "after our compaction, clean and archive")
    assert archived.archived_instants, "our archive archived nothing"


@pytest.mark.interop(
    direction="Java service → our reader + services → Java reads",
    table="MOR partitioned",
    service="savepoint (Java) → compaction, clean, archive (ours)",
    checks="savepointed files kept (Java's time travel to the savepoint unchanged), archive stops at it, "
    "show_savepoints; snapshot Java = ours = model",
)
def test_java_savepoint_honoured(java_hudi: JavaHudi, java_table) -> None:  # type: ignore[no-untyped-def]
    t = java_table(PARTITIONED, MOR)
    savepointed = t.instants[1].split(".")[0]  # the history's first upsert
    rows = procedure(java_hudi, "create_savepoint", t, commit_time=savepointed)
    assert rows and all(r.get("create_savepoint_result", True) for r in rows), rows
    kept = savepointed_files(t, savepointed)
    assert kept and kept <= data_files(t), f"savepoint {savepointed} lists {sorted(kept)}"
    as_of = {"as.of.instant": savepointed}
    travel = java_read(java_hudi, t, **as_of)
    # Java compacts the slices after the savepoint, then writes logs on them: once we compact those again, they
    # are what our clean must delete, beside the savepointed slices it must keep
    inline = {"hoodie.compact.inline": "true", "hoodie.compact.inline.max.delta.commits": "1"}
    java_write(java_hudi, t, updates(t, 0.5, seed=24, offset=5), "upsert", **inline)
    java_write(java_hudi, t, updates(t, 0.5, seed=27, offset=6), "upsert")
    assert_reads_agree(java_hudi, t, "after Java's savepoint")

    _, cleaned, archived = our_services(t)
    assert cleaned.deleted, f"our clean deleted nothing: the savepoint check is vacuous ({cleaned.reason})"
    assert kept <= data_files(t), f"our clean deleted savepointed files {sorted(kept - data_files(t))}"
    # Java refuses time travel before the last clean's earliest commit to retain, savepoint or not
    # (TimelineUtils.validateTimestampAsOf): our reader reads the savepointed slices as Java did before the clean
    after = read_snapshot_table(HudiTable(str(t.path)), as_of=savepointed)
    assert_rows_equal(after, travel, f"our read as of savepoint {savepointed} after our services vs Java's before")
    assert keyed_meta(after) == keyed_meta(travel), "read as of the savepoint: meta columns"
    assert all(str(i.time) < savepointed for i in archived.archived_instants), (
        f"our archive went past savepoint {savepointed}: {[str(i.time) for i in archived.archived_instants]}"
    )
    listed = {r["savepoint_time"] for r in procedure(java_hudi, "show_savepoints", t)}
    assert savepointed in listed, f"show_savepoints after our services: {listed}"
    assert_reads_agree(java_hudi, t, "after our compaction, clean and archive")


@pytest.mark.interop(
    direction="Java service → our reader + services → Java reads",
    table="MOR partitioned",
    service="rollback (Java) → compaction, clean, archive (ours)",
    checks="rolled-back deltacommit not read, not compacted; snapshot Java = ours = hudi-rs = model",
)
def test_java_rollback_honoured(java_hudi: JavaHudi, java_table) -> None:  # type: ignore[no-untyped-def]
    t = java_table(PARTITIONED, MOR)
    kept = Model(t.model.key, dict(t.model.rows))
    doomed = pa.concat_tables([updates(t, 0.5, seed=25, offset=5), trips(30, seed=26)])
    java_write(java_hudi, t, doomed, "upsert")
    latest = t.instants[-1].split(".")[0]
    rows = procedure(java_hudi, "rollback_to_instant", t, instant_time=latest)
    assert rows and all(r.get("rollback_result", True) for r in rows), rows
    t.model = kept  # the rolled-back write never happened
    assert any(n.endswith(".rollback") for n in timeline_files(t)), f"no rollback instant: {timeline_files(t)}"
    assert not any(n.startswith(latest) and "deltacommit" in n for n in timeline_files(t)), timeline_files(t)
    assert_reads_agree(java_hudi, t, "after Java's rollback")

    compacted, _, _ = our_services(t)
    assert compacted, "our compaction found nothing to compact"
    written: set[Any] = {s.path for r in compacted for s in r.stats}
    assert written, "our compaction wrote nothing"
    assert_reads_agree(java_hudi, t, "after our compaction, clean and archive")
