"""Run by the pypaimon venv's interpreter (never imported by the tests): writes and scans Paimon tables with
pypaimon and prints JSON. Independent of lake_orchestration (pypaimon pins pyarrow<20, so it runs out of process).

Usage: python pypaimon_driver.py write SPEC_JSON | append SPEC_JSON | bulk SPEC_JSON | scan WAREHOUSE IDENTIFIER
       | read WAREHOUSE IDENTIFIER
"""

from __future__ import annotations

import json
import sys
from typing import Any

import pyarrow as pa
from pypaimon import CatalogFactory, Schema

_TYPES = {
    "int32": pa.int32(),
    "int64": pa.int64(),
    "string": pa.string(),
    "float64": pa.float64(),
    "bool": pa.bool_(),
}


def _catalog(warehouse: str) -> Any:
    return CatalogFactory.create({"warehouse": warehouse})


def write(spec: dict[str, Any]) -> dict[str, Any]:
    """Create ``spec["identifier"]`` in ``spec["warehouse"]`` and commit each batch of ``spec["commits"]``.

    spec: warehouse, identifier, columns [[name, type, nullable]], partition_keys, primary_keys, options,
    commits: [[row, ...], ...] (rows as lists in column order).
    """
    catalog = _catalog(spec["warehouse"])
    database = spec["identifier"].split(".")[0]
    catalog.create_database(database, True)
    pa_schema = pa.schema([pa.field(n, _TYPES[t], nullable=nullable) for n, t, nullable in spec["columns"]])
    schema = Schema.from_pyarrow_schema(
        pa_schema,
        partition_keys=spec.get("partition_keys") or None,
        primary_keys=spec["primary_keys"],
        options=spec.get("options", {}),
    )
    catalog.create_table(spec["identifier"], schema, False)
    return append(spec)


def append(spec: dict[str, Any]) -> dict[str, Any]:
    """Commit each batch of ``spec["commits"]`` to the existing table ``spec["identifier"]`` (same spec keys as
    :func:`write`; only warehouse, identifier, columns and commits are used)."""
    catalog = _catalog(spec["warehouse"])
    pa_schema = pa.schema([pa.field(n, _TYPES[t], nullable=nullable) for n, t, nullable in spec["columns"]])
    table = catalog.get_table(spec["identifier"])
    for rows in spec["commits"]:
        builder = table.new_batch_write_builder()
        table_write = builder.new_write()
        table_commit = builder.new_commit()
        columns = list(zip(*rows, strict=True))
        data = pa.Table.from_arrays(
            [pa.array(list(c), type=f.type) for c, f in zip(columns, pa_schema, strict=True)], schema=pa_schema
        )
        table_write.write_arrow(data)
        table_commit.commit(table_write.prepare_commit())
        table_write.close()
        table_commit.close()
    return {"snapshots": len(spec["commits"])}


def bulk(spec: dict[str, Any]) -> dict[str, Any]:
    """A benchmark table: ``rows`` inserts (id, name, amount), then ``updates`` commits each updating
    ``update_fraction`` of the ids, then one commit deleting ``delete_fraction`` of them (deterministic ids).

    spec: warehouse, identifier, rows, updates, update_fraction, delete_fraction, options.
    """
    catalog = _catalog(spec["warehouse"])
    catalog.create_database(spec["identifier"].split(".")[0], True)
    pa_schema = pa.schema(
        [
            pa.field("id", pa.int64(), nullable=False),
            pa.field("name", pa.string()),
            pa.field("amount", pa.float64()),
            pa.field("op", pa.string()),
        ]
    )
    schema = Schema.from_pyarrow_schema(
        pa_schema, primary_keys=["id"], options={"rowkind.field": "op", **spec.get("options", {})}
    )
    catalog.create_table(spec["identifier"], schema, False)
    table = catalog.get_table(spec["identifier"])
    rows = spec["rows"]

    def commit(ids: Any, tag: str, op: str) -> None:
        n = len(ids)
        data = pa.Table.from_arrays(
            [
                pa.array(ids, pa.int64()),
                pa.array([f"{tag}-{i}" for i in ids] if op == "+I" else [None] * n, pa.string()),
                pa.array([float(i) for i in ids] if op == "+I" else [None] * n, pa.float64()),
                pa.array([op] * n, pa.string()),
            ],
            schema=pa_schema,
        )
        builder = table.new_batch_write_builder()
        table_write, table_commit = builder.new_write(), builder.new_commit()
        table_write.write_arrow(data)
        table_commit.commit(table_write.prepare_commit())
        table_write.close()
        table_commit.close()

    commit(list(range(rows)), "v0", "+I")
    step = max(1, int(1 / spec["update_fraction"]))
    for n in range(spec["updates"]):
        commit(list(range(n, rows, step)), f"v{n + 1}", "+I")
    if spec["delete_fraction"] > 0:
        commit(list(range(0, rows, max(1, int(1 / spec["delete_fraction"])))), "", "-D")
    return {"rows": rows}


def scan(warehouse: str, identifier: str) -> dict[str, Any]:
    """The latest snapshot's scan plan: per split its partition, bucket and files (name, level, rows, deletes)."""
    table = _catalog(warehouse).get_table(identifier)
    splits = table.new_read_builder().new_scan().plan().splits()
    out = []
    for split in splits:
        partition = split.partition
        values = [partition.get_field(i) for i in range(len(partition.fields))] if partition is not None else []
        out.append(
            {
                "partition": [None if v is None else str(v) for v in values],
                "bucket": split.bucket,
                "files": [
                    {
                        "file_name": f.file_name,
                        "level": f.level,
                        "row_count": f.row_count,
                        "delete_row_count": f.delete_row_count,
                        "min_sequence_number": f.min_sequence_number,
                        "max_sequence_number": f.max_sequence_number,
                        "file_size": f.file_size,
                        "min_key": [None if v is None else str(v) for v in f.min_key.values],
                        "max_key": [None if v is None else str(v) for v in f.max_key.values],
                    }
                    for f in split.files
                ],
            }
        )
    return {"splits": out}


def read(warehouse: str, identifier: str) -> dict[str, Any]:
    """All rows of the latest snapshot (merged by key), as lists."""
    table = _catalog(warehouse).get_table(identifier)
    builder = table.new_read_builder()
    result = builder.new_read().to_arrow(builder.new_scan().plan().splits())
    return {"columns": result.column_names, "rows": [list(r.values()) for r in result.to_pylist()]}


def main(argv: list[str]) -> None:
    command = argv[1]
    if command == "write":
        result = write(json.loads(argv[2]))
    elif command == "append":
        result = append(json.loads(argv[2]))
    elif command == "bulk":
        result = bulk(json.loads(argv[2]))
    elif command == "scan":
        result = scan(argv[2], argv[3])
    elif command == "read":
        result = read(argv[2], argv[3])
    else:
        raise SystemExit(f"unknown command {command!r}: expected write, append, bulk, scan or read")
    json.dump(result, sys.stdout)


if __name__ == "__main__":
    main(sys.argv)
