"""Our clean (``<L>002``) and archival of the metadata table (MDT), killed and finished, with Java Hudi 0.15 as the
oracle.

Java writes a partitioned MERGE_ON_READ table with its metadata table on and the settings below (also in the table's
``hoodie.properties``, where our commit path reads them). Java derives the MDT's own settings from them
(``HoodieMetadataWriteUtils.createMetadataWriteConfig``): the data policy KEEP_LATEST_FILE_VERSIONS with 1 version
makes the MDT keep ceil(1.2) = 2 slices of ``files-0000-0``, keep.min/max 2/3 make the MDT's 3/4, so a handful of
writes reach an MDT clean and an MDT archival (under KEEP_LATEST_COMMITS the MDT retains at least 20 commits).

Our upserts run until the next one cleans the MDT (3 slices, 3 instants after the latest MDT compaction); that one runs
in a process that dies (``os._exit``, as a SIGKILL) at the MDT clean's commit; the write is rolled back and our next
write finishes the clean. Then our archive of the data table, and writes killed in the middle of the MDT archival
(archive file written, the first archived instant deleted); the next write finishes it. After each, Java's
``validate_metadata_table_files`` equals the storage listing and Java reads the expected rows through the MDT; Java
lists our MDT archived instants; Java writes on top with its own MDT services and validates again.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from lake_orchestration.datagen import generate_updates
from lake_orchestration.hudi.metadata.table_services import clean_is_due
from lake_orchestration.hudi.metadata.writer import metadata_table
from lake_orchestration.hudi.model.avro import CleanMetadata
from lake_orchestration.hudi.model.instant import Action, State
from lake_orchestration.hudi.model.properties import TableType
from lake_orchestration.hudi.services.archive import ArchiveConfig, run_archive
from lake_orchestration.hudi.services.rollback import rollback_write
from lake_orchestration.hudi.table.archived_timeline import ArchivedTimeline
from lake_orchestration.hudi.table.hudi_table import HudiTable
from lake_orchestration.hudi.write import write_table
from tests.conftest import REPO_ROOT
from tests.java.harness import JavaHudi
from tests.java.interop import PARTITIONED, JavaTable, Model, java_write, procedure, trips
from tests.java.mdt_validate import MDT_DEFAULTS
from tests.java.mdt_validate import check_metadata_table as _check

pytestmark = [pytest.mark.java]

MOR = TableType.MERGE_ON_READ
SETTINGS = {
    "hoodie.cleaner.policy": "KEEP_LATEST_FILE_VERSIONS",
    "hoodie.cleaner.fileversions.retained": "1",
    "hoodie.cleaner.commits.retained": "1",
    "hoodie.keep.min.commits": "2",
    "hoodie.keep.max.commits": "3",
    "hoodie.metadata.compact.max.delta.commits": "3",
}

# Our upsert in a process that dies at the commit of an MDT clean (argv[3] == "clean") or once the MDT archival has
# written its archive file and deleted the first archived instant file (argv[3] == "archive"); else it completes.
_WRITE = textwrap.dedent(
    """
    import os, sys
    import pyarrow.parquet as pq
    import lake_orchestration.hudi.services.metadata_table as services
    from lake_orchestration.hudi.model.instant import Action
    from lake_orchestration.hudi.model.properties import TableType
    from lake_orchestration.hudi.table.hudi_table import HudiTable
    from lake_orchestration.hudi.write import write_table
    from tests.java.interop import PARTITIONED

    def die(what):
        print(f"KILLED {what}", flush=True)
        os._exit(137)

    if sys.argv[3] == "clean":
        orig = HudiTable.transition_to_completed
        def dying(self, inflight, content):
            if self.base_uri.rstrip("/").endswith(".hoodie/metadata") and inflight.action is Action.CLEAN:
                die(inflight.time)
            return orig(self, inflight, content)
        HudiTable.transition_to_completed = dying
    else:
        run_archive = services.run_archive
        def archive(table, config, **kw):
            return run_archive(table, config, _crash_at=lambda s: s == "after_first_instant_deleted" and die(s), **kw)
        services.run_archive = archive
    write_table(sys.argv[1], pq.read_table(sys.argv[2]), operation="upsert",
                options=PARTITIONED.write_options(TableType.MERGE_ON_READ))
    print("COMPLETED", flush=True)
    """
)


def _keep_settings(path: Path) -> None:
    """Put :data:`SETTINGS` in ``hoodie.properties`` (where our commit path reads them): Java's procedures rewrite
    the file without keys that are not table configs."""
    props = path / ".hoodie" / "hoodie.properties"
    text = props.read_text()
    missing = {k: v for k, v in SETTINGS.items() if f"\n{k}=" not in text}
    if missing:
        props.write_text(text + "".join(f"{k}={v}\n" for k, v in missing.items()))
        (path / ".hoodie" / ".hoodie.properties.crc").unlink(missing_ok=True)  # Hadoop's checksum of the old content


def _mdt(path: Path) -> HudiTable:
    return metadata_table(HudiTable(str(path)))


def _killed_write(table: JavaTable, kill_at: str, seed: int) -> str:
    """Our upsert in a process that dies at ``kill_at``; returns the pending data instant it leaves."""
    rows = generate_updates(table.expected(), fraction=0.2, seed=seed, ts_offset=seed * 10**6)
    src = table.tmp(f"w{seed}").with_suffix(".parquet")
    pq.write_table(rows, src)
    proc = subprocess.run(
        [sys.executable, "-c", _WRITE, str(table.path), str(src), kill_at],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 137 and "KILLED" in proc.stdout, proc.stdout + proc.stderr
    (killed,) = HudiTable(str(table.path)).timeline.pending()
    return str(killed.time)


def _mdt_slices(path: Path) -> set[str]:
    """Base instants of the ``files-0000-0`` slices on storage (base HFiles and log files)."""
    out = set()
    for f in (path / ".hoodie" / "metadata" / "files").iterdir():
        if f.name.endswith(".hfile"):
            out.add(f.name.rsplit("_", 1)[1].removesuffix(".hfile"))
        elif ".log." in f.name:
            out.add(f.name.split(".log.", 1)[0].rsplit("_", 1)[1])
    return out


def _our_upsert(table: JavaTable, seed: int) -> None:
    rows = generate_updates(table.expected(), fraction=0.2, seed=seed, ts_offset=seed * 10**6)
    write_table(str(table.path), rows, operation="upsert", options=PARTITIONED.write_options(MOR))
    table.model.upsert(rows)


def _mdt_archived(path: Path, *actions: Action) -> set[str]:
    """Times of the completed instants (of ``actions``, default all) in the MDT's archive files, read by our
    reader (Java lists them in the test)."""
    mdt = _mdt(path)
    done = ArchivedTimeline.load(mdt.storage, mdt.config.archivelog_folder).completed()
    return {str(i.time) for i in done if not actions or i.action in actions}


@pytest.mark.interop(
    direction="Java writes with its metadata table on → our writes and services keep it → Java validates",
    table="MOR partitioned, metadata table on (KEEP_LATEST_FILE_VERSIONS 1, keep 2/3)",
    service="metadata-table clean (L002) and archival, each killed and finished by the next write",
    checks="validate_metadata_table_files = storage listing + latest base files and file slices validated; Java "
    "reads through the MDT; "
    "show_archived_commits_metadata on the MDT lists our archived instants; Java writes with its MDT services on top",
)
def test_our_metadata_table_clean_and_archive(java_hudi: JavaHudi, tmp_path: Path) -> None:
    base = trips(120, seed=41)
    table = JavaTable(tmp_path / "t", PARTITIONED, MOR, Model(("city", "uuid")), base.schema, [], tmp_path)
    java_write(java_hudi, table, base, "insert", **MDT_DEFAULTS, **SETTINGS)
    _keep_settings(table.path)

    # 1. our writes until the next one cleans the MDT (3 slices, 3 instants after the latest MDT compaction); that
    #    one is killed at the clean's commit: its files are deleted, the clean inflight
    for seed in range(100, 112):
        if clean_is_due(_mdt(table.path)) and len(_mdt_slices(table.path)) >= 3:
            break
        _our_upsert(table, seed)
    killed = _killed_write(table, "clean", 120)
    mdt = _mdt(table.path)
    (pending,) = [i for i in mdt.timeline.pending() if i.action is Action.CLEAN]
    latest = mdt.timeline.completed().with_actions(Action.DELTA_COMMIT).last
    assert pending.state is State.INFLIGHT and str(pending.time) == f"{latest.time}002", mdt.timeline.instants
    compactions = mdt.timeline.completed().with_actions(Action.COMMIT).instants
    assert len(compactions) >= 2, compactions  # 3 slices of files-0000-0: the oldest goes
    assert len([i for i in mdt.timeline.completed() if i.time > compactions[-1].time]) >= 3  # cleanIfNecessary

    # the killed write rolled back, our next write finishes the pending MDT clean first
    rollback_write(HudiTable(str(table.path)), killed)
    _our_upsert(table, 130)
    mdt = _mdt(table.path)
    done = mdt.timeline.get(str(pending.time), Action.CLEAN)
    assert done is not None and done.is_completed, mdt.timeline.instants
    cleaned = mdt.read_model(done, CleanMetadata)
    deleted = [n for pm in cleaned.partition_metadata.values() for n in pm.success_delete_files]
    assert deleted and all(".hfile" in n or ".log." in n for n in deleted), deleted
    assert not [n for n in deleted if (table.path / ".hoodie/metadata/files" / n).exists()], deleted
    assert all(f"_{compactions[0].time}" not in n for n in deleted), "the slice kept for readers was cleaned"
    _check(java_hudi, table, "after our MDT clean, killed and finished")
    _keep_settings(table.path)

    # 2. our archive of the data table (it stops at the MDT's latest compaction), then writes until the MDT
    #    archival, killed after its archive file and the first archived instant's deletion
    data_archived = run_archive(
        HudiTable(str(table.path)), ArchiveConfig.for_table(HudiTable(str(table.path)).config.raw)
    )
    assert data_archived.archived_instants, data_archived
    killed = _killed_write(table, "archive", 140)
    assert _mdt_archived(table.path), "the killed MDT archival wrote no archive file"
    rollback_write(HudiTable(str(table.path)), killed)
    _our_upsert(table, 150)
    mdt = _mdt(table.path)
    archived = _mdt_archived(table.path)
    active = {str(i.time) for i in mdt.timeline.instants}
    assert not archived & active, f"archived and still active: {sorted(archived & active)}"
    data_first = HudiTable(str(table.path)).timeline.with_actions(Action.DELTA_COMMIT, Action.COMMIT).first
    assert max(archived) < str(data_first.time), "the MDT archived past the data table's first active commit"
    _check(java_hudi, table, "after our MDT archival, killed and finished")
    javas = procedure(
        java_hudi,
        "show_archived_commits_metadata",
        table.path / ".hoodie" / "metadata",
        limit=100000,
        start_ts="00000000000000",
        end_ts="99999999999999999",
    )
    ours = _mdt_archived(table.path, Action.COMMIT, Action.DELTA_COMMIT, Action.REPLACE_COMMIT)
    assert {r["commit_time"] for r in javas} == ours, "Java's listing of the MDT's archived commits != ours"

    # 3. Java writes on top with the same settings: its MDT services run on our MDT
    java_write(
        java_hudi,
        table,
        generate_updates(table.expected(), fraction=0.2, seed=160, ts_offset=160 * 10**6),
        "upsert",
        **MDT_DEFAULTS,
        **SETTINGS,
    )
    _check(java_hudi, table, "after Java's writes and MDT services on top of ours")
