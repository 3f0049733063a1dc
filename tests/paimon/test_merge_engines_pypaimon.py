"""Merge-engine tables pypaimon writes (retractions included), fully compacted by us, read back by pypaimon.

pypaimon reads a fully compacted table (one sorted run at the max level) as written: its read is then exactly what
our merge wrote; for aggregation tables pypaimon's own merge of the uncompacted table is a second, independent
oracle. The expectations are worked out by hand from Java 1.2's merge functions (test_merge_engines_java_model.py has
the model they agree with). pypaimon 2.1 refuses to write tables with ``ignore-delete``,
``partial-update.remove-record-on-delete``, ``aggregation.remove-record-on-delete`` or ``fields.<f>.ignore-retract``
(NotImplementedError), and its aggregation refuses any retraction row: those cases are only in the model test.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from lake_orchestration.paimon.services.compaction import run_compaction
from lake_orchestration.paimon.table import PaimonTable
from tests.paimon.tables import IDENTIFIER, Pypaimon, table_path

pytestmark = pytest.mark.slow

COLUMNS = [["dt", "string", False], ["id", "int32", False], ["a", "int64", True], ["b", "string", True],
           ["c", "bool", True], ["op", "string", True]]  # fmt: skip

CASES: dict[str, tuple[dict[str, str], list[list[list[Any]]], list[list[Any]]]] = {
    # the oldest row of key 1 is a retraction: skipped with ignore-delete, the first insert wins
    "first-row-ignore-delete": (
        {"merge-engine": "first-row", "first-row.ignore-delete": "true"},
        [
            [["a", 1, None, None, None, "-D"], ["a", 2, 1, "x", True, "+I"]],
            [["a", 1, 2, "y", False, "+I"], ["a", 2, 9, "z", False, "+I"]],
        ],
        [["a", 1, 2, "y", False, "+I"], ["a", 2, 1, "x", True, "+I"]],
    ),
    # min / first_non_null_value / bool_and with nulls
    "aggregation-min-first-non-null-bool-and": (
        {
            "merge-engine": "aggregation",
            "fields.a.aggregate-function": "min",
            "fields.b.aggregate-function": "first_non_null_value",
            "fields.c.aggregate-function": "bool_and",
        },
        [
            [["a", 1, 5, None, True, "+I"], ["a", 2, None, None, None, "+I"]],
            [["a", 1, 3, "p", None, "+I"], ["a", 1, None, "q", None, "+I"]],
            [["a", 1, 4, "r", True, "+U"], ["a", 2, 7, None, True, "+I"]],
        ],
        [["a", 1, 3, "p", True, "+U"], ["a", 2, 7, None, True, "+I"]],
    ),
    # first_value keeps the first row's null; bool_or
    "aggregation-first-value-bool-or": (
        {
            "merge-engine": "aggregation",
            "fields.a.aggregate-function": "first_value",
            "fields.b.aggregate-function": "first_value",
            "fields.c.aggregate-function": "bool_or",
        },
        [
            [["a", 1, None, "first", None, "+I"], ["a", 2, 8, None, False, "+I"]],
            [["a", 1, 2, "second", False, "+I"], ["a", 2, 9, "z", None, "+I"]],
            [["a", 1, 3, "third", True, "+I"]],
        ],
        [["a", 1, None, "first", True, "+I"], ["a", 2, 8, None, False, "+I"]],
    ),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_full_compaction_of_merge_engine_table_pypaimon_reads_java_result(
    tmp_path: Path, pypaimon: Pypaimon, case: str
) -> None:
    options, commits, expected = CASES[case]
    warehouse = tmp_path / "warehouse"
    pypaimon("write", {"warehouse": str(warehouse), "identifier": IDENTIFIER, "columns": COLUMNS,
                       "partition_keys": ["dt"], "primary_keys": ["dt", "id"],
                       "options": {"bucket": "1", "rowkind.field": "op", **options}, "commits": commits})  # fmt: skip
    before = sorted(pypaimon("read", str(warehouse), IDENTIFIER)["rows"], key=lambda r: (r[0], r[1]))
    # pypaimon merges aggregation itself; like Java, it reads no level-0 file of a first-row table
    assert before == ([] if options["merge-engine"] == "first-row" else expected)
    table = PaimonTable.open(table_path(warehouse))
    result = run_compaction(table, full=True)
    assert result.commit is not None
    rows = sorted(pypaimon("read", str(warehouse), IDENTIFIER)["rows"], key=lambda r: (r[0], r[1]))
    assert rows == expected
