"""The metadata table's clean and archival, run by the project's own cleaner and archiver on the MDT (a
MERGE_ON_READ Hudi table at ``.hoodie/metadata``), as Java 0.15's ``HoodieBackedTableMetadataWriter`` runs them
from ``performTableServices`` through the MDT's write client:

- :func:`clean_metadata_table` is ``cleanIfNecessary`` -> ``writeClient.clean("<L>002")``: with
  ``hoodie.clean.allow.multiple`` false (its default), a pending MDT clean (a crash in an earlier run) is finished
  and no new one is scheduled; else a clean is scheduled at ``<L>002`` (if the trigger fires and the plan deletes
  something) and executed. The plan, the deletes and ``<L>002.clean`` are those of our data-table clean
  (:mod:`lake_orchestration.hudi.services.clean`), with the MDT's settings
  (:func:`~lake_orchestration.hudi.metadata.table_services.metadata_write_options`).
- :func:`archive_metadata_table` is ``writeClient.archive()``: our archiver
  (:mod:`lake_orchestration.hudi.services.archive`), whose planner applies the MDT's own rule (never past the data
  table's first active commit or first pending instant).

Both run inside the data table's commit path, under the data table's lock (Java's MDT writer is a single writer
without a lock of its own): the MDT is locked in-process only. The commit path sits below the services layer, so
the two are handed to it through
:func:`~lake_orchestration.hudi.metadata.table_services.register_metadata_table_maintenance` when this module is
imported (the package root's loader imports it when the commit path first needs it:
:mod:`~lake_orchestration.hudi.metadata.maintenance_loader`).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping

from lake_orchestration.config.keys import HoodieKey
from lake_orchestration.hudi.metadata.table_services import register_metadata_table_maintenance
from lake_orchestration.hudi.model.instant import InstantTime
from lake_orchestration.hudi.services.archive.config import ArchiveConfig
from lake_orchestration.hudi.services.archive.service import ArchiveResult, run_archive
from lake_orchestration.hudi.services.clean.config import CleanConfig
from lake_orchestration.hudi.services.clean.planner import schedule_clean
from lake_orchestration.hudi.services.clean.recovery import pending_cleans
from lake_orchestration.hudi.services.clean.service import execute_clean
from lake_orchestration.hudi.table import HudiTable
from lake_orchestration.hudi.table.heartbeat import heartbeat_path
from lake_orchestration.hudi.table.lock import IN_PROCESS_LOCK_PROVIDER

log = logging.getLogger(__name__)

_IN_PROCESS = {HoodieKey.LOCK_PROVIDER.key: IN_PROCESS_LOCK_PROVIDER}
"""The MDT is changed only under the data table's lock: its own lock is this process's."""


def clean_metadata_table(mdt: HudiTable, instant: str, options: Mapping[str, str]) -> list[str]:
    """``writeClient.clean(instant)`` on the metadata table ``mdt``: finish the pending MDT cleans, or (none
    pending) schedule a clean at ``instant`` and execute it. Returns the cleans completed.

    Raises:
        As :func:`~lake_orchestration.hudi.services.clean.service.execute_clean`.
    """
    cfg = CleanConfig.from_options({**options, **_IN_PROCESS})
    todo = [str(p.time) for p in pending_cleans(mdt)]
    if not todo and mdt.timeline.get(instant) is None:
        inst, _planning, reason = schedule_clean(mdt, cfg, instant_time=InstantTime(instant, where=mdt.base_uri))
        if inst is None:
            log.debug("No metadata-table clean at %s: %s", instant, reason)
        else:
            todo.append(str(inst.time))
    for t in todo:
        log.info("Cleaning the metadata table %s at %s", mdt.base_uri, t)
        # only a holder of the data table's lock cleans the MDT: the heartbeat of a pending MDT clean is that of a
        # dead attempt (a crash), however fresh, and must not make this one wait out its expiry
        mdt.storage.delete_file(heartbeat_path(mdt.storage, InstantTime(t, where=mdt.base_uri)), missing_ok=True)
        execute_clean(mdt, t, config=cfg)
    return todo


def archive_metadata_table(mdt: HudiTable, options: Mapping[str, str]) -> ArchiveResult:
    """``writeClient.archive()`` on the metadata table ``mdt`` with the MDT's settings (Java's MDT write config is
    built from defaults, not from the MDT's ``hoodie.properties``)."""
    cfg = ArchiveConfig.from_options({**options, **_IN_PROCESS})
    # Java 0.15 only warns when hoodie.keep.min.commits <= hoodie.cleaner.commits.retained (the MDT's 20 retained
    # commits are above a data table's lowered keep.min.commits + 1); the archiver adjusts to the cleaner anyway
    return run_archive(mdt, cfg, strict_retained=False)


register_metadata_table_maintenance(clean=clean_metadata_table, archive=archive_metadata_table)

__all__ = ["archive_metadata_table", "clean_metadata_table"]
