"""Merge-tree compaction of Paimon primary-key tables: the universal compaction picker (planning only so far)."""

from lake_orchestration.paimon.services.compaction.universal import (
    UniversalCompaction,
    drop_delete,
    pick_full_compaction,
    pick_unit,
)

__all__ = ["UniversalCompaction", "drop_delete", "pick_full_compaction", "pick_unit"]
