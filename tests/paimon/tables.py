"""The primary-key table the Paimon tests have pypaimon write (the oracle: conftest.py's ``pypaimon``): ``default.t``
in a filesystem warehouse, partitioned by ``dt``, primary key ``(dt, id)``, a value ``v`` and the row kind (``+I``,
``-D``, ...) in ``op`` (``rowkind.field``)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

Pypaimon = Callable[..., dict[str, Any]]
Rows = list[list[Any]]

IDENTIFIER = "default.t"
COLUMNS = [["dt", "string", False], ["id", "int32", False], ["v", "string", True], ["op", "string", True]]


def table_spec(warehouse: Path | str, commits: list[Rows], *, buckets: int, **options: str) -> dict[str, Any]:
    """The driver's ``write``/``append`` spec: ``commits`` (one list of rows per commit) into ``buckets`` buckets,
    with the table ``options`` given."""
    return {
        "warehouse": str(warehouse),
        "identifier": IDENTIFIER,
        "columns": COLUMNS,
        "partition_keys": ["dt"],
        "primary_keys": ["dt", "id"],
        "options": {"bucket": str(buckets), "rowkind.field": "op", **options},
        "commits": commits,
    }


def write_table(pypaimon: Pypaimon, tmp_path: Path, commits: list[Rows], *, buckets: int, **options: str) -> Path:
    """Create the table in the warehouse ``tmp_path / "warehouse"`` with ``commits``; returns the warehouse."""
    warehouse = tmp_path / "warehouse"
    pypaimon("write", table_spec(warehouse, commits, buckets=buckets, **options))
    return warehouse


def table_path(warehouse: Path | str) -> str:
    """The table's directory in ``warehouse``."""
    return str(Path(warehouse) / "default.db" / "t")


def read_rows(pypaimon: Pypaimon, warehouse: Path | str) -> Rows:
    """pypaimon's read of the table, sorted by ``(dt, id)``."""
    return sorted(pypaimon("read", str(warehouse), IDENTIFIER)["rows"], key=lambda r: (r[0], r[1]))
