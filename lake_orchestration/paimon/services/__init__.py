"""Paimon table services (merge-tree compaction)."""
