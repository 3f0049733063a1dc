"""Find every Hudi and Paimon table under a warehouse prefix, local or on an object store, with few requests.

The walk lists one directory level at a time (a delimiter listing on S3/GCS: the "directories" are the common
prefixes), and stops descending at a table root, so a table's partitions and data files are never listed: the cost
is one listing per directory above the tables (plus one existence check of ``.hoodie/hoodie.properties`` per Hudi
table), not one recursive listing of every object of the warehouse.

- Hudi: a directory holding ``.hoodie/hoodie.properties``.
- Paimon: a directory holding ``schema/`` (a filesystem catalog's ``<db>.db/<table>/schema/schema-N``).

A table is named from its path under the prefix, components joined by ``_`` (a Paimon database's ``.db`` suffix
dropped; characters outside ``[A-Za-z0-9_]`` become ``_``): ``rides/trips`` -> ``rides_trips``, ``sales.db/orders``
-> ``sales_orders``. Two paths giving one name are refused, naming both.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from lake_orchestration.config.keys import PROPERTIES_FILE
from lake_orchestration.errors import LakeOrchestrationError

HOODIE_DIR = ".hoodie"
HOODIE_PROPERTIES = PROPERTIES_FILE
PAIMON_SCHEMA_DIR = "schema"
DEFAULT_MAX_DEPTH = 6
"""Directory levels searched under the prefix (a warehouse is ``<db>/<table>`` or ``<db>.db/<table>``: 2)."""

_NOT_NAME = re.compile(r"[^A-Za-z0-9_]")


class DiscoveryError(LakeOrchestrationError):
    """Discovery found something it cannot name (two tables giving one name, a table at the prefix itself)."""


@dataclass(frozen=True, kw_only=True)
class DiscoveredTable:
    """A table found under a prefix."""

    name: str
    """``db_table`` style name from the path (``[A-Za-z0-9_]+``)."""
    base_path: str
    """The table's base path or URI (the prefix's form: ``s3://bucket/warehouse/db/t``)."""
    format: str
    """``hudi`` or ``paimon``."""
    relative_path: str
    """The path under the prefix (``db/t``)."""


def table_name(relative_path: str) -> str:
    """The name of a table at ``relative_path`` under the prefix (see the module doc)."""
    parts = [p.removesuffix(".db") for p in relative_path.strip("/").split("/") if p]
    name = "_".join(_NOT_NAME.sub("_", p) for p in parts)
    return name or "table"


def discover_tables(
    storage: Any, prefix: str, *, format: str = "auto", max_depth: int = DEFAULT_MAX_DEPTH
) -> list[DiscoveredTable]:
    """Every table under ``storage``'s base path (a :class:`~lake_orchestration.io.storage.Storage` rooted at
    ``prefix``), breadth first, sorted by path.

    Args:
        storage: the storage rooted at the prefix.
        prefix: the prefix as written (the tables' base paths are built on it).
        format: ``auto`` (both), ``hudi`` or ``paimon``: the tables kept.
        max_depth: directory levels searched.

    Raises:
        DiscoveryError: two tables with one name (naming both paths), or the prefix itself is a table.
    """
    found: list[DiscoveredTable] = []
    level = [""]
    base = prefix.rstrip("/")
    for _depth in range(max_depth + 1):
        next_level: list[str] = []
        for rel in level:
            entries = storage.list_dir(storage.join(rel))
            dirs = {e.name for e in entries if e.is_dir}
            kind = None
            if HOODIE_DIR in dirs and storage.exists(storage.join(rel, HOODIE_DIR, HOODIE_PROPERTIES)):
                kind = "hudi"
            elif PAIMON_SCHEMA_DIR in dirs and rel:
                kind = "paimon"
            if kind is not None:
                if not rel:
                    raise DiscoveryError(
                        f"{prefix}: the prefix is itself a {kind} table; expected a warehouse prefix with tables "
                        "under it (list the table under tables: instead)"
                    )
                if format in ("auto", kind):
                    found.append(
                        DiscoveredTable(name=table_name(rel), base_path=f"{base}/{rel}", format=kind, relative_path=rel)
                    )
                continue  # a table root: its partitions are not searched
            next_level.extend(f"{rel}/{d}" if rel else d for d in sorted(dirs) if not d.startswith((".", "_")))
        level = next_level
        if not level:
            break
    by_name: dict[str, DiscoveredTable] = {}
    for t in sorted(found, key=lambda t: t.relative_path):
        other = by_name.get(t.name)
        if other is not None:
            raise DiscoveryError(
                f"{prefix}: two tables are named {t.name!r}: {other.base_path} and {t.base_path}; expected unique "
                "names (list one under tables: with its own name, or exclude one from discover:)"
            )
        by_name[t.name] = t
    return sorted(by_name.values(), key=lambda t: t.relative_path)
