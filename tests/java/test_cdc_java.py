"""Java 0.15's CDC query is the oracle of ours: Java writes CDC-enabled copy-on-write and merge-on-read tables
(inserts, updates with new keys, deletes; the merge-on-read table compacted by Java in between) in each supplemental
logging mode, and for several ranges our ``read_cdc`` returns the rows ``hudi_table_changes(path, 'cdc', begin,
end)`` returns: the same ``op`` and ``ts_ms``, and ``before``/``after`` equal once decoded from JSON. One
exception, Java's: the deletes of the file groups an insert_overwrite replaced, where Java repeats one record per
group (see :func:`_check_replaced`)."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pytest

from lake_orchestration.datagen import generate_updates, pick_deletes
from lake_orchestration.hudi.model.properties import TableType
from lake_orchestration.hudi.table.cdc import read_cdc
from lake_orchestration.hudi.table.hudi_table import HudiTable
from tests.java.harness import JavaHudi
from tests.java.interop import PARTITIONED, JavaTable, Model, instant_time, java_write, trips

pytestmark = [pytest.mark.java]

COMPACT = {"hoodie.compact.inline": "true", "hoodie.compact.inline.max.delta.commits": "1"}
CASES = [
    (TableType.COPY_ON_WRITE, "data_before_after"),
    (TableType.COPY_ON_WRITE, "data_before"),
    (TableType.COPY_ON_WRITE, "op_key_only"),
    (TableType.MERGE_ON_READ, "data_before_after"),
    (TableType.MERGE_ON_READ, "op_key_only"),
]
OVERWRITE = (TableType.COPY_ON_WRITE, "data_before")
"""The table whose history ends with an insert_overwrite (a replacecommit: the replaced file groups' records are
deleted, the new base files' inserted)."""


def _history(java: JavaHudi, root: Path, table_type: TableType, mode: str) -> JavaTable:
    """insert; upsert (updates + new keys); delete (on MOR compacted inline by Java right after); upsert; on the
    :data:`OVERWRITE` table an insert_overwrite of one city's partition."""
    cdc = {"hoodie.table.cdc.enabled": "true", "hoodie.table.cdc.supplemental.logging.mode": mode}
    base = trips(60, seed=31)
    t = JavaTable(root / "t", PARTITIONED, table_type, Model(("city", "uuid")), base.schema, [], root)
    java_write(java, t, base, "insert", **cdc)
    upd = pa.concat_tables([generate_updates(base, fraction=0.3, seed=32, ts_offset=10**6), trips(8, seed=33)])
    java_write(java, t, upd, "upsert", **cdc)
    compact = COMPACT if table_type is TableType.MERGE_ON_READ else {}
    java_write(java, t, pick_deletes(base, fraction=0.15, seed=34), "delete", **cdc, **compact)
    java_write(java, t, generate_updates(base, fraction=0.2, seed=35, ts_offset=2 * 10**6), "upsert", **cdc)
    if (table_type, mode) == OVERWRITE:
        fresh = trips(10, seed=36)
        city = fresh.column("city")[0].as_py()
        java_write(java, t, fresh.filter(pc.equal(fresh.column("city"), city)), "insert_overwrite", **cdc)
    return t


@pytest.fixture(scope="module")
def cdc_tables(java_hudi: JavaHudi, tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    built: dict[tuple[TableType, str], JavaTable] = {}

    def get(table_type: TableType, mode: str) -> JavaTable:
        if (table_type, mode) not in built:
            root = tmp_path_factory.mktemp(f"cdc-{table_type.value}-{mode}")
            built[(table_type, mode)] = _history(java_hudi, root, table_type, mode)
        return built[(table_type, mode)]

    return get


def _decoded(value: Any) -> Any:
    """A JSON object as sorted (field, value) pairs; an SQL null stays None, the JSON text ``null`` (what Java's
    Avro ``toString`` renders for a missing image of a CDC log record) stays apart from it."""
    if value is None:
        return None
    decoded = json.loads(value)
    if decoded is None:
        return "JSON null"
    return tuple(sorted((k, json.dumps(v, sort_keys=True)) for k, v in decoded.items()))


def _rows(rows: list[dict[str, Any]]) -> Counter[tuple[Any, ...]]:
    return Counter((r["op"], r["ts_ms"], _decoded(r["before"]), _decoded(r["after"])) for r in rows)


def _java_cdc(java: JavaHudi, path: Path, begin: str, end: str | None) -> list[dict[str, Any]]:
    args = f"'{path}', 'cdc', '{begin}'" + (f", '{end}'" if end is not None else "")
    return java.call("sql", query=f"select op, ts_ms, before, after from hudi_table_changes({args})")["rows"]


def _replaced(rows: list[dict[str, Any]], replace: str | None) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(the rows, the deletes of the replaced file groups at ``replace``) apart."""
    hit = [r for r in rows if replace is not None and r["ts_ms"] == replace and r["op"] == "d"]
    return [r for r in rows if r not in hit], hit


def _check_replaced(ours: list[dict[str, Any]], theirs: list[dict[str, Any]], what: str) -> None:
    """Java 0.15's REPLACE_COMMIT split (``HoodieCDCRDD.loadCdcFile``: ``beforeImageRecords.values.map(deserialize)``,
    the Avro deserializer reusing its row) returns, for each replaced file group, one of its records repeated as
    many times as the group has records. Ours returns each record once: the same number of rows per file group,
    Java's rows among ours, no record twice."""
    group = Counter(json.loads(r["before"])["_hoodie_file_name"] for r in ours)
    assert group == Counter(json.loads(r["before"])["_hoodie_file_name"] for r in theirs), f"{what}: per group"
    mine = {_decoded(r["before"]) for r in ours}
    assert len(mine) == len(ours), f"{what}: a replaced record deleted twice"
    assert {_decoded(r["before"]) for r in theirs} <= mine, f"{what}: a Java row not among ours"


def _compare(java: JavaHudi, path: Path, begin: str, end: str | None, replace: str | None = None) -> Counter[str]:
    what = f"CDC ({begin}, {end or 'latest'}] of {path}"
    theirs_rows, theirs_replaced = _replaced(_java_cdc(java, path, begin, end), replace)
    table = read_cdc(HudiTable(str(path)), begin_instant_time=begin, end_instant_time=end).table
    ours_rows, ours_replaced = _replaced(table.to_pylist(), replace)
    _check_replaced(ours_replaced, theirs_replaced, what)
    ours, theirs = _rows(ours_rows), _rows(theirs_rows)
    if ours != theirs:
        extra, missing = ours - theirs, theirs - ours
        raise AssertionError(
            f"{what}: {sum(extra.values())} rows only ours, {sum(missing.values())} only Java's; first only ours: "
            f"{list(extra)[:2]}; first only Java's: {list(missing)[:2]}"
        )
    return Counter(table.column("op").to_pylist())


@pytest.mark.interop(
    direction="Java writes → our reader, Java reads",
    table="partitioned, CDC enabled, MOR compacted by Java;",
    service="CDC query (ours)",
    checks="ranges (everything, the first commit, a middle commit alone, the last two; COW data_before: an "
    "insert_overwrite alone): the same op, ts_ms, before and after (decoded JSON) as Java's "
    "hudi_table_changes(path, 'cdc', begin, end)",
)
@pytest.mark.parametrize(
    ("table_type", "mode"), CASES, ids=[f"{'COW' if t is TableType.COPY_ON_WRITE else 'MOR'}-{m}" for t, m in CASES]
)
def test_cdc_equals_javas(java_hudi: JavaHudi, cdc_tables, table_type: TableType, mode: str) -> None:  # type: ignore[no-untyped-def]
    t: JavaTable = cdc_tables(table_type, mode)
    writes = sorted({instant_time(n) for n in t.instants if n.endswith(("commit", "deltacommit"))})
    replaced = [instant_time(n) for n in t.instants if n.endswith(".replacecommit")]
    replace = replaced[0] if replaced else None
    everything = _compare(java_hudi, t.path, "0", None, replace)
    assert everything["i"] > 0 and everything["u"] > 0 and everything["d"] > 0, everything
    assert sum(_compare(java_hudi, t.path, "0", writes[0]).values()) == 60
    _compare(java_hudi, t.path, writes[1], writes[2])
    _compare(java_hudi, t.path, writes[-3], None, replace)
    if (table_type, mode) == OVERWRITE:
        assert writes[-1] == replace, (writes, replace)
        overwrite = _compare(java_hudi, t.path, writes[-2], replace, replace)
        assert overwrite["d"] > 0 and overwrite["i"] > 0 and overwrite["u"] == 0, overwrite
