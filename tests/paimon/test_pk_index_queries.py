"""Queries served through the golden table's primary-key sorted indexes (``pk-btree`` on ``name``, ``pk-bitmap`` on
``category``, Paimon 2.0) return the same rows after our COMPACT snapshot as after Java's.

The reader is pypaimon 2.1.0 (``pypaimon_index_driver.py``), which implements Java 2.0's primary-key sorted index
scan: a payload is used only when its source files are its level's live COMPACT files, and a file it covers is
narrowed to the row positions the index returns (an ``IndexedSplit``). No Java Paimon 2.x is available here (Maven
Central has no 2.x ``paimon-bundle`` in this project's mirror; Java 1.2 does not know these indexes), so pypaimon is
the indexed reader. Java's COMPACT rebuilt the index over the rewritten file; ours keeps the index manifest, so a
level our compaction changed is read without its index (raw scan) and the levels it did not change still use
theirs.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from lake_orchestration.paimon.services.compaction import run_compaction
from tests.paimon.test_compaction_golden import _back_to

pytestmark = [pytest.mark.fixtures, pytest.mark.slow]

DRIVER = Path(__file__).with_name("pypaimon_index_driver.py")
NAME = "test_pk_global_index_golden"
QUERIES = [["name", "name-4"], ["name", "name-1"], ["name", "name-9"], ["category", "odd"], ["category", "even"]]


def _query(pypaimon_python: Path, table_dir: Path) -> list[dict[str, Any]]:
    warehouse, identifier = table_dir.parent.parent, f"{table_dir.parent.name.removesuffix('.db')}.{table_dir.name}"
    argv = [str(pypaimon_python), str(DRIVER), "query", str(warehouse), identifier, json.dumps(QUERIES)]
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=600, env={**os.environ, "TZ": "UTC"})
    if proc.returncode != 0:
        raise AssertionError(f"pypaimon query failed (exit {proc.returncode}):\n{proc.stderr[-4000:]}")
    assert "Failed to evaluate" not in proc.stderr, proc.stderr[-2000:]
    results: list[dict[str, Any]] = json.loads(proc.stdout)["results"]
    return results


@pytest.mark.parametrize(
    ("snapshot_id", "our_indexed"),
    [
        (4, False),  # a rewrite into level 2: Java indexes the new file; our level 2 is read raw
        (6, True),  # an upgrade of level-0 files to level 1: the level-2 index stays valid and is used
    ],
)
def test_indexed_queries_after_our_compaction_return_javas_rows(
    paimon_golden: Path, pypaimon_python: Path, tmp_path: Path, snapshot_id: int, our_indexed: bool
) -> None:
    java = _back_to(paimon_golden, NAME, snapshot_id, tmp_path / "java.db" / NAME)
    java_results = _query(pypaimon_python, Path(java.uri))
    assert all(r["indexed_splits"] >= 1 for r in java_results if r["rows"])  # Java's payload is used

    table = _back_to(paimon_golden, NAME, snapshot_id - 1, tmp_path / "ours.db" / NAME)
    assert run_compaction(table).commit is not None
    ours = _query(pypaimon_python, Path(table.uri))

    assert [r["rows"] for r in ours] == [r["rows"] for r in java_results]
    assert [r["rows"] for r in ours][:2] == [[[4, "name-4", "even"]], [[1, "name-1", "odd"]]]
    assert any(r["indexed_splits"] >= 1 for r in ours) is our_indexed
