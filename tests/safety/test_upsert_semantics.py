"""Upsert semantics against an independent pandas model and hudi-rs: duplicate keys within a batch, lower ordering
values, both payload classes, both table types, MERGE_ON_READ before and after compaction.

The Hudi 0.14/0.15 rules the model encodes (reference/hudi/log-format.md §5):
* within an upsert batch, ``preCombine`` keeps one record per key: the greatest ordering value, a tie to the later
  record (``hoodie.combine.before.upsert``, ``reduceByKey`` with ``newer.preCombine(older)``);
* log record vs log record (MERGE_ON_READ): ``preCombine`` again, for both payload classes: the greater ordering
  value wins, a tie to the later record;
* incoming/log record vs stored/base record (``combineAndGetUpdateValue``): ``OverwriteWithLatestAvroPayload`` takes
  the new record whatever its ordering value; ``DefaultHoodieRecordPayload`` keeps the stored record when its
  ordering value is strictly greater.
So on an OverwriteWithLatest table a lower-ordering update overwrites on COPY_ON_WRITE but loses to an earlier log
record of the same slice on MERGE_ON_READ — Hudi's own behaviour, modelled here as it is.

hudi-rs merges every version by the ordering value (event-time), so it is an oracle wherever that agrees with
Java: COPY_ON_WRITE (base files only), compacted MERGE_ON_READ, and DefaultHoodieRecordPayload tables.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pytest

from lake_orchestration.config.keys import PAYLOAD_DEFAULT
from lake_orchestration.hudi.model.properties import TableType
from lake_orchestration.hudi.services.compaction import run_compaction, schedule_compaction
from lake_orchestration.hudi.table import HudiTable, read_snapshot_table
from lake_orchestration.hudi.write import WriteOptions, write_table
from tests.oracle import hudi_rs_snapshot

OVERWRITE = "org.apache.hudi.common.model.OverwriteWithLatestAvroPayload"
EVENT_TIME = PAYLOAD_DEFAULT
assert EVENT_TIME == "org.apache.hudi.common.model.DefaultHoodieRecordPayload"

# (id, part, ts, val): val names the version so the winner is visible
B0 = [(f"k{i}", "a" if i % 2 else "b", 100, f"b0-k{i}") for i in range(8)]
B1 = [  # duplicate keys, mixed ordering values
    ("k0", "b", 200, "b1-k0-x"),
    ("k0", "b", 300, "b1-k0-y"),
    ("k0", "b", 250, "b1-k0-z"),
    ("k1", "a", 50, "b1-k1-x"),
    ("k1", "a", 40, "b1-k1-y"),
    ("k2", "b", 200, "b1-k2-x"),
    ("k2", "b", 200, "b1-k2-y"),  # tie: the later record of the batch
    ("k3", "a", 90, "b1-k3"),  # below the stored 100
    ("n0", "a", 7, "b1-n0-x"),  # a new key, twice
    ("n0", "a", 5, "b1-n0-y"),
    ("n1", "b", 1, "b1-n1"),
]
B2 = [  # lower-ordering updates
    ("k0", "b", 150, "b2-k0"),  # below b1's 300
    ("k1", "a", 60, "b2-k1"),  # above b1's 50, below b0's 100
    ("k4", "b", 99, "b2-k4-lo"),
    ("k4", "b", 101, "b2-k4-hi"),
    ("k5", "a", 100, "b2-k5"),  # equal to the stored value: not strictly lower, the update wins
    ("n0", "a", 6, "b2-n0"),  # below n0's 7 (in a base file)
]
B3 = [("k2", "b", 150, "b3-k2"), ("k6", "b", 100, "b3-k6")]


def _batch(rows: list[tuple[str, str, int, str]]) -> pa.Table:
    ids, parts, ts, vals = zip(*rows, strict=True)
    return pa.table(
        {
            "id": pa.array(ids, pa.string()),
            "part": pa.array(parts, pa.string()),
            "ts": pa.array(ts, pa.int64()),
            "val": pa.array(vals, pa.string()),
        }
    )


# -- the independent model (pandas) --------------------------------------------------------------------------------
def _precombine(rows: list[tuple[str, str, int, str]]) -> dict[str, tuple[int, str]]:
    df = pd.DataFrame(rows, columns=["id", "part", "ts", "val"]).reset_index()
    best = df.sort_values(["ts", "index"]).groupby("id").tail(1)  # greatest ts, a tie to the later row
    return {r.id: (int(r.ts), r.val) for r in best.itertuples()}


@dataclass
class Model:
    """The expected snapshot: per key the stored (base) version and, on MERGE_ON_READ, the log versions since."""

    event_time: bool
    mor: bool
    base: dict[str, tuple[int, str]] = field(default_factory=dict)
    logs: dict[str, list[tuple[int, str]]] = field(default_factory=dict)

    def _combine(self, stored: tuple[int, str] | None, new: tuple[int, str]) -> tuple[int, str]:
        """``combineAndGetUpdateValue(stored, new)``."""
        if stored is not None and self.event_time and stored[0] > new[0]:
            return stored
        return new

    def bulk_insert(self, rows: list[tuple[str, str, int, str]]) -> None:
        self.base.update({r[0]: (r[2], r[3]) for r in rows})

    def upsert(self, rows: list[tuple[str, str, int, str]]) -> None:
        for key, new in _precombine(rows).items():
            if key not in self.base:
                self.base[key] = new  # an insert: a new base file (small file limit 0)
            elif self.mor:
                self.logs.setdefault(key, []).append(new)
            else:
                self.base[key] = self._combine(self.base[key], new)

    def snapshot(self) -> dict[str, tuple[int, str]]:
        out = dict(self.base)
        for key, versions in self.logs.items():
            merged = versions[0]
            for v in versions[1:]:
                merged = merged if merged[0] > v[0] else v  # preCombine: a tie to the later record
            out[key] = self._combine(out.get(key), merged)
        return out

    def compact(self) -> None:
        self.base = self.snapshot()
        self.logs = {}


def _rows(t: pa.Table | None) -> dict[str, tuple[int, str]]:
    assert t is not None
    ids = t.column("id").to_pylist()
    assert len(ids) == len(set(ids)), "a key was read twice"
    return dict(zip(ids, zip(t.column("ts").to_pylist(), t.column("val").to_pylist(), strict=True), strict=True))


CASES = [
    pytest.param(TableType.COPY_ON_WRITE, OVERWRITE, id="cow-overwrite"),
    pytest.param(TableType.COPY_ON_WRITE, EVENT_TIME, id="cow-event-time"),
    pytest.param(TableType.MERGE_ON_READ, OVERWRITE, id="mor-overwrite"),
    pytest.param(TableType.MERGE_ON_READ, EVENT_TIME, id="mor-event-time"),
]

# hand-checked winners: the model itself must say what the rules above say
SPOT = {
    ("COPY_ON_WRITE", OVERWRITE): {"k0": "b2-k0", "k1": "b2-k1", "k3": "b1-k3", "n0": "b2-n0", "k2": "b3-k2"},
    ("COPY_ON_WRITE", EVENT_TIME): {"k0": "b1-k0-y", "k1": "b0-k1", "k3": "b0-k3", "n0": "b1-n0-x", "k2": "b1-k2-y"},
    ("MERGE_ON_READ", OVERWRITE): {"k0": "b1-k0-y", "k1": "b2-k1", "k3": "b1-k3", "n0": "b2-n0", "k2": "b3-k2"},
    ("MERGE_ON_READ", EVENT_TIME): {"k0": "b1-k0-y", "k1": "b0-k1", "k3": "b0-k3", "n0": "b1-n0-x", "k2": "b1-k2-y"},
}


@pytest.mark.parametrize(("table_type", "payload"), CASES)
def test_upsert_semantics_match_the_model_and_hudi_rs(tmp_path: Path, table_type: TableType, payload: str) -> None:
    path = str(tmp_path / "t")
    opts = WriteOptions(
        table_name="t",
        table_type=table_type,
        record_key_fields=("id",),
        partition_fields=("part",),
        precombine_field="ts",
        payload_class=payload,
        small_file_limit=0,
    )
    mor = table_type is TableType.MERGE_ON_READ
    model = Model(event_time=payload == EVENT_TIME, mor=mor)
    oracle_agrees = not mor or model.event_time  # see the module docstring

    def check(stage: str, *, compacted: bool = False) -> None:
        want = model.snapshot()
        assert _rows(read_snapshot_table(HudiTable(path))) == want, f"{stage}: our snapshot read"
        if oracle_agrees or compacted:
            assert _rows(hudi_rs_snapshot(path)) == want, f"{stage}: hudi-rs"

    def compact() -> None:
        t = HudiTable(path)
        assert schedule_compaction(t, force=True).scheduled
        assert run_compaction(HudiTable(path))
        model.compact()

    write_table(path, _batch(B0), operation="bulk_insert", options=opts)
    model.bulk_insert(B0)
    for batch in (B1, B2):
        write_table(path, _batch(batch), operation="upsert", options=opts)
        model.upsert(batch)
        check(f"after {batch[0][3][:2]}")
    if mor:
        compact()
        check("after compaction", compacted=True)
    write_table(path, _batch(B3), operation="upsert", options=opts)
    model.upsert(B3)
    check("after b3")
    if mor:
        compact()
        check("after the second compaction", compacted=True)

    snap = model.snapshot()
    expected = SPOT[(table_type.value, payload)]
    assert {k: snap[k][1] for k in expected} == expected
    assert set(snap) == {f"k{i}" for i in range(8)} | {"n0", "n1"}
