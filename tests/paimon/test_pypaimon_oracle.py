"""Our model lists the same live files as pypaimon's scan plan, on primary-key tables pypaimon writes.

pypaimon (2.1.0, in its own venv: tests/paimon/conftest.py) writes several commits: inserts, updates of existing
keys and deletes (``rowkind.field``), so every bucket holds several level-0 files. Its scan plan (splits of the
latest snapshot) is the independent reading we compare with: per (partition, bucket) the same files, levels, row
counts, delete row counts, sequence numbers, sizes and min/max keys.
"""

from __future__ import annotations

import collections
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from lake_orchestration.paimon.model import CommitKind
from lake_orchestration.paimon.table import PaimonTable

pytestmark = pytest.mark.slow

Rows = list[list[Any]]


def _partitioned_commits() -> list[Rows]:
    return [
        [[dt, i, f"v0-{i}", "+I"] for dt in ("a", "b") for i in range(100)],
        [["a", i, f"v1-{i}", "+I"] for i in range(30)],  # updates
        [["b", i, None, "-D"] for i in range(50, 60)],  # deletes
        [["a", i, f"v3-{i}", "+I"] for i in range(100, 120)] + [["b", i, f"v3-{i}", "+I"] for i in range(10, 15)],
    ]


def _unpartitioned_commits() -> list[Rows]:
    return [
        [[f"k{i % 7}", i, float(i), "+I"] for i in range(60)],
        [[f"k{i % 7}", i, float(-i), "+I"] for i in range(0, 60, 3)],  # updates
        [[f"k{i % 7}", i, None, "-D"] for i in range(0, 60, 5)],  # deletes
        [["a-long-string-key-beyond-seven-bytes", i, 1.0, "+I"] for i in range(5)],
    ]


SPECS: dict[str, dict[str, Any]] = {
    "partitioned": {
        "columns": [["dt", "string", False], ["id", "int32", False], ["v", "string", True], ["op", "string", True]],
        "partition_keys": ["dt"],
        "primary_keys": ["dt", "id"],
        "options": {"bucket": "2", "rowkind.field": "op"},
        "commits": _partitioned_commits(),
    },
    "unpartitioned_composite_key": {
        "columns": [["k", "string", False], ["n", "int64", False], ["x", "float64", True], ["op", "string", True]],
        "partition_keys": [],
        "primary_keys": ["k", "n"],
        "options": {"bucket": "3", "rowkind.field": "op"},
        "commits": _unpartitioned_commits(),
    },
}


def _file_facts(f: dict[str, Any]) -> tuple[Any, ...]:
    return (
        f["file_name"],
        f["level"],
        f["row_count"],
        f["delete_row_count"],
        f["min_sequence_number"],
        f["max_sequence_number"],
        f["file_size"],
        tuple(f["min_key"]),
        tuple(f["max_key"]),
    )


@pytest.mark.parametrize("layout", sorted(SPECS))
def test_table_buckets_pypaimon_written_table_same_live_files_as_pypaimon_scan(
    tmp_path: Path, pypaimon: Callable[..., dict[str, Any]], layout: str
) -> None:
    warehouse = str(tmp_path / "warehouse")
    spec = {"warehouse": warehouse, "identifier": "default.t", **SPECS[layout]}
    pypaimon("write", spec)
    plan = pypaimon("scan", warehouse, "default.t")

    expected: dict[tuple[tuple[str | None, ...], int], set[tuple[Any, ...]]] = collections.defaultdict(set)
    for split in plan["splits"]:
        expected[(tuple(split["partition"]), split["bucket"])] |= {_file_facts(f) for f in split["files"]}

    table = PaimonTable.open(str(tmp_path / "warehouse" / "default.db" / "t"))
    schema = table.schema()
    snapshot = table.latest_snapshot()
    assert snapshot is not None and snapshot.id == len(spec["commits"])
    assert snapshot.commit_kind is CommitKind.APPEND
    got: dict[tuple[tuple[str | None, ...], int], set[tuple[Any, ...]]] = {}
    for bucket in table.buckets():
        partition = tuple(str(v) for v in bucket.partition.to_values(schema.partition_types))
        got[(partition, bucket.bucket)] = {
            (
                f.file_name,
                f.level,
                f.row_count,
                f.delete_row_count,
                f.min_sequence_number,
                f.max_sequence_number,
                f.file_size,
                tuple(str(v) for v in f.min_key.to_values(schema.key_types)),
                tuple(str(v) for v in f.max_key.to_values(schema.key_types)),
            )
            for f in bucket.files
        }
        # the scenario this test is about: several level-0 sorted runs per bucket, newest first
        assert len(bucket.levels.level0) >= 2
        seqs = [f.max_sequence_number for f in bucket.levels.level0]
        assert seqs == sorted(seqs, reverse=True)
        assert Path(table.bucket_path(bucket.partition, bucket.bucket)).is_dir()
    assert got == dict(expected)
    assert snapshot.total_record_count == sum(f[2] for files in got.values() for f in files)
