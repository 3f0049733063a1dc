"""Run by the pypaimon venv's interpreter (never imported by the tests): a batch read with an equality predicate,
which pypaimon (2.1.0, like Java Paimon 2.0) serves through the table's primary-key sorted indexes (``pk-btree``,
``pk-bitmap``) when their payloads are valid for the scanned files, and prints JSON.

Usage: python pypaimon_index_driver.py query WAREHOUSE IDENTIFIER QUERIES_JSON
  QUERIES_JSON: [[FIELD, VALUE], ...] -> {"results": [{"rows": [...], "indexed_splits": n, "splits": m}, ...]}: per
  query the rows whose FIELD equals VALUE (sorted), how many splits pypaimon narrowed to index row ranges
  (``IndexedSplit``) and how many splits it read in all.
"""

from __future__ import annotations

import json
import sys
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from pypaimon import CatalogFactory
from pypaimon.globalindex import data_evolution_global_index_scanner
from pypaimon.globalindex.indexed_split import IndexedSplit
from pypaimon.table.source import primary_key_sorted_index_scan

_EXECUTOR = ThreadPoolExecutor(max_workers=2)


def _with_executor(*args: Any, **kwargs: Any) -> Any:
    kwargs.setdefault("executor", _EXECUTOR)
    return data_evolution_global_index_scanner._create_inner_readers(*args, **kwargs)


# pypaimon 2.1.0's primary-key sorted index scan opens its index readers without an executor, so every evaluation
# fails ("'NoneType' object has no attribute 'submit'") and it falls back to a raw scan: give them one.
primary_key_sorted_index_scan._create_inner_readers = _with_executor


def query(table: Any, field: str, value: Any) -> dict[str, Any]:
    builder = table.new_read_builder()
    builder = builder.with_filter(builder.new_predicate_builder().equal(field, value))
    splits = builder.new_scan().plan().splits()
    indexed = sum(1 for s in splits if isinstance(s, IndexedSplit))
    rows = builder.new_read().to_arrow(splits).to_pylist() if splits else []
    matching = sorted((list(r.values()) for r in rows if r[field] == value), key=lambda r: [str(v) for v in r])
    return {"rows": matching, "indexed_splits": indexed, "splits": len(splits)}


def main(argv: list[str]) -> None:
    if argv[0] != "query":
        raise SystemExit(f"unknown command {argv[0]!r}: expected query")
    table = CatalogFactory.create({"warehouse": argv[1]}).get_table(argv[2])
    print(json.dumps({"results": [query(table, field, value) for field, value in json.loads(argv[3])]}))


if __name__ == "__main__":
    main(sys.argv[1:])
