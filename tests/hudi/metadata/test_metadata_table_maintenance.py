"""The metadata table's write settings as Java 0.15's ``HoodieMetadataWriteUtils.createMetadataWriteConfig`` derives
them from the data writer's (read here from the data table's ``hoodie.properties``), and the MDT clean's guard.

Expected values are Java's formulas worked by hand: ``(int) Math.max(20, retained * 1.2)`` for
KEEP_LATEST_COMMITS, ``(int) Math.ceil(n * 1.2)`` for file versions and hours (double arithmetic: 5 * 1.2 is 6.0,
so 6), ``hoodie.keep.min/max.commits`` + 1.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from lake_orchestration.errors import MetadataTableError
from lake_orchestration.hudi.metadata.table_services import clean_is_due, metadata_write_options
from lake_orchestration.hudi.table.hudi_table import HudiTable


def _table(root: Path, **props: str) -> HudiTable:
    hoodie = root / ".hoodie"
    hoodie.mkdir(parents=True)
    base = {"hoodie.table.name": "t", "hoodie.table.type": "MERGE_ON_READ", "hoodie.table.version": "6", **props}
    (hoodie / "hoodie.properties").write_text("".join(f"{k}={v}\n" for k, v in base.items()))
    return HudiTable(str(root))


@pytest.mark.parametrize(
    ("props", "expected"),
    [
        (
            {},
            {
                "hoodie.cleaner.policy": "KEEP_LATEST_COMMITS",
                "hoodie.cleaner.commits.retained": "20",  # max(20, 12)
                "hoodie.keep.min.commits": "21",
                "hoodie.keep.max.commits": "31",
                "hoodie.compact.inline.max.delta.commits": "10",
            },
        ),
        (
            {"hoodie.cleaner.commits.retained": "25", "hoodie.metadata.compact.max.delta.commits": "3"},
            {
                "hoodie.cleaner.policy": "KEEP_LATEST_COMMITS",
                "hoodie.cleaner.commits.retained": "30",
                "hoodie.keep.min.commits": "21",
                "hoodie.keep.max.commits": "31",
                "hoodie.compact.inline.max.delta.commits": "3",
            },
        ),
        (
            {
                "hoodie.cleaner.policy": "KEEP_LATEST_FILE_VERSIONS",
                "hoodie.cleaner.fileversions.retained": "5",
                "hoodie.keep.min.commits": "2",
                "hoodie.keep.max.commits": "3",
            },
            {
                "hoodie.cleaner.policy": "KEEP_LATEST_FILE_VERSIONS",
                "hoodie.cleaner.fileversions.retained": "6",
                "hoodie.keep.min.commits": "3",
                "hoodie.keep.max.commits": "4",
                "hoodie.compact.inline.max.delta.commits": "10",
            },
        ),
        (
            {"hoodie.cleaner.policy": "KEEP_LATEST_BY_HOURS"},
            {
                "hoodie.cleaner.policy": "KEEP_LATEST_BY_HOURS",
                "hoodie.cleaner.hours.retained": "29",  # ceil(28.8)
                "hoodie.keep.min.commits": "21",
                "hoodie.keep.max.commits": "31",
                "hoodie.compact.inline.max.delta.commits": "10",
            },
        ),
    ],
)
def test_metadata_write_options_as_java_derives_them(
    tmp_path: Path, props: dict[str, str], expected: dict[str, str]
) -> None:
    assert metadata_write_options(_table(tmp_path / "t", **props)) == expected


def test_a_bad_setting_is_refused_naming_key_and_value(tmp_path: Path) -> None:
    table = _table(tmp_path / "t", **{"hoodie.keep.min.commits": "two"})
    with pytest.raises(MetadataTableError, match=r"hoodie\.keep\.min\.commits='two': expected an integer"):
        metadata_write_options(table)


def test_no_mdt_clean_until_three_instants_after_the_latest_mdt_compaction(tmp_path: Path) -> None:
    mdt = _table(tmp_path / "mdt")
    hoodie = tmp_path / "mdt" / ".hoodie"
    assert clean_is_due(mdt.refresh())  # no compaction yet: always
    for name in ("20240101000000000.deltacommit", "20240101000000000001.commit", "20240101000001000.deltacommit"):
        (hoodie / name).write_text("{}")
    (hoodie / "20240101000002000.deltacommit.inflight").write_text("")  # pending: does not count
    assert not clean_is_due(mdt.refresh())
    for name in ("20240101000002000.deltacommit", "20240101000001000002.clean"):
        (hoodie / name).write_text("{}")
    assert clean_is_due(mdt.refresh())  # 3 completed instants after the compaction, whatever their action
