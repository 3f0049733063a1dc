"""The independent reader: the `hudi` wheel (hudi-rs 0.5.0), and a row comparison helper."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa


def hudi_rs_snapshot(path: str | Path) -> pa.Table | None:
    """Snapshot rows as the `hudi` wheel reads them (None when it returns no batch)."""
    from hudi import HudiTableBuilder

    batches = HudiTableBuilder.from_base_uri(str(path)).build().read()
    return pa.Table.from_batches(batches) if batches else None


def assert_same_rows(
    ours: pa.Table, theirs: pa.Table | None, key: str = "_hoodie_record_key", ignore: tuple[str, ...] = ()
) -> None:
    """All of the oracle's columns (but ``ignore``) equal ours, rows compared sorted by record key."""
    if theirs is None or theirs.num_rows == 0:
        assert ours.num_rows == 0, f"oracle read no rows, we read {ours.num_rows}"
        return
    assert ours.num_rows == theirs.num_rows, f"row count: ours {ours.num_rows}, oracle {theirs.num_rows}"
    missing = set(theirs.column_names) - set(ours.column_names)
    assert not missing, f"columns missing from our read: {sorted(missing)}"
    # a key is unique per partition (non-global index): order by partition path too
    shared = set(theirs.column_names) & set(ours.column_names)
    order = [(c, "ascending") for c in ("_hoodie_partition_path", key) if c in shared]
    a = ours.sort_by(order)
    b = theirs.sort_by(order)
    for name in b.column_names:
        if name in ignore:
            continue
        expected = b.column(name)
        got = a.column(name).cast(expected.type)
        assert got.to_pylist() == expected.to_pylist(), f"column {name!r} differs"


# A base-file rewrite (compaction, clustering) sets _hoodie_file_name to the new file: every other column stays.
REWRITTEN_BY_SERVICES = ("_hoodie_file_name",)
