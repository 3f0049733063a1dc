"""The independent reader: the `hudi` wheel (hudi-rs 0.5.0), and a row comparison helper."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa


def hudi_rs_snapshot(path: str | Path) -> pa.Table | None:
    """Snapshot rows as the `hudi` wheel reads them (None when it returns no batch)."""
    from hudi import HudiTableBuilder

    batches = HudiTableBuilder.from_base_uri(str(path)).build().read()
    return pa.Table.from_batches(batches) if batches else None


def assert_same_rows(ours: pa.Table, theirs: pa.Table | None, key: str = "_hoodie_record_key") -> None:
    """All of the oracle's columns equal ours, rows compared sorted by record key."""
    if theirs is None or theirs.num_rows == 0:
        assert ours.num_rows == 0, f"oracle read no rows, we read {ours.num_rows}"
        return
    assert ours.num_rows == theirs.num_rows, f"row count: ours {ours.num_rows}, oracle {theirs.num_rows}"
    missing = set(theirs.column_names) - set(ours.column_names)
    assert not missing, f"columns missing from our read: {sorted(missing)}"
    a = ours.sort_by(key)
    b = theirs.sort_by(key)
    for name in b.column_names:
        expected = b.column(name)
        got = a.column(name).cast(expected.type)
        assert got.to_pylist() == expected.to_pylist(), f"column {name!r} differs"
