"""Clean options, under Hudi's key names (``hoodie.cleaner.*``, ``hoodie.clean.*``)."""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from lake_orchestration.config.keys import HoodieKey
from lake_orchestration.errors import InvalidOptionError
from lake_orchestration.hudi.table.lock import LockConfig


class CleaningPolicy(str, enum.Enum):
    """``hoodie.cleaner.policy`` (``HoodieCleaningPolicy``)."""

    KEEP_LATEST_COMMITS = "KEEP_LATEST_COMMITS"
    KEEP_LATEST_FILE_VERSIONS = "KEEP_LATEST_FILE_VERSIONS"
    KEEP_LATEST_BY_HOURS = "KEEP_LATEST_BY_HOURS"


class CleaningTriggerStrategy(str, enum.Enum):
    """``hoodie.clean.trigger.strategy`` (Hudi has only ``NUM_COMMITS``)."""

    NUM_COMMITS = "NUM_COMMITS"


_KEYS = {
    "policy": HoodieKey.CLEANER_POLICY.key,
    "commits_retained": HoodieKey.CLEANER_COMMITS_RETAINED.key,
    "file_versions_retained": HoodieKey.CLEANER_FILEVERSIONS_RETAINED.key,
    "hours_retained": HoodieKey.CLEANER_HOURS_RETAINED.key,
    "incremental_mode": HoodieKey.CLEANER_INCREMENTAL_MODE.key,
    "trigger_strategy": HoodieKey.CLEAN_TRIGGER_STRATEGY.key,
    "max_commits": HoodieKey.CLEAN_MAX_COMMITS.key,
    "parallelism": HoodieKey.CLEANER_PARALLELISM.key,
}
"""Attribute -> Hudi key."""


@dataclass(frozen=True, kw_only=True)
class CleanConfig:
    """Clean settings (defaults of Hudi 0.14/0.15)."""

    policy: CleaningPolicy = CleaningPolicy.KEEP_LATEST_COMMITS
    """``hoodie.cleaner.policy``."""
    commits_retained: int = 10
    """``hoodie.cleaner.commits.retained``: completed commits whose file slices stay readable."""
    file_versions_retained: int = 3
    """``hoodie.cleaner.fileversions.retained``: slices kept per file group (KEEP_LATEST_FILE_VERSIONS)."""
    hours_retained: int = 24
    """``hoodie.cleaner.hours.retained`` (KEEP_LATEST_BY_HOURS)."""
    incremental_mode: bool = True
    """``hoodie.cleaner.incremental.mode``: only partitions written since the previous clean's retained commit."""
    trigger_strategy: CleaningTriggerStrategy = CleaningTriggerStrategy.NUM_COMMITS
    """``hoodie.clean.trigger.strategy``."""
    max_commits: int = 1
    """``hoodie.clean.max.commits``: completed commits since the last clean needed to schedule one."""
    parallelism: int = 200
    """``hoodie.cleaner.parallelism``: at most this many delete tasks."""
    lock: LockConfig = field(default_factory=LockConfig)
    """``hoodie.write.lock.*``: the table lock held while a clean is planned and while it is committed."""

    @classmethod
    def from_options(cls, options: Mapping[str, str] | None = None, **overrides: Any) -> CleanConfig:
        """Parse Hudi keys; an invalid value raises :class:`InvalidOptionError` (a :class:`PlanError`) naming the key
        and the value."""
        opts = dict(options or {})
        kw: dict[str, Any] = {}
        for attr, key in _KEYS.items():
            if key not in opts:
                continue
            raw = str(opts[key]).strip()
            try:
                if attr == "policy":
                    kw[attr] = CleaningPolicy(raw.upper())
                elif attr == "trigger_strategy":
                    kw[attr] = CleaningTriggerStrategy(raw.upper())
                elif attr == "incremental_mode":
                    if raw.lower() not in ("true", "false"):
                        raise ValueError(raw)
                    kw[attr] = raw.lower() == "true"
                else:
                    kw[attr] = int(raw)
            except ValueError as err:
                expected = {
                    "policy": " | ".join(p.value for p in CleaningPolicy),
                    "trigger_strategy": " | ".join(p.value for p in CleaningTriggerStrategy),
                    "incremental_mode": "true | false",
                }.get(attr, "an integer")
                raise InvalidOptionError(f"Invalid clean option {key}={raw!r}: expected {expected}") from err
        kw["lock"] = LockConfig.from_options(opts)
        kw.update(overrides)
        cfg = cls(**kw)
        for attr in ("commits_retained", "file_versions_retained", "hours_retained", "max_commits", "parallelism"):
            # commits.retained=0 is accepted as in Java (no commit to retain is found: nothing is cleaned)
            low = 0 if attr in ("hours_retained", "commits_retained") else 1
            if getattr(cfg, attr) < low:
                raise InvalidOptionError(
                    f"Invalid clean option {_KEYS[attr]}={getattr(cfg, attr)}: expected an integer >= {low}"
                )
        return cfg
