"""Our metadata-table (MDT) deltacommit of the ``files`` partition against Java Hudi 0.15, the oracle.

Java writes a MERGE_ON_READ table with its defaults (metadata table on): an insert over many small file groups, then
an upsert (log files). The upsert's MDT deltacommit is then taken away as if it had failed before its commit (its
timeline files and its log file deleted: the MDT as it was before), and our writer writes it again from the data
commit's metadata. Then:

- our log file is byte for byte Java's (the HFILE_DATA_BLOCK: header, HFile, records, the file maps' HashMap order)
  but for the order of the two header entries, which varies between Java runs;
  our ``.deltacommit.inflight`` is Java's; our ``.deltacommit`` is Java's but for what differs by run (the write
  token in the log file's name, the upsert's milliseconds);
- Java reads the table with ``hoodie.metadata.enable=true`` and gets the expected rows; Java's
  ``validate_metadata_table_files`` lists, through the MDT, exactly the files and sizes of a storage listing, and
  the latest base files and latest file slices through the MDT are a storage listing's (the checks of
  ``HoodieMetadataTableValidator``, :mod:`tests.java.mdt_validate`);
- Java writes on top (an upsert with its inline compaction of the data table) and runs its own MDT services (MDT
  compaction after ``hoodie.metadata.compact.max.delta.commits``, inline compaction of the data table, then a clean),
  reads the expected rows and validates again; and the MDT blocks Java wrote for its upsert, compaction and clean
  are the blocks our derivation (``update_from_commit``, ``update_from_clean``) writes from their metadata;
- a crash of our MDT deltacommit before its commit point is rolled back by the re-run, which writes Java's block again.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from lake_orchestration.datagen import generate_updates
from lake_orchestration.hudi.log.log_format import HeaderKey, LogBlockType, iter_blocks
from lake_orchestration.hudi.metadata.writer import (
    FILES_PARTITION,
    MetadataCommit,
    files_partition_records,
    hfile_data_block,
    metadata_table,
    update_from_clean,
    update_from_commit,
    update_metadata_table,
)
from lake_orchestration.hudi.model.avro import CleanMetadata
from lake_orchestration.hudi.model.instant import Action, State
from lake_orchestration.hudi.model.properties import TableType
from lake_orchestration.hudi.table.hudi_table import HudiTable
from tests.java.harness import JavaHudi
from tests.java.interop import (
    PARTITIONED,
    JavaTable,
    Model,
    assert_rows_equal,
    java_read,
    java_write,
    procedure,
    trips,
)
from tests.java.mdt_validate import validate_metadata_table

pytestmark = [pytest.mark.java]

MDT_ON = {
    "hoodie.metadata.enable": "true",
    # ~40 records per file group: several base files per partition, so each partition's file map has many entries
    "hoodie.parquet.max.file.size": str(40 * 1024),
    "hoodie.copyonwrite.record.size.estimate": "1024",
}
READ_MDT = {"hoodie.metadata.enable": "true"}


def _mdt_dir(path: Path) -> Path:
    return path / ".hoodie" / "metadata"


def _remove_mdt_deltacommit(path: Path, instant: str) -> dict[str, bytes]:
    """Take the MDT deltacommit ``instant`` away as if it had never been written (its three timeline files, its log
    file, their Hadoop ``.crc`` files): what Java wrote, by name relative to the MDT."""
    mdt = _mdt_dir(path)
    meta = json.loads((mdt / ".hoodie" / f"{instant}.deltacommit").read_bytes())
    (stat,) = meta["partitionToWriteStats"][FILES_PARTITION]
    saved: dict[str, bytes] = {}
    names = [f".hoodie/{instant}.deltacommit{s}" for s in (".requested", ".inflight", "")] + [stat["path"]]
    for rel in names:
        f = mdt / rel
        saved[rel] = f.read_bytes()
        keep = path.parent / "java-mdt" / rel  # for a failure's diagnosis
        keep.parent.mkdir(parents=True, exist_ok=True)
        keep.write_bytes(saved[rel])
        f.unlink()
        f.with_name(f".{f.name}.crc").unlink(missing_ok=True)
    return saved


def _check_java_agrees(java: JavaHudi, table: JavaTable, what: str) -> None:
    """Java reads the expected rows through the MDT; Java validates the MDT (:func:`validate_metadata_table`:
    ``validate_metadata_table_files``, verbose, finds every file of the storage listing in the MDT with its size, and
    no other; the latest base files and latest file slices through the MDT are a storage listing's)."""
    assert_rows_equal(java_read(java, table, **READ_MDT), table.expected(), f"{what}: Java's snapshot with the MDT")
    validate_metadata_table(java, table, what)


def _java_blocks(data: HudiTable) -> dict[str, bytes]:
    """Instant -> the HFILE_DATA_BLOCK Java wrote for it in the MDT's files partition (every log file)."""
    mdt = metadata_table(data)
    out: dict[str, bytes] = {}
    for f in mdt.storage.list_dir(mdt.storage.join(FILES_PARTITION)):
        if ".log." not in f.name or f.name.endswith(".crc"):
            continue
        raw = mdt.storage.read_bytes(f.path)
        for block in iter_blocks(raw, f.path):
            if block.block_type is LogBlockType.HFILE_DATA_BLOCK:
                out[block.header_map[HeaderKey.INSTANT_TIME]] = raw[block.offset : block.offset + block.size]
    return out


def _derivations_match_java(data: HudiTable, *, after: str) -> set[str]:
    """For each data action completed after ``after`` (Java's), our records from its metadata
    (:func:`update_from_commit`, :func:`update_from_clean`) in our block equal Java's block of that instant. Returns
    the actions checked."""
    blocks = _java_blocks(data)
    checked = set()
    for inst in data.refresh().timeline.completed():
        t = str(inst.time)
        if t <= after or inst.action.value not in ("commit", "deltacommit", "clean"):
            continue
        if inst.action.value == "clean":
            update = update_from_clean(data.read_model(inst, CleanMetadata))
        else:
            update = update_from_commit(data.commit_metadata(inst))
        assert t in blocks, f"Java wrote no MDT block for {inst.file_name}"
        ours = hfile_data_block(t, files_partition_records(update))
        _assert_same_block(ours, blocks[t], f"our MDT block for {inst.file_name}")
        checked.add(inst.action.value)
    return checked


def _assert_same_block(ours: bytes, javas: bytes, what: str) -> None:
    """One log block each, equal but for the order of the header entries: Java keeps them in a HashMap keyed by an
    enum (identity hash codes), so INSTANT_TIME and SCHEMA come in either order from run to run."""
    (a,) = list(iter_blocks(ours, "ours"))
    (b,) = list(iter_blocks(javas, "java"))
    assert a.block_type == b.block_type and a.header_map == b.header_map, f"{what}: block type or header differs"
    assert a.content == b.content, f"{what}: the HFile differs from Java's"
    assert a.footer == b.footer and len(ours) == len(javas), f"{what}: the framing differs"


def _without_run_specifics(commit: dict[str, Any]) -> dict[str, Any]:
    out = json.loads(json.dumps(commit))
    for stat in out["partitionToWriteStats"][FILES_PARTITION]:
        stat["path"] = stat["path"].rsplit("_", 1)[0]
        stat["logFiles"] = [n.rsplit("_", 1)[0] for n in stat["logFiles"]]
        stat["runtimeStats"]["totalUpsertTime"] = 0
    return out


@dataclass(frozen=True)
class JavaWritten:
    """Java's table before we take its last MDT deltacommit away (read-only: tests work on a copy)."""

    table: JavaTable
    base: pa.Table
    instant: str
    """The last data instant (Java's upsert), whose MDT deltacommit we write again."""

    def copy(self, dest: Path) -> JavaTable:
        return self.table.copy(dest)


@pytest.fixture(scope="module")
def java_written(java_hudi: JavaHudi, tmp_path_factory: pytest.TempPathFactory) -> JavaWritten:
    """Java writes a MERGE_ON_READ table with the metadata table on: an insert into ~10 file groups, an upsert."""
    root = tmp_path_factory.mktemp("java-mdt")
    base = trips(400, seed=1)
    table = JavaTable(root / "t", PARTITIONED, TableType.MERGE_ON_READ, Model(("city", "uuid")), base.schema, [], root)
    java_write(java_hudi, table, base, "insert", **MDT_ON)
    java_write(java_hudi, table, generate_updates(base, fraction=0.5, seed=2, ts_offset=10**6), "upsert", **MDT_ON)
    data = HudiTable(str(table.path))
    assert data.config.raw.get("hoodie.table.metadata.partitions") == FILES_PARTITION
    last = data.timeline.completed_commits().last
    assert last is not None
    stats = data.commit_metadata(last).partition_to_write_stats
    assert max(len(s) for s in stats.values()) >= 3, "expected several files per partition"
    return JavaWritten(table, base, str(last.time))


def _regenerate(table: JavaTable, instant: str) -> tuple[dict[str, bytes], MetadataCommit]:
    """Take the MDT deltacommit of ``instant`` away, then our writer writes it from the data commit's metadata."""
    javas = _remove_mdt_deltacommit(table.path, instant)
    data = HudiTable(str(table.path))
    md = data.commit_metadata(data.timeline.get(instant))
    return javas, update_metadata_table(data, instant, update_from_commit(md))


@pytest.mark.interop(
    direction="Java writes with its metadata table on → our writes and services keep it → Java validates",
    table="MOR, metadata table on",
    service="MDT deltacommit (files)",
    checks="our log block byte for byte Java's; validate_metadata_table_files (verbose) = storage + latest base "
    "files and file slices validated; Java upserts, compacts the MDT, validates",
)
def test_our_mdt_deltacommit_is_javas(java_hudi: JavaHudi, java_written: JavaWritten, tmp_path: Path) -> None:
    table = java_written.copy(tmp_path / "t")
    t = java_written.instant
    javas, ours = _regenerate(table, t)

    mdt = _mdt_dir(table.path)
    java_log = next(k for k in javas if k.startswith(f"{FILES_PARTITION}/"))
    assert ours.log_file.rsplit("_", 1)[0] == java_log.rsplit("_", 1)[0], "same log file version of files-0000-0"
    _assert_same_block((mdt / ours.log_file).read_bytes(), javas[java_log], "our MDT log file")
    for suffix in (".requested", ".inflight"):
        name = f".hoodie/{t}.deltacommit{suffix}"
        assert (mdt / name).read_bytes() == javas[name], f"our {name} differs from Java's"
    assert _without_run_specifics(json.loads((mdt / ".hoodie" / f"{t}.deltacommit").read_bytes())) == (
        _without_run_specifics(json.loads(javas[f".hoodie/{t}.deltacommit"]))
    )
    assert not (mdt / ".hoodie" / ".temp" / t).exists(), "the MDT markers are deleted after the commit"

    _check_java_agrees(java_hudi, table, "after our MDT deltacommit")

    # Java continues: an upsert whose writer first compacts the MDT (3 deltacommits >= 2, ours the latest: the
    # compaction instant is ours + "001"), then its inline compaction of the data table after the upsert
    more = {
        **MDT_ON,
        "hoodie.compact.inline": "true",
        "hoodie.compact.inline.max.delta.commits": "1",
        "hoodie.metadata.compact.max.delta.commits": "2",
    }
    update = generate_updates(java_written.base, fraction=0.2, seed=3, ts_offset=2 * 10**6)
    java_write(java_hudi, table, update, "upsert", **more)
    # the slices the compaction replaced (KEEP_LATEST_COMMITS would keep them for the retained commit)
    procedure(java_hudi, "run_clean", table, clean_policy="KEEP_LATEST_FILE_VERSIONS", file_versions_retained=1)
    data = HudiTable(str(table.path))
    assert [i for i in data.timeline.completed() if i.action.value == "commit"], "Java compacted the data table"
    mdt_table = metadata_table(data)
    compactions = [str(i.time) for i in mdt_table.timeline.completed() if i.action.value == "commit"]
    assert f"{t}001" in compactions, [i.file_name for i in mdt_table.timeline.instants]
    assert not [i for i in mdt_table.timeline.instants if i.state is not State.COMPLETED]
    _check_java_agrees(java_hudi, table, "after Java's write and services on top")
    # what Java's MDT holds for every data action (its insert and upserts, compaction, clean) is what our
    # derivation writes from the action's metadata
    checked = _derivations_match_java(data, after="")
    assert {"deltacommit", "commit", "clean"} <= checked, (
        f"Java's write on top did not upsert, compact and clean: {checked}"
    )


@pytest.mark.interop(
    direction="Java writes with its metadata table on → our writes and services keep it → Java validates",
    table="MOR, metadata table on",
    service="MDT deltacommit crash+rerun",
    checks="rolled back on re-run (MDT .rollback), Java's block written again; validate_metadata_table_files + "
    "latest base files and file slices validated",
)
def test_crashed_mdt_deltacommit_is_rolled_back_on_rerun(
    java_hudi: JavaHudi, java_written: JavaWritten, tmp_path: Path
) -> None:
    """A kill between our MDT log file and its completed file (the state: requested, inflight, the log file, its
    marker): the re-run rolls the pending MDT deltacommit back as Java's eager ``rollbackFailedWrites`` does (an MDT
    ``.rollback``, a rollback command block), then writes the deltacommit again; Java reads and validates it."""
    table = java_written.copy(tmp_path / "t")
    t = java_written.instant
    javas, first = _regenerate(table, t)
    mdt = _mdt_dir(table.path)
    (mdt / ".hoodie" / f"{t}.deltacommit").unlink()  # the attempt died before its commit point

    data = HudiTable(str(table.path))
    md = data.commit_metadata(data.timeline.get(t))
    again = update_metadata_table(data, t, update_from_commit(md))

    assert again.rolled_back == (t,)
    mdt_table = metadata_table(data)
    rollbacks = [i for i in mdt_table.timeline.completed() if i.action.value == "rollback"]
    assert len(rollbacks) == 1 and str(rollbacks[0].time) > t
    assert (mdt_table.timeline.get(t, Action.DELTA_COMMIT) or first).is_completed
    java_log = next(k for k in javas if k.startswith(f"{FILES_PARTITION}/"))
    _assert_same_block((mdt / again.log_file).read_bytes(), javas[java_log], "the re-run's log file")
    _check_java_agrees(java_hudi, table, "after a crashed MDT deltacommit and its re-run")
