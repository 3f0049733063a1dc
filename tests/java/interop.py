"""The interop matrix's building blocks: table shapes Java and we both write, a Java-written history with an
independent expected-rows model, Java reads as Arrow tables, and the comparisons.

Every cell test is marked ``@pytest.mark.interop(direction, table, service, checks)``; the conftest records each cell's
outcome and ``LAKE_ORCH_INTEROP_DOC=path`` renders them as the matrix page (``docs/interop.md``).
"""

from __future__ import annotations

import itertools
import shutil
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from lake_orchestration.datagen import generate_trips, generate_updates, pick_deletes
from lake_orchestration.hudi.model.properties import TableType
from lake_orchestration.hudi.write import WriteOptions
from tests.java.harness import JavaHudi

META_COLUMNS = (
    "_hoodie_commit_time",
    "_hoodie_commit_seqno",
    "_hoodie_record_key",
    "_hoodie_partition_path",
    "_hoodie_file_name",
)
DATA_COLUMNS = ("uuid", "ts", "rider", "driver", "fare", "begin_lat", "begin_lon", "distance_km", "trip_date", "city")


@dataclass(frozen=True)
class Shape:
    """A table layout both writers produce: key generator, record key and partition fields."""

    name: str
    record_key: tuple[str, ...]
    partition: tuple[str, ...]
    key_generator: str
    hive_style: bool = False
    java_extra: tuple[tuple[str, str], ...] = ()
    """More of Java's write options the shape needs (e.g. ``hoodie.keygen.timebased.*``)."""

    def java_options(self, table_type: TableType, table_name: str = "t") -> dict[str, str]:
        """Java's datasource options for this shape (metadata table off: the next issue keeps it)."""
        return {
            "hoodie.table.name": table_name,
            "hoodie.datasource.write.table.type": table_type.value,
            "hoodie.datasource.write.recordkey.field": ",".join(self.record_key),
            "hoodie.datasource.write.partitionpath.field": ",".join(self.partition),
            "hoodie.datasource.write.precombine.field": "ts",
            "hoodie.datasource.write.keygenerator.class": self.key_generator,
            "hoodie.datasource.write.hive_style_partitioning": str(self.hive_style).lower(),
            "hoodie.metadata.enable": "false",
            # small, quick tables: two file groups per partition and no surprise inline services
            "hoodie.parquet.max.file.size": str(256 * 1024),
            "hoodie.parquet.small.file.limit": "0",
            "hoodie.upsert.shuffle.parallelism": "2",
            "hoodie.insert.shuffle.parallelism": "2",
            "hoodie.delete.shuffle.parallelism": "2",
            "hoodie.bulkinsert.shuffle.parallelism": "2",
            "hoodie.clean.automatic": "false",
            "hoodie.archive.automatic": "false",
            "hoodie.compact.inline": "false",
            "hoodie.datasource.compaction.async.enable": "false",
            **dict(self.java_extra),
        }

    def write_options(self, table_type: TableType, table_name: str = "t") -> WriteOptions:
        """Our writer's options for this shape."""
        return WriteOptions(
            table_name=table_name,
            table_type=table_type,
            record_key_fields=self.record_key,
            partition_fields=self.partition,
            precombine_field="ts",
            key_generator=self.key_generator,
            hive_style_partitioning=self.hive_style,
        )


PARTITIONED = Shape("partitioned", ("uuid",), ("city",), "org.apache.hudi.keygen.SimpleKeyGenerator")
NON_PARTITIONED = Shape("non-partitioned", ("uuid",), (), "org.apache.hudi.keygen.NonpartitionedKeyGenerator")
COMPLEX = Shape(
    "complex keys", ("uuid", "rider"), ("city", "driver_bucket"), "org.apache.hudi.keygen.ComplexKeyGenerator", True
)
SHAPES = {s.name: s for s in (PARTITIONED, NON_PARTITIONED, COMPLEX)}
"""The shapes both Java and our writer write."""
TIMESTAMP = Shape(
    "timestamp key",
    ("uuid",),
    ("ts",),
    "org.apache.hudi.keygen.TimestampBasedKeyGenerator",
    java_extra=(
        ("hoodie.keygen.timebased.timestamp.type", "EPOCHMILLISECONDS"),
        ("hoodie.keygen.timebased.output.dateformat", "yyyy/MM/dd"),
        ("hoodie.keygen.timebased.timezone", "UTC"),
    ),
)
"""Partitioned by the epoch-millis ``ts`` as ``yyyy/MM/dd`` (``TimestampBasedKeyGenerator``): Java writes it, our
writer refuses it (its partition paths are not derived from the column's value). The trips' ``ts`` (and every
update's) falls on 2023/09/18, so a key never changes partition and the model stays keyed by record key."""
ALL_SHAPES = {**SHAPES, TIMESTAMP.name: TIMESTAMP}


def trips(rows: int, seed: int) -> pa.Table:
    """Trips in 2 cities with a low-cardinality ``driver_bucket`` (the complex shape's second partition field)."""
    t = generate_trips(rows, partitions=2, seed=seed)
    bucket = pc.cast(pc.bit_wise_and(pc.cast(t.column("ts"), pa.int64()), 1), pa.string())
    return t.append_column("driver_bucket", pc.binary_join_element_wise("b", bucket, ""))


@dataclass
class Model:
    """The expected snapshot, computed independently of every reader: the latest version of each record by
    precombine ``ts`` (ties: the later write), deletes removing the key."""

    key: tuple[str, ...]
    rows: dict[tuple[Any, ...], dict[str, Any]] = field(default_factory=dict)

    def _k(self, row: Mapping[str, Any]) -> tuple[Any, ...]:
        return tuple(row[k] for k in self.key)

    def upsert(self, data: pa.Table) -> None:
        for row in data.to_pylist():
            old = self.rows.get(self._k(row))
            if old is None or row["ts"] >= old["ts"]:
                self.rows[self._k(row)] = row

    def delete(self, data: pa.Table) -> None:
        for row in data.to_pylist():
            self.rows.pop(self._k(row), None)

    def table(self, schema: pa.Schema) -> pa.Table:
        return pa.Table.from_pylist(list(self.rows.values()), schema=schema)


@dataclass
class JavaTable:
    """A Java-written table (a private copy): its path, shape, type, the expected rows and the Java instants."""

    path: Path
    shape: Shape
    table_type: TableType
    model: Model
    schema: pa.Schema
    instants: list[str]
    scratch: Path
    _seq: itertools.count = field(default_factory=lambda: itertools.count(1))
    snapshots: dict[str, Model] = field(default_factory=dict)
    """The model as of each instant Java wrote (instant time -> a copy): the expected rows of a restore."""

    @property
    def options(self) -> dict[str, str]:
        return self.shape.java_options(self.table_type)

    def expected(self) -> pa.Table:
        return self.model.table(self.schema)

    def tmp(self, stem: str) -> Path:
        return self.scratch / f"{stem}-{next(self._seq)}"

    def copy(self, dest: Path) -> JavaTable:
        shutil.copytree(self.path, dest)
        return replace(
            self,
            path=dest,
            model=Model(self.model.key, dict(self.model.rows)),
            instants=list(self.instants),
            scratch=dest.parent,
            _seq=itertools.count(1),
            snapshots=dict(self.snapshots),
        )

    def model_as_of(self, instant: str) -> Model:
        """A copy of the model as of Java's ``instant`` (a time)."""
        snap = self.snapshots[instant]
        return Model(snap.key, dict(snap.rows))


def java_write(java: JavaHudi, table: JavaTable, data: pa.Table, operation: str, **extra: str) -> list[str]:
    """Java writes ``data`` with ``operation`` (insert, upsert, delete, bulk_insert ...); the model follows; returns
    the completed instants after it."""
    src = table.tmp("input").with_suffix(".parquet")
    pq.write_table(data, src)
    options = {**table.options, "hoodie.datasource.write.operation": operation, **extra}
    result = java.call("write", path=str(table.path), input=str(src), options=options)
    if operation == "delete":
        table.model.delete(data)
    else:
        table.model.upsert(data)
    before = set(table.instants)
    table.instants = result["instants"]
    for name in table.instants:
        if name not in before:
            table.snapshots[name.split(".", 1)[0]] = Model(table.model.key, dict(table.model.rows))
    return table.instants


def java_history(java: JavaHudi, path: Path, shape: Shape, table_type: TableType, *, rows: int = 400) -> JavaTable:
    """Java writes a table with several commits: insert, upsert, delete, then an upsert with new keys."""
    base = trips(rows, seed=1)
    table = JavaTable(
        path, shape, table_type, Model(("city", "uuid") if shape.partition else ("uuid",)), base.schema, [], path.parent
    )
    java_write(java, table, base, "insert")
    java_write(java, table, generate_updates(base, fraction=0.3, seed=2, ts_offset=10**6), "upsert")
    java_write(java, table, pick_deletes(base, fraction=0.1, seed=3), "delete")
    more = pa.concat_tables([generate_updates(base, fraction=0.2, seed=4, ts_offset=2 * 10**6), trips(40, seed=5)])
    java_write(java, table, more, "upsert")
    return table


def java_read(java: JavaHudi, table: JavaTable | Path, query: str = "snapshot", **options: str) -> pa.Table:
    """What Java reads: ``snapshot``, ``read_optimized`` or ``incremental`` (``begin`` instant in ``options``)."""
    path = table.path if isinstance(table, JavaTable) else table
    out = table.tmp("read") if isinstance(table, JavaTable) else path.parent / f"read-{query}"
    shutil.rmtree(out, ignore_errors=True)
    opts = {"hoodie.datasource.query.type": query, **options}
    java.call("read", path=str(path), options=opts, output=str(out))
    return pq.read_table(out)


def data_rows(t: pa.Table, columns: tuple[str, ...] = DATA_COLUMNS) -> list[tuple[Any, ...]]:
    """The rows' data columns, sorted: what a reader must agree on whatever the file layout."""
    cols = [c for c in columns if c in t.column_names]
    return sorted(zip(*(t.column(c).to_pylist() for c in cols), strict=True)) if cols and t.num_rows else []


def assert_rows_equal(got: pa.Table, expected: pa.Table, what: str, columns: tuple[str, ...] = DATA_COLUMNS) -> None:
    a, b = data_rows(got, columns), data_rows(expected, columns)
    assert len(a) == len(b), f"{what}: {len(a)} rows, expected {len(b)}"
    if a != b:
        diff = [(x, y) for x, y in zip(a, b, strict=True) if x != y][:3]
        raise AssertionError(f"{what}: rows differ, first differences (got, expected): {diff}")


def keyed_meta(t: pa.Table) -> list[tuple[Any, ...]]:
    """(partition path, record key, commit time) per row, sorted: the meta columns a service must keep."""
    return sorted(
        zip(
            t.column("_hoodie_partition_path").to_pylist(),
            t.column("_hoodie_record_key").to_pylist(),
            t.column("_hoodie_commit_time").to_pylist(),
            strict=True,
        )
    )


def data_files(path: Path) -> set[str]:
    """Relative paths of the table's data files (base and log files; ``.hoodie`` and Hadoop's ``.crc`` checksum
    files left out)."""
    return {
        str(p.relative_to(path))
        for p in path.rglob("*")
        if p.is_file()
        and ".hoodie" not in p.relative_to(path).parts
        and not p.name.startswith(".hoodie_partition")
        and not p.name.endswith(".crc")
        and (p.suffix == ".parquet" or ".log." in p.name)
    }


def instant_time(name: str) -> str:
    """``20240101000000000.commit`` -> ``20240101000000000``."""
    return name.split(".", 1)[0]


def procedure(java: JavaHudi, name: str, table: JavaTable | Path, **args: Any) -> list[dict[str, Any]]:
    """Rows of Java's Spark SQL procedure ``name`` on the table (``path =>`` or a registered catalog table)."""
    path = table.path if isinstance(table, JavaTable) else table
    catalog = f"t_{abs(hash(str(path))) % 10**12}"
    java.call("register", name=catalog, path=str(path))
    rendered = ", ".join(
        [f"table => '{catalog}'", *(f"{k} => {v!r}" if isinstance(v, str) else f"{k} => {v}" for k, v in args.items())]
    )
    return java.call("sql", query=f"call {name}({rendered})")["rows"]
