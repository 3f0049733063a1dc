"""Rollback options under Hudi's key names: the table lock, the writer heartbeats that tell a live attempt from a
failed one, and ``hoodie.metadata.enable``."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from lake_orchestration.config.keys import HoodieKey
from lake_orchestration.config.options import HeartbeatConfig, option, parse_options
from lake_orchestration.hudi.table.lock import LockConfig


@dataclass(frozen=True, kw_only=True)
class RollbackConfig:
    """Settings of a rollback (of a failed write, an inflight (log) compaction or an unreadable pending rollback)."""

    lock: LockConfig = field(default_factory=LockConfig)
    """``hoodie.write.lock.*``: the table lock held for the whole rollback."""
    heartbeat: HeartbeatConfig = field(default_factory=HeartbeatConfig)
    """``hoodie.client.heartbeat.*``: an attempt whose heartbeat is younger than its expiry is alive and is not
    rolled back."""
    metadata_enable: bool = option(HoodieKey.METADATA_ENABLE, True)
    """``hoodie.metadata.enable``: true (Hudi's default) keeps a metadata table whose only partition is ``files``
    (as Java 0.15: the rollback's MDT deltacommit lists its rollback log files, and the rolled-back instant's MDT
    deltacommit is rolled back; an instant at or before the MDT's latest compaction is refused) and refuses one with
    other partitions; ``false`` deletes the metadata table first."""

    def metadata_options(self) -> dict[str, str]:
        """The options :meth:`HudiTable.ensure_metadata_table_handled` reads."""
        return {HoodieKey.METADATA_ENABLE.key: "true" if self.metadata_enable else "false"}

    @classmethod
    def from_options(cls, options: Mapping[str, str] | None = None, **overrides: Any) -> RollbackConfig:
        """Parse Hudi keys; ``overrides`` (typed values) win.

        Raises:
            InvalidOptionError: a value that does not parse or is out of range, naming the key and the value.
        """
        opts = dict(options or {})
        overrides.setdefault("lock", LockConfig.from_options(opts, service="rollback"))
        overrides.setdefault("heartbeat", HeartbeatConfig.from_options(opts, service="rollback"))
        return parse_options(cls, opts, service="rollback", **overrides)
