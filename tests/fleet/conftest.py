"""A small warehouse of real tables for the fleet tests (written once per module that asks for it).

Under ``<tmp>/wh``: nine Hudi tables written by this project (trips, 20 rows, 2 partitions) whose timelines make
known services due under the :data:`DEFAULTS` options, and the Java-written Paimon golden tables (``default.db``)
when ../shared has them. :data:`EXPECTED_DUE` is what the design says is due, table by table.
"""

from __future__ import annotations

import tarfile
from dataclasses import dataclass
from pathlib import Path

import pytest

from lake_orchestration.datagen import generate_trips, generate_updates
from lake_orchestration.hudi.model.properties import TableType
from lake_orchestration.hudi.write import write_table
from tests.conftest import REQUIRE_SHARED, SHARED
from tests.trips import trips_options

MOR, COW = TableType.MERGE_ON_READ, TableType.COPY_ON_WRITE
DEFAULTS = {
    "compaction_options": {"hoodie.compact.inline.max.delta.commits": 3},
    "clean_options": {"hoodie.cleaner.commits.retained": 2},
    "archive_options": {"hoodie.keep.min.commits": 3, "hoodie.keep.max.commits": 4},
}
"""The options the fleet config gives every table."""

# relative path -> (table type, upserts after the bulk insert)
TABLES: dict[str, tuple[TableType, int]] = {
    "rides/mor_due": (MOR, 3),  # 4 deltacommits >= 3: compaction
    "rides/mor_idle": (MOR, 1),
    "rides/cow_clean": (COW, 3),  # 4 commits, 2 retained: clean
    "rides/cow_idle": (COW, 0),
    "rides/broken": (MOR, 1),  # gets an unreadable compaction plan: compaction fails
    "sales/cow_archive": (COW, 4),  # 5 commits: clean, and archive (> hoodie.keep.max.commits 4)
    "sales/mor_all": (MOR, 4),  # 5 deltacommits: compaction and archive
    "deep/a/b/mor_deep": (MOR, 3),  # found 4 levels down: compaction
    "rides/cow_mdt": (COW, 1),  # with a metadata table that missed the last commit (lag 1)
    "rides/cow_old": (COW, 3),  # its first three commits in 2020 (for hoodie.cleaner.hours.retained): clean
}
OLD_TABLE = "rides/cow_old"
OLD_INSTANTS = ("20200101000000000", "20200101010000000", "20200101020000000")
"""The instant times of the old table's bulk insert and first two upserts (its last upsert is now)."""
MDT_TABLE = "rides/cow_mdt"
EXPECTED_DUE: dict[str, list[str]] = {
    "rides_mor_due": ["compaction"],
    "rides_mor_idle": [],
    "priority_clean": ["clean"],  # rides/cow_clean, listed under tables: with its own name and weight
    "rides_cow_idle": [],
    "rides_broken": ["compaction"],
    "sales_cow_archive": ["clean", "archive"],
    "sales_mor_all": ["compaction", "archive"],  # 4 log blocks at most: under hoodie.log.compaction.blocks.threshold
    "deep_a_b_mor_deep": ["compaction"],
    "rides_cow_mdt": [],
    "rides_cow_old": ["clean"],
}
BROKEN_PLAN_INSTANT = "20200101000000000"
PAIMON_ARCHIVE = SHARED / "fixtures" / "paimon-tables" / "pk_global_index_golden.tar.gz"


@dataclass(frozen=True)
class Warehouse:
    root: Path
    """The warehouse prefix."""
    paimon: list[str]
    """Names of the Paimon tables in it (empty without ../shared)."""

    def path(self, rel: str) -> Path:
        return self.root / rel


def write_warehouse(root: Path) -> list[str]:
    """Write :data:`TABLES` (and extract the Paimon golden tables) under ``root``; returns the Paimon table names."""
    base = generate_trips(20, partitions=2, seed=1)
    for rel, (table_type, upserts) in TABLES.items():
        path = str(root / rel)
        opts = trips_options(table_type=table_type)
        if rel == MDT_TABLE:
            opts = trips_options(table_type=table_type, options={"hoodie.metadata.enable": "true"})
        old = list(OLD_INSTANTS) if rel == OLD_TABLE else []
        write_table(path, base, operation="bulk_insert", options=opts, instant_time=old.pop(0) if old else None)
        for i in range(upserts):
            upd = generate_updates(base, fraction=0.3, seed=i, ts_offset=(i + 1) * 10**6)
            write_table(path, upd, operation="upsert", options=opts, instant_time=old.pop(0) if old else None)
    # the metadata table's commit of the last write did not complete (as after a crash between the two commits)
    mdt = root / MDT_TABLE / ".hoodie" / "metadata" / ".hoodie"
    max(mdt.glob("2*.deltacommit")).unlink()
    # a compaction plan no reader can parse: the fleet's compaction of this table fails, no other table's
    (root / "rides/broken/.hoodie" / f"{BROKEN_PLAN_INSTANT}.compaction.requested").write_bytes(b"not avro")
    paimon: list[str] = []
    if PAIMON_ARCHIVE.is_file():
        with tarfile.open(PAIMON_ARCHIVE) as tar:
            tar.extractall(root, filter="data")
        paimon = sorted(f"default_{p.name}" for p in (root / "default.db").iterdir() if (p / "schema").is_dir())
    elif REQUIRE_SHARED:
        pytest.fail(f"Paimon golden tables not found at {PAIMON_ARCHIVE}")
    return paimon


@pytest.fixture(scope="module")
def warehouse(tmp_path_factory: pytest.TempPathFactory) -> Warehouse:
    """The warehouse, written once per module (tests that change it copy it first)."""
    root = tmp_path_factory.mktemp("fleet") / "wh"
    root.mkdir()
    return Warehouse(root=root, paimon=write_warehouse(root))
