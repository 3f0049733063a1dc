"""A long-lived MOR table: 300 deltacommits with periodic compaction, clean and archive (merge enabled).

The done-when of the maintenance services: the active timeline stays within ``hoodie.keep.max.commits``, every
instant ever completed is on the active or the archived timeline with its metadata, the small archive files end as
one, and the `hudi` wheel reads the same snapshot before and after every clean and archive.
"""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa

from lake_orchestration.datagen import generate_trips, generate_updates
from lake_orchestration.hudi.model.instant import Action
from lake_orchestration.hudi.services.archive import run_archive
from lake_orchestration.hudi.services.archive.config import ArchiveConfig
from lake_orchestration.hudi.services.clean import run_clean
from lake_orchestration.hudi.services.clean.config import CleanConfig
from lake_orchestration.hudi.services.compaction import CompactionConfig, run_compaction
from lake_orchestration.hudi.table import HudiTable
from lake_orchestration.hudi.table.archived_timeline import ArchivedTimeline
from lake_orchestration.hudi.write import write_table
from tests.oracle import assert_same_rows, hudi_rs_snapshot
from tests.trips import trips_options

DELTA_COMMITS = 300
MAINTENANCE = {
    "hoodie.cleaner.commits.retained": "4",
    "hoodie.keep.min.commits": "6",
    "hoodie.keep.max.commits": "10",
    "hoodie.commits.archival.batch": "4",
    "hoodie.archive.merge.enable": "true",
    "hoodie.archive.merge.files.batch.size": "5",
    "hoodie.compact.inline.max.delta.commits": "10",
}


def _expected(rows: dict[str, dict]) -> pa.Table:
    return pa.Table.from_pylist(sorted(rows.values(), key=lambda r: r["uuid"]))


def test_300_deltacommits_with_compaction_clean_archive_and_merge(tmp_path: Path) -> None:
    path = tmp_path / "t"
    opts = trips_options(hive_style_partitioning=True, small_file_limit=0)
    base = generate_trips(200, partitions=2, seed=7)
    write_table(str(path), base, operation="bulk_insert", options=opts)
    model = {r["uuid"]: r for r in base.to_pylist()}  # independent expectation: last write per key wins
    completed: set[tuple[str, str]] = set()
    archives_written = 0
    for n in range(DELTA_COMMITS):
        upd = generate_updates(base, fraction=0.02, seed=n, ts_offset=(n + 1) * 10**6)
        write_table(str(path), upd, operation="upsert", options=opts)
        model.update({r["uuid"]: r for r in upd.to_pylist()})
        if n % 10 == 9:
            run_compaction(HudiTable(str(path)), schedule=True, config=CompactionConfig(max_delta_commits=10))
        if n % 25 == 24 or n == DELTA_COMMITS - 1:
            t = HudiTable(str(path))
            completed |= {(str(i.time), i.action.value) for i in t.timeline.completed()}
            before = hudi_rs_snapshot(path)
            run_clean(t, CleanConfig.from_options(MAINTENANCE))
            completed |= {(str(i.time), i.action.value) for i in HudiTable(str(path)).timeline.completed()}
            result = run_archive(HudiTable(str(path)), ArchiveConfig.from_options(MAINTENANCE))
            archives_written += result.archive_file is not None
            files = ArchivedTimeline.load(HudiTable(str(path)).storage).files
            # merge keeps the number of small archive files below hoodie.archive.merge.files.batch.size
            assert len(files) <= int(MAINTENANCE["hoodie.archive.merge.files.batch.size"])
            assert_same_rows(hudi_rs_snapshot(path), before)

    t = HudiTable(str(path))
    tl = t.timeline
    # within hoodie.keep.max.commits (clean and rollback instants are archived by their own count)
    assert len(tl.completed_commits()) <= int(MAINTENANCE["hoodie.keep.max.commits"])
    assert len(tl.completed().with_actions(Action.CLEAN)) <= int(MAINTENANCE["hoodie.keep.max.commits"])
    assert len(list(path.joinpath(".hoodie").iterdir())) < 60, "the active timeline folder stays small"
    # every instant ever completed is on one of the two timelines, archived ones with their metadata
    archived = ArchivedTimeline.load(t.storage)
    on_archive = {(str(e.instant.time), e.instant.action.value): e for e in archived if e.instant.is_completed}
    active = {(str(i.time), i.action.value) for i in tl.completed()}
    assert len(on_archive) > 250
    missing = completed - active - set(on_archive)
    assert not missing, f"instants lost: {sorted(missing)[:5]}"
    assert not set(on_archive) & active, "an instant is on both timelines"
    payload = {
        "deltacommit": "hoodie_commit_metadata",
        "commit": "hoodie_commit_metadata",
        "clean": "hoodie_clean_metadata",
        "rollback": "hoodie_rollback_metadata",
    }
    for (ts, action), entry in on_archive.items():
        md = getattr(entry.entry, payload[action])
        assert md, f"{ts} {action} archived without its metadata"
        if action == "deltacommit":
            assert md["partitionToWriteStats"], f"{ts}: no write stats in the archived metadata"
    # merge enabled: the small archive files end as one once a merge runs over them (a batch size they reach)
    assert archives_written > 5
    keys = sorted(archived.keys())
    merged = run_archive(
        HudiTable(str(path)), ArchiveConfig.from_options({**MAINTENANCE, "hoodie.archive.merge.files.batch.size": "2"})
    )
    after = ArchivedTimeline.load(t.storage)
    assert len(after.files) == 1 and merged.merge.merged_file == after.files[0].name, merged.merge
    assert sorted(after.keys()) == keys, "the merge lost or duplicated an archived instant"
    # the snapshot is what the write history says
    snap = hudi_rs_snapshot(path)
    assert_same_rows(snap.select(_expected(model).column_names), _expected(model), key="uuid")
