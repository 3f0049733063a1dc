"""Rollback (so far: of an inflight compaction attempt, which the compaction service needs to re-execute)."""

from lake_orchestration.hudi.services.rollback.compaction import rollback_inflight_compaction

__all__ = ["rollback_inflight_compaction"]
